//! Shards on a real Docker Swarm (this machine's engine): `deploy/swarm/run.sh`'s way, a
//! replicated service of 3 tasks run once, each reading its slot from `{{.Task.Slot}}`, against
//! an in-process target; the tasks' logs merged give exactly the plan. The engine is put in a
//! single-node swarm on loopback when it is not in one, and left as it was found.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime};

fn docker(args: &[&str]) -> Output {
    let out = Command::new("docker")
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run docker ({e}): install the docker CLI and start the engine")
        });
    assert!(
        out.status.success(),
        "`docker {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Leaves the swarm if this test made it, removes the service and image, however it ends.
struct Cleanup {
    service: String,
    image: String,
    leave: bool,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["service", "rm", &self.service])
            .output();
        if self.leave {
            let _ = Command::new("docker")
                .args(["swarm", "leave", "--force"])
                .output();
            // A swarm leaves its bridge network behind when the node leaves it; this test made
            // the swarm, so the network is its own to remove.
            let _ = Command::new("docker")
                .args(["network", "rm", "docker_gwbridge"])
                .output();
        }
        let _ = Command::new("docker")
            .args(["rmi", "-f", &self.image])
            .output();
    }
}

/// An image FROM scratch: the throng binary (stripped) and its shared libraries.
fn build_image(tag: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("rootfs");
    std::fs::create_dir_all(&root).unwrap();
    let bin = env!("CARGO_BIN_EXE_throng");
    let strip = Command::new("strip")
        .args(["-o", root.join("throng").to_str().unwrap(), bin])
        .status()
        .unwrap();
    assert!(strip.success(), "strip (binutils) failed");
    let ldd = Command::new("ldd").arg(bin).output().unwrap();
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        if let Some(p) = line
            .split("=>")
            .last()
            .and_then(|s| s.split_whitespace().next())
        {
            if let Some(rel) = p.strip_prefix('/') {
                let to = root.join(rel);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(p, &to).unwrap();
            }
        }
    }
    std::fs::write(
        dir.path().join("Dockerfile"),
        "FROM scratch\nCOPY rootfs/ /\nENTRYPOINT [\"/throng\"]\n",
    )
    .unwrap();
    docker(&["build", "-q", "-t", tag, dir.path().to_str().unwrap()]);
    dir
}

#[test]
fn three_shards_on_a_swarm_merge_to_exactly_the_plan() {
    let state = text(&docker(&["info", "--format", "{{.Swarm.LocalNodeState}}"]));
    let leave = state == "inactive";
    let pid = std::process::id();
    let _cleanup = Cleanup {
        service: format!("throng-it-shards-{pid}"),
        image: format!("throng-it-shards:{pid}"),
        leave,
    };
    if leave {
        docker(&["swarm", "init", "--advertise-addr", "127.0.0.1"]);
    } else {
        assert_eq!(
            state, "active",
            "the engine's swarm is {state}: neither in one nor out"
        );
    }
    let _ctx = build_image(&format!("throng-it-shards:{pid}"));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let target = rt
        .block_on(
            throng::testbed::HttpTarget {
                delay: throng::testbed::Delay::Fixed(Duration::from_millis(1)),
                ..throng::testbed::HttpTarget::default()
            }
            .start(),
        )
        .unwrap();
    let start =
        humantime::format_rfc3339_seconds(SystemTime::now() + Duration::from_secs(10)).to_string();
    let service = format!("throng-it-shards-{pid}");
    let url = target.url();
    docker(&[
        "service",
        "create",
        "--detach",
        "--name",
        &service,
        "--mode",
        "replicated",
        "--replicas",
        "3",
        "--restart-condition",
        "none",
        "--network",
        "host",
        "--env",
        "THRONG_SHARD_SLOT={{.Task.Slot}}",
        &format!("throng-it-shards:{pid}"),
        "run",
        &url,
        "-c",
        "6",
        "-n",
        "300",
        "--shards",
        "3",
        "--start-at",
        &start,
        "--no-tui",
        "--quiet",
        "--json",
        "-",
    ]);
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let states = text(&docker(&[
            "service",
            "ps",
            &service,
            "--format",
            "{{.CurrentState}}",
        ]));
        let done = states.lines().filter(|s| s.starts_with("Complete")).count();
        assert!(
            !states
                .lines()
                .any(|s| s.starts_with("Failed") || s.starts_with("Rejected")),
            "a task failed: {states}\n{}",
            String::from_utf8_lossy(&docker(&["service", "logs", "--raw", &service]).stderr)
        );
        if done == 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the tasks did not finish: {states}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // `docker service logs` gives each task's stdout and stderr.
    let logs = docker(&["service", "logs", "--raw", &service]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("logs.txt");
    let mut all = logs.stdout.clone();
    all.extend_from_slice(&logs.stderr);
    std::fs::write(&file, all).unwrap();
    let merged = dir.path().join("merged.json");
    let out = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args([
            "merge",
            file.to_str().unwrap(),
            "--json",
            merged.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_eq!(
        m["total"]["samples"], 300,
        "the three shards sent exactly -n"
    );
    assert_eq!(target.requests(), 300, "and the target counted as many");
    assert!(m["description"]
        .as_str()
        .unwrap()
        .contains("3 shards merged"));
    assert!(Path::new(&file).exists());
}
