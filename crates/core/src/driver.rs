use std::future::Future;

use crate::ErrorClass;

/// One step of an iteration as the report names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepInfo {
    /// The row label in the results.
    pub label: String,
}

/// A named span of steps measured as one transaction (a flow): its row counts the iterations
/// that ran through it, timed from the start of its first step to the end of its last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInfo {
    /// The row label in the results.
    pub label: String,
    /// Index of its first step.
    pub first: usize,
    /// Index of its last step (inclusive).
    pub last: usize,
}

/// What one request did. Drivers fill it in; the engine times it and records it.
///
/// Only a failure carries a message: a success allocates nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The protocol's status code (the HTTP status), or 0 when there was none.
    pub status: u16,
    /// The failure's class, if the request failed.
    pub error: Option<ErrorClass>,
    /// A human-readable message for a failure, kept as a sample.
    pub message: Option<String>,
    /// Bytes written to the wire for this request, headers and framing included.
    pub bytes_sent: u64,
    /// Bytes read from the wire for this request, headers and framing included.
    pub bytes_received: u64,
    /// Go on with the rest of the iteration even though this step failed (by default a failure
    /// skips the rest of the iteration).
    pub proceed: bool,
    /// Think time: pause this long after the step, outside its timing.
    pub pause: Option<std::time::Duration>,
}

impl Outcome {
    /// A failed outcome of the given class with a sample message.
    pub fn failed(class: ErrorClass, message: impl Into<String>) -> Self {
        Outcome {
            error: Some(class),
            message: Some(message.into()),
            ..Outcome::default()
        }
    }
}

/// How a protocol sends a step. The engine owns *when*; a driver owns *how*.
///
/// A driver is shared by every worker thread; each virtual user (or each in-flight slot of the
/// open loop) owns one [`Driver::Session`], typically its connection. Sessions live on one
/// worker thread, so neither they nor the futures of [`Driver::execute`] need to be `Send`.
pub trait Driver: Send + Sync + 'static {
    /// Per-user state: a connection, variables, a data-file cursor.
    type Session: 'static;

    /// The steps of one iteration, in order. Each becomes a labelled row of the report.
    fn steps(&self) -> Vec<StepInfo>;

    /// Groups of steps reported as transactions (none by default).
    fn groups(&self) -> Vec<GroupInfo> {
        Vec::new()
    }

    /// A fresh session for user number `user` (0-based, unique across the run).
    fn session(&self, user: u64) -> Self::Session;

    /// Called before each iteration of a session; `false` ends the user (its data ran out).
    fn begin_iteration(&self, _session: &mut Self::Session) -> bool {
        true
    }

    /// Sends step `step` of an iteration and waits for its whole response.
    fn execute(&self, session: &mut Self::Session, step: usize) -> impl Future<Output = Outcome>;

    /// Opens what a session needs before its first request (its connection), for sessions held
    /// in reserve: the open loop's warm pool of slots. A failure is left for the first request
    /// to meet and report. Nothing by default.
    fn prepare(&self, _session: &mut Self::Session) -> impl Future<Output = ()> {
        std::future::ready(())
    }
}
