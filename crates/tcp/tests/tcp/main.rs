//! Raw TCP end to end: loads run by the engine (closed and open loop) and a scenario, against
//! the crate's own testbed server and against servers no one here wrote (Python's
//! `socketserver`, `http.server` and `ssl`), through every framing and every fault, plain and
//! over TLS (`tcps://`), each run bounded in count and time and its counts checked against
//! the server's.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;
mod faults;
mod framing;
mod peers;
mod scenario;
mod tls;
