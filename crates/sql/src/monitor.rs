//! Reading databases' counters once a second through a run (`--db-stats`), as the `docker`
//! crate's monitor reads containers: an idle period before the load, then a task per database
//! whose readings reach the engine through `try_send` on a bounded channel (a full channel
//! drops and counts a reading; the load never waits for one), then one last reading after the
//! load, once the database has published what the load did.
//!
//! A reading that fails (the database restarted, stalled past the connect timeout) is counted
//! and its message kept; the next second tries again on a new connection.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use throng_core::{DatabaseEvent, DatabaseSample};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::stats::DbStats;

/// How often a database is read.
pub const PERIOD: Duration = Duration::from_secs(1);

/// Databases read through their idle period, ready for the load.
pub struct Monitor {
    dbs: Vec<DbStats>,
    idle: Vec<(usize, Instant, Vec<u64>)>,
}

impl Monitor {
    /// Reads every database now (an error here is the caller's: the database cannot be read),
    /// then once a second for `idle`, the last reading at its end.
    pub async fn start(mut dbs: Vec<DbStats>, idle: Duration) -> Result<Monitor, String> {
        let mut idle_readings = Vec::new();
        let t0 = Instant::now();
        let mut at = t0;
        loop {
            for (i, d) in dbs.iter_mut().enumerate() {
                idle_readings.push((i, Instant::now(), d.sample().await?));
            }
            if at >= t0 + idle {
                break;
            }
            at = (at + PERIOD).min(t0 + idle);
            tokio::time::sleep_until(at).await;
        }
        Ok(Monitor {
            dbs,
            idle: idle_readings,
        })
    }

    /// What the idle readings found missing: per database, the counters its server does not
    /// keep (not available, so left out rather than shown as 0), in a line to print, with what
    /// enables PostgreSQL's statement counts ([`DbStats::note`]).
    pub fn notes(&self) -> Vec<String> {
        self.dbs.iter().filter_map(DbStats::note).collect()
    }

    /// Marks the start of the load (`t = 0` of the readings) and starts reading once a second:
    /// call it right before starting the engine; the receiver goes to the engine
    /// (`Extras::databases`). The idle readings are sent now, with negative `t`.
    pub fn load_starts_now(self) -> (Sampling, mpsc::Receiver<DatabaseEvent>) {
        let origin = Instant::now();
        let n = self.dbs.len();
        let (tx, rx) = mpsc::channel(self.idle.len() + n * 16 + 16);
        for d in &self.dbs {
            // Room was made for these above.
            let _ = tx.try_send(DatabaseEvent::Info(d.info()));
        }
        for (i, at, values) in self.idle {
            let t = -(origin - at).as_secs_f64();
            let _ = tx.try_send(DatabaseEvent::Sample(i, DatabaseSample { t, values }));
        }
        let (stop_tx, stop_rx) = watch::channel(false);
        let dropped = Arc::new(AtomicU64::new(0));
        let failures = Arc::new(Mutex::new(vec![Failures::default(); n]));
        let tasks = self
            .dbs
            .into_iter()
            .enumerate()
            .map(|(i, d)| {
                tokio::spawn(read_each_second(
                    i,
                    d,
                    origin,
                    tx.clone(),
                    stop_rx.clone(),
                    dropped.clone(),
                    failures.clone(),
                ))
            })
            .collect();
        let sampling = Sampling {
            origin,
            stop: stop_tx,
            tasks,
            dropped,
            failures,
            tx,
        };
        (sampling, rx)
    }

    /// Watches the databases through a run whose engine takes the readings and is told when
    /// the load ends (the engine's `Extras::databases` and `Extras::after_load`): readings once
    /// a second from now, then, once `ended` fires, the last ones after `settle` (see
    /// [`Sampling::finish`]), sent the same way, and the channel closes. The task returns the
    /// warnings of the watch (readings that failed or were dropped), to print.
    pub fn watch_load(
        self,
        settle: Duration,
    ) -> (
        mpsc::Receiver<DatabaseEvent>,
        oneshot::Sender<()>,
        JoinHandle<Vec<String>>,
    ) {
        let names: Vec<String> = self.dbs.iter().map(|d| d.info().name).collect();
        let (sampling, rx) = self.load_starts_now();
        let (ended_tx, ended) = oneshot::channel();
        let task = tokio::spawn(async move {
            // A run dropped before its load ended takes no last reading.
            if ended.await.is_err() {
                return Vec::new();
            }
            let dropped = sampling.dropped();
            let tx = sampling.tx.clone();
            let failures = sampling.failures.clone();
            let last = sampling.finish(settle).await;
            for (i, reading) in last.into_iter().enumerate() {
                if let Some(r) = reading {
                    // The engine takes every reading until the channel closes.
                    let _ = tx.send(DatabaseEvent::Sample(i, r)).await;
                }
            }
            let failures = failures.lock().map(|f| f.clone()).unwrap_or_default();
            let mut warnings: Vec<String> = names
                .iter()
                .zip(failures)
                .filter(|(_, f)| f.count > 0)
                .map(|(name, f)| {
                    format!(
                        "database {name}: {} readings failed, the first: {}",
                        f.count,
                        f.first.as_deref().unwrap_or("")
                    )
                })
                .collect();
            if dropped > 0 {
                warnings.push(format!(
                    "databases: {dropped} readings were dropped (the run was too busy to take them)"
                ));
            }
            warnings
        });
        (rx, ended_tx, task)
    }
}

/// Readings that failed for one database.
#[derive(Debug, Clone, Default)]
pub struct Failures {
    /// How many.
    pub count: u64,
    /// The first one's message (password hidden).
    pub first: Option<String>,
}

/// Reading in progress; [`Sampling::finish`] ends it.
pub struct Sampling {
    origin: Instant,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<DbStats>>,
    dropped: Arc<AtomicU64>,
    failures: Arc<Mutex<Vec<Failures>>>,
    /// Kept for the last readings of [`Monitor::watch_load`].
    tx: mpsc::Sender<DatabaseEvent>,
}

impl Sampling {
    /// Stops reading each second, waits until the databases have published the load's last
    /// counters ([`DbStats::flush_wait`], asked every 200 ms: on PostgreSQL until the backends
    /// that ran the load have exited or been idle 10 s; at most `settle`) and reads every
    /// database once more: the last readings, by database number (`None` where that reading
    /// failed), with `t` from the load's start.
    pub async fn finish(mut self, settle: Duration) -> Vec<Option<DatabaseSample>> {
        let ended = Instant::now();
        let _ = self.stop.send(true);
        let mut dbs = Vec::with_capacity(self.tasks.len());
        for t in std::mem::take(&mut self.tasks) {
            // A task ends within one reading's timeout; one that panicked has no database left.
            dbs.push(t.await.ok());
        }
        let deadline = ended + settle;
        loop {
            let mut wait = Duration::ZERO;
            for d in dbs.iter_mut().flatten() {
                // A database that cannot say waits the whole `settle`.
                let w = d
                    .flush_wait(self.origin.elapsed(), ended.elapsed())
                    .await
                    .unwrap_or(settle);
                wait = wait.max(w);
            }
            let now = Instant::now();
            if wait.is_zero() || now >= deadline {
                break;
            }
            let poll = Duration::from_millis(200);
            tokio::time::sleep_until((now + wait.min(poll)).min(deadline)).await;
        }
        let mut out = Vec::with_capacity(dbs.len());
        for (i, d) in dbs.iter_mut().enumerate() {
            let Some(d) = d else {
                out.push(None);
                continue;
            };
            match d.sample().await {
                Ok(values) => out.push(Some(DatabaseSample {
                    t: self.origin.elapsed().as_secs_f64(),
                    values,
                })),
                Err(e) => {
                    note(&self.failures, i, e);
                    out.push(None);
                }
            }
        }
        out
    }

    /// Readings dropped because the engine's channel was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Readings that failed so far, by database number.
    pub fn failures(&self) -> Vec<Failures> {
        self.failures.lock().map(|f| f.clone()).unwrap_or_default()
    }
}

impl Drop for Sampling {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn note(failures: &Mutex<Vec<Failures>>, i: usize, message: String) {
    if let Ok(mut f) = failures.lock() {
        if let Some(f) = f.get_mut(i) {
            f.count += 1;
            f.first.get_or_insert(message);
        }
    }
}

/// Reads database `i` once a second from `origin` until told to stop, and hands it back.
async fn read_each_second(
    i: usize,
    mut db: DbStats,
    origin: Instant,
    tx: mpsc::Sender<DatabaseEvent>,
    mut stop: watch::Receiver<bool>,
    dropped: Arc<AtomicU64>,
    failures: Arc<Mutex<Vec<Failures>>>,
) -> DbStats {
    let mut tick = tokio::time::interval_at(origin + PERIOD, PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.changed() => return db,
            _ = tick.tick() => {}
        }
        // A stop that arrives while a reading is under way waits for it (at most the
        // connect timeout): cutting a query short would leave its connection unusable for the
        // last reading.
        match db.sample().await {
            Ok(values) => {
                let t = origin.elapsed().as_secs_f64();
                let event = DatabaseEvent::Sample(i, DatabaseSample { t, values });
                match tx.try_send(event) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        dropped.fetch_add(1, Ordering::Relaxed);
                    }
                    // The run is over; the last reading is `finish`'s.
                    Err(mpsc::error::TrySendError::Closed(_)) => {
                        let _ = stop.changed().await;
                        return db;
                    }
                }
            }
            Err(e) => note(&failures, i, e),
        }
    }
}
