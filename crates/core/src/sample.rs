//! One request as it happened, for a per-request log (`--samples`, JMeter's JTL). Kept only
//! when asked: the engine's usual record is histograms and counters, whatever the run's length.

use crate::{ErrorClass, Status};

/// One request (or one cut off by the end of the run).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The step's index (its row label).
    pub step: u32,
    /// The worker that sent it.
    pub worker: u32,
    /// The virtual user (closed loop) or in-flight slot (open loop) that sent it, plan-wide.
    pub user: u64,
    /// Users alive (closed loop) or requests in flight (open loop) on its worker then.
    pub active: u64,
    /// When it was due, µs since the run's start (its latency counts from here).
    pub due_us: u64,
    /// Latency: from due to the end of the answer, µs.
    pub latency_us: u64,
    /// Service time: from sending to the end of the answer, µs (0 if never sent).
    pub service_us: u64,
    /// The protocol's status, if an answer came.
    pub status: Status,
    /// The failure's class, if it failed.
    pub error: Option<ErrorClass>,
    /// The failure's message (none for a success).
    pub message: Option<String>,
    /// Bytes written.
    pub bytes_sent: u64,
    /// Bytes read.
    pub bytes_received: u64,
    /// Time to first byte: from due to the answer's first byte, µs, when the protocol times its
    /// phases (see [`crate::phase`]); 0 when no byte of an answer came.
    pub first_byte_us: Option<u64>,
    /// The connection's opening (connect and TLS) for this request, µs; 0 on a reused
    /// connection, or when the protocol does not time it.
    pub connect_us: u64,
}
