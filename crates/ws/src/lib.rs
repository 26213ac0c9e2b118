//! WebSocket (`ws://`, `wss://`) for throng: a protocol crate on core's open contract
//! ([`throng_core::step::Protocol`] and [`throng_core::step::Client`]) and nothing else, the
//! proof that a protocol is one crate.
//!
//! A user holds one connection, opened by throng-net (TCP, then TLS for `wss`, its bytes
//! counted like every protocol's) with tokio-tungstenite's handshake over it; the handshake is
//! the client's `connect`, timed apart from the requests, and a failed one is its step's
//! outcome (`connect`, `tls`, `timeout`, or `protocol` for an answer other than
//! `101 Switching Protocols`). A step (scenario key `ws`, [`WsStep`]) sends text or binary
//! messages (templated text) and waits for one reply per message sent, a count of messages
//! (`expect`), or whatever the server pushes for a while (`for`); its messages are a parts row,
//! `LABEL (messages)`, each timed from the one before, as a gRPC stream's. The last message is
//! the reply that checks and extraction read (JSON when it parses). Pings are answered by
//! tungstenite; messages are capped ([`WsOptions::max_message`]): one over the cap fails its
//! step with class `protocol`.
//!
//! The main decision, how a close reads: close codes are the protocol's statuses, in a space of
//! their own named `ws` ([`status`]): `ws 0 OK` for a connection still open after its step, else
//! the code the server closed with. A close with a code other than 1000 (or none, 1005) is the
//! server saying the request failed: class `status`, as an HTTP 5xx. A normal close before the
//! step's messages came, or a connection that ends without a close frame, is class `reset`, as
//! a response cut short is in HTTP; a normal close while listening (`for`) ends the step early,
//! as a success. After any failure the connection is dropped and the next step opens another.
//!
//! [`serve`] is a testbed WebSocket server (echo, pushes, delays and faults) to test against.
#![deny(missing_docs)]

mod client;
#[cfg(feature = "clap")]
pub mod flags;
pub mod serve;
pub mod status;
mod step;

pub use client::{WsClient, WsSession, MAX_PARTS};
pub use step::{url_steps, Until, WsOptions, WsProtocol, WsStep, DEFAULT_MAX_MESSAGE};
pub use throng_core::steps::Steps;
