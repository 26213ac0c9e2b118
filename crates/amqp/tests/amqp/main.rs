//! throng-amqp through the engine against Debian's rabbitmq-server (a node per test binary on
//! free ports, shared, and nodes of their own for the tests that kill one) and an RPC
//! responder on Debian's amqp091-go (a Go program built offline, `responder.go`): replies
//! matched and counted as the responder counted them, publish–consume's accounting, a
//! scenario's checks, and the fault matrix, each load bounded in count and time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod faults;
mod monitor;
mod publish;
mod rpc;
mod scenario;
mod tls;
