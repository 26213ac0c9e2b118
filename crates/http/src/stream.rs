//! A response read as a stream of events (`--stream sse|ndjson|chunks`, a step's `stream:`):
//! what a session holds while the body arrives, and what the outcome takes from it.
//!
//! The reading lives in the session, not in the request's future: a request timeout drops
//! that future, and the events that came before it still count. The codec hands it each
//! slice of a 2xx body as it leaves the read buffer (chunk framing never reaches it), with
//! the time of the read that brought it; the body itself is not kept, only the last event
//! (when a check or an extraction asks), so memory is one event however long the stream.

use std::time::Instant;

use throng_core::stream::StreamRecord;
use throng_core::{ErrorClass, Outcome};
use throng_llm::{Answer, Api};
use throng_stream::{Framing, Parser, StreamError, Timed, DEFAULT_MAX_EVENT};

/// The most parts one response times (the events past it are counted, not timed): 65,536, as
/// WebSocket's.
pub(crate) const MAX_PARTS: usize = 1 << 16;

/// The most of a non-2xx body kept for checks when the response was to be read as a stream:
/// an error's body is not the stream, and is kept as any response's is, up to 64 KiB (what is
/// past it is counted, not kept: a server may answer an error with an endless body).
pub(crate) const MAX_ERROR_BODY: usize = 64 * 1024;

/// How a step's response is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamMode {
    /// As events of a framing, each a part (`--stream sse|ndjson|chunks`).
    Events(Framing),
    /// As an OpenAI-compatible answer (server-sent events of JSON chunks, `--llm`): the
    /// parts are the events with content, the first the time to first token.
    Llm(Api),
}

impl StreamMode {
    /// The name of the row timing its parts, after the step's label: `events` or `tokens`.
    pub(crate) fn parts_name(self) -> &'static str {
        match self {
            StreamMode::Events(_) => "events",
            StreamMode::Llm(_) => "tokens",
        }
    }
}

#[derive(Debug)]
enum Kind {
    Events(Timed),
    Llm(Answer),
}

/// One response being read as events.
#[derive(Debug)]
pub(crate) struct Reading {
    kind: Kind,
    /// The reader failed (an event past its cap): it reads no more.
    error: Option<StreamError>,
    /// The body ended inside an event.
    partial: bool,
}

impl Reading {
    /// A reading of the response to a request started at `start`; `keep_last` keeps the last
    /// event's data for a check or an extraction.
    pub(crate) fn new(mode: StreamMode, start: Instant, keep_last: bool) -> Self {
        let kind = match mode {
            StreamMode::Events(framing) => Kind::Events(Timed::new(
                Parser::new(framing, DEFAULT_MAX_EVENT),
                start,
                MAX_PARTS,
                keep_last,
            )),
            StreamMode::Llm(api) => Kind::Llm(Answer::new(
                api,
                Framing::Sse,
                DEFAULT_MAX_EVENT,
                start,
                MAX_PARTS,
            )),
        };
        Reading {
            kind,
            error: None,
            partial: false,
        }
    }

    /// A slice of the body, arrived at `at`.
    pub(crate) fn feed(&mut self, at: Instant, bytes: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let r = match &mut self.kind {
            Kind::Events(t) => t.feed(at, bytes, &mut |_| {}),
            Kind::Llm(a) => a.feed(at, bytes),
        };
        self.error = r.err();
    }

    /// The body's end, arrived at `at`.
    pub(crate) fn finish(&mut self, at: Instant) {
        if self.error.is_some() {
            return;
        }
        let r = match &mut self.kind {
            Kind::Events(t) => t.finish(at, &mut |_| {}),
            Kind::Llm(a) => a.finish(),
        };
        match r {
            Ok(ending) => self.partial = ending.partial,
            Err(e) => self.error = Some(e),
        }
    }

    /// The events so far (an answer's: those with content).
    fn events(&self) -> u64 {
        match &self.kind {
            Kind::Events(t) => t.events(),
            Kind::Llm(a) => a.figures().content_events,
        }
    }

    /// The last event's data, if kept (an answer keeps none).
    pub(crate) fn last(&self) -> Option<&[u8]> {
        match &self.kind {
            Kind::Events(t) => t.last(),
            Kind::Llm(_) => None,
        }
    }

    /// Puts what the stream said into the request's outcome: its parts, and its failure. A
    /// connection reset or closed after at least one event is `cut` (the events still count);
    /// a response that came whole is failed by an event past the cap (`protocol`), a body
    /// that ended inside an event (`cut`), or, for an answer, a chunk that is not JSON
    /// (`protocol`) or the server's error in the stream (`status`).
    pub(crate) fn into_outcome(mut self, outcome: &mut Outcome) {
        outcome.parts = match &mut self.kind {
            Kind::Events(t) => t.take_parts(),
            Kind::Llm(a) => {
                let f = a.figures();
                outcome.stream = Some(Box::new(StreamRecord {
                    first: f.ttft,
                    last: f.e2e,
                    tokens: f.output_tokens,
                    counted: f.source == throng_llm::TokenSource::Counted,
                }));
                a.take_parts()
            }
        };
        let events = self.events();
        match outcome.error {
            Some(ErrorClass::Reset) if events > 0 => {
                let why = outcome.message.take().unwrap_or_default();
                outcome.error = Some(ErrorClass::Cut);
                outcome.message = Some(format!(
                    "the stream was cut off after {events} {}: {why}",
                    if events == 1 { "event" } else { "events" }
                ));
            }
            Some(_) => {}
            None => {
                let failure = if let Some(e) = &self.error {
                    Some((ErrorClass::Protocol, e.to_string()))
                } else if let Kind::Llm(a) = &self.kind {
                    a.failure().map(|f| match f {
                        throng_llm::ChunkError::NotJson(_) => (ErrorClass::Protocol, f.to_string()),
                        throng_llm::ChunkError::Server(_) => (ErrorClass::Status, f.to_string()),
                    })
                } else {
                    None
                };
                let failure = failure.or_else(|| {
                    self.partial.then(|| {
                        (
                            ErrorClass::Cut,
                            format!("the stream ended inside an event, after {events} events"),
                        )
                    })
                });
                if let Some((class, message)) = failure {
                    outcome.error = Some(class);
                    outcome.message = Some(message);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sum(parts: &[Duration]) -> Duration {
        parts.iter().sum()
    }

    #[test]
    fn a_cut_after_events_is_cut_and_before_any_is_reset() {
        let start = Instant::now();
        let mode = StreamMode::Events(Framing::Sse);
        let mut r = Reading::new(mode, start, true);
        r.feed(
            start + Duration::from_millis(5),
            b"data: a\n\ndata: b\n\ndata: c",
        );
        let mut o = Outcome::failed(ErrorClass::Reset, "closed");
        r.into_outcome(&mut o);
        assert_eq!(o.error, Some(ErrorClass::Cut));
        assert_eq!(o.parts.len(), 2);
        assert_eq!(sum(&o.parts), Duration::from_millis(5));
        assert!(o.message.unwrap().contains("after 2 events"));

        let r = Reading::new(mode, start, true);
        let mut o = Outcome::failed(ErrorClass::Reset, "closed");
        r.into_outcome(&mut o);
        assert_eq!((o.error, o.parts.len()), (Some(ErrorClass::Reset), 0));

        // Whole, but ending inside an event.
        let mut r = Reading::new(mode, start, true);
        r.feed(start, b"data: a\n\ndata: b");
        r.finish(start);
        let mut o = Outcome::default();
        r.into_outcome(&mut o);
        assert_eq!((o.error, o.parts.len()), (Some(ErrorClass::Cut), 1));

        // An event past the cap.
        let mut r = Reading::new(StreamMode::Events(Framing::Ndjson), start, false);
        r.feed(start, &vec![b'x'; DEFAULT_MAX_EVENT + 100]);
        r.finish(start);
        let mut o = Outcome::default();
        r.into_outcome(&mut o);
        assert_eq!(o.error, Some(ErrorClass::Protocol));
    }

    #[test]
    fn an_answer_with_the_servers_error_is_a_status_failure() {
        let start = Instant::now();
        let mut r = Reading::new(StreamMode::Llm(Api::Chat), start, false);
        r.feed(
            start,
            b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n\
              data: {\"error\":{\"message\":\"overloaded\"}}\n\n",
        );
        r.finish(start);
        let mut o = Outcome::default();
        r.into_outcome(&mut o);
        assert_eq!((o.error, o.parts.len()), (Some(ErrorClass::Status), 1));
        assert!(o.message.unwrap().contains("overloaded"));
    }
}
