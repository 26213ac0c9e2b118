//! The `docker stats` arithmetic on recorded stats documents, against values computed by hand.
//!
//! - `stats_v1_reference.json`: the Engine API reference's example (cgroup v1 keys).
//! - `stats_v1_recorded.json`: recorded from Docker 20.10 on cgroup v1 (this project's test
//!   machine) under load; `docker stats` showed 1.438MiB for it.
//! - `stats_v2.json`: the reference's shape with the keys cgroup v2 fills (`inactive_file`, no
//!   `percpu_usage`, lower-case block I/O operations, null unused blkio lists).
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use throng_core::ContainerSample;
use throng_docker::stats::{self, StatsDoc};

fn load(name: &str) -> StatsDoc {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture readable");
    serde_json::from_str(&text).expect("fixture parses as a stats document")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
}

#[test]
fn reference_example_cgroup_v1() {
    let doc = load("stats_v1_reference.json");
    assert!(doc.has_previous() && !doc.is_blank());
    let s = stats::sample(&doc);
    // CPU: (100215355 - 100093996) / (739306590000000 - 9492140000000) * 4 * 100
    //    = 121359 / 729814450000000 * 400 = 6.651498884e-8 %
    assert!(
        close(s.cpu_percent, 6.651_498_884_408_222e-8),
        "{}",
        s.cpu_percent
    );
    // total_inactive_file is 0 (< usage): used = usage - 0.
    assert_eq!(s.mem_used, 6_537_216);
    assert_eq!(s.mem_limit, 67_108_864);
    // eth0 + eth5.
    assert_eq!((s.net_rx, s.net_tx), (5338 + 4641, 648 + 690));
    // "blkio_stats": {} has no entries.
    assert_eq!((s.blk_read, s.blk_write), (0, 0));
    assert_eq!(s.pids, 3);
}

#[test]
fn recorded_cgroup_v1_under_load() {
    let s = stats::sample(&load("stats_v1_recorded.json"));
    // (932717909 - 680155655) / (8985050000000 - 8983040000000) * 2 online CPUs * 100
    //  = 252562254 / 2010000000 * 200 = 25.1305725373 %
    assert!(
        close(s.cpu_percent, 25.130_572_537_313_434),
        "{}",
        s.cpu_percent
    );
    // usage 7376896 - total_inactive_file 5869568 = 1507328 = 1.4375 MiB (`docker stats`: 1.438MiB).
    assert_eq!(s.mem_used, 1_507_328);
    assert_eq!(s.mem_limit, 25_276_063_744);
    assert_eq!((s.net_rx, s.net_tx), (6_278_308, 8_444_986));
    assert_eq!((s.blk_read, s.blk_write), (0, 0));
    assert_eq!(s.pids, 1);
}

#[test]
fn cgroup_v2() {
    let s = stats::sample(&load("stats_v2.json"));
    // No percpu_usage on v2; online_cpus = 4.
    // (51234000000 - 50734000000) / (1000004000000000 - 1000000000000000) * 4 * 100
    //  = 0.5 s / 4 s * 400 = 50 %
    assert!(close(s.cpu_percent, 50.0), "{}", s.cpu_percent);
    // usage 75497472 - inactive_file 20971520 = 54525952 (52 MiB).
    assert_eq!(s.mem_used, 54_525_952);
    assert_eq!(s.mem_limit, 536_870_912);
    assert_eq!((s.net_rx, s.net_tx), (9979, 1338));
    // read: 4096000 + 8192; write: 1048576 + 0.
    assert_eq!((s.blk_read, s.blk_write), (4_104_192, 1_048_576));
    assert_eq!(s.pids, 3);
}

#[test]
fn first_document_of_a_stream_has_no_previous_read() {
    let mut doc = load("stats_v2.json");
    doc.precpu_stats = Default::default();
    assert!(!doc.has_previous());
    // docker stats would show a meaningless average since boot here; the monitor skips it.
    let s = stats::sample(&doc);
    assert_ne!(s, ContainerSample::default());
}
