//! throng's HTTP/2 client engine, one for HTTP/2 and gRPC, built for load generation as the
//! HTTP/1.1 codec is: a step's request headers HPACK-encoded once ([`hpack::Block`]), the
//! connection a state machine without I/O ([`conn::Conn`]: frames, flow control both ways,
//! SETTINGS, PING, GOAWAY, RST_STREAM, CONTINUATION), many streams' frames written in one
//! system call by one task per connection, and no lock, channel or task per stream
//! ([`client::Client`], for the single-threaded workers of the engine); a worker's pool of
//! connections for both protocols ([`pool::Pool`]).
//!
//! Our own HPACK rather than a crate's, and why: `docs/ARCHITECTURE.md`, "The HTTP/2 engine".
#![deny(missing_docs)]

pub mod client;
pub mod conn;
pub mod frame;
pub mod hpack;
pub mod pool;
