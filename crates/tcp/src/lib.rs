//! Raw TCP as a throng protocol: request-reply exchanges as go-micro's TCP transport and many
//! internal services speak them. A target is `tcp://HOST:PORT`, or `tcps://HOST:PORT` over TLS
//! (throng-net's rustls configuration: the web roots, a CA file, or no verification, as
//! [`ClientOptions`]' `cacert` and `insecure` say, presenting its `identity` to a server that
//! asks for a client certificate; a failed handshake is class `tls`, a
//! completed one the request's `tls` phase); a scenario step is written under `tcp:` (see
//! [`step`]); `throng run tcp://...` runs [`url_steps`]; [`serve`] is the testbed server. It implements core's [`Protocol`](throng_core::step::Protocol) and
//! [`Client`](throng_core::step::Client) and nothing else: the engine, the scenario crate's
//! checks and extraction, and the reports take it as they take HTTP.
//!
//! The main decision: **one request, one framed reply, on one connection per user.** A call
//! writes the request and reads exactly one frame, found by the [`Framing`] of the target or
//! the step (a delimiter, a length prefix of 1, 2, 4 or 8 bytes in either order that may count
//! itself, or a fixed size). The request is framed the same way (its length prefix added, its
//! delimiter appended unless it ends with it) unless [`TcpOptions::frame_request`] is off.
//! Anything that would leave the stream out of step closes the connection, and the next call
//! opens a new one: a failure, a timeout (a late reply would be read as the next one's), and
//! bytes after the frame (a peer answering one request twice).
//!
//! How each ending counts, so a broken target always shows as one:
//!
//! | what happened | class | status |
//! |---|---|---|
//! | a whole frame came | none | `tcp ok` |
//! | it came, but is not the step's `expect` | `check` | `tcp ok` |
//! | it came with bytes after it | `protocol` | `tcp ok` |
//! | the peer closed (FIN) before a whole frame | `reset` | `tcp closed` |
//! | the peer reset (RST), or a write failed | `reset` | none |
//! | no delimiter within the limit, a length over it or malformed | `protocol` | none |
//! | no whole frame within the timeout | `timeout` | none |
//! | refused, unresolvable, or not connected in time | `connect` / `timeout` | none |
//! | `tcps://`: the TLS handshake failed (untrusted certificate, a plain TCP server) | `tls` | none |
//!
//! A reply's payload is at most [`TcpOptions::max_reply`] bytes: a length prefix is refused
//! on its own, before any of its payload is buffered. The [`Reply`](throng_core::step::Reply)
//! carries the payload as its body (and as JSON when it parses), so scenario checks and
//! extraction read it unchanged.
//!
//! Not retried: a peer that closed an idle connection is seen when the next request's reply
//! does not come (`reset`, `tcp closed`), and that request fails rather than being sent again
//! on a new connection, since a raw request may not be safe to send twice.
#![deny(missing_docs)]

mod client;
#[cfg(feature = "clap")]
pub mod flags;
pub mod frame;
pub mod serve;
pub mod status;
pub mod step;

pub use client::{TcpClient, TcpSession};
pub use frame::{Endian, Framing};
pub use step::{Payload, TcpProtocol, TcpStep};

use throng_core::step::ClientOptions;
pub use throng_core::steps::Steps;

/// Raw TCP's own options for its targets ([`ClientOptions::with`], read back with
/// [`ClientOptions::of`]); a plain struct, so the command line maps its flags onto it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpOptions {
    /// How replies (and, with [`TcpOptions::frame_request`], requests) are framed; a step may
    /// set its own.
    pub framing: Framing,
    /// The largest reply payload taken, in bytes; a larger one is class `protocol`.
    pub max_reply: usize,
    /// Frame each request as the reply is framed (its length prefix added, its delimiter
    /// appended if missing); off, requests are sent exactly as written.
    pub frame_request: bool,
}

/// The largest reply taken by default: 1 MiB.
pub const DEFAULT_MAX_REPLY: usize = 1 << 20;

impl Default for TcpOptions {
    fn default() -> Self {
        TcpOptions {
            framing: Framing::default(),
            max_reply: DEFAULT_MAX_REPLY,
            frame_request: true,
        }
    }
}

/// `throng run tcp://HOST:PORT -d ...`: `request` as a one-step plan of a client of its own,
/// with `options` (framing, limit) and the run's timeouts from `client_options`. An error
/// names what is wrong (the URL, a fixed size over the limit, a request that does not fit
/// its length prefix).
pub fn url_steps(
    url: &str,
    request: Payload,
    options: &TcpOptions,
    client_options: &ClientOptions,
) -> Result<Steps<TcpClient>, String> {
    TcpClient::one_step(url, request, options, client_options)
}
