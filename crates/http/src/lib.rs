//! throng's HTTP driver: HTTP/1.1 on throng's own lean codec (responses parsed by httparse),
//! HTTP/2 on throng's own engine (throng-h2), TLS by rustls (through throng-net).
//!
//! No pooled client sits between the engine and the socket. In HTTP/1.1 each session (a
//! virtual user, or an in-flight slot of the open loop) owns one connection and reads and writes
//! it inline in its own task: no dispatcher, no channel, no hop between tasks. A request with no
//! template (`throng run URL`'s, [`HttpClient::one_step`]) is serialized once for the whole run
//! and written with one write; the response is
//! read into the connection's buffer (4 KiB, grown only while a large body streams through) and
//! only its framing headers are looked at unless a check or an extraction needs the rest. In HTTP/2 the sessions of a worker thread
//! share connections, `streams` sessions to one connection. Bytes are counted on the socket, so
//! sent and received totals are what crossed the wire, headers and framing included.
//!
//! Every request reports its phases in its `Outcome` (`throng_core::phase`): the connection's
//! TCP connect and TLS handshake for the first request on it, then sending, waiting for the
//! first byte and receiving (HTTP/1.1: four reads of the clock a request; HTTP/2: the times of
//! the write that carried the request and of the reads that brought its head and its end, from
//! the connection's task). Without keep-alive every request opens its own connection.
#![deny(missing_docs)]

mod codec;
mod config;
mod driver;
#[cfg(feature = "clap")]
pub mod flags;
mod llm;
pub mod status;
mod step;
mod stream;
mod url;

pub use config::{HttpConfig, HttpConfigError};
pub use driver::{H2Pool, HttpDriver, HttpRequest, Response, Session};
pub use step::{HttpClient, HttpOptions, HttpProtocol, HttpStep, PerCall};
pub use stream::StreamMode;
pub use url::{parse_url, UrlProblem};
