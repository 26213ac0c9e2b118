//! A target's client: a NATS connection per worker thread, shared by its users (NATS
//! multiplexes: requests are matched to replies by inbox, and one connection carries a whole
//! service's traffic, as a go-micro client's does), the request–reply and publish–consume
//! calls, and how their failures are classified.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::{HeaderMap, RequestErrorKind};
use bytes::Bytes;
use throng_core::step::{Client, ClientOptions, Render, Reply, StepError};
use throng_core::{DriverReport, ErrorClass, Outcome, Status};
use tokio::sync::OnceCell;
use tokio::time::{timeout_at, Instant};

use crate::consume::{self, Subscribers, Table, MSG_HEADER, SENT_HEADER};
use crate::status::{self, NO_RESPONDERS, OK};
use crate::step::{Mode, NatsOptions, NatsStep, MAX_SUBSCRIBERS};
use crate::target::{check_header_name, connect_error, Target};

/// A step keeps at most this many deliveries' timings (a parts row's samples).
const MAX_PARTS: usize = MAX_SUBSCRIBERS as usize;

/// One NATS target's client (see [`crate::NatsProtocol`]).
pub struct NatsClient {
    target: Target,
    timeout: Duration,
    connect_timeout: Duration,
    headers: Vec<(String, String)>,
    own: NatsOptions,
    /// Publish–consume: the table of messages in flight, and the subscribers, started by the
    /// first user that publishes.
    table: Arc<Table>,
    subscribers: OnceCell<Subscribers>,
    /// The workers' connections' statistics (for the reconnects).
    stats: Mutex<Vec<Arc<async_nats::Statistics>>>,
    connections: AtomicU64,
    no_responders: AtomicU64,
}

impl std::fmt::Debug for NatsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsClient")
            .field("server", &self.target.shown)
            .field("subject", &self.target.subject)
            .finish_non_exhaustive()
    }
}

/// A worker thread's connection, shared by its users: made by the first user that needs it,
/// again after it could not be made.
pub struct NatsWorker {
    conn: Rc<OnceCell<async_nats::Client>>,
}

/// A user's session: its worker's connection, once made, and whether it has the subscribers.
pub struct NatsSession {
    conn: Rc<OnceCell<async_nats::Client>>,
    subscribed: Cell<bool>,
}

impl NatsSession {
    /// Whether the session's connection is made.
    pub fn is_connected(&self) -> bool {
        self.conn.initialized()
    }
}

impl NatsClient {
    /// A client of the target at `url` with `options` (its [`NatsOptions`], or the defaults).
    pub fn new(url: &str, options: &ClientOptions) -> Result<NatsClient, String> {
        let target = Target::parse(url)?;
        let own = options.of::<NatsOptions>().cloned().unwrap_or_default();
        if own.subscribers == 0 || own.subscribers > MAX_SUBSCRIBERS {
            return Err(format!(
                "NATS subscribers: 1 to {MAX_SUBSCRIBERS}, not {}",
                own.subscribers
            ));
        }
        let target = target.trusting(options)?;
        for (name, _) in &options.headers {
            check_header_name(name)?;
        }
        Ok(NatsClient {
            table: Arc::new(Table::new(own.subscribers)),
            target,
            timeout: options.timeout,
            connect_timeout: options.connect_timeout,
            headers: options.headers.clone(),
            own,
            subscribers: OnceCell::new(),
            stats: Mutex::new(Vec::new()),
            connections: AtomicU64::new(0),
            no_responders: AtomicU64::new(0),
        })
    }

    /// The target's URL as throng shows it: a password or token as `***`.
    pub fn shown_url(&self) -> String {
        self.target.shown_url()
    }

    /// The target's subject.
    pub fn subject(&self) -> &str {
        &self.target.subject
    }

    /// What publish–consume counted so far.
    pub fn counts(&self) -> &consume::Counts {
        &self.table.counts
    }

    /// How a connection is made (see `Target::options`).
    fn options(&self) -> async_nats::ConnectOptions {
        self.target.options(self.connect_timeout)
    }

    async fn open(&self) -> Result<async_nats::Client, Outcome> {
        let server = &self.target.server;
        let connect = self.options().name("throng").connect(server.as_str());
        // async-nats' own connection timeout covers the TCP connect; the INFO/CONNECT exchange
        // is bounded here as well.
        match tokio::time::timeout(self.connect_timeout + Duration::from_millis(100), connect).await
        {
            Ok(Ok(c)) => {
                self.connections.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut s) = self.stats.lock() {
                    s.push(c.statistics());
                }
                Ok(c)
            }
            Ok(Err(e)) => {
                let (class, m) = connect_error(server, &e);
                Err(Outcome::failed(class, m))
            }
            Err(_) => Err(Outcome::failed(
                ErrorClass::Timeout,
                format!(
                    "connecting to NATS at {} timed out after {:?}",
                    self.target.shown, self.connect_timeout
                ),
            )),
        }
    }

    /// The subscribers of publish–consume, started once for the target.
    async fn subscribe(&self) -> Result<(), Outcome> {
        let (timeout, target) = (self.connect_timeout, self.target.clone());
        self.subscribers
            .get_or_try_init(|| {
                consume::start(
                    self.target.server.clone(),
                    self.target.subject.clone(),
                    self.own.jetstream,
                    self.table.clone(),
                    move || target.options(timeout),
                )
            })
            .await
            .map(|_| ())
            .map_err(|(class, m)| Outcome::failed(class, format!("throng's subscribers: {m}")))
    }

    /// The headers of a call: the run's, then the step's rendered.
    fn headers(&self, step: &NatsStep, render: &dyn Render) -> Result<Option<HeaderMap>, String> {
        if self.headers.is_empty() && step.headers.is_empty() {
            return Ok(None);
        }
        let mut map = HeaderMap::new();
        for (k, v) in &self.headers {
            map.append(k.as_str(), v.as_str());
        }
        for (k, v) in &step.headers {
            let value = render
                .render(v)
                .map_err(|e| format!("nats header {k}: {e}"))?;
            map.append(k.as_str(), value.as_str());
        }
        Ok(Some(map))
    }

    async fn request(
        &self,
        conn: &async_nats::Client,
        subject: &str,
        payload: Bytes,
        headers: Option<HeaderMap>,
        want_reply: bool,
    ) -> (Outcome, Option<Reply>) {
        let sent = (subject.len() + payload.len() + header_len(headers.as_ref())) as u64;
        let deadline = Instant::now() + self.timeout;
        let mut request = async_nats::Request::new()
            .payload(payload)
            .timeout(Some(self.timeout));
        if let Some(h) = headers {
            request = request.headers(h);
        }
        let got = timeout_at(deadline, conn.send_request(subject.to_string(), request)).await;
        let mut outcome = match got {
            Ok(Ok(reply)) => return self.replied(reply, sent, want_reply),
            Ok(Err(e)) => match e.kind() {
                RequestErrorKind::NoResponders => {
                    self.no_responders.fetch_add(1, Ordering::Relaxed);
                    let outcome = Outcome {
                        status: NO_RESPONDERS,
                        bytes_sent: sent,
                        ..Outcome::failed(ErrorClass::Status, format!("no responders on {subject}"))
                    };
                    // The server's answer: a status check may expect it.
                    let reply = want_reply.then(|| Reply {
                        status: NO_RESPONDERS,
                        ..Reply::default()
                    });
                    return (outcome, reply);
                }
                RequestErrorKind::TimedOut => self.timed_out(conn, subject),
                RequestErrorKind::InvalidSubject | RequestErrorKind::MaxPayloadExceeded => {
                    Outcome::failed(ErrorClass::Other, format!("request to {subject}: {e}"))
                }
                RequestErrorKind::Other => Outcome::failed(
                    ErrorClass::Reset,
                    format!("request to {subject}: the connection ended ({e})"),
                ),
            },
            Err(_) => self.timed_out(conn, subject),
        };
        outcome.bytes_sent = sent;
        (outcome, None)
    }

    /// A timeout's outcome: the server's silence, or a connection that is down and being made
    /// again (the server went away), said apart.
    fn timed_out(&self, conn: &async_nats::Client, subject: &str) -> Outcome {
        match conn.connection_state() {
            async_nats::connection::State::Connected => Outcome::failed(
                ErrorClass::Timeout,
                format!("no reply on {subject} within {:?}", self.timeout),
            ),
            _ => Outcome::failed(
                ErrorClass::Connect,
                format!(
                    "no reply on {subject} within {:?}: the connection to {} is down \
                     (reconnecting)",
                    self.timeout, self.target.shown
                ),
            ),
        }
    }

    /// A reply's outcome: its status (a status line, or a NATS micro service's error code)
    /// and, when wanted, the reply.
    fn replied(
        &self,
        reply: async_nats::Message,
        sent: u64,
        want_reply: bool,
    ) -> (Outcome, Option<Reply>) {
        let service_error = reply.headers.as_ref().and_then(|h| {
            let code = h
                .get("Nats-Service-Error-Code")?
                .as_str()
                .parse::<u16>()
                .ok()?;
            let text = h.get("Nats-Service-Error").map(|v| v.as_str().to_string());
            Some((code, text))
        });
        let (status, failure): (Status, Option<String>) = match (&reply.status, service_error) {
            (_, Some((code, text))) => (
                status::status(code),
                Some(format!(
                    "the service answered error {code}{}",
                    text.map(|t| format!(" ({t})")).unwrap_or_default()
                )),
            ),
            (Some(code), None) if code.as_u16() >= 400 => (
                status::status(code.as_u16()),
                Some(format!(
                    "the reply's status is {}{}",
                    code.as_u16(),
                    reply
                        .description
                        .as_ref()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default()
                )),
            ),
            (Some(code), None) => (status::status(code.as_u16()), None),
            (None, None) => (OK, None),
        };
        let mut outcome = match failure {
            Some(m) => Outcome::failed(ErrorClass::Status, m),
            None => Outcome::default(),
        };
        outcome.status = status;
        outcome.bytes_sent = sent;
        outcome.bytes_received = reply.length as u64;
        let reply = want_reply.then(|| Reply {
            status,
            metadata: reply
                .headers
                .iter()
                .flat_map(|h| h.iter())
                .flat_map(|(k, vs)| {
                    vs.iter()
                        .map(|v| (k.to_string().to_ascii_lowercase(), v.to_string()))
                })
                .collect(),
            body: reply.payload,
            json: None,
        });
        (outcome, reply)
    }

    async fn publish(
        &self,
        conn: &async_nats::Client,
        subject: &str,
        payload: Bytes,
        headers: Option<HeaderMap>,
    ) -> Outcome {
        let start = std::time::Instant::now();
        let deadline = Instant::now() + self.timeout;
        let (msg, mut awaited) = self.table.expect();
        let mut headers = headers.unwrap_or_default();
        headers.insert(MSG_HEADER, msg.as_str());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        headers.insert(SENT_HEADER, now.to_string().as_str());
        let sent = (subject.len() + payload.len() + header_len(Some(&headers))) as u64;
        if self.own.jetstream {
            if let Err(o) = self
                .publish_to_stream(conn, subject, headers, payload, deadline, &mut awaited)
                .await
            {
                awaited.unpublished();
                return Outcome {
                    bytes_sent: sent,
                    ..o
                };
            }
        } else {
            let published = timeout_at(
                deadline,
                conn.publish_with_headers(subject.to_string(), headers, payload),
            )
            .await;
            match published {
                Ok(Ok(())) => awaited.published(),
                Ok(Err(e)) => {
                    awaited.unpublished();
                    return Outcome::failed(
                        ErrorClass::Reset,
                        format!("publishing on {subject}: {e}"),
                    );
                }
                Err(_) => {
                    awaited.unpublished();
                    let mut o = self.timed_out(conn, subject);
                    o.message = Some(format!(
                        "publishing on {subject}: not taken within {:?}{}",
                        self.timeout,
                        match o.error {
                            Some(ErrorClass::Connect) => " (the connection is down)",
                            _ => "",
                        }
                    ));
                    return o;
                }
            }
        }
        let mut outcome = match awaited.wait(deadline).await {
            Ok(times) => {
                let mut last = start;
                let parts = times
                    .iter()
                    .take(MAX_PARTS)
                    .map(|t| {
                        let gap = t.saturating_duration_since(last);
                        last = *t;
                        gap
                    })
                    .collect();
                Outcome {
                    status: OK,
                    // The subscribers received the message once each.
                    bytes_received: sent * times.len() as u64,
                    parts,
                    ..Outcome::default()
                }
            }
            Err(had) => {
                let down = conn.connection_state() != async_nats::connection::State::Connected;
                Outcome::failed(
                    match down {
                        true => ErrorClass::Connect,
                        false => ErrorClass::Timeout,
                    },
                    format!(
                        "a message on {subject} lost: delivered to {had} of {} subscribers \
                         within {:?}{}",
                        self.own.subscribers,
                        self.timeout,
                        match down {
                            true => " (the connection is down)",
                            false => "",
                        }
                    ),
                )
            }
        };
        outcome.bytes_sent = sent;
        outcome
    }
}

impl NatsClient {
    /// Publishes through JetStream and waits for the stream's acknowledgement (the message is
    /// stored): published once acknowledged; a failure's outcome otherwise. A stream that
    /// holds no such subject is the server's "no responders" (`nats 503`, class `status`).
    async fn publish_to_stream(
        &self,
        conn: &async_nats::Client,
        subject: &str,
        headers: HeaderMap,
        payload: Bytes,
        deadline: Instant,
        awaited: &mut consume::Awaited,
    ) -> Result<(), Outcome> {
        use async_nats::jetstream::context::PublishErrorKind;
        let js = async_nats::jetstream::new(conn.clone());
        let acked = timeout_at(deadline, async {
            js.publish_with_headers(subject.to_string(), headers, payload)
                .await?
                .await
        })
        .await;
        let e = match acked {
            Ok(Ok(_ack)) => {
                awaited.published();
                return Ok(());
            }
            Ok(Err(e)) => e,
            Err(_) => {
                let mut o = self.timed_out(conn, subject);
                o.message = Some(format!(
                    "publishing on {subject}: no JetStream acknowledgement within {:?}",
                    self.timeout
                ));
                return Err(o);
            }
        };
        Err(match e.kind() {
            PublishErrorKind::StreamNotFound => Outcome {
                status: NO_RESPONDERS,
                ..Outcome::failed(
                    ErrorClass::Status,
                    format!("publishing on {subject}: no JetStream stream holds it"),
                )
            },
            PublishErrorKind::TimedOut => {
                Outcome::failed(ErrorClass::Timeout, format!("publishing on {subject}: {e}"))
            }
            PublishErrorKind::BrokenPipe => {
                Outcome::failed(ErrorClass::Reset, format!("publishing on {subject}: {e}"))
            }
            _ => Outcome::failed(ErrorClass::Status, format!("publishing on {subject}: {e}")),
        })
    }
}

/// The bytes a message's headers take in NATS's header block (`NATS/1.0\r\n`, `K: V\r\n`
/// each, `\r\n`); 0 without headers.
fn header_len(h: Option<&HeaderMap>) -> usize {
    let Some(h) = h else { return 0 };
    let fields: usize = h
        .iter()
        .map(|(k, vs)| {
            vs.iter()
                .map(|v| AsRef::<[u8]>::as_ref(k).len() + v.as_str().len() + 4)
                .sum::<usize>()
        })
        .sum();
    10 + fields + 2
}

impl Client for NatsClient {
    type Step = NatsStep;
    type Worker = NatsWorker;
    type Session = NatsSession;

    fn worker_of(&self, _index: usize, _workers: usize) -> NatsWorker {
        NatsWorker {
            conn: Rc::new(OnceCell::new()),
        }
    }

    fn session(&self, worker: &NatsWorker, _user: u64) -> NatsSession {
        NatsSession {
            conn: worker.conn.clone(),
            subscribed: Cell::new(false),
        }
    }

    /// The worker's connection (made by the first of its users), and for a publishing target
    /// its subscribers (started by the first user of any worker), each timed apart from the
    /// steps; a failure is the step's outcome.
    async fn connect(&self, s: &mut NatsSession) -> Result<(), Outcome> {
        s.conn.get_or_try_init(|| self.open()).await?;
        if self.own.mode == Mode::Publish && !s.subscribed.get() {
            self.subscribe().await?;
            s.subscribed.set(true);
        }
        Ok(())
    }

    async fn call(
        &self,
        s: &mut NatsSession,
        step: &NatsStep,
        render: &dyn Render,
        want_reply: bool,
    ) -> (Outcome, Option<Reply>) {
        // A scenario's publish steps need the subscribers whatever the URL run's mode.
        if step.mode == Mode::Publish && !s.subscribed.get() {
            if let Err(o) = self.subscribe().await {
                return (o, None);
            }
            s.subscribed.set(true);
        }
        let conn = match s.conn.get() {
            Some(c) => c.clone(),
            None => match s.conn.get_or_try_init(|| self.open()).await {
                Ok(c) => c.clone(),
                Err(o) => return (o, None),
            },
        };
        let payload = match render.render(&step.payload) {
            Ok(p) => Bytes::from(p.into_bytes()),
            Err(e) => {
                return (
                    Outcome::failed(ErrorClass::Check, format!("nats payload: {e}")),
                    None,
                )
            }
        };
        let headers = match self.headers(step, render) {
            Ok(h) => h,
            Err(e) => return (Outcome::failed(ErrorClass::Check, e), None),
        };
        let subject = step.subject.as_deref().unwrap_or(&self.target.subject);
        match step.mode {
            Mode::Request => {
                self.request(&conn, subject, payload, headers, want_reply)
                    .await
            }
            Mode::Publish => {
                if step
                    .subject
                    .as_deref()
                    .is_some_and(|x| x != self.target.subject)
                {
                    return (
                        Outcome::failed(
                            ErrorClass::Other,
                            format!(
                                "nats publish on {subject}: throng's subscribers are on the \
                                 target's subject, {}",
                                self.target.subject
                            ),
                        ),
                        None,
                    );
                }
                let outcome = self.publish(&conn, subject, payload, headers).await;
                let reply = (want_reply && outcome.error.is_none()).then(|| Reply {
                    status: outcome.status,
                    metadata: Vec::new(),
                    body: Bytes::new(),
                    json: None,
                });
                (outcome, reply)
            }
        }
    }

    /// A publishing step publishes on its target's subject, where throng's subscribers are.
    fn check(&self, step: &NatsStep) -> Result<(), StepError> {
        match (step.mode, step.subject.as_deref()) {
            (Mode::Publish, Some(s)) if s != self.target.subject => Err(StepError::at(
                step.at,
                format!(
                    "nats publish on {s}: throng's subscribers are on the target's subject, {} \
                     (name a target of that subject instead)",
                    self.target.subject
                ),
            )),
            _ => Ok(()),
        }
    }

    /// A publishing step's deliveries: `LABEL (deliveries)`, one a subscriber, the first timed
    /// from the publish, each next from the one before.
    fn parts(&self, step: &NatsStep, label: &str) -> Option<String> {
        (step.mode == Mode::Publish).then(|| format!("{label} (deliveries)"))
    }

    fn report(&self) -> DriverReport {
        let c = &self.table.counts;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let reconnects: u64 = self
            .stats
            .lock()
            .map(|s| {
                s.iter()
                    .map(|st| st.connects.load(Ordering::Relaxed).saturating_sub(1))
                    .sum()
            })
            .unwrap_or(0);
        let mut counts = vec![
            ("nats_connections", load(&self.connections)),
            ("nats_reconnects", reconnects),
            ("nats_no_responders", load(&self.no_responders)),
        ];
        let mut notes = Vec::new();
        if load(&c.published) > 0 || self.subscribers.initialized() {
            counts.extend([
                ("nats_subscribers", u64::from(self.own.subscribers)),
                ("nats_published", load(&c.published)),
                ("nats_delivered", load(&c.delivered)),
                ("nats_lost", load(&c.lost)),
                ("nats_in_flight_at_end", load(&c.in_flight_at_end)),
                ("nats_late", load(&c.late)),
                ("nats_duplicated", load(&c.duplicated)),
                ("nats_foreign", load(&c.foreign)),
                ("nats_probes", load(&c.probes)),
                ("nats_probe_deliveries", load(&c.probe_deliveries)),
            ]);
            notes.push(format!(
                "NATS messages: {} published, {} delivered to all {} subscribers, {} lost, {} \
                 in flight at the end; {} late and {} duplicated deliveries",
                load(&c.published),
                load(&c.delivered),
                self.own.subscribers,
                load(&c.lost),
                load(&c.in_flight_at_end),
                load(&c.late),
                load(&c.duplicated)
            ));
        }
        DriverReport {
            connection: Some(format!(
                "NATS (async-nats) to {}, a connection per worker thread",
                self.target.shown
            )),
            counts,
            notes,
        }
    }
}
