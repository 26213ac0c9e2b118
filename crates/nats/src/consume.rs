//! Publish–consume: throng's own subscribers on a subject, and the table that matches each
//! delivery to the message a user published.
//!
//! The subscribers are the target's, not a worker's: every subscription on a subject receives
//! every message, so subscribers per worker would multiply the fan-out by the worker threads.
//! They run on a thread of their own with a runtime of its own (started by the first user that
//! needs them, before its first message, and stopped with the client), each on a connection of
//! its own, subscribed and flushed (the server has the subscription) before any message is
//! published.
//!
//! A published message carries two headers: `Throng-Msg` (this client's tag and the message's
//! number, so that a delivery is matched to its message and another publisher's messages on the
//! subject are told apart) and `Throng-Sent` (the wall-clock time it was published, in
//! nanoseconds since the Unix epoch, for a consumer outside throng). A delivery is matched in
//! a table of the messages in flight (a lock a delivery, held for a map look-up; the publisher
//! takes it twice a message); the last subscriber's delivery hands the deliveries' times to the
//! publishing user, on whatever worker thread it runs.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::StreamExt;
use tokio::sync::oneshot;

/// The header matching a delivery to its message: `TAG.NUMBER`.
pub const MSG_HEADER: &str = "Throng-Msg";
/// The header with a message's publish time, nanoseconds since the Unix epoch.
pub const SENT_HEADER: &str = "Throng-Sent";

/// Messages given up on that are remembered, to tell a late delivery from a duplicate: at most
/// this many (16 MiB or so), the rest counted as duplicates if they ever come.
const MAX_REMEMBERED: usize = 1 << 20;

/// What publish–consume counted, for the result.
#[derive(Debug, Default)]
pub struct Counts {
    /// Messages published (the server took them from the client's buffer, or the client had
    /// them queued).
    pub published: AtomicU64,
    /// Messages delivered to every subscriber in time.
    pub delivered: AtomicU64,
    /// Messages not delivered to every subscriber within the timeout.
    pub lost: AtomicU64,
    /// Deliveries of messages already given up on (counted lost).
    pub late: AtomicU64,
    /// Deliveries of a message to a subscriber that had it already.
    pub duplicated: AtomicU64,
    /// Messages on the subject that no user of this run published.
    pub foreign: AtomicU64,
    /// Messages still awaited when the run ended (their steps were cut off).
    pub in_flight_at_end: AtomicU64,
    /// Probes published when the subscribers started, to know the server has them all (the
    /// server counts them among its messages).
    pub probes: AtomicU64,
    /// Deliveries of those probes (a probe published before every subscriber was there
    /// reaches only some).
    pub probe_deliveries: AtomicU64,
}

struct Pending {
    /// The subscribers that had it, a bit each.
    seen: u64,
    /// Each delivery's time, in order.
    times: Vec<Instant>,
    done: Option<oneshot::Sender<Vec<Instant>>>,
}

/// The messages in flight and what the subscribers counted: shared by the publishing users
/// (every worker thread) and the subscribers' thread.
pub struct Table {
    /// This client's tag in `Throng-Msg` (random, so two runs on one subject are told apart).
    tag: u64,
    subscribers: u32,
    next: AtomicU64,
    pending: Mutex<HashMap<u64, Pending>>,
    given_up: Mutex<HashSet<u64>>,
    /// The counts.
    pub counts: Counts,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("tag", &self.tag)
            .field("subscribers", &self.subscribers)
            .finish_non_exhaustive()
    }
}

impl Table {
    /// A table for `subscribers` subscribers.
    pub fn new(subscribers: u32) -> Table {
        // Random (the standard library's hasher keys), so two runs on one subject differ.
        let tag = std::hash::BuildHasher::hash_one(
            &std::collections::hash_map::RandomState::new(),
            std::process::id(),
        );
        Table {
            tag,
            subscribers,
            next: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
            given_up: Mutex::new(HashSet::new()),
            counts: Counts::default(),
        }
    }

    /// A message to publish: its `Throng-Msg` value and the wait for its deliveries (a guard
    /// that forgets the message if the wait is dropped).
    pub fn expect(self: &Arc<Self>) -> (String, Awaited) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(
                id,
                Pending {
                    seen: 0,
                    times: Vec::with_capacity(self.subscribers as usize),
                    done: Some(tx),
                },
            );
        }
        let awaited = Awaited {
            table: self.clone(),
            id,
            rx: Some(rx),
            published: false,
        };
        (format!("{:x}.{id}", self.tag), awaited)
    }

    /// A delivery to subscriber `sub` of the message with `Throng-Msg` `msg` (`None`: a message
    /// without one), received at `at`.
    pub fn delivered(&self, sub: u32, msg: Option<&str>, at: Instant) {
        let id = msg
            .and_then(|m| m.split_once('.'))
            .filter(|(tag, _)| u64::from_str_radix(tag, 16).ok() == Some(self.tag))
            .and_then(|(_, id)| id.parse::<u64>().ok());
        let Some(id) = id else {
            // A second probe of this client's start (see `probe`) is no one's message.
            let ours = msg
                .and_then(|m| m.split_once('.'))
                .is_some_and(|(tag, id)| {
                    id == "probe" && u64::from_str_radix(tag, 16).ok() == Some(self.tag)
                });
            match ours {
                true => self.counts.probe_deliveries.fetch_add(1, Ordering::Relaxed),
                false => self.counts.foreign.fetch_add(1, Ordering::Relaxed),
            };
            return;
        };
        let bit = 1u64 << sub;
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        match pending.get_mut(&id) {
            Some(p) if p.seen & bit != 0 => {
                self.counts.duplicated.fetch_add(1, Ordering::Relaxed);
            }
            Some(p) => {
                p.seen |= bit;
                p.times.push(at);
                if p.seen.count_ones() >= self.subscribers {
                    if let Some(p) = pending.remove(&id) {
                        if let Some(done) = p.done {
                            // A user whose step was cut off has dropped the receiver.
                            let _ = done.send(p.times);
                        }
                    }
                }
            }
            None => {
                drop(pending);
                let late = self
                    .given_up
                    .lock()
                    .map(|g| g.contains(&id))
                    .unwrap_or(false);
                match late {
                    true => self.counts.late.fetch_add(1, Ordering::Relaxed),
                    false => self.counts.duplicated.fetch_add(1, Ordering::Relaxed),
                };
            }
        }
    }

    /// Forgets message `id`: its wait ended without every delivery (`lost`) or was cut off.
    fn forget(&self, id: u64, lost: bool) -> Option<Pending> {
        let p = self.pending.lock().ok()?.remove(&id);
        if lost {
            if let Ok(mut g) = self.given_up.lock() {
                if g.len() < MAX_REMEMBERED {
                    g.insert(id);
                }
            }
        }
        p
    }
}

/// The wait for a message's deliveries. Dropped before it ended (a step cut off at the end of
/// the run), it forgets the message and counts it in flight at the end.
pub struct Awaited {
    table: Arc<Table>,
    id: u64,
    rx: Option<oneshot::Receiver<Vec<Instant>>>,
    published: bool,
}

impl Awaited {
    /// The message was published: from now on it is delivered, lost or in flight at the end.
    pub fn published(&mut self) {
        self.published = true;
        self.table.counts.published.fetch_add(1, Ordering::Relaxed);
    }

    /// Waits for every subscriber's delivery until `deadline`: their times, or `Err` with the
    /// number of subscribers that had it (the message is counted lost).
    pub async fn wait(mut self, deadline: tokio::time::Instant) -> Result<Vec<Instant>, u32> {
        // The receiver stays in `self` while it is awaited: a wait cut off drops it there, and
        // `Drop` counts the message in flight.
        let got = match self.rx.as_mut() {
            Some(rx) => tokio::time::timeout_at(deadline, rx).await,
            None => return Err(0),
        };
        self.rx = None;
        let counts = &self.table.counts;
        match got {
            Ok(Ok(times)) => {
                self.published = false;
                counts.delivered.fetch_add(1, Ordering::Relaxed);
                Ok(times)
            }
            _ => {
                self.published = false;
                let had = self
                    .table
                    .forget(self.id, true)
                    .map_or(0, |p| p.seen.count_ones());
                counts.lost.fetch_add(1, Ordering::Relaxed);
                Err(had)
            }
        }
    }

    /// The message was not published after all: forget it.
    pub fn unpublished(mut self) {
        self.rx = None;
        self.table.forget(self.id, false);
    }
}

impl Drop for Awaited {
    fn drop(&mut self) {
        if self.rx.is_some() {
            self.table.forget(self.id, false);
            if self.published {
                self.table
                    .counts
                    .in_flight_at_end
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The subscribers' thread, running until dropped.
pub struct Subscribers {
    stop: Mutex<Option<oneshot::Sender<()>>>,
}

impl std::fmt::Debug for Subscribers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscribers").finish_non_exhaustive()
    }
}

impl Drop for Subscribers {
    fn drop(&mut self) {
        if let Ok(mut s) = self.stop.lock() {
            if let Some(s) = s.take() {
                let _ = s.send(());
            }
        }
    }
}

/// Starts `table`'s subscribers on `subject`, each connected with `options()` to `server`, on a
/// thread of their own; ready when every one is subscribed at the server. An error says why
/// one could not connect or subscribe (the thread has then ended).
pub async fn start(
    server: String,
    subject: String,
    jetstream: bool,
    table: Arc<Table>,
    options: impl Fn() -> async_nats::ConnectOptions + Send + 'static,
) -> Result<Subscribers, (throng_core::ErrorClass, String)> {
    let (ready_tx, ready_rx) = oneshot::channel();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("throng-nats-subscribers".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err((
                        throng_core::ErrorClass::Other,
                        format!("the subscribers' runtime: {e}"),
                    )));
                    return;
                }
            };
            rt.block_on(subscribe_all(
                server, subject, jetstream, table, options, ready_tx, stop_rx,
            ));
        });
    if let Err(e) = spawned {
        return Err((
            throng_core::ErrorClass::Other,
            format!("the subscribers' thread: {e}"),
        ));
    }
    match ready_rx.await {
        Ok(Ok(())) => Ok(Subscribers {
            stop: Mutex::new(Some(stop_tx)),
        }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err((
            throng_core::ErrorClass::Other,
            "the subscribers' thread ended".into(),
        )),
    }
}

type Ready = oneshot::Sender<Result<(), (throng_core::ErrorClass, String)>>;

/// What a subscriber receives: a core subscription's messages, or a JetStream consumer's.
type Deliveries = std::pin::Pin<Box<dyn futures_util::Stream<Item = async_nats::Message> + Send>>;

/// A JetStream consumer of `subject` for one subscriber: an ordered push consumer (no acks, the
/// messages in the stream's order, made again by async-nats if it falls behind) of the stream
/// that holds the subject, from the next message on.
async fn consumer(
    client: &async_nats::Client,
    subject: &str,
) -> Result<Deliveries, (throng_core::ErrorClass, String)> {
    use async_nats::jetstream::consumer::{push::OrderedConfig, DeliverPolicy};
    let failed = |e: String| (throng_core::ErrorClass::Status, e);
    let js = async_nats::jetstream::new(client.clone());
    let name = js
        .stream_by_subject(subject.to_string())
        .await
        .map_err(|e| failed(format!("no JetStream stream holds {subject} ({e})")))?;
    let stream = js
        .get_stream(&name)
        .await
        .map_err(|e| failed(format!("JetStream stream {name}: {e}")))?;
    let consumer = stream
        .create_consumer(OrderedConfig {
            deliver_subject: client.new_inbox(),
            filter_subject: subject.to_string(),
            deliver_policy: DeliverPolicy::New,
            ..OrderedConfig::default()
        })
        .await
        .map_err(|e| failed(format!("a consumer of JetStream stream {name}: {e}")))?;
    let messages = consumer
        .messages()
        .await
        .map_err(|e| failed(format!("a consumer of JetStream stream {name}: {e}")))?;
    Ok(Box::pin(futures_util::StreamExt::filter_map(
        messages,
        |m| std::future::ready(m.ok().map(|m| m.message)),
    )))
}

async fn subscribe_all(
    server: String,
    subject: String,
    jetstream: bool,
    table: Arc<Table>,
    options: impl Fn() -> async_nats::ConnectOptions,
    ready: Ready,
    stop: oneshot::Receiver<()>,
) {
    let mut subs = Vec::new();
    let mut clients = Vec::new();
    for i in 0..table.subscribers {
        let client = match options()
            .name(format!("throng subscriber {i}"))
            .connect(server.as_str())
            .await
        {
            Ok(c) => c,
            Err(e) => {
                let _ = ready.send(Err(crate::target::connect_error(&server, &e)));
                return;
            }
        };
        let sub: Result<Deliveries, _> = match jetstream {
            true => consumer(&client, &subject).await,
            false => client
                .subscribe(subject.clone())
                .await
                .map(|s| Box::pin(s) as Deliveries)
                .map_err(|e| {
                    (
                        throng_core::ErrorClass::Other,
                        format!("subscribing to {subject}: {e}"),
                    )
                }),
        };
        let sub = match sub {
            Ok(s) => s,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        subs.push(sub);
        clients.push(client);
    }
    // async-nats' flush writes the SUB out but does not wait for the server to have it: a
    // message published on another connection can reach the server first and miss the
    // subscriber. A probe published until every subscriber has received one proves they
    // are all there.
    if let Err(e) = probe(&clients, &mut subs, &subject, &table).await {
        let _ = ready.send(Err(e));
        return;
    }
    let _ = ready.send(Ok(()));
    let local = tokio::task::LocalSet::new();
    for (i, mut sub) in subs.into_iter().enumerate() {
        let table = table.clone();
        let i = i as u32;
        local.spawn_local(async move {
            while let Some(m) = sub.next().await {
                let at = Instant::now();
                let msg = m
                    .headers
                    .as_ref()
                    .and_then(|h| h.get(MSG_HEADER))
                    .map(|v| v.as_str());
                table.delivered(i, msg, at);
            }
        });
    }
    local
        .run_until(async move {
            let _ = stop.await;
        })
        .await;
    drop(clients);
}

/// Publishes a probe (`Throng-Msg: TAG.probe`) on `subject` every 50 ms until each of `subs`
/// has received one, for at most five seconds; other messages meanwhile are foreign.
async fn probe(
    clients: &[async_nats::Client],
    subs: &mut [Deliveries],
    subject: &str,
    table: &Table,
) -> Result<(), (throng_core::ErrorClass, String)> {
    let Some(first) = clients.first() else {
        return Ok(());
    };
    let probe = format!("{:x}.probe", table.tag);
    let give_up = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut got = vec![false; subs.len()];
    while got.iter().any(|g| !g) {
        if tokio::time::Instant::now() >= give_up {
            return Err((
                throng_core::ErrorClass::Timeout,
                format!(
                    "the server did not deliver a probe on {subject} to every subscriber within                      5 s"
                ),
            ));
        }
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(MSG_HEADER, probe.as_str());
        first
            .publish_with_headers(subject.to_string(), headers, bytes::Bytes::new())
            .await
            .map_err(|e| {
                (
                    throng_core::ErrorClass::Reset,
                    format!("probing {subject}: {e}"),
                )
            })?;
        table.counts.probes.fetch_add(1, Ordering::Relaxed);
        let _ = first.flush().await;
        let round = tokio::time::Instant::now() + std::time::Duration::from_millis(50);
        for (i, sub) in subs.iter_mut().enumerate() {
            while !got[i] {
                match tokio::time::timeout_at(round, sub.next()).await {
                    Ok(Some(m)) => {
                        let msg = m.headers.as_ref().and_then(|h| h.get(MSG_HEADER));
                        match msg.map(|v| v.as_str()) == Some(probe.as_str()) {
                            true => {
                                got[i] = true;
                                table
                                    .counts
                                    .probe_deliveries
                                    .fetch_add(1, Ordering::Relaxed);
                            }
                            false => {
                                table.delivered(i as u32, msg.map(|v| v.as_str()), Instant::now())
                            }
                        }
                    }
                    Ok(None) => {
                        return Err((
                            throng_core::ErrorClass::Reset,
                            format!("subscribing to {subject}: the connection ended"),
                        ))
                    }
                    Err(_) => break,
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deliveries_are_matched_counted_once_and_told_apart() {
        let t = Arc::new(Table::new(2));
        let (msg, mut wait) = t.expect();
        wait.published();
        let now = Instant::now();
        t.delivered(0, Some(&msg), now);
        t.delivered(0, Some(&msg), now);
        assert_eq!(t.counts.duplicated.load(Ordering::Relaxed), 1);
        t.delivered(1, Some(&msg), now);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let got =
            rt.block_on(wait.wait(tokio::time::Instant::now() + std::time::Duration::from_secs(1)));
        assert_eq!(got.map(|t| t.len()), Ok(2));
        // After it was delivered to both, another delivery is a duplicate.
        t.delivered(1, Some(&msg), now);
        assert_eq!(t.counts.duplicated.load(Ordering::Relaxed), 2);
        // Another run's message, and one without the header, are foreign.
        t.delivered(0, Some("1.0"), now);
        t.delivered(0, None, now);
        assert_eq!(t.counts.foreign.load(Ordering::Relaxed), 2);
        // A probe of this client's own start is no one's.
        t.delivered(1, Some(&format!("{:x}.probe", t.tag)), now);
        assert_eq!(t.counts.foreign.load(Ordering::Relaxed), 2);

        // A message only one of two had when its wait ended: lost, then late.
        let (msg, mut wait) = t.expect();
        wait.published();
        t.delivered(0, Some(&msg), now);
        let got = rt.block_on(
            wait.wait(tokio::time::Instant::now() + std::time::Duration::from_millis(10)),
        );
        assert_eq!(got, Err(1));
        t.delivered(1, Some(&msg), now);
        assert_eq!(t.counts.lost.load(Ordering::Relaxed), 1);
        assert_eq!(t.counts.late.load(Ordering::Relaxed), 1);

        // A wait dropped after publishing: in flight at the end; before: nothing.
        let (_, mut wait) = t.expect();
        wait.published();
        drop(wait);
        let (_, wait) = t.expect();
        wait.unpublished();
        let c = &t.counts;
        assert_eq!(c.in_flight_at_end.load(Ordering::Relaxed), 1);
        assert_eq!(c.published.load(Ordering::Relaxed), 3);
        assert_eq!(
            c.delivered.load(Ordering::Relaxed)
                + c.lost.load(Ordering::Relaxed)
                + c.in_flight_at_end.load(Ordering::Relaxed),
            3
        );
        assert!(t.pending.lock().unwrap().is_empty());
    }
}
