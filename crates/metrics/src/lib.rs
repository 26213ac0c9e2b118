//! throng's live metrics for Prometheus: a `/metrics` endpoint to scrape (OpenMetrics text) and
//! remote write pushes (protobuf and snappy), for every run of the process, labelled with its
//! coordinates (label, side, level, round, shard).
//!
//! The decision: the exporter is one more reader of the runs' snapshots, as the dashboard is.
//! It keeps the watch receivers of the runs it was given and reads their latest snapshot only
//! when a scrape or a push needs it, on a thread and runtime of its own; the engine's workers
//! never see it, so it costs the hot path nothing, and a Prometheus that is down or slow
//! delays nothing but the exporter's own thread (a push that fails is counted, and told of when
//! the run ends). Measured (release build, nginx, `-c 50 -z 10s`, scraped and pushing every
//! second): the exporter's thread used 20 ms of the run's 2.08 s of CPU, about 1 ms a scrape or
//! push whatever the request rate. One exporter serves a whole process (every run of a grid), so a scrape sees
//! each run's series as one more set of labels, and a finished run's last counts stay.
//!
//! Latency and service time become Prometheus histograms from the HdrHistograms, with the
//! bounds of [`BOUNDS`] (2^(1/8) apart from 8 µs to 134 s): `histogram_quantile` over them is
//! within [`QUANTILE_ERROR`] of the run's own percentile.
#![deny(missing_docs)]

mod expose;
mod families;
mod push;

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use throng_core::Snapshot;
use tokio::sync::{mpsc, oneshot, watch};

pub use families::{BOUNDS, QUANTILE_ERROR};

/// The labels of a run's series besides their own (`side`, `level`, `round`, `shard`, and the
/// exporter's own, [`Config::labels`]), as name and value.
pub type Labels = Vec<(Cow<'static, str>, String)>;

/// Label names throng's series use themselves, which [`Config::labels`] may not take.
pub const OWN_LABELS: [&str; 10] = [
    "label",
    "side",
    "level",
    "round",
    "shard",
    "outcome",
    "class",
    "container",
    "database",
    "le",
];

/// What to export, and where.
#[derive(Debug, Clone)]
pub struct Config {
    /// Serve `/metrics` here: `HOST:PORT`, or `:PORT` for every interface.
    pub listen: Option<String>,
    /// Push to this remote write URL (`http://` or `https://`, `user:password@` for basic
    /// authentication).
    pub push: Option<String>,
    /// How often to push; each push must be answered within it (10 s at most).
    pub interval: Duration,
    /// How long the endpoint may stay up after the last run, for a scrape to read the final
    /// counts; it closes as soon as one has.
    pub linger: Duration,
    /// Labels every series gets (a test's name, to tell its runs from others' in one
    /// Prometheus), checked by [`check_label`].
    pub labels: Vec<(String, String)>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: None,
            push: None,
            interval: Duration::from_secs(5),
            linger: Duration::from_secs(15),
            labels: Vec::new(),
        }
    }
}

/// Why an exporter could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The address to listen on is bad or taken.
    #[error("{addr}: {reason}")]
    Listen {
        /// The address as given.
        addr: String,
        /// Why.
        reason: String,
    },
    /// A label of [`Config::labels`] is bad.
    #[error("{0}")]
    Label(String),
    /// The remote write URL is bad.
    #[error("{url}: {reason}")]
    Push {
        /// The URL as given.
        url: String,
        /// Why.
        reason: String,
    },
    /// The exporter's thread could not start.
    #[error("cannot start the metrics exporter: {0}")]
    Start(String),
}

/// A run being exported.
#[derive(Debug)]
struct Source {
    id: u64,
    labels: Labels,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    /// The final snapshot, once the run has ended.
    last: Option<Arc<Snapshot>>,
    /// Still pushed at each interval (until its final push).
    pushing: bool,
}

/// A push the push task is asked for: the final one of run `id`.
struct Flush {
    id: u64,
    done: oneshot::Sender<()>,
}

/// What the exporter's thread and its handles share.
#[derive(Debug)]
pub(crate) struct Shared {
    sources: Mutex<Vec<Source>>,
    next: AtomicU64,
    listen: Option<SocketAddr>,
    labels: Labels,
    push: Option<push::Target>,
    interval: Duration,
    linger: Duration,
    pub(crate) pushes: AtomicU64,
    pub(crate) push_failures: AtomicU64,
    last_error: Mutex<Option<String>>,
    /// Scrapes begun, numbered from 1.
    pub(crate) scrapes_started: AtomicU64,
    /// The highest number of a scrape that has been answered.
    pub(crate) scrapes_served: watch::Sender<u64>,
    flushes: mpsc::UnboundedSender<Flush>,
}

impl Shared {
    /// The families of every run (`pushing_only`: of the runs still pushed).
    pub(crate) fn families(&self, pushing_only: bool) -> families::Families {
        let runs: Vec<(Labels, Arc<Snapshot>)> = match self.sources.lock() {
            Ok(s) => s
                .iter()
                .filter(|s| s.pushing || !pushing_only)
                .map(|s| {
                    let snap = s
                        .last
                        .clone()
                        .unwrap_or_else(|| s.snapshots.borrow().clone());
                    (s.labels.clone(), snap)
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        families::families(&runs)
    }

    fn push_limit(&self) -> Duration {
        self.interval.min(Duration::from_secs(10))
    }
}

/// Stops the exporter's thread when the last handle goes.
#[derive(Debug)]
struct Stop(Option<oneshot::Sender<()>>);

impl Drop for Stop {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            let _ = s.send(());
        }
    }
}

/// The exporter of a process: the endpoint, the pushes, and the runs they read. Cheap to clone;
/// its thread stops when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct Exporter {
    shared: Arc<Shared>,
    _stop: Arc<Stop>,
}

impl Exporter {
    /// Checks the configuration, binds the address (a taken one is an error now, not after the
    /// load) and starts the exporter's thread.
    pub fn start(config: Config) -> Result<Exporter, MetricsError> {
        for (k, _) in &config.labels {
            check_label(k).map_err(MetricsError::Label)?;
        }
        let listener = match &config.listen {
            None => None,
            Some(addr) => Some(bind(addr)?),
        };
        let push = match &config.push {
            None => None,
            Some(url) => Some(
                push::Target::parse(url).map_err(|reason| MetricsError::Push {
                    url: url.clone(),
                    reason,
                })?,
            ),
        };
        let (flushes, flush_rx) = mpsc::unbounded_channel();
        let (stop_tx, stop_rx) = oneshot::channel();
        let shared = Arc::new(Shared {
            sources: Mutex::new(Vec::new()),
            next: AtomicU64::new(0),
            listen: listener.as_ref().and_then(|l| l.local_addr().ok()),
            labels: config
                .labels
                .iter()
                .map(|(k, v)| (Cow::Owned(k.clone()), v.clone()))
                .collect(),
            push,
            interval: config.interval.max(Duration::from_millis(100)),
            linger: config.linger,
            pushes: AtomicU64::new(0),
            push_failures: AtomicU64::new(0),
            last_error: Mutex::new(None),
            scrapes_started: AtomicU64::new(0),
            scrapes_served: watch::Sender::new(0),
            flushes,
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| MetricsError::Start(e.to_string()))?;
        let on_thread = shared.clone();
        std::thread::Builder::new()
            .name("throng-metrics".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let serve = async {
                        match listener.map(tokio::net::TcpListener::from_std) {
                            Some(Ok(l)) => expose::serve(l, on_thread.clone()).await,
                            _ => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        _ = serve => {}
                        _ = push_loop(on_thread.clone(), flush_rx) => {}
                        _ = stop_rx => {}
                    }
                })
            })
            .map_err(|e| MetricsError::Start(e.to_string()))?;
        Ok(Exporter {
            shared,
            _stop: Arc::new(Stop(Some(stop_tx))),
        })
    }

    /// The address `/metrics` is served on (the port chosen, for `:0`).
    pub fn listening(&self) -> Option<SocketAddr> {
        self.shared.listen
    }

    /// Exports a run from now on: its snapshots as they come, labelled with `labels`.
    pub fn watch(&self, labels: Labels, snapshots: watch::Receiver<Arc<Snapshot>>) -> Watch {
        let id = self.shared.next.fetch_add(1, Ordering::Relaxed);
        let mut all = self.shared.labels.clone();
        all.extend(labels);
        if let Ok(mut s) = self.shared.sources.lock() {
            s.push(Source {
                id,
                labels: all,
                snapshots,
                last: None,
                pushing: self.shared.push.is_some(),
            });
        }
        Watch {
            exporter: self.clone(),
            id,
            pushes: self.shared.pushes.load(Ordering::Relaxed),
            failures: self.shared.push_failures.load(Ordering::Relaxed),
        }
    }

    /// Keeps the endpoint up until a scrape that began from now on has been answered (so
    /// Prometheus has read the final counts), or for the linger time at most; at once without
    /// an endpoint.
    pub async fn linger(&self) {
        if self.shared.listen.is_none() {
            return;
        }
        let from = self.shared.scrapes_started.load(Ordering::SeqCst);
        let mut served = self.shared.scrapes_served.subscribe();
        let scraped = served.wait_for(|s| *s > from);
        if tokio::time::timeout(self.shared.linger, scraped)
            .await
            .is_ok()
        {
            // The answer is written after the count moves: give it time to leave.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The text a scrape of `/metrics` gets now.
    pub fn scrape(&self) -> String {
        expose::scrape(&self.shared)
    }
}

/// A run being exported; [`Watch::finish`] it with the final snapshot.
#[derive(Debug)]
pub struct Watch {
    exporter: Exporter,
    id: u64,
    pushes: u64,
    failures: u64,
}

impl Watch {
    /// The run has ended with `last`: it is pushed one last time (waiting for the answer, for
    /// twice the push interval at most) and stays on the endpoint. Returns a warning when some of
    /// the pushes made while it ran failed.
    pub async fn finish(self, last: Arc<Snapshot>) -> Option<String> {
        let shared = &self.exporter.shared;
        if let Ok(mut s) = shared.sources.lock() {
            if let Some(s) = s.iter_mut().find(|s| s.id == self.id) {
                s.last = Some(last);
            }
        }
        shared.push.as_ref()?;
        let (done, answered) = oneshot::channel();
        let _ = shared.flushes.send(Flush { id: self.id, done });
        let wait = shared.push_limit() * 2 + Duration::from_millis(500);
        let _ = tokio::time::timeout(wait, answered).await;
        let pushes = shared.pushes.load(Ordering::Relaxed) - self.pushes;
        let failures = shared.push_failures.load(Ordering::Relaxed) - self.failures;
        let target = shared.push.as_ref().map_or("", |t| t.shown.as_str());
        let last = shared
            .last_error
            .lock()
            .ok()
            .and_then(|e| e.clone())
            .unwrap_or_default();
        (failures > 0).then(|| {
            format!(
                "--metrics-push: {failures} of {} pushes to {target} failed (the last: {last}); \
                 the run went on without them",
                pushes + failures
            )
        })
    }
}

/// Checks a label name of [`Config::labels`]: Prometheus' syntax, not reserved (`__`), and not
/// one throng's series use ([`OWN_LABELS`]).
pub fn check_label(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let syntax = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !syntax || name.starts_with("__") {
        return Err(format!(
            "{name:?} is not a label name (letters, digits and _, not starting with a digit or __)"
        ));
    }
    if OWN_LABELS.contains(&name) {
        return Err(format!(
            "{name:?} is a label throng's series have already ({})",
            OWN_LABELS.join(", ")
        ));
    }
    Ok(())
}

/// Binds `addr` (`:PORT` is every interface).
fn bind(addr: &str) -> Result<std::net::TcpListener, MetricsError> {
    let bad = |reason: String| MetricsError::Listen {
        addr: addr.to_string(),
        reason,
    };
    let full = match addr.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => addr.to_string(),
    };
    let addrs: Vec<SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(&full)
        .map_err(|e| {
            bad(format!(
                "not an address to listen on ({e}); write HOST:PORT or :PORT"
            ))
        })?
        .collect();
    let listener = std::net::TcpListener::bind(&addrs[..])
        .map_err(|e| bad(format!("cannot listen there ({e})")))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| bad(e.to_string()))?;
    Ok(listener)
}

/// Pushes every interval, and when a run ends; one push at a time, so samples stay in order.
async fn push_loop(shared: Arc<Shared>, mut flushes: mpsc::UnboundedReceiver<Flush>) {
    let Some(target) = &shared.push else {
        // Nothing to push: wait for the stop.
        return std::future::pending().await;
    };
    let mut tick = tokio::time::interval(shared.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    tick.tick().await;
    let mut last_ts = 0i64;
    loop {
        let flush = tokio::select! {
            _ = tick.tick() => None,
            f = flushes.recv() => match f {
                Some(f) => Some(f),
                None => return,
            },
        };
        let families = shared.families(true);
        if !families.0.is_empty() {
            // Strictly later than the last push's, so Prometheus takes every sample.
            last_ts = push::now_ms().max(last_ts + 1);
            let request = push::write_request(&families, last_ts);
            match target.post(&request, shared.push_limit()).await {
                Ok(()) => {
                    shared.pushes.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    shared.push_failures.fetch_add(1, Ordering::Relaxed);
                    if let Ok(mut l) = shared.last_error.lock() {
                        *l = Some(e);
                    }
                }
            }
        }
        if let Some(f) = flush {
            if let Ok(mut s) = shared.sources.lock() {
                if let Some(s) = s.iter_mut().find(|s| s.id == f.id) {
                    s.pushing = false;
                }
            }
            let _ = f.done.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};
    use throng_core::{ClosedLoop, LoadModel, RunPlan, Users};

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).expect("the endpoint answers");
        write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").expect("a request");
        let mut text = String::new();
        s.read_to_string(&mut text).expect("an answer");
        text
    }

    #[test]
    fn a_scrape_reads_the_latest_snapshot_in_openmetrics_text() {
        let plan = RunPlan::new(
            "t",
            LoadModel::Closed(ClosedLoop {
                users: Users::Fixed(1),
                requests: Some(3),
                iterations: None,
                duration: None,
                think_time: None,
            }),
        );
        let mut s = Snapshot::empty(Arc::new(plan), &["GET /".to_string()], 0);
        let (tx, rx) = watch::channel(Arc::new(s.clone()));
        let e = Exporter::start(Config {
            listen: Some("127.0.0.1:0".into()),
            labels: vec![("testid".into(), "t1".into())],
            ..Config::default()
        })
        .expect("an exporter");
        let addr = e.listening().expect("listening");
        let _w = e.watch(vec![("side".into(), "go".into())], rx);
        let text = get(addr, "/metrics");
        assert!(text.contains("application/openmetrics-text"), "{text}");
        assert!(
            text.contains(
                "throng_requests_total{testid=\"t1\",side=\"go\",label=\"GET /\",outcome=\"succeeded\"} 0\n"
            ),
            "{text}"
        );
        assert!(text.trim_end().ends_with("# EOF"), "{text}");
        // The next scrape sees the next snapshot: nothing is cached between scrapes.
        s.labels[0].samples = 3;
        s.labels[0].errors = 1;
        s.labels[0].classes[throng_core::ErrorClass::Timeout.index()] = 1;
        throng_core::histogram::record(&mut s.labels[0].latency, 2_000);
        tx.send_replace(Arc::new(s));
        let text = get(addr, "/metrics");
        for line in [
            "outcome=\"succeeded\"} 2\n",
            "outcome=\"failed\"} 1\n",
            "throng_latency_seconds_count{testid=\"t1\",side=\"go\",label=\"GET /\"} 1\n",
            "throng_latency_seconds_bucket{le=\"+Inf\",testid=\"t1\",side=\"go\",label=\"GET /\"} 1\n",
            "# TYPE throng_latency_seconds histogram\n",
            "# UNIT throng_latency_seconds seconds\n",
            "throng_label_errors_total{testid=\"t1\",side=\"go\",label=\"GET /\",class=\"timeout\"} 1\n",
            "throng_label_errors_total{testid=\"t1\",side=\"go\",label=\"GET /\",class=\"connect\"} 0\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        let other = get(addr, "/");
        assert!(
            other.lines().next().is_some_and(|l| l.contains(" 404 ")),
            "{other}"
        );
    }

    #[test]
    fn labels_of_our_own_and_bad_names_are_refused() {
        assert!(check_label("testid").is_ok());
        for bad in ["shard", "label", "__name__", "9x", "a-b", ""] {
            assert!(check_label(bad).is_err(), "{bad}");
        }
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let addr = taken.local_addr().expect("its address").to_string();
        let e = Exporter::start(Config {
            listen: Some(addr),
            ..Config::default()
        });
        assert!(matches!(e, Err(MetricsError::Listen { .. })));
    }
}
