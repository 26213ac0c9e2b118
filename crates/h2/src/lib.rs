//! throng's HTTP/2 client engine, shared by HTTP/2 and gRPC: HPACK ([`hpack`]).
#![deny(missing_docs)]

pub mod client;
pub mod conn;
pub mod frame;
pub mod hpack;
