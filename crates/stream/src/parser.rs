//! One reader for any of the three framings, as `--stream sse|ndjson|chunks` chooses.

use crate::{Ending, LineParser, SseEvent, SseParser, StreamError};

/// How a response's body is cut into events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framing {
    /// Server-sent events (`text/event-stream`).
    Sse,
    /// Newline-delimited JSON (or any text), an event per line.
    Ndjson,
    /// Each slice of the body as it arrived (an HTTP/1.1 chunk, an HTTP/2 DATA frame, a read).
    Chunks,
}

impl Framing {
    /// The name `--stream` takes: `sse`, `ndjson` or `chunks`.
    pub fn name(self) -> &'static str {
        match self {
            Framing::Sse => "sse",
            Framing::Ndjson => "ndjson",
            Framing::Chunks => "chunks",
        }
    }
}

impl std::fmt::Display for Framing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `sse`, `ndjson` or `chunks`.
impl std::str::FromStr for Framing {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sse" => Ok(Framing::Sse),
            "ndjson" => Ok(Framing::Ndjson),
            "chunks" => Ok(Framing::Chunks),
            _ => Err(format!(
                "`{s}` is not a stream framing: expected sse, ndjson or chunks"
            )),
        }
    }
}

/// One event of a stream, whatever its framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// A server-sent event.
    Sse(SseEvent<'a>),
    /// A line of NDJSON.
    Line(&'a [u8]),
    /// A slice of the body as it arrived.
    Chunk(&'a [u8]),
}

impl<'a> Event<'a> {
    /// What the event carries: an SSE event's data, a line, a chunk.
    pub fn data(&self) -> &'a [u8] {
        match self {
            Event::Sse(e) => e.data,
            Event::Line(b) | Event::Chunk(b) => b,
        }
    }

    /// Whether it is OpenAI's end of stream, `[DONE]` (an SSE event's data, or a line).
    pub fn is_done(&self) -> bool {
        match self {
            Event::Sse(e) => e.is_done(),
            Event::Line(b) => *b == b"[DONE]",
            Event::Chunk(_) => false,
        }
    }
}

#[derive(Debug, Clone)]
enum Inner {
    Sse(SseParser),
    Lines(LineParser),
    Chunks,
}

/// A reader of one framing: [`Parser::feed`] it the body in any slices, then
/// [`Parser::finish`].
#[derive(Debug, Clone)]
pub struct Parser {
    inner: Inner,
}

impl Parser {
    /// A reader of `framing` whose events may be at most `max_event` bytes (raw chunks are
    /// handed over as they come, never buffered, so the cap does not apply to them).
    pub fn new(framing: Framing, max_event: usize) -> Self {
        let inner = match framing {
            Framing::Sse => Inner::Sse(SseParser::new(max_event)),
            Framing::Ndjson => Inner::Lines(LineParser::new(max_event)),
            Framing::Chunks => Inner::Chunks,
        };
        Parser { inner }
    }

    /// Its framing.
    pub fn framing(&self) -> Framing {
        match self.inner {
            Inner::Sse(_) => Framing::Sse,
            Inner::Lines(_) => Framing::Ndjson,
            Inner::Chunks => Framing::Chunks,
        }
    }

    /// Reads the next slice of the body, calling `on_event` for each event it completes.
    ///
    /// # Errors
    /// [`StreamError::TooLarge`] when an event passes the cap.
    pub fn feed(
        &mut self,
        input: &[u8],
        on_event: &mut impl FnMut(Event<'_>),
    ) -> Result<(), StreamError> {
        match &mut self.inner {
            Inner::Sse(p) => p.feed(input, &mut |e| on_event(Event::Sse(e))),
            Inner::Lines(p) => p.feed(input, &mut |l| on_event(Event::Line(l))),
            Inner::Chunks => {
                if !input.is_empty() {
                    on_event(Event::Chunk(input));
                }
                Ok(())
            }
        }
    }

    /// The end of the body (see [`SseParser::finish`], [`LineParser::finish`]).
    ///
    /// # Errors
    /// [`StreamError::TooLarge`] if the reader failed, or a last line passes the cap.
    pub fn finish(&mut self, on_event: &mut impl FnMut(Event<'_>)) -> Result<Ending, StreamError> {
        match &mut self.inner {
            Inner::Sse(p) => p.finish(),
            Inner::Lines(p) => p.finish(&mut |l| on_event(Event::Line(l))),
            Inner::Chunks => Ok(Ending::default()),
        }
    }
}
