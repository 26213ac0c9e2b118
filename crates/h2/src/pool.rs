//! One worker's HTTP/2 connections, for HTTP/2 and gRPC alike: each shared by up to `streams`
//! sessions (or a fixed number of connections with the sessions spread evenly, gRPC's
//! `--connections`), opened when a session first needs one and again when it ends or goes
//! away. A request the server did not process (above a GOAWAY's last stream id, refused, or
//! never sent) is sent once more on a new connection before it counts as failed.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use throng_core::{Connection, Outcome, RunPlan};
use throng_net::{Opened, SharedConn};

use crate::client::{connect_timed, Client, Target};
use crate::conn::{Request, Response, StreamError};

/// One connection of the pool and the sessions seated on it.
#[derive(Default)]
pub struct Slot {
    conn: SharedConn<Client>,
    /// Counter values already attributed to requests.
    seen: Cell<(u64, u64)>,
    /// How long its connection took to open, and whether inside a request's time: the
    /// `connect` and `tls` phases of the next request on it ([`Pool::take_opened`]).
    opened: Cell<Option<(Opened, Connection)>>,
    /// One clone per seated session: its strong count less one is their number.
    seats: Rc<()>,
}

/// A session's place on one of the pool's connections; dropping it frees the seat.
pub struct Seat {
    slot: Rc<Slot>,
    _seat: Rc<()>,
}

/// One worker's connections.
pub struct Pool {
    target: Target,
    streams: usize,
    fixed: Option<usize>,
    slots: RefCell<Vec<Rc<Slot>>>,
}

impl Pool {
    /// A pool opening connections to `target`, each for up to `streams` sessions, or exactly
    /// `fixed` connections with the sessions spread evenly.
    pub fn new(target: Target, streams: usize, fixed: Option<usize>) -> Pool {
        Pool {
            target,
            streams: streams.max(1),
            fixed: fixed.map(|n| n.max(1)),
            slots: RefCell::default(),
        }
    }

    /// The seat of a new session: on the first connection with room (or, with a fixed number,
    /// a new one until there are that many, then the one with the fewest sessions).
    pub fn join(&self) -> Seat {
        let seated = |s: &Rc<Slot>| Rc::strong_count(&s.seats) - 1;
        let mut slots = self.slots.borrow_mut();
        let free = match self.fixed {
            Some(n) if slots.len() >= n => slots.iter().min_by_key(|s| seated(s)).cloned(),
            Some(_) => None,
            None => slots.iter().find(|s| seated(s) < self.streams).cloned(),
        };
        let slot = free.unwrap_or_else(|| {
            let s = Rc::new(Slot::default());
            slots.push(s.clone());
            s
        });
        Seat {
            _seat: slot.seats.clone(),
            slot,
        }
    }

    /// Connections this pool has made room for.
    pub fn connections(&self) -> usize {
        self.slots.borrow().len()
    }

    /// The seat's connection, opened if there is none or it can take no more requests;
    /// sessions waiting while another opens it share the attempt's result, a failure too. A
    /// connection opened here is opened inside a request's time ([`Connection::New`]).
    pub async fn client(&self, seat: &Seat) -> Result<Client, Outcome> {
        self.client_as(seat, Connection::New).await
    }

    /// [`Pool::client`] before any request (a session's first connect): the first request on
    /// a connection opened here has it [`Connection::Before`].
    pub async fn connect(&self, seat: &Seat) -> Result<Client, Outcome> {
        self.client_as(seat, Connection::Before).await
    }

    /// The seat's connection if it is open and takes requests, without waiting (else
    /// [`Pool::client`] opens one).
    pub fn ready(&self, seat: &Seat) -> Option<Client> {
        seat.slot.conn.current(|c| c.is_usable())
    }

    async fn client_as(&self, seat: &Seat, how: Connection) -> Result<Client, Outcome> {
        let open = || async {
            let (c, opened) = connect_timed(&self.target).await?;
            seat.slot.seen.set((0, 0));
            seat.slot.opened.set(Some((opened, how)));
            Ok(c)
        };
        seat.slot.conn.get(|c| c.is_usable(), open).await
    }

    /// How the seat's connection was opened, for the first request on it to take (as its
    /// `connect` and `tls` phases); `None` after.
    pub fn take_opened(&self, seat: &Seat) -> Option<(Opened, Connection)> {
        seat.slot.opened.take()
    }

    /// The target connections are opened to.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Sends `req` on the seat's connection; a request the server did not process goes once
    /// more, on a new connection. Returns the response or how it failed (a connect failure as
    /// its outcome).
    pub async fn send(&self, seat: &Seat, req: Request<'_>) -> Result<Response, SendError> {
        let client = self.client(seat).await.map_err(SendError::Connect)?;
        match client.send(req.clone()).await {
            Err(StreamError::NotProcessed(_)) => {}
            r => return r.map_err(|e| SendError::Stream(client.classify(&e), e)),
        }
        let client = self.client(seat).await.map_err(SendError::Connect)?;
        client
            .send(req)
            .await
            .map_err(|e| SendError::Stream(client.classify(&e), e))
    }

    /// The bytes that crossed the seat's connection since the last call on any of its seats:
    /// streams share it, so each request takes what crossed since the one before; totals are
    /// exact, the split between requests close.
    pub fn take_bytes(&self, seat: &Seat, client: &Client) -> (u64, u64) {
        let (s1, r1) = client.counters().read();
        let (s0, r0) = seat.slot.seen.replace((s1, r1));
        (s1.saturating_sub(s0), r1.saturating_sub(r0))
    }
}

/// The shared connections that carry `plan`'s users (or in-flight requests) at `streams` a
/// connection: at least one.
pub fn connections_for(plan: &RunPlan, streams: usize) -> usize {
    let users = plan.shard.share(plan.peak_concurrency());
    users.div_ceil(streams.max(1) as u64).max(1) as usize
}

/// Gives `plan` no more worker threads than `connections`: each worker thread opens
/// connections of its own for its users, so more threads split the users over more connections
/// than `--streams` asks for, each write and read carrying fewer requests. On two cores,
/// `throng run --http2 -c 50 --streams 50` made two connections of 25 streams and cost 1.2 to
/// 1.6 times h2load's CPU a request where one connection on one thread costs 1.1 times
/// (`benches/http2.sh`; ARCHITECTURE, "The HTTP/2 engine").
pub fn fit_threads(plan: &mut RunPlan, connections: usize) {
    let threads = match plan.threads {
        0 => std::thread::available_parallelism().map_or(1, |t| t.get()),
        t => t,
    };
    plan.threads = threads.min(connections.max(1));
}

/// Why [`Pool::send`] failed.
#[derive(Debug)]
pub enum SendError {
    /// No connection could be made: the outcome to record.
    Connect(Outcome),
    /// The request failed on its connection, with the class throng counts it under.
    Stream(throng_core::ErrorClass, StreamError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn target() -> Target {
        Target {
            addrs: vec![],
            authority: "nowhere".into(),
            tls: None,
            connect_timeout: Duration::from_millis(10),
            config: Default::default(),
        }
    }

    #[test]
    fn threads_are_no_more_than_the_connections_the_users_fill() {
        use throng_core::{ClosedLoop, LoadModel, Users};
        let model = LoadModel::Closed(ClosedLoop {
            users: Users::Fixed(50),
            requests: Some(1000),
            iterations: None,
            duration: None,
            think_time: None,
        });
        let mut plan = RunPlan::new("t", model);
        assert_eq!(connections_for(&plan, 50), 1);
        assert_eq!(connections_for(&plan, 20), 3);
        plan.threads = 4;
        let n = connections_for(&plan, 50);
        fit_threads(&mut plan, n);
        assert_eq!(plan.threads, 1);
        plan.threads = 4;
        let n = connections_for(&plan, 20);
        fit_threads(&mut plan, n);
        assert_eq!(plan.threads, 3);
        plan.threads = 2;
        let n = connections_for(&plan, 1);
        fit_threads(&mut plan, n);
        assert_eq!(plan.threads, 2);
        // Unset, it is the cores, no more than the connections.
        plan.threads = 0;
        fit_threads(&mut plan, 1);
        assert_eq!(plan.threads, 1);
    }

    #[test]
    fn seats_fill_connections_by_streams_or_spread_over_a_fixed_number() {
        let pool = Pool::new(target(), 2, None);
        let seats: Vec<Seat> = (0..5).map(|_| pool.join()).collect();
        assert_eq!(pool.connections(), 3);
        assert!(Rc::ptr_eq(&seats[0].slot, &seats[1].slot));
        assert!(!Rc::ptr_eq(&seats[1].slot, &seats[2].slot));
        // A session that leaves frees its seat for the next.
        drop(seats);
        let again: Vec<Seat> = (0..4).map(|_| pool.join()).collect();
        assert_eq!(pool.connections(), 3);
        drop(again);
        let pool = Pool::new(target(), 100, Some(2));
        let seats: Vec<Seat> = (0..5).map(|_| pool.join()).collect();
        assert_eq!(pool.connections(), 2);
        let on_first = seats
            .iter()
            .filter(|s| Rc::ptr_eq(&s.slot, &seats[0].slot))
            .count();
        assert_eq!(on_first, 3);
    }
}
