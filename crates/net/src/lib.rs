//! Network plumbing every protocol on TCP needs, in one place: opening a connection (TCP to the
//! first address that accepts, then TLS, within the connect timeout: [`open`]), a TCP stream that counts the
//! bytes each way (under TLS, the encrypted bytes, as they cross the wire), plain or TLS
//! [`Stream`]s over it, the rustls client configuration (web roots, a CA file, or no
//! verification; a client certificate for mutual TLS), the classes of I/O and TLS failures, and a connection the sessions of a worker
//! share ([`SharedConn`]: HTTP/2's and gRPC's), and the small GET that reads a server's
//! monitoring endpoint beside a run ([`get::Endpoint`]).
//!
//! The decision: protocols own their framing (hyper for HTTP, tonic for gRPC) but not their
//! sockets, so bytes are counted and failures classified the same way for all of them.
#![deny(missing_docs)]

mod classify;
mod connect;
pub mod get;
pub mod io;
mod shared;
pub mod tls;

pub use classify::{classify_io, message};
pub use connect::{authority, handshake, open, open_timed, Opened, TlsTarget};
pub use io::{CountedTcp, Counters, Stream};
pub use shared::SharedConn;
pub use tls::{
    client_config, client_config_any_name, load_identity, self_signed, self_signed_requiring,
    server_name, trust, TestCa, TlsError, TlsOptions,
};
