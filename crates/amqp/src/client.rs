//! A target's client: an AMQP connection per worker thread, shared by its users (a channel
//! for RPC in confirm mode with one direct reply-to consumer, a channel to publish on), the
//! publish call, and how failures are classified; the RPC call is `rpc.rs`'s.

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use lapin::message::Delivery;
use lapin::options::{BasicConsumeOptions, BasicPublishOptions, ConfirmSelectOptions};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::Confirmation;
use lapin::{BasicProperties, Channel, Connection};
use throng_core::step::{Client, ClientOptions, Render, Reply};
use throng_core::{DriverReport, ErrorClass, Outcome, Phases};
use throng_net::Opened;
use tokio::sync::{oneshot, OnceCell};
use tokio::time::{timeout_at, Instant};

use crate::consume::{self, Consumer, Consuming, Table, Undelivered, SENT_HEADER};
use crate::status::{self, NACKED, OK};
use crate::step::{AmqpOptions, AmqpStep, Mode};
use crate::target::{classify, Target};

/// RabbitMQ's pseudo-queue for direct reply-to.
pub const REPLY_TO: &str = "amq.rabbitmq.reply-to";

/// Replies awaited on a connection's reply-to consumer, by correlation id.
pub(crate) type Waiting = Arc<Mutex<HashMap<String, oneshot::Sender<Delivery>>>>;

/// One AMQP target's client (see [`crate::AmqpProtocol`]).
pub struct AmqpClient {
    target: Target,
    exchange: String,
    routing_key: String,
    pub(crate) timeout: Duration,
    connect_timeout: Duration,
    headers: Vec<(String, String)>,
    own: AmqpOptions,
    /// Publish–consume: the messages in flight, and the consumer, started by the first user
    /// that publishes.
    table: Arc<Table>,
    consumer: OnceCell<Consumer>,
    /// RPC's correlation ids: this client's tag and a number.
    pub(crate) tag: u64,
    pub(crate) next: AtomicU64,
    connections: AtomicU64,
    pub(crate) no_route: AtomicU64,
    pub(crate) rpc_nacked: AtomicU64,
    rpc_late: Arc<AtomicU64>,
}

impl std::fmt::Debug for AmqpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmqpClient")
            .field("broker", &self.target.shown)
            .field("exchange", &self.exchange)
            .field("routing_key", &self.routing_key)
            .finish_non_exhaustive()
    }
}

/// A worker's connection: its RPC channel (confirm mode, a reply-to consumer) and its
/// publishing channel.
pub(crate) struct Conn {
    conn: Connection,
    pub(crate) rpc: Channel,
    publish: Channel,
    pub(crate) waiting: Waiting,
}

impl Conn {
    fn up(&self) -> bool {
        self.conn.status().connected()
    }
}

/// A worker thread's connection, shared by its users: made by the first user that needs it,
/// and again by the first that finds it gone.
pub struct AmqpWorker {
    conn: Rc<tokio::sync::Mutex<Option<Rc<Conn>>>>,
}

/// A user's session: its worker's connection.
pub struct AmqpSession {
    conn: Rc<tokio::sync::Mutex<Option<Rc<Conn>>>>,
    consuming: bool,
    /// The connection this user opened, its phases still to be reported by its next call:
    /// before the call (by `connect`) or inside it.
    opened: Option<(Opened, throng_core::Connection)>,
}

impl AmqpClient {
    /// A client of the target at `url` with `options` (its [`AmqpOptions`], or the defaults).
    pub fn new(url: &str, options: &ClientOptions) -> Result<AmqpClient, String> {
        let target = Target::parse(url)?.trusting(options)?;
        let own = options.of::<AmqpOptions>().cloned().unwrap_or_default();
        let exchange = own
            .exchange
            .clone()
            .or_else(|| target.exchange.clone())
            .unwrap_or_default();
        crate::target::check_exchange(&exchange).map_err(|e| format!("exchange: {e}"))?;
        let routing_key = own
            .routing_key
            .clone()
            .or_else(|| target.routing_key.clone())
            .ok_or_else(|| {
                format!(
                    "{url}: no routing key: give --routing-key KEY (or ?routing_key=KEY in the \
                     URL); with the default exchange it names the queue"
                )
            })?;
        crate::target::check_short("routing_key", &routing_key)?;
        for (name, _) in &options.headers {
            crate::target::check_short("a header name", name)?;
        }
        let tag = std::hash::BuildHasher::hash_one(
            &std::collections::hash_map::RandomState::new(),
            (std::process::id(), url),
        );
        Ok(AmqpClient {
            target,
            exchange,
            routing_key,
            timeout: options.timeout,
            connect_timeout: options.connect_timeout,
            headers: options.headers.clone(),
            own,
            table: Arc::new(Table::new()),
            consumer: OnceCell::new(),
            tag,
            next: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            no_route: AtomicU64::new(0),
            rpc_nacked: AtomicU64::new(0),
            rpc_late: Arc::new(AtomicU64::new(0)),
        })
    }

    /// What publish–consume counted so far.
    pub fn counts(&self) -> &consume::Counts {
        &self.table.counts
    }

    /// The queue throng's consumer consumes from, once it started.
    pub fn queue(&self) -> Option<&str> {
        self.consumer.get().map(|c| c.queue.as_str())
    }

    async fn open(&self) -> Result<(Rc<Conn>, Opened), Outcome> {
        let shown = &self.target.shown;
        let (conn, opened) = self.target.connect(self.connect_timeout).await?;
        let deadline = Instant::now() + self.connect_timeout;
        let failed = |what: &str, e: lapin::Error| {
            let (class, status) = classify(&e);
            let mut o = Outcome::failed(class, format!("AMQP at {shown}: {what}: {e}"));
            if let Some(s) = status {
                o.status = s;
            }
            o
        };
        let setup = async {
            let rpc = conn
                .create_channel()
                .await
                .map_err(|e| failed("a channel", e))?;
            rpc.confirm_select(ConfirmSelectOptions::default())
                .await
                .map_err(|e| failed("confirm.select", e))?;
            let replies = rpc
                .basic_consume(
                    REPLY_TO.into(),
                    "throng-replies".into(),
                    BasicConsumeOptions {
                        no_ack: true,
                        ..BasicConsumeOptions::default()
                    },
                    FieldTable::default(),
                )
                .await
                .map_err(|e| failed("consuming direct reply-to", e))?;
            let publish = conn
                .create_channel()
                .await
                .map_err(|e| failed("a channel", e))?;
            if self.own.confirms {
                publish
                    .confirm_select(ConfirmSelectOptions::default())
                    .await
                    .map_err(|e| failed("confirm.select", e))?;
            }
            Ok::<_, Outcome>((rpc, replies, publish))
        };
        let (rpc, mut replies, publish) = match timeout_at(deadline, setup).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(Outcome::failed(
                    ErrorClass::Timeout,
                    format!(
                        "AMQP at {shown}: opening channels took over {:?}",
                        self.connect_timeout
                    ),
                ))
            }
        };
        let waiting: Waiting = Arc::default();
        let table = waiting.clone();
        let late = self.rpc_late.clone();
        // The replies of every user of the worker, handed to each by correlation id; the task
        // ends with the connection.
        tokio::spawn(async move {
            while let Some(Ok(d)) = replies.next().await {
                let id = d
                    .properties
                    .correlation_id()
                    .as_ref()
                    .map(|c| c.to_string());
                let tx = id.and_then(|id| table.lock().ok().and_then(|mut t| t.remove(&id)));
                match tx {
                    Some(tx) => drop(tx.send(d)),
                    None => drop(late.fetch_add(1, Ordering::Relaxed)),
                }
            }
        });
        self.connections.fetch_add(1, Ordering::Relaxed);
        let conn = Conn {
            conn,
            rpc,
            publish,
            waiting,
        };
        Ok((Rc::new(conn), opened))
    }

    /// The worker's connection: the one made, or a new one if there is none or it is gone,
    /// its opening (`how`: before a call or inside it) kept for the session's next call.
    async fn conn(
        &self,
        s: &mut AmqpSession,
        how: throng_core::Connection,
    ) -> Result<Rc<Conn>, Outcome> {
        let mut slot = s.conn.lock().await;
        if let Some(c) = slot.as_ref().filter(|c| c.up()) {
            return Ok(c.clone());
        }
        *slot = None;
        let (c, opened) = self.open().await?;
        *slot = Some(c.clone());
        s.opened = Some((opened, how));
        Ok(c)
    }

    /// The consumer of publish–consume, started once for the target.
    async fn consume(&self) -> Result<(), Outcome> {
        self.consumer
            .get_or_try_init(|| {
                consume::start(
                    Consuming {
                        target: self.target.clone(),
                        exchange: self.exchange.clone(),
                        routing_key: self.routing_key.clone(),
                        ack: self.own.ack,
                        prefetch: self.own.prefetch,
                        connect_timeout: self.connect_timeout,
                    },
                    self.table.clone(),
                )
            })
            .await
            .map(|_| ())
    }

    /// A call's headers: the run's, then the step's rendered; their size in bytes.
    fn headers(&self, step: &AmqpStep, render: &dyn Render) -> Result<(FieldTable, usize), String> {
        let mut t = FieldTable::default();
        let mut size = 0;
        let mut put = |k: &str, v: String| {
            size += k.len() + v.len();
            t.insert(
                ShortString::from(k),
                AMQPValue::LongString(LongString::from(v)),
            );
        };
        for (k, v) in &self.headers {
            put(k, v.clone());
        }
        for (k, v) in &step.headers {
            let value = render
                .render(v)
                .map_err(|e| format!("amqp header {k}: {e}"))?;
            put(k, value);
        }
        Ok((t, size))
    }

    /// A failure of a call on `conn`: the connection gone is `connect` (the broker went away;
    /// the next call makes a new one), else lapin's error classified.
    pub(crate) fn failed(&self, conn: &Conn, what: &str, e: &lapin::Error) -> Outcome {
        if !conn.up() {
            return Outcome::failed(
                ErrorClass::Connect,
                format!(
                    "{what}: the connection to {} is gone ({e})",
                    self.target.shown
                ),
            );
        }
        let (class, status) = classify(e);
        let mut o = Outcome::failed(class, format!("{what}: {e}"));
        if let Some(s) = status {
            o.status = s;
        }
        o
    }

    pub(crate) fn timed_out(&self, conn: &Conn, what: String) -> Outcome {
        match conn.up() {
            true => Outcome::failed(ErrorClass::Timeout, what),
            false => Outcome::failed(
                ErrorClass::Connect,
                format!("{what}: the connection to {} is gone", self.target.shown),
            ),
        }
    }

    async fn publish(
        &self,
        conn: &Conn,
        exchange: &str,
        key: &str,
        payload: Bytes,
        mut headers: FieldTable,
    ) -> Outcome {
        let deadline = Instant::now() + self.timeout;
        let (msg, mut awaited) = self.table.expect();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        headers.insert(SENT_HEADER.into(), AMQPValue::LongLongInt(now));
        let props = BasicProperties::default()
            .with_message_id(msg.as_str().into())
            .with_timestamp((now / 1_000_000_000) as u64)
            .with_headers(headers);
        let sent = payload.len() as u64;
        let what = format!("publishing to {}", route(exchange, key));
        let mandatory = BasicPublishOptions {
            mandatory: true,
            ..BasicPublishOptions::default()
        };
        let published = timeout_at(
            deadline,
            conn.publish
                .basic_publish(exchange.into(), key.into(), mandatory, &payload, props),
        )
        .await;
        let confirm = match published {
            Ok(Ok(c)) => {
                awaited.published();
                c
            }
            Ok(Err(e)) => {
                awaited.unpublished();
                return self.failed(conn, &what, &e);
            }
            Err(_) => {
                awaited.unpublished();
                return self.timed_out(conn, format!("{what}: not sent within {:?}", self.timeout));
            }
        };
        if self.own.confirms {
            match timeout_at(deadline, confirm).await {
                Ok(Ok(Confirmation::Ack(None))) => awaited.confirmed(),
                Ok(Ok(Confirmation::Ack(Some(r)))) => {
                    awaited.refused(Undelivered::Returned);
                    return Outcome {
                        status: status::status(r.reply_code),
                        bytes_sent: sent,
                        ..Outcome::failed(
                            ErrorClass::Status,
                            format!("{what}: returned by the broker: {}", r.reply_text),
                        )
                    };
                }
                Ok(Ok(Confirmation::Nack(_))) => {
                    awaited.refused(Undelivered::Nacked);
                    return Outcome {
                        status: NACKED,
                        bytes_sent: sent,
                        ..Outcome::failed(
                            ErrorClass::Status,
                            format!("{what}: nacked by the broker"),
                        )
                    };
                }
                Ok(Ok(Confirmation::NotRequested)) => {}
                Ok(Err(e)) => {
                    // Not confirmed: it may still arrive, so its delivery is awaited below.
                    if !conn.up() {
                        let o = self.failed(conn, &what, &e);
                        awaited.refused(Undelivered::Lost);
                        return Outcome {
                            bytes_sent: sent,
                            ..o
                        };
                    }
                }
                Err(_) => {}
            }
        }
        let mut outcome = match awaited.wait(deadline).await {
            Ok(_) => Outcome {
                status: OK,
                bytes_received: sent,
                ..Outcome::default()
            },
            Err(_) => self.timed_out(
                conn,
                format!(
                    "{what}: a message lost, not delivered within {:?}",
                    self.timeout
                ),
            ),
        };
        outcome.bytes_sent = sent;
        outcome
    }
}

pub(crate) fn route(exchange: &str, key: &str) -> String {
    match exchange {
        "" => format!("queue {key} (default exchange)"),
        e => format!("exchange {e}, routing key {key}"),
    }
}

impl Client for AmqpClient {
    type Step = AmqpStep;
    type Worker = AmqpWorker;
    type Session = AmqpSession;

    fn worker_of(&self, _index: usize, _workers: usize) -> AmqpWorker {
        AmqpWorker {
            conn: Rc::new(tokio::sync::Mutex::new(None)),
        }
    }

    fn session(&self, worker: &AmqpWorker, _user: u64) -> AmqpSession {
        AmqpSession {
            conn: worker.conn.clone(),
            consuming: false,
            opened: None,
        }
    }

    /// The worker's connection (made by the first of its users), and for a publishing
    /// target its consumer (started by the first user of any worker), each timed apart from
    /// the steps; a failure is the step's outcome.
    async fn connect(&self, s: &mut AmqpSession) -> Result<(), Outcome> {
        self.conn(s, throng_core::Connection::Before).await?;
        if self.own.mode == Mode::Publish && !s.consuming {
            self.consume().await?;
            s.consuming = true;
        }
        Ok(())
    }

    async fn call(
        &self,
        s: &mut AmqpSession,
        step: &AmqpStep,
        render: &dyn Render,
        want_reply: bool,
    ) -> (Outcome, Option<Reply>) {
        if step.mode == Mode::Publish && !s.consuming {
            if let Err(o) = self.consume().await {
                return (o, None);
            }
            s.consuming = true;
        }
        let conn = match self.conn(s, throng_core::Connection::New).await {
            Ok(c) => c,
            Err(o) => return (o, None),
        };
        let payload = match render.render(&step.payload) {
            Ok(p) => Bytes::from(p.into_bytes()),
            Err(e) => {
                return (
                    Outcome::failed(ErrorClass::Check, format!("amqp payload: {e}")),
                    None,
                )
            }
        };
        let headers = match self.headers(step, render) {
            Ok((h, _)) => h,
            Err(e) => return (Outcome::failed(ErrorClass::Check, e), None),
        };
        let exchange = step.exchange.as_deref().unwrap_or(&self.exchange);
        let key = step.routing_key.as_deref().unwrap_or(&self.routing_key);
        let (mut outcome, reply) = match step.mode {
            Mode::Rpc => {
                self.rpc(&conn, exchange, key, payload, headers, want_reply)
                    .await
            }
            Mode::Publish => {
                if exchange != self.exchange || key != self.routing_key {
                    let o = Outcome::failed(
                        ErrorClass::Other,
                        format!(
                            "amqp publish to {}: throng's consumer is on the target's route, {}",
                            route(exchange, key),
                            route(&self.exchange, &self.routing_key)
                        ),
                    );
                    return (o, None);
                }
                let outcome = self.publish(&conn, exchange, key, payload, headers).await;
                let reply = (want_reply && outcome.error.is_none()).then(|| Reply {
                    status: outcome.status,
                    ..Reply::default()
                });
                (outcome, reply)
            }
        };
        // The connect and TLS phases of the connection this user opened (the worker's other
        // users' calls on it report none: the steps' own phases are not timed).
        if let Some((opened, how)) = s.opened.take() {
            let mut phases = Phases::on(how);
            opened.into_phases(&mut phases);
            outcome.phases = phases;
        }
        (outcome, reply)
    }

    /// A publishing step publishes on its target's route, where throng's consumer is.
    fn check(&self, step: &AmqpStep) -> Result<(), throng_core::step::StepError> {
        let other = step.exchange.as_deref().is_some_and(|e| e != self.exchange)
            || step
                .routing_key
                .as_deref()
                .is_some_and(|k| k != self.routing_key);
        match step.mode == Mode::Publish && other {
            true => Err(throng_core::step::StepError::at(
                step.at,
                format!(
                    "amqp publish: throng's consumer is on the target's route, {} (name a \
                     target with that exchange and routing key instead)",
                    route(&self.exchange, &self.routing_key)
                ),
            )),
            false => Ok(()),
        }
    }

    fn report(&self) -> DriverReport {
        let c = &self.table.counts;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut counts = vec![
            ("amqp_connections", load(&self.connections)),
            ("amqp_no_route", load(&self.no_route)),
            ("amqp_rpc_nacked", load(&self.rpc_nacked)),
            ("amqp_rpc_late_replies", load(&self.rpc_late)),
        ];
        let mut notes = Vec::new();
        if load(&c.published) > 0 || self.consumer.initialized() {
            counts.extend([
                ("amqp_published", load(&c.published)),
                ("amqp_confirmed", load(&c.confirmed)),
                ("amqp_delivered", load(&c.delivered)),
                ("amqp_lost", load(&c.lost)),
                ("amqp_returned", load(&c.returned)),
                ("amqp_nacked", load(&c.nacked)),
                ("amqp_in_flight_at_end", load(&c.in_flight_at_end)),
                ("amqp_redelivered", load(&c.redelivered)),
                ("amqp_duplicated", load(&c.duplicated)),
                ("amqp_late", load(&c.late)),
                ("amqp_foreign", load(&c.foreign)),
            ]);
            notes.push(format!(
                "AMQP messages: {} published, {} delivered, {} lost, {} returned, {} nacked, {} \
                 in flight at the end; {} redelivered, {} duplicated, {} late deliveries",
                load(&c.published),
                load(&c.delivered),
                load(&c.lost),
                load(&c.returned),
                load(&c.nacked),
                load(&c.in_flight_at_end),
                load(&c.redelivered),
                load(&c.duplicated),
                load(&c.late),
            ));
        }
        DriverReport {
            connection: Some(format!(
                "AMQP 0.9.1 (lapin) to {}, a connection per worker thread",
                self.target.shown
            )),
            counts,
            notes,
        }
    }
}
