//! The stats document of `GET /containers/{id}/stats` and the arithmetic of the `docker stats`
//! command (docker/cli `cli/command/container/stats_helpers.go`), as pure functions.
//!
//! Every field is optional or defaults: cgroup v1 and v2 fill different ones, and a stopped
//! container's stream sends documents with nothing in them.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use throng_core::ContainerSample;

fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// One stats document.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct StatsDoc {
    /// When the engine read these numbers (`0001-01-01T00:00:00Z` once the container stopped).
    #[serde(deserialize_with = "null_default")]
    pub read: String,
    /// CPU counters now.
    #[serde(deserialize_with = "null_default")]
    pub cpu_stats: CpuStats,
    /// CPU counters at the previous read (empty in the first document of a stream).
    #[serde(deserialize_with = "null_default")]
    pub precpu_stats: CpuStats,
    /// Memory.
    #[serde(deserialize_with = "null_default")]
    pub memory_stats: MemoryStats,
    /// Network counters per interface; absent without networking.
    #[serde(deserialize_with = "null_default")]
    pub networks: BTreeMap<String, NetStats>,
    /// Block I/O.
    #[serde(deserialize_with = "null_default")]
    pub blkio_stats: BlkioStats,
    /// Processes.
    #[serde(deserialize_with = "null_default")]
    pub pids_stats: PidsStats,
}

/// CPU counters.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CpuStats {
    /// The container's usage.
    #[serde(deserialize_with = "null_default")]
    pub cpu_usage: CpuUsage,
    /// The host's CPU time, ns, all CPUs together.
    #[serde(deserialize_with = "null_default")]
    pub system_cpu_usage: u64,
    /// CPUs online (0 from old engines; count `percpu_usage` then).
    #[serde(deserialize_with = "null_default")]
    pub online_cpus: u32,
}

/// The container's CPU time.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CpuUsage {
    /// CPU time consumed, ns.
    #[serde(deserialize_with = "null_default")]
    pub total_usage: u64,
    /// Per CPU (cgroup v1 only).
    #[serde(deserialize_with = "null_default")]
    pub percpu_usage: Vec<u64>,
}

/// Memory counters.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct MemoryStats {
    /// Memory charged to the cgroup, page cache included, bytes.
    #[serde(deserialize_with = "null_default")]
    pub usage: u64,
    /// The limit, bytes (the host's memory when unlimited).
    #[serde(deserialize_with = "null_default")]
    pub limit: u64,
    /// The cgroup's `memory.stat`: keys differ between cgroup v1 and v2.
    #[serde(deserialize_with = "null_default")]
    pub stats: BTreeMap<String, serde_json::Value>,
}

impl MemoryStats {
    fn stat(&self, key: &str) -> Option<u64> {
        self.stats.get(key).and_then(serde_json::Value::as_u64)
    }
}

/// Network counters of one interface.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct NetStats {
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
}

/// Block I/O counters.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BlkioStats {
    /// Bytes per device and operation (the only field cgroup v2 fills).
    #[serde(deserialize_with = "null_default")]
    pub io_service_bytes_recursive: Vec<BlkioEntry>,
}

/// One device and operation.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BlkioEntry {
    /// `Read`, `Write`, ... (lower case on cgroup v2).
    pub op: String,
    /// Bytes.
    pub value: u64,
}

/// Process counters.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PidsStats {
    /// Processes and threads now.
    pub current: u64,
}

impl StatsDoc {
    /// Whether this document carries the previous read, so that CPU % can be computed from it
    /// alone (the first document of a stream does not).
    pub fn has_previous(&self) -> bool {
        self.precpu_stats.system_cpu_usage > 0
    }

    /// Whether the engine had nothing to read: the container stopped or is going away.
    pub fn is_blank(&self) -> bool {
        self.read.is_empty()
            || self.read.starts_with("0001-")
            || self.cpu_stats.system_cpu_usage == 0
    }
}

/// CPU use in percent of one core: the container's share of the host's CPU time between the
/// two reads, times the CPUs online. 0 when either delta is not positive.
pub fn cpu_percent(now: &CpuStats, before: &CpuStats) -> f64 {
    let cpu_delta = now.cpu_usage.total_usage as f64 - before.cpu_usage.total_usage as f64;
    let system_delta = now.system_cpu_usage as f64 - before.system_cpu_usage as f64;
    let online = match now.online_cpus {
        0 => now.cpu_usage.percpu_usage.len() as f64,
        n => f64::from(n),
    };
    if system_delta > 0.0 && cpu_delta > 0.0 {
        cpu_delta / system_delta * online * 100.0
    } else {
        0.0
    }
}

/// Memory used: usage minus the inactive page cache, which the kernel reclaims first
/// (`total_inactive_file` on cgroup v1, `inactive_file` on v2), as `docker stats` shows it.
pub fn memory_used(m: &MemoryStats) -> u64 {
    if let Some(v) = m.stat("total_inactive_file") {
        if v < m.usage {
            return m.usage - v;
        }
    }
    match m.stat("inactive_file") {
        Some(v) if v < m.usage => m.usage - v,
        // The CLI reads a missing key as 0, which is below any non-zero usage.
        _ => m.usage,
    }
}

/// Bytes received and sent, all interfaces.
pub fn network(doc: &StatsDoc) -> (u64, u64) {
    doc.networks.values().fold((0, 0), |(rx, tx), n| {
        (rx.saturating_add(n.rx_bytes), tx.saturating_add(n.tx_bytes))
    })
}

/// Bytes read and written on block devices: operations starting with `r` or `w`.
pub fn block_io(doc: &StatsDoc) -> (u64, u64) {
    let mut read = 0u64;
    let mut write = 0u64;
    for e in &doc.blkio_stats.io_service_bytes_recursive {
        match e.op.bytes().next() {
            Some(b'r' | b'R') => read = read.saturating_add(e.value),
            Some(b'w' | b'W') => write = write.saturating_add(e.value),
            _ => {}
        }
    }
    (read, write)
}

/// The reading `docker stats` would show for this document (`t` is left at 0 for the caller).
pub fn sample(doc: &StatsDoc) -> ContainerSample {
    let (net_rx, net_tx) = network(doc);
    let (blk_read, blk_write) = block_io(doc);
    ContainerSample {
        t: 0.0,
        cpu_percent: cpu_percent(&doc.cpu_stats, &doc.precpu_stats),
        mem_used: memory_used(&doc.memory_stats),
        mem_limit: doc.memory_stats.limit,
        net_rx,
        net_tx,
        blk_read,
        blk_write,
        pids: doc.pids_stats.current,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(total: u64, system: u64, online: u32, percpu: usize) -> CpuStats {
        CpuStats {
            cpu_usage: CpuUsage {
                total_usage: total,
                percpu_usage: vec![0; percpu],
            },
            system_cpu_usage: system,
            online_cpus: online,
        }
    }

    #[test]
    fn cpu_counts_percpu_entries_when_online_is_missing() {
        // 0.5 s of container CPU over 2 s of host CPU time on 4 CPUs: 100 % (one core).
        let p = cpu_percent(&cpu(1_500, 4_000, 0, 4), &cpu(1_000, 2_000, 0, 4));
        assert!((p - 100.0).abs() < 1e-9, "{p}");
    }

    #[test]
    fn cpu_is_zero_when_a_delta_is_not_positive() {
        assert_eq!(cpu_percent(&cpu(10, 100, 2, 0), &cpu(10, 50, 2, 0)), 0.0);
        assert_eq!(cpu_percent(&cpu(20, 100, 2, 0), &cpu(10, 100, 2, 0)), 0.0);
    }

    #[test]
    fn memory_falls_back_to_v2_key_then_usage() {
        let mut m = MemoryStats {
            usage: 1000,
            ..MemoryStats::default()
        };
        assert_eq!(memory_used(&m), 1000);
        // v1 key not below usage: the CLI then tries the v2 key.
        m.stats.insert("total_inactive_file".into(), 5000.into());
        m.stats.insert("inactive_file".into(), 300.into());
        assert_eq!(memory_used(&m), 700);
        m.stats.insert("total_inactive_file".into(), 100.into());
        assert_eq!(memory_used(&m), 900);
    }

    #[test]
    fn a_stopped_containers_document_is_blank() {
        let doc: StatsDoc = serde_json::from_str(
            r#"{"read":"0001-01-01T00:00:00Z","preread":"0001-01-01T00:00:00Z","pids_stats":{},
                "blkio_stats":{"io_service_bytes_recursive":null},"num_procs":0,"storage_stats":{},
                "cpu_stats":{"cpu_usage":{"total_usage":0},"throttling_data":{}},
                "precpu_stats":{"cpu_usage":{"total_usage":0},"throttling_data":{}},
                "memory_stats":{},"name":"/web","id":"abc"}"#,
        )
        .expect("a blank document parses");
        assert!(doc.is_blank());
        assert!(!doc.has_previous());
        assert_eq!(sample(&doc), ContainerSample::default());
    }
}
