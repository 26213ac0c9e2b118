//! Watching containers during a run: resolve the selection before the load, sample an idle
//! period, then stream one reading a second per container into the engine's channel.
//!
//! Faults never stop or slow the load. Everything that can fail for the user's reasons (no
//! socket, an unknown name) fails in [`Monitor::resolve`], before the run. During the run each
//! container has its own task and its own stats stream; a container that stops or vanishes
//! ends its task with a `Gone` event. Readings reach the engine through `try_send` on a bounded
//! channel: if the aggregator falls behind, readings are dropped and counted, never waited for.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use throng_core::{ContainerEvent, ContainerInfo, ContainerSample};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::{stats, Client, DockerError};

/// How long [`Monitor::start`] waits at most for every container's first complete reading.
pub const WARMUP: Duration = Duration::from_secs(5);

/// Which containers to watch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Names, ids or unique id prefixes.
    pub containers: Vec<String>,
    /// Label filters, `KEY=VALUE` or `KEY`; each must match at least one running container.
    pub labels: Vec<String>,
}

impl Selection {
    /// Whether nothing is selected.
    pub fn is_empty(&self) -> bool {
        self.containers.is_empty() && self.labels.is_empty()
    }
}

/// The resolved containers, ready to be sampled.
#[derive(Debug)]
pub struct Monitor {
    client: Client,
    containers: Vec<ContainerInfo>,
}

impl Monitor {
    /// Resolves the selection to running containers, with their images and image sizes.
    /// Names that match nothing and labels that match no running container are errors.
    pub async fn resolve(client: Client, selection: &Selection) -> Result<Monitor, DockerError> {
        let mut found = Vec::new();
        for name in &selection.containers {
            let c = client
                .inspect_container(name)
                .await?
                .ok_or_else(|| DockerError::UnknownContainer(name.clone()))?;
            if !c.state.running {
                return Err(DockerError::NotRunning(name.clone()));
            }
            found.push(c);
        }
        for label in &selection.labels {
            let filters = serde_json::json!({ "label": [label] });
            let list = client.list_containers(&filters).await?;
            let before = found.len();
            for summary in list {
                if let Some(c) = client.inspect_container(&summary.id).await? {
                    if c.state.running {
                        found.push(c);
                    }
                }
            }
            if found.len() == before {
                return Err(DockerError::NoLabelMatch(label.clone()));
            }
        }
        let mut seen = HashSet::new();
        found.retain(|c| seen.insert(c.id.clone()));
        let mut containers = Vec::with_capacity(found.len());
        for c in found {
            // The size is a nicety: an image deleted under a running container has none.
            let image_size = client
                .inspect_image(&c.image)
                .await
                .map(|i| i.size)
                .unwrap_or(0);
            let image = if c.config.image.is_empty() {
                c.image.clone()
            } else {
                c.config.image.clone()
            };
            containers.push(ContainerInfo {
                id: c.id.clone(),
                name: c.name.trim_start_matches('/').to_string(),
                image,
                image_size,
                gone: None,
            });
        }
        Ok(Monitor { client, containers })
    }

    /// The containers to be watched.
    pub fn containers(&self) -> &[ContainerInfo] {
        &self.containers
    }

    /// Starts sampling and returns once every container has given its first complete reading
    /// (about a second; at most [`WARMUP`]) and `idle` has passed after it. Readings taken until
    /// [`Sampling::load_starts_now`] are the idle ones. The receiver goes to the engine
    /// (`Extras::containers`).
    pub async fn start(self, idle: Duration) -> (Sampling, mpsc::Receiver<ContainerEvent>) {
        let n = self.containers.len();
        let secs = (idle + WARMUP).as_secs() as usize;
        // Room for the idle readings, flushed at once when the load starts, and a margin.
        let (out_tx, out_rx) = mpsc::channel(n * (secs + 16) + 16);
        let (raw_tx, raw_rx) = mpsc::channel(64);
        let (origin_tx, origin_rx) = oneshot::channel();
        let (ready_tx, mut ready_rx) = watch::channel(0usize);
        let dropped = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::with_capacity(n + 1);
        for info in &self.containers {
            tasks.push(tokio::spawn(watch_one(
                self.client.clone(),
                info.id.clone(),
                raw_tx.clone(),
            )));
        }
        drop(raw_tx);
        tasks.push(tokio::spawn(forward(
            raw_rx,
            self.containers,
            origin_rx,
            out_tx,
            dropped.clone(),
            ready_tx,
        )));
        let first = async {
            let _ = ready_rx.wait_for(|seen| *seen >= n).await;
        };
        // Counting the idle period from the first reading gives about one idle reading a second.
        let _ = tokio::time::timeout(WARMUP, first).await;
        tokio::time::sleep(idle).await;
        let sampling = Sampling {
            origin: Some(origin_tx),
            dropped,
            tasks,
        };
        (sampling, out_rx)
    }
}

/// Sampling in progress; dropping it stops every stream.
#[derive(Debug)]
pub struct Sampling {
    origin: Option<oneshot::Sender<Instant>>,
    dropped: Arc<AtomicU64>,
    tasks: Vec<JoinHandle<()>>,
}

impl Sampling {
    /// Marks the start of the load (`t = 0` of the readings): call it right before starting
    /// the engine. Readings taken before are sent now, with negative `t`.
    pub fn load_starts_now(&mut self) {
        if let Some(tx) = self.origin.take() {
            let _ = tx.send(Instant::now());
        }
    }

    /// Readings dropped because the engine's channel was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl Drop for Sampling {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// What a container's task reports to the forwarder.
enum Raw {
    Sample(String, Instant, ContainerSample),
    Gone(String, String),
}

/// How often a stream that ends while its container still runs (an engine restart, a hiccup)
/// is opened again before the container is reported gone.
const REOPEN: u32 = 3;

/// How one stats stream ended.
enum Ended {
    /// The container stopped or vanished.
    Gone(String),
    /// The stream failed or ended for this reason while the container may still run.
    Stream(String),
    /// The run no longer listens.
    Closed,
}

/// Reads one container's stats until it goes away or the run ends, reopening the stream when
/// it ends while the container still runs.
async fn watch_one(client: Client, id: String, raw: mpsc::Sender<Raw>) {
    let mut reopened = 0;
    let why = loop {
        let cause = match client.stats(&id).await {
            Err(e) => e.to_string(),
            Ok(mut stream) => match read(&client, &id, &mut stream, &raw).await {
                Ended::Gone(why) => break why,
                Ended::Closed => return,
                Ended::Stream(cause) => cause,
            },
        };
        match stopped(&client, &id).await {
            Some(why) => break why,
            None if reopened < REOPEN => {
                reopened += 1;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            None => break cause,
        }
    };
    let _ = raw.send(Raw::Gone(id, why)).await;
}

/// Forwards the readings of one stream until it ends.
async fn read(
    client: &Client,
    id: &str,
    stream: &mut crate::StatsStream,
    raw: &mpsc::Sender<Raw>,
) -> Ended {
    loop {
        match stream.next().await {
            None => return Ended::Stream("the engine ended the stats stream".into()),
            Some(Err(e)) => return Ended::Stream(e.to_string()),
            Some(Ok(doc)) if doc.is_blank() => {
                // A stopped container's stream goes on with empty documents.
                if let Some(why) = stopped(client, id).await {
                    return Ended::Gone(why);
                }
            }
            Some(Ok(doc)) if !doc.has_previous() => {}
            Some(Ok(doc)) => {
                let reading = Raw::Sample(id.to_string(), Instant::now(), stats::sample(&doc));
                if raw.send(reading).await.is_err() {
                    return Ended::Closed;
                }
            }
        }
    }
}

/// Why a running container can no longer be sampled, or `None` if it still runs.
async fn stopped(client: &Client, id: &str) -> Option<String> {
    match client.inspect_container(id).await {
        Ok(None) => Some("removed".to_string()),
        Ok(Some(c)) if !c.state.running => Some(c.state.why_gone()),
        Ok(Some(_)) => None,
        Err(e) => Some(format!("cannot inspect it: {e}")),
    }
}

/// Turns readings into events for the engine: holds the idle ones until the load's start is
/// known, then never waits on the engine for a reading.
async fn forward(
    mut raw: mpsc::Receiver<Raw>,
    containers: Vec<ContainerInfo>,
    mut origin_rx: oneshot::Receiver<Instant>,
    out: mpsc::Sender<ContainerEvent>,
    dropped: Arc<AtomicU64>,
    ready: watch::Sender<usize>,
) {
    for info in containers {
        if out.send(ContainerEvent::Info(info)).await.is_err() {
            return;
        }
    }
    let mut held = Vec::new();
    let mut origin: Option<Instant> = None;
    let mut seen = HashSet::new();
    loop {
        tokio::select! {
            at = &mut origin_rx, if origin.is_none() => {
                let Ok(at) = at else { return };
                origin = Some(at);
                for msg in held.drain(..) {
                    if !deliver(msg, at, &out, &dropped).await {
                        return;
                    }
                }
            }
            msg = raw.recv() => {
                let Some(msg) = msg else { break };
                let id = match &msg {
                    Raw::Sample(id, ..) | Raw::Gone(id, _) => id,
                };
                if seen.insert(id.clone()) {
                    ready.send_replace(seen.len());
                }
                match origin {
                    None => held.push(msg),
                    Some(at) => {
                        if !deliver(msg, at, &out, &dropped).await {
                            return;
                        }
                    }
                }
            }
        }
    }
    // Every stream ended before the load started: deliver what they said once it does.
    if origin.is_none() {
        if let Ok(at) = origin_rx.await {
            for msg in held {
                if !deliver(msg, at, &out, &dropped).await {
                    return;
                }
            }
        }
    }
}

/// Sends one event; `false` once the engine has stopped listening.
async fn deliver(
    msg: Raw,
    origin: Instant,
    out: &mpsc::Sender<ContainerEvent>,
    dropped: &AtomicU64,
) -> bool {
    match msg {
        Raw::Sample(id, at, mut s) => {
            s.t = signed_secs(at, origin);
            match out.try_send(ContainerEvent::Sample(id, s)) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    dropped.fetch_add(1, Ordering::Relaxed);
                    true
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        }
        // Rare and important: wait for room (this task's wait, never the engine's).
        Raw::Gone(id, why) => out.send(ContainerEvent::Gone(id, why)).await.is_ok(),
    }
}

/// `at - origin` in seconds, negative when `at` is earlier.
fn signed_secs(at: Instant, origin: Instant) -> f64 {
    if at >= origin {
        (at - origin).as_secs_f64()
    } else {
        -(origin - at).as_secs_f64()
    }
}
