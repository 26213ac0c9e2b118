use std::future::Future;

use crate::ErrorClass;

/// One step of an iteration as the report names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepInfo {
    /// The row label in the results.
    pub label: String,
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

    /// A fresh session for user number `user` (0-based, unique across the run).
    fn session(&self, user: u64) -> Self::Session;

    /// Sends step `step` of an iteration and waits for its whole response.
    fn execute(&self, session: &mut Self::Session, step: usize) -> impl Future<Output = Outcome>;
}
