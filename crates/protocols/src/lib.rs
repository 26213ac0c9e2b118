//! The protocols throng ships, in one list: [`registry`] registers each once, its declaration
//! and (feature `clap`) the types of its flags of `throng run` and of its testbed server,
//! paired with it. [`protocols`] is what scenario files find their targets' and steps'
//! protocols in; the command line (`throng-cli`) is a [`Registrar`] that reads the same list
//! into its flags, so that it asks them through core's
//! [`throng_core::flags::ProtocolFlags`] and names none. Adding a protocol to throng is its
//! own crate and a line in [`registry`].
//!
//! Features: `grpc` (gRPC targets), `sql` (PostgreSQL and MySQL/MariaDB), `sqlite` (SQLite
//! too), `clap` (each protocol's flags as clap types, for a registrar that reads them). HTTP,
//! raw TCP, WebSocket, NATS and RabbitMQ are always in.
//!
//! Why this crate knows clap at all (behind `clap`, which only throng-cli turns on): a
//! registry line names its flags' type, and Rust checks a generic's bounds where the type is
//! named, so [`Registrar::flags`] must say `F: clap::Args + clap::FromArgMatches` for
//! throng-cli's registrar to read the type into clap; an impl cannot add a bound to a trait's
//! method. Without clap here, the list would have to be a macro that throng-cli expands (each
//! line's `#[cfg(feature = ...)]` then read against throng-cli's features, not this crate's),
//! or every flags type would hand core its clap functions as plain pointers (a second,
//! clap-shaped contract beside core's `ProtocolFlags`). Both cost more than an optional
//! dependency that nothing below the command line turns on.
#![deny(missing_docs)]

use std::sync::Arc;

use throng_core::step::{Protocols, StepProtocol};

/// What reads the registry: each protocol's declaration and, with feature `clap`, the types of
/// its flags (a clap struct implementing core's
/// [`ProtocolFlags`](throng_core::flags::ProtocolFlags)) and of its testbed server's, paired
/// with it by the line that registers it (nothing matches flags to a protocol by name).
pub trait Registrar {
    /// A protocol of this build, with no flags of its own.
    fn protocol(&mut self, protocol: Arc<dyn StepProtocol>);
    /// A protocol of this build with its flags `F`.
    #[cfg(feature = "clap")]
    fn flags<F>(&mut self, protocol: Arc<dyn StepProtocol>)
    where
        F: throng_core::flags::ProtocolFlags + clap::Args + clap::FromArgMatches + Default;
    /// The testbed server `S` of the protocol registered last (`throng serve S::NAME`).
    #[cfg(feature = "clap")]
    fn server<S>(&mut self)
    where
        S: throng_core::flags::ServeFlags + clap::Args + clap::FromArgMatches;
}

/// A protocol's registration from its declaration, its flags' type and, after `serve:`, its
/// testbed server's (both ignored without feature `clap`).
macro_rules! register {
    ($r:expr, $protocol:expr, $flags:ty, serve: $serve:ty) => {{
        register!($r, $protocol, $flags);
        #[cfg(feature = "clap")]
        $r.server::<$serve>();
    }};
    ($r:expr, $protocol:expr, $flags:ty) => {{
        let protocol: Arc<dyn StepProtocol> = Arc::new($protocol);
        #[cfg(feature = "clap")]
        $r.flags::<$flags>(protocol);
        #[cfg(not(feature = "clap"))]
        $r.protocol(protocol);
    }};
}

/// Every protocol of this build, each once, told to `r`. Adding a protocol to throng is its
/// crate and a line here.
#[rustfmt::skip] // a line a protocol
pub fn registry(r: &mut impl Registrar) {
    register!(r, throng_http::HttpProtocol, throng_http::flags::HttpFlags, serve: throng_http::flags::LlmServe);
    register!(r, throng_tcp::TcpProtocol, throng_tcp::flags::TcpFlags, serve: throng_tcp::flags::TcpServe);
    register!(r, throng_ws::WsProtocol, throng_ws::flags::WsFlags, serve: throng_ws::flags::WsServe);
    register!(r, throng_nats::NatsProtocol, throng_nats::flags::NatsFlags);
    register!(r, throng_amqp::AmqpProtocol, throng_amqp::flags::AmqpFlags);
    #[cfg(feature = "sql")]
    register!(r, throng_sql::SqlProtocol, throng_sql::flags::SqlFlags);
    #[cfg(feature = "grpc")]
    register!(r, throng_grpc::GrpcProtocol, throng_grpc::flags::GrpcFlags);
}

/// The declarations alone.
struct Declared(Protocols);

impl Registrar for Declared {
    fn protocol(&mut self, protocol: Arc<dyn StepProtocol>) {
        self.0 = std::mem::take(&mut self.0).with_declared(protocol);
    }

    #[cfg(feature = "clap")]
    fn flags<F>(&mut self, protocol: Arc<dyn StepProtocol>)
    where
        F: throng_core::flags::ProtocolFlags + clap::Args + clap::FromArgMatches + Default,
    {
        self.protocol(protocol);
    }

    #[cfg(feature = "clap")]
    fn server<S>(&mut self)
    where
        S: throng_core::flags::ServeFlags + clap::Args + clap::FromArgMatches,
    {
    }
}

/// Every protocol of this build, for scenarios: targets and steps find theirs by the URL
/// schemes and the step key each protocol declares (`http://` and `request`, `grpc://` and
/// `grpc`, `nats://` and `nats`, ...: [`registry`]'s lines, in their order).
pub fn protocols() -> Protocols {
    let mut d = Declared(Protocols::new());
    registry(&mut d);
    d.0
}
