//! throng's view of the target's containers: a small Docker Engine API client over the Unix
//! socket, the arithmetic of `docker stats`, and a monitor that samples containers during a run.
//!
//! The main decision is to speak the API ourselves, on the same hyper the HTTP driver uses,
//! rather than depend on bollard: throng needs four GET endpoints (ping, container list and
//! inspect, streamed stats, image inspect) and about fifteen fields, and it must negotiate the
//! API version itself (Docker 20.10 speaks 1.41, Docker 29 refuses anything below 1.44).
//! throng never changes anything through the socket.
//!
//! The numbers are the `docker stats` command's ([`stats`]), so they agree with what users see
//! there. Sampling never holds up the load: see [`monitor`].
#![deny(missing_docs)]

pub mod api;
mod client;
mod error;
pub mod monitor;
pub mod stats;

pub use client::{
    encode, socket_from, ApiVersion, Client, StatsStream, DEFAULT_SOCKET, MAX_API_VERSION,
};
pub use error::DockerError;
pub use monitor::{Monitor, Sampling, Selection};
