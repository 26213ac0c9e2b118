//! NDJSON (JSON Lines): an event per line.

use crate::{Ending, StreamError};

/// An incremental reader of newline-delimited records (NDJSON, JSON Lines): each line, its
/// LF or CRLF removed, is an event; empty lines are skipped (NDJSON lets a reader ignore
/// them). Lines are not parsed as JSON here: the caller parses the events it needs.
///
/// Memory: the line in progress when it spans slices, at most the cap; a longer line is
/// [`StreamError::TooLarge`] whatever the slices.
#[derive(Debug, Clone)]
pub struct LineParser {
    max: usize,
    line: Vec<u8>,
    events: u64,
    failed: bool,
}

impl LineParser {
    /// A reader whose lines may be at most `max_event` bytes (without their line end).
    pub fn new(max_event: usize) -> Self {
        LineParser {
            max: max_event,
            line: Vec::new(),
            events: 0,
            failed: false,
        }
    }

    /// Lines handed over so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Reads the next slice, calling `on_line` for each line it completes, in order.
    ///
    /// # Errors
    /// [`StreamError::TooLarge`] when a line passes the cap; the reader stays failed.
    pub fn feed(
        &mut self,
        mut input: &[u8],
        on_line: &mut impl FnMut(&[u8]),
    ) -> Result<(), StreamError> {
        if self.failed {
            return Err(self.too_large());
        }
        while let Some(i) = memchr::memchr(b'\n', input) {
            if self.line.is_empty() {
                let line = strip_cr(&input[..i]);
                if line.len() > self.max {
                    return Err(self.fail());
                }
                self.hand(line, on_line);
            } else {
                // A CR that ended the previous slice belongs to the line end, not the line:
                // the cap is checked on the line without it.
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&input[..i]);
                let body = strip_cr(&line);
                if body.len() > self.max {
                    return Err(self.fail());
                }
                self.hand(body, on_line);
                line.clear();
                self.line = line;
            }
            input = &input[i + 1..];
        }
        // One byte of slack: a line of the cap's length may arrive with its CR before its LF.
        if self.line.len() + input.len() > self.max + 1 {
            return Err(self.fail());
        }
        self.line.extend_from_slice(input);
        Ok(())
    }

    /// The end of the body: a last line without its newline is handed over (JSON Lines lets
    /// the last line end without one).
    ///
    /// # Errors
    /// [`StreamError::TooLarge`] if the reader failed earlier, or the last line passes the cap.
    pub fn finish(&mut self, on_line: &mut impl FnMut(&[u8])) -> Result<Ending, StreamError> {
        if self.failed {
            return Err(self.too_large());
        }
        let line = std::mem::take(&mut self.line);
        let body = strip_cr(&line);
        if body.len() > self.max {
            return Err(self.fail());
        }
        self.hand(body, on_line);
        Ok(Ending { partial: false })
    }

    fn hand(&mut self, line: &[u8], on_line: &mut impl FnMut(&[u8])) {
        if !line.is_empty() {
            self.events += 1;
            on_line(line);
        }
    }

    fn too_large(&self) -> StreamError {
        StreamError::TooLarge { limit: self.max }
    }

    fn fail(&mut self) -> StreamError {
        self.failed = true;
        self.line = Vec::new();
        self.too_large()
    }
}

impl Default for LineParser {
    /// A reader capped at [`crate::DEFAULT_MAX_EVENT`].
    fn default() -> Self {
        LineParser::new(crate::DEFAULT_MAX_EVENT)
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}
