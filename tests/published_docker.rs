//! The Go-against-Java report's tables with each side's container: users down and, per side,
//! the mean response time in seconds, the error %, and the container's CPU and memory under
//! load, from one command against two containers built FROM scratch (`docker_stats.rs`'s
//! image of the testbed's HTTP target).
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::process::Command;

use crate::common::{json, ok};
use crate::docker_stats::{run_container, scratch};

#[test]
fn go_against_java_users_down_with_each_sides_container_cpu_and_memory() {
    let docker = scratch("pub", &["go", "java"]);
    let (go, java, image) = (&docker.names[0], &docker.names[1], &docker.image);
    let (pg, pj) = (run_container(go, image), run_container(java, image));
    let dir = tempfile::tempdir().unwrap();
    let (json_path, csv) = (dir.path().join("g.json"), dir.path().join("g.csv"));
    let out = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(["run", &format!("http://127.0.0.1:{pg}/")])
        .args(["--target", &format!("go=http://127.0.0.1:{pg}/")])
        .args(["--target", &format!("java=http://127.0.0.1:{pj}/")])
        .args(["--container", &format!("go={go}")])
        .args(["--container", &format!("java={java}")])
        .args(["--sweep", "users=1,4", "-z", "2s", "--no-tui", "--quiet"])
        .args(["--pivot", "side", "--columns", "mean,error_rate,cpu,memory"])
        .args(["--unit", "s", "--json", json_path.to_str().unwrap()])
        .args(["--report", &format!("csv:{}", csv.display())])
        .output()
        .unwrap();
    ok(&out);
    let g = json(&json_path);
    let pivot: Vec<Vec<String>> = std::fs::read_to_string(dir.path().join("g.pivot.csv"))
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    assert_eq!(
        pivot[0],
        [
            "Users",
            "go Mean (s)",
            "go Error %",
            "go CPU %",
            "go Memory (MiB)",
            "java Mean (s)",
            "java Error %",
            "java CPU %",
            "java Memory (MiB)"
        ]
    );
    assert_eq!(pivot.len(), 3, "a row per level: {pivot:?}");
    let rows = g["rows"].as_array().unwrap();
    for row in &pivot[1..] {
        let cell = |i: usize| -> f64 { row[i].parse().unwrap() };
        for (s, (side, name)) in [("go", go), ("java", java)].into_iter().enumerate() {
            let r = rows
                .iter()
                .find(|r| r["side"] == side && r["level"]["users"].as_u64() == row[0].parse().ok())
                .unwrap();
            // Each side's own container, as the level table has it under load.
            assert_eq!(r["containers"][0]["name"], name.as_str());
            let cpu = r["containers"][0]["cpu_percent"].as_f64().unwrap();
            let bytes = r["containers"][0]["memory"].as_f64().unwrap();
            let mean = r["total"]["latency"]["mean"].as_f64().unwrap();
            let at = 1 + 4 * s;
            assert!((cell(at) - mean / 1000.0).abs() < 1e-12, "{row:?}");
            assert_eq!(cell(at + 1), 0.0, "{row:?}");
            assert!((cell(at + 2) - cpu).abs() < 1e-9 && cpu > 0.0, "{row:?}");
            let mib = bytes / (1024.0 * 1024.0);
            assert!((cell(at + 3) - mib).abs() < 1e-9, "{row:?}");
            // A FROM-scratch image of the target: more than 1 MiB, far less than 1 GiB.
            assert!(mib > 1.0 && mib < 1024.0, "{row:?}");
        }
    }
}
