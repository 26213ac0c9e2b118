//! One streamed answer read whole: the stream reader and the tracker together, fed the body's
//! slices as they arrive. What a driver holds per request in LLM mode.

use std::time::{Duration, Instant};

use throng_stream::{Ending, Framing, Parser, StreamError};

use crate::{Api, ChunkError, Figures, Token, Tracker};

/// A streamed answer being read: each slice of the body goes to [`Answer::feed`] with the time
/// it arrived; the events it completes go through the [`Tracker`]. The content events' times
/// are kept as a parts row takes them: the first from the request's start (TTFT), then each
/// gap (ITL), at most `max_parts` of them (the rest are counted in the figures, not timed).
///
/// The first event that is not a chunk, or carries the server's error, is kept as the
/// answer's failure and ends the reading of events: what came before it still counts.
#[derive(Debug, Clone)]
pub struct Answer {
    parser: Parser,
    tracker: Tracker,
    parts: Vec<Duration>,
    max_parts: usize,
    failure: Option<ChunkError>,
}

impl Answer {
    /// An answer of `api`, framed as `framing` (SSE for OpenAI-compatible servers), its events
    /// capped at `max_event` bytes, to a request whose intended start was `start`.
    pub fn new(
        api: Api,
        framing: Framing,
        max_event: usize,
        start: Instant,
        max_parts: usize,
    ) -> Self {
        Answer {
            parser: Parser::new(framing, max_event),
            tracker: Tracker::new(api, start),
            parts: Vec::new(),
            max_parts,
            failure: None,
        }
    }

    /// Reads a slice of the body that arrived at `at`.
    ///
    /// # Errors
    /// An event past the cap (the answer cannot be read further).
    pub fn feed(&mut self, at: Instant, bytes: &[u8]) -> Result<(), StreamError> {
        let Answer {
            parser,
            tracker,
            parts,
            max_parts,
            failure,
        } = self;
        parser.feed(bytes, &mut |e| {
            if failure.is_some() {
                return;
            }
            let part = match tracker.event(at, e.data()) {
                Ok(Token::First(d) | Token::Next(d)) => d,
                Ok(Token::None) => return,
                Err(err) => {
                    *failure = Some(err);
                    return;
                }
            };
            if parts.len() < *max_parts {
                parts.push(part);
            }
        })
    }

    /// The end of the body.
    ///
    /// # Errors
    /// The reader's, if it failed.
    pub fn finish(&mut self) -> Result<Ending, StreamError> {
        self.parser.finish(&mut |_| {})
    }

    /// The figures so far.
    pub fn figures(&self) -> Figures {
        self.tracker.figures()
    }

    /// The first event that was not a chunk, or the server's error in the stream.
    pub fn failure(&self) -> Option<&ChunkError> {
        self.failure.as_ref()
    }

    /// The content events' times so far (TTFT, then the gaps), handed over.
    pub fn take_parts(&mut self) -> Vec<Duration> {
        std::mem::take(&mut self.parts)
    }
}
