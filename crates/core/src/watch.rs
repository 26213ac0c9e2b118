//! Servers watched beside a run: their own figures read once a second through an idle window
//! before the load, through the load, and once more after it (a server publishes what the load
//! did a little later), whatever protocol the run itself speaks. A protocol's flags name them
//! (SQL's `--db-stats`, NATS's `--nats-monitor`, RabbitMQ's `--amqp-monitor`) and implement
//! one thing, [`Server`]: what the server and its figures are, and how to read it once. The
//! reading loop is here, once: the idle window ([`Watched::idle`]), a task a server through the
//! load, the last reading after it, readings that fail counted by class and told as a warning
//! (never a failed run), readings the run was too busy to take dropped and counted.
//!
//! Several servers, of several protocols, are one [`Watched`] ([`Watched::join`]): a run of a
//! mixed scenario with `--db-stats` and `--nats-monitor` gets a block for each in its result.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::{DatabaseEvent, DatabaseInfo, DatabaseSample, ErrorClass, ReadFailures};

/// How often a server is read.
pub const PERIOD: Duration = Duration::from_secs(1);

/// The longest a monitoring endpoint's reading may take (the connect timeout when shorter):
/// read once a second, a reading later than this is a failed one, and a stalled endpoint
/// must not hold the run's start or end for the connect timeout's 10 s a reading (measured:
/// a 0.5 s NATS run beside a monitor that accepts and never answers took 21.9 s with 10 s).
pub const READ_LIMIT: Duration = Duration::from_secs(2);

/// How often a server is asked, after the load, whether it has published the load's figures.
const ASK: Duration = Duration::from_millis(200);

/// A reading that failed: its class (a refused connection is `connect`, a server that did not
/// answer in time `timeout`, an answer of the wrong status `status`) and what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// What kind of failure.
    pub class: ErrorClass,
    /// What went wrong, for the warning (passwords hidden).
    pub message: String,
}

impl ReadError {
    /// A failure of `class`.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> ReadError {
        ReadError {
            class,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A server a protocol reads beside a run: all the watch needs of it.
pub trait Server: Send + 'static {
    /// The server and its figures, in the order of [`Server::read`]'s values. Asked after the
    /// idle window, so a server may learn from its first reading which figures it keeps.
    fn info(&self) -> DatabaseInfo;
    /// One reading of its figures, bounded in time: a server that stalls is a
    /// [`ErrorClass::Timeout`], never a wait without end.
    fn read(&mut self) -> impl Future<Output = Result<Vec<u64>, ReadError>> + Send;
    /// After the load: how much longer until the server has published what the load did,
    /// `loaded` after the load started and `ended` after it ended; asked every 200 ms until it
    /// says nothing is left or the watch's `settle` has passed. `None` (the default): it
    /// cannot say, so the last reading waits the whole `settle`.
    fn publishes_in(
        &mut self,
        _loaded: Duration,
        _ended: Duration,
    ) -> impl Future<Output = Option<Duration>> + Send {
        async { None }
    }
    /// What the idle readings found, to say once before the load (figures the server does
    /// not keep); none by default.
    fn note(&self) -> Option<String> {
        None
    }
}

type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// [`Server`] with its type erased, so servers of several protocols are watched as one.
trait AnyServer: Send {
    fn info(&self) -> DatabaseInfo;
    fn read(&mut self) -> Boxed<'_, Result<Vec<u64>, ReadError>>;
    fn publishes_in(&mut self, loaded: Duration, ended: Duration) -> Boxed<'_, Option<Duration>>;
    fn note(&self) -> Option<String>;
}

impl<S: Server> AnyServer for S {
    fn info(&self) -> DatabaseInfo {
        Server::info(self)
    }
    fn read(&mut self) -> Boxed<'_, Result<Vec<u64>, ReadError>> {
        Box::pin(Server::read(self))
    }
    fn publishes_in(&mut self, loaded: Duration, ended: Duration) -> Boxed<'_, Option<Duration>> {
        Box::pin(Server::publishes_in(self, loaded, ended))
    }
    fn note(&self) -> Option<String> {
        Server::note(self)
    }
}

/// The readings of one server that failed, by class.
#[derive(Debug, Clone, Default)]
struct Failures {
    tries: u64,
    by_class: Vec<(ErrorClass, u64)>,
    first: Option<String>,
}

impl Failures {
    fn add(&mut self, e: ReadError) {
        match self.by_class.iter_mut().find(|(c, _)| *c == e.class) {
            Some((_, n)) => *n += 1,
            None => self.by_class.push((e.class, 1)),
        }
        self.first.get_or_insert(e.message);
    }

    /// The failures for the result, when any reading failed.
    fn record(&self) -> Option<ReadFailures> {
        let failed: u64 = self.by_class.iter().map(|(_, n)| n).sum();
        (failed > 0).then(|| ReadFailures {
            tries: self.tries,
            failed,
            by_class: self
                .by_class
                .iter()
                .map(|(c, n)| (c.name().to_string(), *n))
                .collect(),
            first: self.first.clone().unwrap_or_default(),
        })
    }

    /// `NAME: 3 of 12 readings failed (2 connect, 1 timeout), the first: ...`.
    fn warning(&self, name: &str) -> Option<String> {
        let failed: u64 = self.by_class.iter().map(|(_, n)| n).sum();
        if failed == 0 {
            return None;
        }
        let classes: Vec<String> = self
            .by_class
            .iter()
            .map(|(c, n)| format!("{n} {}", c.name()))
            .collect();
        Some(format!(
            "{name}: {failed} of {} readings failed ({}), the first: {}",
            self.tries,
            classes.join(", "),
            self.first.as_deref().unwrap_or_default()
        ))
    }
}

/// One server being watched: its idle readings until the load starts, its failures.
struct Entry {
    server: Box<dyn AnyServer>,
    /// The longest wait after the load for its last reading.
    settle: Duration,
    idle: Vec<(Instant, Vec<u64>)>,
    failures: Failures,
}

impl Entry {
    async fn read(&mut self) -> Option<Vec<u64>> {
        self.failures.tries += 1;
        match self.server.read().await {
            Ok(values) => Some(values),
            Err(e) => {
                self.failures.add(e);
                None
            }
        }
    }
}

/// Servers being watched through the load: readings of their own figures, and the last ones
/// after it. [`Watched::take`] gives what starts them.
pub struct Readings {
    /// The readings, as they come; the channel closes after the last one.
    pub events: mpsc::Receiver<DatabaseEvent>,
    /// Told when the load has ended: the watch then takes its last readings and closes
    /// `events`.
    pub load_ended: oneshot::Sender<()>,
    /// Once the channel has closed: what went wrong while watching, to tell the user
    /// (readings that failed, by class; readings dropped).
    pub warnings: JoinHandle<Vec<String>>,
}

impl std::fmt::Debug for Readings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readings").finish_non_exhaustive()
    }
}

/// Servers read through their idle window, waiting for the run that watches them through its
/// load: the first [`Watched::take`] gets them.
pub struct Watched(std::sync::Mutex<Option<Vec<Entry>>>);

impl Watched {
    /// Reads `servers` now and once a second for `idle` (the last reading at its end), one
    /// after the other; a reading that fails is counted, not fatal. Through a run's load they
    /// are read once a second, and once more after it, at most `settle` after its end.
    pub async fn idle<S: Server>(servers: Vec<S>, idle: Duration, settle: Duration) -> Watched {
        let mut entries: Vec<Entry> = servers
            .into_iter()
            .map(|s| Entry {
                server: Box::new(s),
                settle,
                idle: Vec::new(),
                failures: Failures::default(),
            })
            .collect();
        let t0 = Instant::now();
        let mut at = t0;
        loop {
            for e in &mut entries {
                if let Some(values) = e.read().await {
                    e.idle.push((Instant::now(), values));
                }
            }
            if at >= t0 + idle {
                break;
            }
            at = (at + PERIOD).min(t0 + idle);
            tokio::time::sleep_until(at).await;
        }
        Watched(std::sync::Mutex::new(Some(entries)))
    }

    /// Several watched servers as one, in this order.
    pub fn join(all: impl IntoIterator<Item = Watched>) -> Watched {
        let entries = all
            .into_iter()
            .flat_map(|w| w.0.into_inner().ok().flatten().unwrap_or_default())
            .collect();
        Watched(std::sync::Mutex::new(Some(entries)))
    }

    /// What the idle readings found, a line each to say before the load: each server's
    /// [`Server::note`], and the readings that failed.
    pub fn notes(&self) -> Vec<String> {
        let Ok(entries) = self.0.lock() else {
            return Vec::new();
        };
        let entries = entries.iter().flatten();
        entries
            .flat_map(|e| {
                let name = e.server.info().name;
                let failed = e
                    .failures
                    .warning(&name)
                    .map(|w| format!("{w} (before the load; read again through it)"));
                e.server.note().into_iter().chain(failed)
            })
            .collect()
    }

    /// What starts watching them through a run's load, once; `None` after the first call.
    /// Call it right before the load: `t = 0` of the readings.
    pub fn take(&self) -> Option<impl FnOnce() -> Readings + Send + 'static> {
        let entries = self.0.lock().ok()?.take()?;
        Some(move || start(entries))
    }
}

impl std::fmt::Debug for Watched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched").finish_non_exhaustive()
    }
}

/// Starts the watch through the load: the servers' infos and idle readings (negative `t`)
/// sent now, a task a server reading once a second, and the task that, told the load has
/// ended, stops them, takes each server's last reading and says what went wrong (to the
/// user, and in the readings: each server's failures after its last reading).
fn start(mut entries: Vec<Entry>) -> Readings {
    let origin = Instant::now();
    let idle: usize = entries.iter().map(|e| e.idle.len()).sum();
    let (tx, rx) = mpsc::channel(idle + entries.len() * 16 + 16);
    for e in &entries {
        // Room was made for these above.
        let _ = tx.try_send(DatabaseEvent::Info(e.server.info()));
    }
    for (i, e) in entries.iter_mut().enumerate() {
        for (at, values) in e.idle.drain(..) {
            let t = -(origin - at).as_secs_f64();
            let _ = tx.try_send(DatabaseEvent::Sample(i, DatabaseSample { t, values }));
        }
    }
    let (stop_tx, stop) = watch::channel(false);
    let dropped = Arc::new(AtomicU64::new(0));
    let tasks: Vec<JoinHandle<Entry>> = entries
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            let each = EachSecond {
                i,
                origin,
                tx: tx.clone(),
                stop: stop.clone(),
                dropped: dropped.clone(),
            };
            tokio::spawn(each.run(e))
        })
        .collect();
    let (load_ended, ended) = oneshot::channel::<()>();
    let warnings = tokio::spawn(async move {
        // A run dropped before its load ended takes no last reading.
        if ended.await.is_err() {
            tasks.iter().for_each(JoinHandle::abort);
            return Vec::new();
        }
        let end = Instant::now();
        let _ = stop_tx.send(true);
        let mut last = Vec::with_capacity(tasks.len());
        for (i, t) in tasks.into_iter().enumerate() {
            // A task ends within one reading's time; one that panicked has no server left.
            if let Ok(e) = t.await {
                last.push((i, tokio::spawn(last_reading(i, e, origin, end, tx.clone()))));
            }
        }
        let mut warnings = Vec::new();
        for (i, t) in last {
            if let Ok(e) = t.await {
                warnings.extend(e.failures.warning(&e.server.info().name));
                if let Some(failed) = e.failures.record() {
                    // The engine takes every event until the channel closes.
                    let _ = tx.send(DatabaseEvent::Failed(i, failed)).await;
                }
            }
        }
        let dropped = dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            warnings.push(format!(
                "watched servers: {dropped} readings were dropped (the run was too busy to take them)"
            ));
        }
        warnings
    });
    Readings {
        events: rx,
        load_ended,
        warnings,
    }
}

/// What a server's task through the load needs.
struct EachSecond {
    i: usize,
    origin: Instant,
    tx: mpsc::Sender<DatabaseEvent>,
    stop: watch::Receiver<bool>,
    dropped: Arc<AtomicU64>,
}

impl EachSecond {
    /// Reads the server once a second from `origin` until told to stop, and hands it back.
    async fn run(mut self, mut e: Entry) -> Entry {
        let mut tick = tokio::time::interval_at(self.origin + PERIOD, PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = self.stop.changed() => return e,
                _ = tick.tick() => {}
            }
            // A stop that arrives while a reading is under way waits for it (bounded by the
            // server's own timeout): a reading cut short could leave its connection unusable
            // for the last one.
            let Some(values) = e.read().await else {
                continue;
            };
            let t = self.origin.elapsed().as_secs_f64();
            let event = DatabaseEvent::Sample(self.i, DatabaseSample { t, values });
            match self.tx.try_send(event) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
                // The run is over; the last reading is the end's.
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    let _ = self.stop.changed().await;
                    return e;
                }
            }
        }
    }
}

/// Waits until the server has published what the load did (at most its `settle` after `end`),
/// reads it once more and sends that reading.
async fn last_reading(
    i: usize,
    mut e: Entry,
    origin: Instant,
    end: Instant,
    tx: mpsc::Sender<DatabaseEvent>,
) -> Entry {
    let deadline = end + e.settle;
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        let wait = e
            .server
            .publishes_in(origin.elapsed(), end.elapsed())
            .await
            .unwrap_or(deadline - now);
        if wait.is_zero() {
            break;
        }
        let now = Instant::now();
        tokio::time::sleep_until((now + wait.min(ASK)).min(deadline)).await;
    }
    if let Some(values) = e.read().await {
        let t = origin.elapsed().as_secs_f64();
        // The engine takes every reading until the channel closes.
        let _ = tx
            .send(DatabaseEvent::Sample(i, DatabaseSample { t, values }))
            .await;
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Figure;

    /// A server whose readings are scripted: a count that grows by 10 each reading, failing
    /// as told.
    struct Scripted {
        n: u64,
        fail: Vec<Option<ErrorClass>>,
    }

    impl Server for Scripted {
        fn info(&self) -> DatabaseInfo {
            DatabaseInfo {
                name: "scripted".into(),
                kind: "Server".into(),
                figures: vec![Figure::counter("things", "things done", "things")],
                ..DatabaseInfo::default()
            }
        }
        async fn read(&mut self) -> Result<Vec<u64>, ReadError> {
            let fail = match self.fail.is_empty() {
                true => None,
                false => self.fail.remove(0),
            };
            if let Some(class) = fail {
                return Err(ReadError::new(
                    class,
                    format!("{} on purpose", class.name()),
                ));
            }
            self.n += 10;
            Ok(vec![self.n])
        }
    }

    async fn drain(mut r: Readings) -> (Vec<DatabaseEvent>, Vec<String>) {
        let mut events = Vec::new();
        let _ = r.load_ended.send(());
        while let Some(e) = r.events.recv().await {
            events.push(e);
        }
        (events, r.warnings.await.unwrap_or_default())
    }

    #[tokio::test(start_paused = true)]
    async fn idle_load_and_last_readings_in_time_order_failures_counted_by_class() {
        let server = Scripted {
            n: 0,
            fail: vec![
                None,
                Some(ErrorClass::Connect),
                None,
                Some(ErrorClass::Timeout),
                Some(ErrorClass::Connect),
            ],
        };
        let w = Watched::idle(
            vec![server],
            Duration::from_secs(2),
            Duration::from_millis(500),
        )
        .await;
        // Three idle readings (0 s, 1 s, 2 s), the second failed.
        assert_eq!(w.notes().len(), 1, "{:?}", w.notes());
        assert!(w.notes()[0].contains("1 of 3 readings failed (1 connect)"));
        let start = w.take().expect("once");
        assert!(w.take().is_none());
        let r = start();
        tokio::time::sleep(Duration::from_millis(3500)).await;
        let ended = Instant::now();
        let (events, warnings) = drain(r).await;
        assert!(ended.elapsed() >= Duration::from_millis(500));
        let ts: Vec<(usize, f64, u64)> = events
            .iter()
            .filter_map(|e| match e {
                DatabaseEvent::Sample(i, s) => Some((*i, s.t, s.values[0])),
                _ => None,
            })
            .collect();
        assert!(matches!(events[0], DatabaseEvent::Info(_)));
        // Idle: 10 at -2 s, 20 at 0 s; load: 1 s timeout, 2 s connect, 3 s 30; last 40 at 4 s.
        let t: Vec<(f64, u64)> = ts.iter().map(|(_, t, v)| (t.round(), *v)).collect();
        assert_eq!(t, vec![(-2.0, 10), (-0.0, 20), (3.0, 30), (4.0, 40)]);
        assert_eq!(
            warnings,
            vec!["scripted: 3 of 7 readings failed (2 connect, 1 timeout), the first: connect on purpose"]
        );
        // And the same, for the result, after the last reading.
        let failed = ReadFailures {
            tries: 7,
            failed: 3,
            by_class: [("connect".to_string(), 2), ("timeout".to_string(), 1)].into(),
            first: "connect on purpose".into(),
        };
        assert_eq!(events.last(), Some(&DatabaseEvent::Failed(0, failed)));
    }

    #[tokio::test(start_paused = true)]
    async fn servers_joined_are_numbered_in_order() {
        let a = Watched::idle(
            vec![Scripted { n: 0, fail: vec![] }],
            Duration::ZERO,
            Duration::ZERO,
        )
        .await;
        let b = Watched::idle(
            vec![Scripted {
                n: 100,
                fail: vec![],
            }],
            Duration::ZERO,
            Duration::ZERO,
        )
        .await;
        let start = Watched::join([a, b]).take().expect("once");
        let (events, warnings) = drain(start()).await;
        assert!(warnings.is_empty(), "{warnings:?}");
        let infos = events
            .iter()
            .filter(|e| matches!(e, DatabaseEvent::Info(_)))
            .count();
        assert_eq!(infos, 2);
        let by: Vec<(usize, u64)> = events
            .iter()
            .filter_map(|e| match e {
                DatabaseEvent::Sample(i, s) => Some((*i, s.values[0])),
                _ => None,
            })
            .collect();
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, DatabaseEvent::Failed(..))),
            "no reading failed: {events:?}"
        );
        assert!(by.contains(&(0, 10)) && by.contains(&(0, 20)), "{by:?}");
        assert!(by.contains(&(1, 110)) && by.contains(&(1, 120)), "{by:?}");
    }
}
