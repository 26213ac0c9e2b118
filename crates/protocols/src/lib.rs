//! The protocols throng ships, in one list: [`registry`] registers each once, its declaration
//! and (feature `clap`) its flags of `throng run` paired with it. [`protocols`] is what
//! scenario files find their targets' and steps' protocols in, and [`flags::ProtocolArgs`]
//! holds every registered protocol's flags, so that the command line asks them through
//! [`throng_run::flags::ProtocolFlags`] and names none. Adding a protocol to throng is its own
//! crate and a line in [`registry`].
//!
//! [`flags::scenario`] makes a scenario file's run under those flags: the file's load section under
//! the flags, its targets pointed where they say, its steps compiled into one driver.
//!
//! Features: `grpc` (gRPC targets), `sql` (PostgreSQL and MySQL/MariaDB), `sqlite` (SQLite
//! too), `clap` (the flags). HTTP is always in.
#![deny(missing_docs)]

#[cfg(feature = "clap")]
pub mod flags;

use std::sync::Arc;

use throng_core::step::{Protocols, StepProtocol};

/// One protocol of this build, registered once: its declaration and, with feature `clap`, its
/// own flags of `throng run`, paired with it (nothing matches flags to a protocol by name).
pub struct Registered {
    /// The protocol's declaration.
    pub protocol: Arc<dyn StepProtocol>,
    /// Its flags on the command line.
    #[cfg(feature = "clap")]
    pub flags: throng_run::flags::Registration,
}

impl std::fmt::Debug for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registered")
            .field("protocol", &self.protocol.name())
            .finish_non_exhaustive()
    }
}

/// A protocol's registration from its declaration, its flags' clap struct and, after `serve:`,
/// its testbed server's (both ignored without feature `clap`).
macro_rules! register {
    (typed $protocol:expr, $flags:ty, serve: $serve:ty) => {{
        #[allow(unused_mut)]
        let mut r = register!(typed $protocol, $flags);
        #[cfg(feature = "clap")]
        {
            r.flags = r.flags.serving_typed::<$serve>();
        }
        r
    }};
    (typed $protocol:expr, $flags:ty) => {{
        #[cfg(feature = "clap")]
        let r = {
            let flags = throng_run::flags::Registration::typed::<$flags>($protocol);
            Registered {
                protocol: flags.protocol.clone(),
                flags,
            }
        };
        #[cfg(not(feature = "clap"))]
        let r = Registered {
            protocol: Arc::new($protocol),
        };
        r
    }};
    ($protocol:expr, $flags:ty, serve: $serve:ty) => {{
        #[allow(unused_mut)]
        let mut r = register!($protocol, $flags);
        #[cfg(feature = "clap")]
        {
            r.flags = r.flags.serving::<$serve>();
        }
        r
    }};
    ($protocol:expr, $flags:ty) => {{
        #[cfg(feature = "clap")]
        let r = {
            let flags = throng_run::flags::Registration::new::<$flags>($protocol);
            Registered {
                protocol: flags.protocol.clone(),
                flags,
            }
        };
        #[cfg(not(feature = "clap"))]
        let r = Registered {
            protocol: Arc::new($protocol),
        };
        r
    }};
}

/// Every protocol of this build, each once. Adding a protocol to throng is its crate and a
/// line here.
#[rustfmt::skip] // a line a protocol
pub fn registry() -> Vec<Registered> {
    #[allow(unused_mut)] // without the features, the protocols always in alone
    let mut all = vec![register!(typed throng_http::HttpProtocol, throng_http::flags::HttpFlags)];
    all.push(register!(typed throng_tcp::TcpProtocol, throng_tcp::flags::TcpFlags, serve: throng_tcp::flags::TcpServe));
    all.push(register!(typed throng_ws::WsProtocol, throng_ws::flags::WsFlags, serve: throng_ws::flags::WsServe));
    #[cfg(feature = "sql")]
    all.push(register!(typed throng_sql::SqlProtocol, throng_sql::flags::SqlFlags));
    #[cfg(feature = "grpc")]
    all.push(register!(typed throng_grpc::GrpcProtocol, throng_grpc::flags::GrpcFlags));
    all
}

/// Every protocol of this build, for scenarios: targets and steps find theirs by URL scheme
/// (`http://`, `https://`, `grpc://`, `grpcs://`, `postgres://`, `mysql://`, `sqlite://`) and
/// step key (`request`, `grpc`, `sql`).
pub fn protocols() -> Protocols {
    registry()
        .into_iter()
        .fold(Protocols::new(), |p, r| p.with_declared(r.protocol))
}
