//! throng's HTTP driver: HTTP/1.1 and HTTP/2 on raw hyper connections, TLS by rustls.
//!
//! No pooled client sits between the engine and the socket. In HTTP/1.1 each session (a
//! virtual user, or an in-flight slot of the open loop) owns one connection and drives it in its
//! own task, so a request costs no hop between tasks. In HTTP/2 the sessions of a worker thread
//! share connections, `streams` sessions to one connection. Bytes are counted on the socket, so
//! sent and received totals are what crossed the wire, headers and framing included.
#![deny(missing_docs)]

mod classify;
mod config;
mod driver;
mod step;
mod url;

pub use classify::classify;
pub use config::{HttpConfig, HttpConfigError};
pub use driver::{H2Pool, HttpDriver, Response, Session};
pub use step::HttpProtocol;
pub use url::{parse_url, UrlProblem};
