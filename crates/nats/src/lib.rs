//! NATS (`nats://HOST:PORT/SUBJECT`, and `tls://HOST:PORT/SUBJECT` over TLS) for throng, on
//! async-nats: a protocol crate on core's
//! open contract ([`throng_core::step::Protocol`] and [`throng_core::step::Client`]) and
//! nothing else, registered by one line of `throng_protocols::registry()`.
//!
//! Two kinds of step (scenario key `nats`, [`NatsStep`]), each a message with a templated
//! payload and headers:
//!
//! - **Request–reply** (`request`, the default): a request to the subject, its reply timed.
//!   A reply is `nats 0 OK`; the server's "no responders" (status 503, nobody subscribed to
//!   the subject) is `nats 503 NO_RESPONDERS`, class `status`; a NATS micro service's error
//!   (`Nats-Service-Error-Code`) is its code, class `status`; no reply within `-t` is class
//!   `timeout`, or `connect` when the connection is down at the time (the server went away and
//!   async-nats is connecting again).
//! - **Publish–consume** (`publish`): the message published on the subject and consumed by
//!   throng's own subscribers on it (`--subscribers N`, each on a connection of its own, a
//!   fan-out of N: see [`consume`]); the step ends when every subscriber has received it.
//!   Its latency is therefore **from the message's intended start to its delivery to the last
//!   subscriber**: in the open loop the intended start is the arrival's time in the schedule,
//!   so a publish held up (a client buffer full, a server stalled) counts in the latency, as
//!   every request's does, and no coordinated omission hides it; in the closed loop it is
//!   the publish itself. It includes handing the delivery over from the subscribers' thread to
//!   the publishing worker (a thread wake-up, a few microseconds). The parts row
//!   `LABEL (deliveries)` times each subscriber's delivery as that subscriber saw it: the first
//!   from the publish call (no hand-over), each next one from the one before. A message not
//!   delivered to every subscriber within `-t` is **lost** (class `timeout`, or `connect` with
//!   the connection down); a delivery after that is **late**, a second delivery to one
//!   subscriber **duplicated**, and a message on the subject no user of the run published
//!   **foreign**. The driver's report (the JSON's `protocol_counts`) holds `nats_published`,
//!   `nats_delivered`, `nats_lost` and `nats_in_flight_at_end`, which add up:
//!   published = delivered + lost + in flight at the end.
//!
//! The main decision, connections: a worker thread's users share one NATS connection (made by
//! the first of them that needs it, timed apart from the steps), as NATS clients do: a
//! connection multiplexes every request (replies come back on one inbox subscription) and a
//! service's clients hold one each. A connection per user would measure the server's
//! connection handling instead. A server that is down fails the connect (class `connect`,
//! the engine backs off); one that goes away mid-run is reconnected to by async-nats, and
//! the calls meanwhile fail as said above.
//!
//! With JetStream (`--jetstream`, [`NatsOptions::jetstream`]) a message is published to the
//! stream that holds the subject and its acknowledgement (the message stored) awaited before
//! it counts as published, and each subscriber is an ordered JetStream consumer of that stream
//! (no acks, from the next message on) instead of a core subscription: the latency then runs
//! to the last consumer's delivery, the store included. A subject no stream holds is the
//! server's "no responders" (`nats 503`), when publishing and when the consumers start.
//!
//! With `tls://` every connection (the users' and the subscribers') requires TLS after the
//! server's `INFO`, as NATS's own clients do, with throng-net's rustls configuration (the web
//! roots, `--cacert`, or none with `--insecure`; a client certificate with `--cert` and `--key`,
//! in the rustls configuration async-nats is given); a failed handshake (an untrusted certificate,
//! a server without TLS) is class `tls`. async-nats owns the connection, so its handshake is
//! not a phase of its own: it is inside the connect, timed apart from the steps.
//!
//! Bytes are the messages' own: subject, headers and payload sent; the reply's size as
//! async-nats counts it received (NATS's protocol lines are not counted).
//!
//! [`monitor`] reads the server's own counters (`/varz`) beside any run
//! (`--nats-monitor URL`), as SQL's `--db-stats` reads a database's.
#![deny(missing_docs)]

mod client;
pub mod consume;
#[cfg(feature = "clap")]
pub mod flags;
pub mod monitor;
pub mod status;
mod step;
mod target;

pub use client::{NatsClient, NatsSession, NatsWorker};
pub use step::{url_steps, Mode, NatsOptions, NatsProtocol, NatsStep, MAX_SUBSCRIBERS};
pub use throng_core::steps::Steps;
