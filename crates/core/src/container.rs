//! Resource use of the target's containers, as sampled from the Docker Engine API. The
//! `docker` crate produces these; the aggregator keeps them in the snapshot beside the latency.

/// What is known of one watched container.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContainerInfo {
    /// The full container id.
    pub id: String,
    /// The container's name, without the leading `/`.
    pub name: String,
    /// The image reference the container runs.
    pub image: String,
    /// The image's size in bytes.
    pub image_size: u64,
    /// Why sampling stopped (the container stopped or vanished), if it did.
    pub gone: Option<String>,
}

/// One stats reading of one container, computed as `docker stats` computes it.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
pub struct ContainerSample {
    /// Seconds since the start of the load; negative for idle samples taken before it.
    pub t: f64,
    /// CPU use in percent of one core (250 means two and a half cores).
    pub cpu_percent: f64,
    /// Memory used (usage minus inactive file cache), bytes.
    pub mem_used: u64,
    /// Memory limit, bytes.
    pub mem_limit: u64,
    /// Network bytes received, all interfaces, since the container started.
    pub net_rx: u64,
    /// Network bytes sent, all interfaces, since the container started.
    pub net_tx: u64,
    /// Block device bytes read since the container started.
    pub blk_read: u64,
    /// Block device bytes written since the container started.
    pub blk_write: u64,
    /// Processes or threads in the container.
    pub pids: u64,
}

/// What the container monitor sends to the aggregator.
#[derive(Debug, Clone, PartialEq)]
pub enum ContainerEvent {
    /// A container is being watched (sent once per container, before its samples).
    Info(ContainerInfo),
    /// A reading of the container with this id.
    Sample(String, ContainerSample),
    /// The container with this id can no longer be sampled, and why.
    Gone(String, String),
}

/// A watched container and every sample taken of it (one a second: small, however long the run).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContainerSeries {
    /// The container.
    pub info: ContainerInfo,
    /// Its samples in time order, idle ones (negative `t`) first.
    pub samples: Vec<ContainerSample>,
}
