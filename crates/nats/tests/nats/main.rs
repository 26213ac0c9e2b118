//! throng-nats through the engine against Debian's nats-server (started by the tests on free
//! ports, with its monitoring endpoint) and a responder on Debian's nats.go (a Go program built
//! offline, `responder.go`): exact counts checked against the server's own `/varz`, the
//! publish–consume accounting, a scenario's checks, the server's counters beside a run, and
//! the fault matrix, plain and over TLS (`tls://`), each load bounded in count and time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod faults;
mod monitor;
mod publish;
mod request;
mod scenario;
mod tls;
