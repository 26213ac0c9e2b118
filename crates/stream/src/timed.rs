//! A response's events timed as they arrive: what a driver records as a parts row.

use std::time::{Duration, Instant};

use crate::{Ending, Event, Parser, StreamError};

/// One response's events, each timed from the one before (the first from the request's start)
/// at the moment the slice that completed it arrived, as a gRPC stream's messages are timed.
///
/// Memory is bounded however long the stream: the reader's own (see [`Parser`]), at most
/// `max_parts` times (events past it are counted, not timed), and, when asked, one copy of the
/// last event's data (for checks and extraction), no larger than the reader's cap. OpenAI's
/// `[DONE]` is an end marker, not an event: it is neither timed nor kept, and [`Timed::done`]
/// says it came.
#[derive(Debug, Clone)]
pub struct Timed {
    parser: Parser,
    log: Log,
}

/// What is kept of the events.
#[derive(Debug, Clone)]
struct Log {
    last_at: Instant,
    parts: Vec<Duration>,
    max_parts: usize,
    events: u64,
    keep_last: bool,
    last: Vec<u8>,
    done: bool,
}

impl Log {
    fn note(&mut self, at: Instant, e: &Event<'_>) {
        if e.is_done() {
            self.done = true;
            return;
        }
        self.events += 1;
        if self.parts.len() < self.max_parts {
            self.parts.push(at.saturating_duration_since(self.last_at));
        }
        self.last_at = at;
        if self.keep_last {
            self.last.clear();
            self.last.extend_from_slice(e.data());
        }
    }
}

impl Timed {
    /// Times the events `parser` reads from a response whose request started at `start`,
    /// keeping at most `max_parts` times, and the last event's data if `keep_last`.
    pub fn new(parser: Parser, start: Instant, max_parts: usize, keep_last: bool) -> Self {
        Timed {
            parser,
            log: Log {
                last_at: start,
                parts: Vec::new(),
                max_parts,
                events: 0,
                keep_last,
                last: Vec::new(),
                done: false,
            },
        }
    }

    /// Reads a slice of the body that arrived at `at`; `on_event` sees each event it
    /// completes (`[DONE]` too), after it was timed.
    ///
    /// # Errors
    /// The reader's (an event past its cap).
    pub fn feed(
        &mut self,
        at: Instant,
        bytes: &[u8],
        on_event: &mut impl FnMut(Event<'_>),
    ) -> Result<(), StreamError> {
        let log = &mut self.log;
        self.parser.feed(bytes, &mut |e| {
            log.note(at, &e);
            on_event(e);
        })
    }

    /// The end of the body, which arrived at `at` (a last NDJSON line without its newline is
    /// an event of that time).
    ///
    /// # Errors
    /// The reader's.
    pub fn finish(
        &mut self,
        at: Instant,
        on_event: &mut impl FnMut(Event<'_>),
    ) -> Result<Ending, StreamError> {
        let log = &mut self.log;
        self.parser.finish(&mut |e| {
            log.note(at, &e);
            on_event(e);
        })
    }

    /// Events so far (`[DONE]` left out), timed or past the cap.
    pub fn events(&self) -> u64 {
        self.log.events
    }

    /// Whether `[DONE]` came.
    pub fn done(&self) -> bool {
        self.log.done
    }

    /// The last event's data, if kept and one came.
    pub fn last(&self) -> Option<&[u8]> {
        let log = &self.log;
        (log.keep_last && log.events > 0).then_some(log.last.as_slice())
    }

    /// The times so far, handed over (for `Outcome::parts`), leaving none.
    pub fn take_parts(&mut self) -> Vec<Duration> {
        std::mem::take(&mut self.log.parts)
    }
}
