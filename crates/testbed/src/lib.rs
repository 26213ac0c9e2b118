//! Targets for throng's demo, tests and benchmarks, bound to loopback.
//!
//! [`HttpTarget`] is an HTTP/1.1 and HTTP/2 server (cleartext or TLS with a self-signed
//! certificate) whose timing and failures are known in advance: a fixed or random delay, a
//! status code, a stall window in which it answers nothing, and connection-level faults (resets,
//! garbage instead of HTTP, silence). It counts the requests it answered, so tests can check
//! throng's counts against the server's own.
#![deny(missing_docs)]

mod http_target;

pub use http_target::{Delay, Fault, HttpTarget, RunningTarget, TargetError};
