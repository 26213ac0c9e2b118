//! throng-ws through the engine, against its own testbed server and against a WebSocket server
//! no one here wrote (Python's `websockets`): exact counts, the parts row's timing, checks and
//! extraction through a scenario, and the fault matrix, each bounded in count and time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod engine;
mod faults;
mod foreign;
mod scenario;
