//! HTTP/2: the sessions of a worker thread share its connections, `streams` sessions to one, in
//! an [`H2Pool`] that is the driver's per-worker state.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use http::Request;
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::time::Instant;

use throng_core::{Connection, ErrorClass, Outcome, Phase, Phases};
use throng_net::{message, Counters, Opened, SharedConn};

use super::{read_response, Body, Failure, HttpDriver, Response};
use crate::classify::classify;

/// One HTTP/2 connection shared by several sessions of a worker thread.
#[derive(Default)]
pub(super) struct H2Slot {
    conn: SharedConn<(http2::SendRequest<Body>, Arc<Counters>)>,
    /// Counter values already attributed to requests.
    seen: Cell<(u64, u64)>,
    /// How long the connection took to open, and whether inside a request's time: the
    /// `connect` and `tls` phases of the next request on it (one request a connection).
    opened: Cell<Option<(Opened, Connection)>>,
    /// One clone per session on this connection: its strong count less one is their number
    /// (the slot itself is cloned for each request, so its own count says nothing).
    pub(super) seats: Rc<()>,
}

/// One worker's HTTP/2 connections, each shared by up to `streams` sessions.
#[derive(Default)]
pub struct H2Pool {
    slots: RefCell<Vec<Rc<H2Slot>>>,
}

impl H2Pool {
    /// The connection a new session joins: the first with room, or a new one. A session holds
    /// a seat of its slot, so a slot's sessions are its seats' strong count less its own: a
    /// session that ends (a user retired by a ramp) leaves room for the next, and a ramp that
    /// retires and restarts users opens no new connections.
    pub(super) fn join(&self, streams: usize) -> Rc<H2Slot> {
        let mut slots = self.slots.borrow_mut();
        if let Some(slot) = slots
            .iter()
            .find(|s| Rc::strong_count(&s.seats) - 1 < streams)
        {
            return slot.clone();
        }
        let slot = Rc::new(H2Slot::default());
        slots.push(slot.clone());
        slot
    }

    /// Connections this pool has made room for.
    pub fn connections(&self) -> usize {
        self.slots.borrow().len()
    }
}

impl HttpDriver {
    async fn connect_h2(
        &self,
    ) -> Result<(http2::SendRequest<Body>, Arc<Counters>, Opened), Outcome> {
        let (stream, counters, opened) = self.connect().await?;
        let (sender, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .map_err(|e| Outcome::failed(classify(&e), message(&e)))?;
        tokio::spawn(conn);
        Ok((sender, counters, opened))
    }

    /// The slot's connection, opened if it has none: `inside` a request's time (`execute`),
    /// or before it (`connect`).
    pub(super) async fn h2_sender(
        &self,
        slot: &H2Slot,
        inside: bool,
    ) -> Result<(http2::SendRequest<Body>, Arc<Counters>), Outcome> {
        let open = || async {
            let (sender, counters, opened) = self.connect_h2().await?;
            slot.seen.set((0, 0));
            let how = match inside {
                true => Connection::New,
                false => Connection::Before,
            };
            slot.opened.set(Some((opened, how)));
            Ok((sender, counters))
        };
        slot.conn.get(|(s, _)| !s.is_closed(), open).await
    }

    pub(super) async fn execute_h2(
        &self,
        slot: &H2Slot,
        req: Request<Body>,
        keep: bool,
    ) -> (Outcome, Option<Response>) {
        // Without keep-alive, a connection of its own that ends with the request (its sender
        // dropped), however many sessions share the slot.
        let alone = !self.cfg.keepalive;
        let got = match alone {
            true => self
                .connect_h2()
                .await
                .map(|(s, c, opened)| ((s, c), Some((opened, Connection::New)))),
            // The slot's connection, and how long it took to open if this request is the
            // first on it.
            false => self
                .h2_sender(slot, true)
                .await
                .map(|pair| (pair, slot.opened.take())),
        };
        let ((mut sender, counters), opened) = match got {
            Ok(got) => got,
            Err(o) => return (o, None),
        };
        // hyper writes the request in its connection's task: `wait` counts from handing it
        // over to the response's head, and there is no `send`; `receive` is the body.
        let mut phases = match opened {
            Some((opened, how)) => {
                let mut p = Phases::on(how);
                opened.into_phases(&mut p);
                p
            }
            None => Phases::on(Connection::Reused),
        };
        let result = async {
            sender.ready().await.map_err(Failure::Request)?;
            let start = Instant::now();
            let resp = sender.send_request(req).await.map_err(Failure::Request)?;
            let head = Instant::now();
            phases.set(Phase::Wait, head - start);
            let r = read_response(resp, keep).await;
            phases.set(Phase::Receive, head.elapsed());
            r
        }
        .await;
        // Streams share the connection: each request takes the bytes not yet attributed, so
        // the totals are exact and the split between requests is close.
        let (s1, r1) = counters.read();
        let (s0, r0) = match alone {
            true => (0, 0),
            false => slot.seen.replace((s1, r1)),
        };
        let (mut outcome, response) = self.finish(result, keep);
        // An HTTP/2 server's first bytes are its SETTINGS, before any answer: a connection that
        // failed without a byte from the server never spoke HTTP/2 (hyper's HTTP/1.1 server
        // closes on the preface without a word; 1,370 connections in 1 s from 2 users when it
        // was a `reset` and retried at once).
        if r1 == 0 && matches!(outcome.error, Some(ErrorClass::Reset | ErrorClass::Other)) {
            let said = outcome.message.take().unwrap_or_default();
            outcome = Outcome::failed(
                ErrorClass::Protocol,
                format!("the server sent nothing as HTTP/2 before the connection failed: {said}"),
            );
        }
        outcome.bytes_sent = s1.saturating_sub(s0);
        outcome.bytes_received = r1.saturating_sub(r0);
        outcome.phases = phases;
        (outcome, response)
    }
}
