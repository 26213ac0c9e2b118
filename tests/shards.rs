//! One plan as N shards (`--shard I/N`, `--start-at`) in N processes, and `throng merge`: the
//! shards together run exactly the plan, and the merge is exact.

use crate::common;

use std::process::{Command, Stdio};

use common::{delayed, throng};
use throng::core::histogram;
use throng::report::RunResult;

fn read(path: &std::path::Path) -> RunResult {
    serde_json::from_str(&std::fs::read_to_string(path).expect("a result")).expect("parses")
}

/// Runs `args` as shards 0..n in parallel processes, each with `--shard i/n`, starting together.
fn shards(args: &[&str], n: u32, dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let children: Vec<_> = (0..n)
        .map(|i| {
            let json = dir.join(format!("shard-{i}.json"));
            let child = Command::new(env!("CARGO_BIN_EXE_throng"))
                .arg("run")
                .args(args)
                .args(["--shard", &format!("{i}/{n}"), "--start-at", "+1s"])
                .args([
                    "--no-tui",
                    "--quiet",
                    "--json",
                    json.to_str().expect("utf-8"),
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("a shard starts");
            (child, json)
        })
        .collect();
    children
        .into_iter()
        .map(|(child, json)| {
            let out = child.wait_with_output().expect("a shard ends");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            json
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_shards_send_exactly_the_plan_and_merge_exactly() {
    let t = delayed(2).await;
    let url = t.url();
    let dir = tempfile::tempdir().expect("a temp dir");
    let files = shards(&[&url, "-c", "6", "-n", "300"], 3, dir.path());
    assert_eq!(t.requests(), 300, "the shards together sent exactly -n");
    let parts: Vec<RunResult> = files.iter().map(|f| read(f)).collect();
    // Users u % 3 == i: two users a shard; -n split 100 each.
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(p.plan.shard.index as usize, i);
        assert_eq!(p.total.samples, 100, "shard {i}");
    }
    let merged = dir.path().join("merged.json");
    let mut args = vec!["merge".to_string()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(["--json".into(), merged.display().to_string()]);
    let out = throng(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = read(&merged);
    assert_eq!(m.total.samples, 300);
    assert!(m.plan.shard.is_whole());
    assert!(
        m.description.contains("3 shards merged"),
        "{}",
        m.description
    );
    // The merged percentiles are those of all the samples: the shards' histograms added here,
    // independently of the merge.
    let mut all = histogram::new();
    for p in &parts {
        all.add(histogram::decode(&p.total.latency_hdr).expect("decodes"))
            .expect("adds");
    }
    let merged_hdr = histogram::decode(&m.total.latency_hdr).expect("decodes");
    assert_eq!(merged_hdr.len(), 300);
    for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
        assert_eq!(
            merged_hdr.value_at_quantile(q),
            all.value_at_quantile(q),
            "q {q}"
        );
    }
    assert!((m.total.latency.p50 - all.value_at_quantile(0.5) as f64 / 1000.0).abs() < 1e-9);
    // The series adds up to the requests, second by wall-clock second.
    assert_eq!(m.series.iter().map(|p| p.requests).sum::<u64>(), 300);

    // One process running the whole plan sends the same count.
    let before = t.requests();
    let out = throng(&["run", &url, "-c", "6", "-n", "300", "--no-tui", "--quiet"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(t.requests() - before, 300);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_shards_follow_the_whole_schedule() {
    let t = delayed(1).await;
    let url = t.url();
    let dir = tempfile::tempdir().expect("a temp dir");
    let files = shards(&[&url, "-q", "300", "-z", "2s"], 3, dir.path());
    let mut args = vec!["merge".to_string()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    let merged = dir.path().join("merged.json");
    args.extend(["--json".into(), merged.display().to_string()]);
    let out = throng(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = read(&merged);
    let lag = m.open_loop.expect("open-loop figures");
    assert_eq!(
        lag.scheduled, 600,
        "3 shards x every third arrival = the whole schedule"
    );
    assert_eq!(lag.started + lag.dropped + lag.unstarted, lag.scheduled);
    assert_eq!(t.requests(), lag.started);
    assert!(
        (lag.achieved_rate - 300.0).abs() < 15.0,
        "{}",
        lag.achieved_rate
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_flags_and_merges_refuse_what_is_wrong() {
    let t = delayed(1).await;
    let url = t.url();
    for (args, env, says) in [
        (vec!["--shard", "3/3"], None, "counts from 0"),
        (vec!["--shard", "1of3"], None, "I/N"),
        (vec!["--shards", "3"], None, "no shard index"),
        (
            vec!["--shards", "3"],
            Some(("JOB_COMPLETION_INDEX", "5")),
            "indexes count from 0 to 2",
        ),
        (
            vec!["--shards", "3"],
            Some(("THRONG_SHARD_SLOT", "0")),
            "slots count from 1 to 3",
        ),
        (vec!["--start-at", "tomorrow"], None, "--start-at"),
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_throng"));
        cmd.args(["run", &url, "-n", "3", "--no-tui", "--quiet"])
            .args(&args);
        cmd.env_remove("JOB_COMPLETION_INDEX")
            .env_remove("THRONG_SHARD_SLOT");
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert_eq!(t.requests(), 0, "bad input sent nothing");

    // Swarm's slot counts from 1: slot 3 of 3 is shard 2.
    let dir = tempfile::tempdir().expect("a temp dir");
    let json = dir.path().join("s.json");
    let out = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args([
            "run", &url, "-c", "3", "-n", "30", "--shards", "3", "--no-tui", "--quiet",
        ])
        .args(["--json", json.to_str().expect("utf-8")])
        .env_remove("JOB_COMPLETION_INDEX")
        .env("THRONG_SHARD_SLOT", "3")
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read(&json);
    assert_eq!((r.plan.shard.index, r.plan.shard.count), (2, 3));
    assert_eq!(r.total.samples, 10);

    // A missing shard, a repeated one, and another plan's are refused by name.
    let f = json.display().to_string();
    let other = dir.path().join("o.json");
    let out = throng(&[
        "run",
        &url,
        "-c",
        "2",
        "-n",
        "6",
        "--shard",
        "0/3",
        "--no-tui",
        "--quiet",
        "--json",
        other.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let o = other.display().to_string();
    for (args, says) in [
        (vec!["merge", &f], "shard 0/3, 1/3 missing"),
        (vec!["merge", &f, &f], "are both shard 2/3"),
        (vec!["merge", &f, &o], "ran another plan"),
    ] {
        let out = throng(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_on_standard_output_merge_from_collected_logs() {
    let t = delayed(1).await;
    let url = t.url();
    let dir = tempfile::tempdir().expect("a temp dir");
    // What `docker service logs` prints: each task's lines behind a prefix, stderr beside.
    let mut logs = String::new();
    for i in 0..2 {
        let out = throng(&[
            "run",
            &url,
            "-c",
            "2",
            "-n",
            "40",
            "--shard",
            &format!("{i}/2"),
            "--no-tui",
            "--quiet",
            "--json",
            "-",
        ]);
        assert_eq!(out.status.code(), Some(0));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.lines().count(),
            1,
            "the result alone on stdout: {stdout}"
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Label"),
            "the summary on stderr"
        );
        for l in String::from_utf8_lossy(&out.stderr)
            .lines()
            .chain(stdout.lines())
        {
            logs.push_str(&format!("throng.{}.x7q2@node1    | {l}\n", i + 1));
        }
    }
    let file = dir.path().join("logs.txt");
    std::fs::write(&file, logs).expect("writes");
    let out = throng(&["merge", file.to_str().expect("utf-8")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("40 requests in"), "{stdout}");
    assert_eq!(t.requests(), 40);
}
