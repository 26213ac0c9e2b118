//! Server-sent events, read as the WHATWG HTML standard's EventSource reads them (section
//! 9.2.6), incrementally.

use crate::{Ending, StreamError};

/// The UTF-8 byte-order mark, ignored once at the start of a stream.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// Room on a line for its field's name beside the cap on the data: a line may be this much
/// longer than the cap (`data: ` and its value of the cap's size fit).
const FIELD_ROOM: usize = 16;

/// One dispatched event, borrowing the reader's buffers (or the slice just fed) until the
/// callback returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The event's type: its `event:` field, `message` when it had none.
    pub event: &'a [u8],
    /// Its `data:` lines joined with `\n` (no newline after the last).
    pub data: &'a [u8],
    /// The last event ID: the last `id:` field seen in the stream so far, this event's or an
    /// earlier one's (empty if none, or after an `id` with no value).
    pub id: &'a [u8],
}

impl SseEvent<'_> {
    /// Whether the data is OpenAI's end of stream, `[DONE]`.
    pub fn is_done(&self) -> bool {
        self.data == b"[DONE]"
    }

    /// The data as text, invalid UTF-8 replaced (as the standard decodes a stream).
    pub fn data_str(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.data)
    }
}

/// Where the reader is in the stream's first bytes, which may be a byte-order mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// This many bytes of the stream so far, all matching the mark's.
    Bom(usize),
    /// Past the start.
    Body,
}

/// An incremental `text/event-stream` reader: [`SseParser::feed`] it the body in any slices,
/// then [`SseParser::finish`] at its end.
///
/// Memory: the line in progress (when a line spans slices) and the event being assembled,
/// each within the cap given to [`SseParser::new`]: the event's data (each `data:` line's
/// value and a newline) at most the cap, a line at most 16 bytes more (its field's name). A
/// longer line, or data beyond the cap, is [`StreamError::TooLarge`] whatever the slices.
#[derive(Debug, Clone)]
pub struct SseParser {
    max: usize,
    start: Start,
    /// The line received so far, when it spans slices.
    line: Vec<u8>,
    /// The last slice ended with CR: an LF at the start of the next one ends nothing.
    after_cr: bool,
    data: Vec<u8>,
    event: Vec<u8>,
    id: Vec<u8>,
    retry: Option<u64>,
    comments: u64,
    events: u64,
    failed: bool,
}

impl SseParser {
    /// A reader whose events (and lines) may be at most `max_event` bytes.
    pub fn new(max_event: usize) -> Self {
        SseParser {
            max: max_event,
            start: Start::Bom(0),
            line: Vec::new(),
            after_cr: false,
            data: Vec::new(),
            event: Vec::new(),
            id: Vec::new(),
            retry: None,
            comments: 0,
            events: 0,
            failed: false,
        }
    }

    /// The last `retry:` field's value, in milliseconds (the reconnection time).
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Comment lines read so far (keep-alive pings are comments).
    pub fn comments(&self) -> u64 {
        self.comments
    }

    /// Events dispatched so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Reads the next slice of the body, calling `on_event` for each event it completes, in
    /// order.
    ///
    /// # Errors
    /// [`StreamError::TooLarge`] when a line or an event passes the cap; the reader stays
    /// failed (the events before it were handed over).
    pub fn feed(
        &mut self,
        mut input: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>),
    ) -> Result<(), StreamError> {
        if self.failed {
            return Err(self.too_large());
        }
        while let Start::Bom(matched) = self.start {
            let Some(&b) = input.first() else {
                return Ok(());
            };
            if b == BOM[matched] {
                input = &input[1..];
                self.start = if matched + 1 == BOM.len() {
                    Start::Body
                } else {
                    Start::Bom(matched + 1)
                };
            } else {
                // Not a mark after all: the bytes held back are the stream's own.
                self.start = Start::Body;
                self.lines(&BOM[..matched], on_event)?;
            }
        }
        self.lines(input, on_event)
    }

    /// The end of the body: an event not yet dispatched (no blank line after it) is
    /// discarded, as the standard says, and reported as [`Ending::partial`]. The reader then
    /// reads a new stream, keeping the last event ID and retry, as an EventSource keeps them
    /// across reconnections.
    ///
    /// # Errors
    /// [`StreamError::TooLarge`] if the reader failed earlier.
    pub fn finish(&mut self) -> Result<Ending, StreamError> {
        if self.failed {
            return Err(self.too_large());
        }
        let partial = match self.start {
            Start::Bom(matched) => matched > 0,
            Start::Body => !self.line.is_empty() || !self.data.is_empty(),
        };
        self.line.clear();
        self.data.clear();
        self.event.clear();
        self.after_cr = false;
        self.start = Start::Bom(0);
        Ok(Ending { partial })
    }

    fn too_large(&self) -> StreamError {
        StreamError::TooLarge { limit: self.max }
    }

    fn fail(&mut self) -> StreamError {
        self.failed = true;
        self.line = Vec::new();
        self.data = Vec::new();
        self.too_large()
    }

    fn lines(
        &mut self,
        mut input: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>),
    ) -> Result<(), StreamError> {
        if input.is_empty() {
            return Ok(());
        }
        if std::mem::take(&mut self.after_cr) && input[0] == b'\n' {
            input = &input[1..];
        }
        while let Some(i) = memchr::memchr2(b'\n', b'\r', input) {
            let end = input[i];
            if self.line.is_empty() {
                if i > self.max + FIELD_ROOM {
                    return Err(self.fail());
                }
                self.line_done(&input[..i], on_event)?;
            } else {
                if self.line.len() + i > self.max + FIELD_ROOM {
                    return Err(self.fail());
                }
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&input[..i]);
                let done = self.line_done(&line, on_event);
                line.clear();
                self.line = line;
                done?;
            }
            input = &input[i + 1..];
            if end == b'\r' {
                match input.first() {
                    Some(b'\n') => input = &input[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        if self.line.len() + input.len() > self.max + FIELD_ROOM {
            return Err(self.fail());
        }
        self.line.extend_from_slice(input);
        Ok(())
    }

    /// One whole line, its end removed.
    fn line_done(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>),
    ) -> Result<(), StreamError> {
        if line.is_empty() {
            self.dispatch(on_event);
            return Ok(());
        }
        if line[0] == b':' {
            self.comments += 1;
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.max {
                    return Err(self.fail());
                }
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            b"id" if !value.contains(&0) => {
                self.id.clear();
                self.id.extend_from_slice(value);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = Some(value.iter().fold(0u64, |n, d| {
                    n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                }));
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, on_event: &mut impl FnMut(SseEvent<'_>)) {
        if self.data.is_empty() {
            self.event.clear();
            return;
        }
        let data = &self.data[..self.data.len() - 1];
        let event = if self.event.is_empty() {
            &b"message"[..]
        } else {
            &self.event
        };
        self.events += 1;
        on_event(SseEvent {
            event,
            data,
            id: &self.id,
        });
        self.data.clear();
        self.event.clear();
    }
}

impl Default for SseParser {
    /// A reader capped at [`crate::DEFAULT_MAX_EVENT`].
    fn default() -> Self {
        SseParser::new(crate::DEFAULT_MAX_EVENT)
    }
}
