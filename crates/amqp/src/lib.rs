//! RabbitMQ (AMQP 0.9.1, `amqp://USER:PASS@HOST:PORT/VHOST`, and `amqps://` over TLS) for
//! throng, on lapin: a protocol crate on core's open contract ([`throng_core::step::Protocol`] and
//! [`throng_core::step::Client`]) and nothing else, registered by one line of
//! `throng_protocols::registry()`.
//!
//! A message goes to an exchange (`--exchange NAME`; the default exchange when absent, where
//! the routing key names the queue) with a routing key (`--routing-key KEY`, or the URL's
//! `?routing_key=`; the same keys in an `amqp:` scenario step). Two kinds of step
//! ([`AmqpStep`]), each a message with a templated payload and headers:
//!
//! - **RPC** (`rpc`, the default): the request is published (mandatory, on a channel in
//!   confirm mode) with `reply-to: amq.rabbitmq.reply-to` and a correlation id; the reply comes
//!   back on RabbitMQ's direct reply-to, is matched by its correlation id, and the step's time
//!   is from the publish to the reply. A reply is `amqp 0 OK`; a request the broker cannot
//!   route (no queue bound) is returned, `amqp 312 NO_ROUTE`, class `status`; a nack is
//!   `amqp NACKED`; no reply within `-t` is class `timeout` (a queue that no one consumes, a
//!   slow responder), or `connect` when the connection is gone at the time (the broker went
//!   away).
//! - **Publish–consume** (`publish`): the message is published (mandatory; publisher confirms
//!   on or off) and consumed by throng's own consumer (see [`consume`]: consumer
//!   acknowledgements on or off, a prefetch); the step ends at its delivery. Its latency is
//!   **from the message's intended start to its delivery**: in the open loop the intended
//!   start is the arrival's time in the schedule, so a publish held up counts, and no
//!   coordinated omission hides it. Each message carries its send time (the `throng-sent`
//!   header, nanoseconds since the Unix epoch). With confirms, a returned message is
//!   `amqp 312 NO_ROUTE` and a nacked one `amqp NACKED`; a message not delivered within `-t`
//!   is **lost** (class `timeout`, or `connect` with the connection gone). The driver's report
//!   (the JSON's `protocol_counts`) holds `amqp_published`, `amqp_delivered`, `amqp_lost`,
//!   `amqp_returned`, `amqp_nacked` and `amqp_in_flight_at_end`, which add up: published =
//!   delivered + lost + returned + nacked + in flight at the end; and `amqp_redelivered`,
//!   `amqp_duplicated`, `amqp_late`, `amqp_foreign`. Without confirms a returned message is
//!   not seen by the publisher: it is lost.
//!
//! The main decision, connections: a worker thread's users share one AMQP connection (made by
//! the first of them that needs it, timed apart from the steps) with one channel for RPC and
//! one for publishing, as a service's clients hold one each; RPC's replies arrive on one
//! direct reply-to consumer per connection and are handed to each request by correlation id.
//! lapin does not reconnect: a connection found gone is made again by the next call, so a
//! broker that comes back is used again, and one that is down fails the connect (class
//! `connect`, the engine backs off). Bad credentials are the broker's `403 ACCESS_REFUSED`
//! and a vhost that does not exist its `530 NOT_ALLOWED`, class `status` at connect.
//!
//! With `amqps://` (port 5671 by default) every connection, throng's consumer's too, is TLS from
//! its first byte, with throng-net's rustls configuration (the web roots, `--cacert`, or none
//! with `--insecure`; a client certificate with `--cert` and `--key`). throng opens the stream
//! itself and hands it to lapin
//! (`Connection::connector`), so lapin brings no TLS backend or roots of its own (its stream
//! type's rustls variant only, tcp-stream's `rustls-futures`), and the TCP connect and the
//! handshake are timed: the `connect` and `tls` phases of the first call of the user that
//! opened the connection (`Before` when opened by `connect`, outside the step's latency). The
//! other calls report no phases (AMQP's own are not timed): a row's phases count the openings
//! only, none as reused. A failed handshake (an untrusted certificate, a broker's plain
//! listener, which answers a ClientHello with AMQP's protocol header) is class `tls`, at once;
//! a CA file or client certificate that cannot be used, or `--cacert` or `--cert` on
//! `amqp://`, is an error before any load.
//!
//! Bytes are the messages' payloads, each way (AMQP's frames and properties are not counted).
//!
//! [`monitor`] reads the broker's own counters (its management API) beside any run
//! (`--amqp-monitor URL`), as SQL's `--db-stats` reads a database's.
#![deny(missing_docs)]

mod client;
pub mod consume;
#[cfg(feature = "clap")]
pub mod flags;
pub mod monitor;
mod rpc;
pub mod status;
mod step;
mod target;

pub use client::{AmqpClient, AmqpSession, AmqpWorker, REPLY_TO};
pub use step::{url_steps, AmqpOptions, AmqpProtocol, AmqpStep, Mode};
pub use throng_core::steps::Steps;
