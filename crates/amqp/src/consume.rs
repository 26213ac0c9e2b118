//! Publish–consume: throng's own consumer on the queue a target's messages are routed to, and
//! the table that matches each delivery to the message a user published.
//!
//! The consumer is the target's, not a worker's: it runs on a thread of its own with a runtime
//! and a connection of its own (started by the first user that publishes, before its first
//! message, stopped with the client), consuming with the target's acknowledgement mode and
//! prefetch. Its queue: with the default exchange the queue the routing key names (used as it
//! is when it exists, else declared, auto-delete); with a named exchange (which must exist) a
//! queue of the broker's naming, exclusive, bound to it with the routing key. The queue exists
//! before any message is published, so a message cannot miss it.
//!
//! A published message carries its `message-id` (this client's tag and the message's number:
//! a delivery is matched to its message, and another publisher's messages are told apart) and
//! a `throng-sent` header (the wall-clock time it was published, in nanoseconds since the Unix
//! epoch, for a consumer outside throng). A delivery is matched in a table of the messages in
//! flight (a lock a delivery, held for a map look-up) and hands its time to the publishing
//! user on whatever worker thread it runs.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::{FutureExt, StreamExt};
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicQosOptions, ExchangeDeclareOptions,
    QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::FieldTable;
use throng_core::Outcome;
use tokio::sync::oneshot;

/// The header with a message's publish time, nanoseconds since the Unix epoch.
pub const SENT_HEADER: &str = "throng-sent";

/// Messages given up on that are remembered, to tell a late delivery from a duplicate.
const MAX_REMEMBERED: usize = 1 << 20;

/// What publish–consume counted, for the result. Every message published ends as exactly one
/// of delivered, lost, returned, nacked or in flight at the end.
#[derive(Debug, Default)]
pub struct Counts {
    /// Messages published (handed to the broker).
    pub published: AtomicU64,
    /// Messages the broker confirmed (publisher confirms on).
    pub confirmed: AtomicU64,
    /// Messages delivered to throng's consumer in time.
    pub delivered: AtomicU64,
    /// Messages not delivered within the timeout.
    pub lost: AtomicU64,
    /// Mandatory publishes the broker could not route and returned.
    pub returned: AtomicU64,
    /// Publishes the broker nacked (a full queue rejecting publishes, an internal error).
    pub nacked: AtomicU64,
    /// Messages still awaited when the run ended (their steps were cut off).
    pub in_flight_at_end: AtomicU64,
    /// Deliveries the broker marked redelivered (sent before and not acknowledged).
    pub redelivered: AtomicU64,
    /// Deliveries of a message already delivered.
    pub duplicated: AtomicU64,
    /// Deliveries of messages already given up on (counted lost).
    pub late: AtomicU64,
    /// Messages on the queue that no user of this run published.
    pub foreign: AtomicU64,
}

/// The messages in flight and what the consumer counted: shared by the publishing users
/// (every worker thread) and the consumer's thread.
pub struct Table {
    /// This client's tag in the message id (random, so two runs on one queue are told apart).
    tag: u64,
    next: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Instant>>>,
    given_up: Mutex<HashSet<u64>>,
    /// The counts.
    pub counts: Counts,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("tag", &self.tag)
            .finish_non_exhaustive()
    }
}

impl Default for Table {
    fn default() -> Self {
        Table::new()
    }
}

impl Table {
    /// An empty table with a random tag.
    pub fn new() -> Table {
        let tag = std::hash::BuildHasher::hash_one(
            &std::collections::hash_map::RandomState::new(),
            std::process::id(),
        );
        Table {
            tag,
            next: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
            given_up: Mutex::new(HashSet::new()),
            counts: Counts::default(),
        }
    }

    /// A message to publish: its message id and the wait for its delivery (a guard that
    /// forgets the message if the wait is dropped).
    pub fn expect(self: &Arc<Self>) -> (String, Awaited) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        let awaited = Awaited {
            table: self.clone(),
            id,
            rx: Some(rx),
            published: false,
        };
        (format!("{:x}.{id}", self.tag), awaited)
    }

    /// A delivery of the message with id `msg` (`None`: a message without one), received at
    /// `at`, `redelivered` as the broker says.
    pub fn delivered(&self, msg: Option<&str>, redelivered: bool, at: Instant) {
        if redelivered {
            self.counts.redelivered.fetch_add(1, Ordering::Relaxed);
        }
        let id = msg
            .and_then(|m| m.split_once('.'))
            .filter(|(tag, _)| u64::from_str_radix(tag, 16).ok() == Some(self.tag))
            .and_then(|(_, id)| id.parse::<u64>().ok());
        let Some(id) = id else {
            self.counts.foreign.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let waiting = self.pending.lock().ok().and_then(|mut p| p.remove(&id));
        match waiting {
            // A user whose step was cut off has dropped the receiver: it counts that.
            Some(tx) => drop(tx.send(at)),
            None => {
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

    fn forget(&self, id: u64, remember: bool) {
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&id);
        }
        if remember {
            if let Ok(mut g) = self.given_up.lock() {
                if g.len() < MAX_REMEMBERED {
                    g.insert(id);
                }
            }
        }
    }
}

/// How a published message's wait ended without its delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undelivered {
    /// Not delivered in time.
    Lost,
    /// The broker returned it (no route).
    Returned,
    /// The broker nacked it.
    Nacked,
}

/// The wait for a message's delivery. Dropped before it ended (a step cut off at the end of
/// the run), it forgets the message and counts it in flight at the end.
pub struct Awaited {
    table: Arc<Table>,
    id: u64,
    rx: Option<oneshot::Receiver<Instant>>,
    published: bool,
}

impl Awaited {
    /// The message was published: from now on it ends as delivered, lost, returned, nacked or
    /// in flight at the end.
    pub fn published(&mut self) {
        self.published = true;
        self.table.counts.published.fetch_add(1, Ordering::Relaxed);
    }

    /// The broker confirmed it.
    pub fn confirmed(&self) {
        self.table.counts.confirmed.fetch_add(1, Ordering::Relaxed);
    }

    /// The message will not be delivered: the broker returned or nacked it.
    pub fn refused(mut self, why: Undelivered) {
        self.rx = None;
        self.published = false;
        self.table.forget(self.id, true);
        let c = &self.table.counts;
        match why {
            Undelivered::Returned => c.returned.fetch_add(1, Ordering::Relaxed),
            Undelivered::Nacked => c.nacked.fetch_add(1, Ordering::Relaxed),
            Undelivered::Lost => c.lost.fetch_add(1, Ordering::Relaxed),
        };
    }

    /// Waits for the delivery until `deadline`: its time, or `Err` (the message is counted
    /// lost).
    pub async fn wait(mut self, deadline: tokio::time::Instant) -> Result<Instant, Undelivered> {
        let got = match self.rx.as_mut() {
            Some(rx) => tokio::time::timeout_at(deadline, rx).await,
            None => return Err(Undelivered::Lost),
        };
        self.rx = None;
        self.published = false;
        match got {
            Ok(Ok(at)) => {
                self.table.counts.delivered.fetch_add(1, Ordering::Relaxed);
                Ok(at)
            }
            _ => {
                self.table.forget(self.id, true);
                self.table.counts.lost.fetch_add(1, Ordering::Relaxed);
                Err(Undelivered::Lost)
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

/// Where and how the consumer consumes.
#[derive(Debug, Clone)]
pub struct Consuming {
    /// The broker (its URL, TLS or not).
    pub(crate) target: crate::target::Target,
    /// The exchange; empty: the default exchange.
    pub exchange: String,
    /// The routing key.
    pub routing_key: String,
    /// Acknowledge each delivery (else auto-ack).
    pub ack: bool,
    /// The prefetch, with `ack`.
    pub prefetch: u16,
    /// The connect timeout.
    pub connect_timeout: std::time::Duration,
}

/// The consumer's thread, running until dropped.
pub struct Consumer {
    stop: Mutex<Option<oneshot::Sender<()>>>,
    /// The queue it consumes from.
    pub queue: String,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        if let Ok(mut s) = self.stop.lock() {
            if let Some(s) = s.take() {
                let _ = s.send(());
            }
        }
    }
}

type Ready = oneshot::Sender<Result<String, Outcome>>;

/// Starts `table`'s consumer on a thread of its own; ready when it consumes. An error is the
/// failure's outcome (the thread has then ended).
pub async fn start(c: Consuming, table: Arc<Table>) -> Result<Consumer, Outcome> {
    let (ready_tx, ready_rx) = oneshot::channel();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let other = |m: String| Outcome::failed(throng_core::ErrorClass::Other, m);
    std::thread::Builder::new()
        .name("throng-amqp-consumer".into())
        .spawn(move || {
            match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt.block_on(consume(c, table, ready_tx, stop_rx)),
                Err(e) => drop(ready_tx.send(Err(other(format!("the consumer's runtime: {e}"))))),
            }
        })
        .map_err(|e| other(format!("the consumer's thread: {e}")))?;
    match ready_rx.await {
        Ok(Ok(queue)) => Ok(Consumer {
            stop: Mutex::new(Some(stop_tx)),
            queue,
        }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(other("the consumer's thread ended".into())),
    }
}

/// The consumer's connection, its channel, its consumer and its queue.
type Setup = (lapin::Connection, lapin::Channel, lapin::Consumer, String);

async fn setup(c: &Consuming) -> Result<Setup, Outcome> {
    let failed = |what: &str, e: lapin::Error| {
        let (class, status) = crate::target::classify(&e);
        let mut o = Outcome::failed(class, format!("throng's consumer: {what}: {e}"));
        if let Some(s) = status {
            o.status = s;
        }
        o
    };
    let (conn, _) = c.target.connect(c.connect_timeout).await?;
    let mut ch = conn
        .create_channel()
        .await
        .map_err(|e| failed("a channel", e))?;
    let queue = if c.exchange.is_empty() {
        let passive = QueueDeclareOptions {
            passive: true,
            ..QueueDeclareOptions::default()
        };
        let q = c.routing_key.as_str();
        match ch
            .queue_declare(q.into(), passive, FieldTable::default())
            .await
        {
            Ok(_) => q.to_string(),
            Err(_) => {
                // Not there (the failed declare closed the channel): declared, gone with us.
                ch = conn
                    .create_channel()
                    .await
                    .map_err(|e| failed("a channel", e))?;
                let own = QueueDeclareOptions {
                    auto_delete: true,
                    ..QueueDeclareOptions::default()
                };
                ch.queue_declare(q.into(), own, FieldTable::default())
                    .await
                    .map_err(|e| failed(&format!("declaring queue {q}"), e))?;
                q.to_string()
            }
        }
    } else {
        let passive = ExchangeDeclareOptions {
            passive: true,
            ..ExchangeDeclareOptions::default()
        };
        ch.exchange_declare(
            c.exchange.as_str().into(),
            lapin::ExchangeKind::Direct,
            passive,
            FieldTable::default(),
        )
        .await
        .map_err(|e| failed(&format!("exchange {}", c.exchange), e))?;
        let own = QueueDeclareOptions {
            exclusive: true,
            auto_delete: true,
            ..QueueDeclareOptions::default()
        };
        let q = ch
            .queue_declare("".into(), own, FieldTable::default())
            .await
            .map_err(|e| failed("declaring its queue", e))?;
        let name = q.name().to_string();
        ch.queue_bind(
            name.as_str().into(),
            c.exchange.as_str().into(),
            c.routing_key.as_str().into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .map_err(|e| failed(&format!("binding its queue to {}", c.exchange), e))?;
        name
    };
    if c.ack && c.prefetch > 0 {
        ch.basic_qos(c.prefetch, BasicQosOptions::default())
            .await
            .map_err(|e| failed("basic.qos", e))?;
    }
    let options = BasicConsumeOptions {
        no_ack: !c.ack,
        ..BasicConsumeOptions::default()
    };
    let consumer = ch
        .basic_consume(
            queue.as_str().into(),
            "throng".into(),
            options,
            FieldTable::default(),
        )
        .await
        .map_err(|e| failed(&format!("consuming from {queue}"), e))?;
    Ok((conn, ch, consumer, queue))
}

async fn consume(c: Consuming, table: Arc<Table>, ready: Ready, stop: oneshot::Receiver<()>) {
    let (conn, ch, mut consumer, queue) = match setup(&c).await {
        Ok(x) => x,
        Err(o) => {
            let _ = ready.send(Err(o));
            return;
        }
    };
    let _ = ready.send(Ok(queue));
    let ack = c.ack;
    let table = &table;
    let matched = |d: lapin::message::Delivery| {
        table.delivered(
            d.properties.message_id().as_ref().map(|m| m.as_str()),
            d.redelivered,
            Instant::now(),
        );
        d.delivery_tag
    };
    // A delivery awaited, then those already received taken without waiting, all acknowledged
    // at once on the channel (the last one's tag, `multiple`): a wake-up and an ack a batch,
    // not each delivery's (lapin's `Acker` goes through its connection's internal task).
    let deliveries = async move {
        let mut ended = false;
        while !ended {
            let Some(Ok(d)) = consumer.next().await else {
                break;
            };
            let mut last = matched(d);
            while let Some(next) = consumer.next().now_or_never() {
                match next {
                    Some(Ok(d)) => last = matched(d),
                    _ => {
                        ended = true;
                        break;
                    }
                }
            }
            if ack {
                // A failed ack (the connection went away) leaves the messages to the broker,
                // which delivers them again, marked redelivered.
                let multiple = BasicAckOptions { multiple: true };
                let _ = ch.basic_ack(last, multiple).await;
            }
        }
    };
    tokio::select! {
        _ = deliveries => {}
        _ = stop => {}
    }
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(1),
        conn.close(200, "bye".into()),
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_ends_once_and_others_are_told_apart() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let t = Arc::new(Table::new());
        let soon = || tokio::time::Instant::now() + std::time::Duration::from_millis(20);
        let (msg, mut wait) = t.expect();
        wait.published();
        t.delivered(Some(&msg), false, Instant::now());
        assert!(rt.block_on(wait.wait(soon())).is_ok());
        t.delivered(Some(&msg), true, Instant::now());
        assert_eq!(t.counts.duplicated.load(Ordering::Relaxed), 1);
        assert_eq!(t.counts.redelivered.load(Ordering::Relaxed), 1);
        t.delivered(Some("1.0"), false, Instant::now());
        t.delivered(None, false, Instant::now());
        assert_eq!(t.counts.foreign.load(Ordering::Relaxed), 2);

        let (msg, mut wait) = t.expect();
        wait.published();
        assert_eq!(rt.block_on(wait.wait(soon())), Err(Undelivered::Lost));
        t.delivered(Some(&msg), false, Instant::now());
        assert_eq!(t.counts.late.load(Ordering::Relaxed), 1);

        let (_, mut wait) = t.expect();
        wait.published();
        wait.refused(Undelivered::Returned);
        let (_, mut wait) = t.expect();
        wait.published();
        wait.refused(Undelivered::Nacked);
        let (_, mut wait) = t.expect();
        wait.published();
        drop(wait);
        let (_, wait) = t.expect();
        wait.unpublished();

        let c = &t.counts;
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        assert_eq!(n(&c.published), 5);
        assert_eq!(
            n(&c.delivered) + n(&c.lost) + n(&c.returned) + n(&c.nacked) + n(&c.in_flight_at_end),
            5
        );
        assert!(t.pending.lock().unwrap().is_empty());
    }
}
