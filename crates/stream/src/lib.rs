//! Readers of a response body that arrives in parts: server-sent events, NDJSON lines, raw
//! chunks.
//!
//! Each reader is fed the body as the transport hands it over, in slices split anywhere (in
//! the middle of a line, of a CRLF, of a UTF-8 byte-order mark), and calls back once per event
//! as soon as its last byte has arrived, so the caller can time every event on its arrival.
//! However a body is split, the events are the same (the tests feed every split of every case).
//!
//! The main decision: memory is bounded by the event, never by the stream. A reader keeps only
//! the line it is in the middle of and the event it is assembling, each capped (`max_event`
//! bytes); a larger one is [`StreamError::TooLarge`], never unbounded buffering. A line or a
//! chunk that arrived within one slice is handed over without a copy; SSE data is copied once,
//! into the event it belongs to.
//!
//! - [`SseParser`]: `text/event-stream` as the WHATWG HTML standard's EventSource reads it
//!   (section 9.2.6, "Interpreting an event stream"): `data:` lines joined with a newline,
//!   `event:`, `id:` (kept across events, as the standard's last event ID), `retry:`, comments
//!   (`:`), a field with no colon, one leading space of a value stripped, CR, LF and CRLF line
//!   ends, a byte-order mark at the start ignored, an event dispatched on a blank line and an
//!   unfinished one discarded at the end. OpenAI's `data: [DONE]` is recognised
//!   ([`SseEvent::is_done`]).
//! - [`LineParser`]: NDJSON (JSON Lines): an event per line, CRLF or LF, empty lines skipped,
//!   a last line without its newline handed over by [`LineParser::finish`].
//! - [`Parser`]: any of the three by [`Framing`] (`--stream sse|ndjson|chunks`), raw chunks
//!   being each slice as it arrived.
//! - [`Timed`]: a parser's events timed as a driver records them in a parts row: each from
//!   the one before (the first from the request's start), at the arrival of the slice that
//!   completed it, at most so many times kept; the last event's data kept for checks.
//!
//! The readers work on bytes: an event's data is handed over as bytes (JSON parsers take them
//! as they are); [`SseEvent::data_str`] decodes it lossily, as the standard's UTF-8 decode does.
#![deny(missing_docs)]

mod lines;
mod parser;
mod sse;
mod timed;

pub use lines::LineParser;
pub use parser::{Event, Framing, Parser};
pub use sse::{SseEvent, SseParser};
pub use timed::Timed;

/// The cap on an event's size when none is given: 1 MiB (an OpenAI chunk is a few hundred
/// bytes).
pub const DEFAULT_MAX_EVENT: usize = 1024 * 1024;

/// Why a stream could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// An event (or one line of it) is larger than the cap: reading on would buffer without
    /// bound. The reader stays failed.
    #[error("an event of more than {limit} bytes in the stream (the cap on an event's size)")]
    TooLarge {
        /// The cap, in bytes.
        limit: usize,
    },
}

/// How a stream ended, from [`Parser::finish`] and each reader's `finish`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ending {
    /// The stream ended inside an event: bytes of an event that was never completed were
    /// discarded (SSE: no blank line after it). A last NDJSON line without its newline is
    /// handed over, not discarded, and is not partial.
    pub partial: bool,
}
