//! Open-loop arrivals with gamma gaps (`--arrivals gamma:SHAPE`, a scenario's `arrivals:`),
//! against a real target: every worker draws the same whole schedule and takes its turn, so a
//! run sends exactly that schedule's arrivals, whatever its number of workers, from the shape's
//! own seed or from `--seed` (a scenario's `seed:`); and a bad shape, or a seed with nothing to
//! seed, is refused before any load.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use common::{run, run_file};
use throng::core::{Arrivals, Rate, Stage};
use throng::engine::schedule::Schedule;
use throng::testbed::HttpTarget;

/// Runs `throng run URL ARGS` in-process, the arguments written as on a command line.
async fn run_at(url: &str, args: &str) -> std::sync::Arc<throng::core::Snapshot> {
    let mut all = vec![url];
    all.extend(args.split_whitespace());
    run(&all).await
}

/// The arrivals of the whole gamma schedule due before `end` seconds, drawn from `seed`.
fn due(rate: &Rate, shape: f64, end: f64, seed: Option<u64>) -> u64 {
    Schedule::new(rate, Arrivals::Gamma { shape }, Some(end), 0, 1, seed).count() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gamma_open_loop_sends_exactly_its_schedule() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    // Two workers each draw the whole schedule and send every other arrival of it.
    let s = run_at(&url, "-q 400 -z 2s --arrivals gamma:0.5 --threads 2").await;
    let want = due(&Rate::Constant(400.0), 0.5, 2.0, None);
    // About 800, as a bursty process gives: not the 800 of even spacing to the arrival.
    assert!((700..=900).contains(&want), "{want}");
    assert_eq!(s.total.samples, want);
    assert_eq!(target.requests(), want, "the server saw a different count");
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    let lag = s.lag.as_ref().unwrap();
    assert_eq!((lag.scheduled, lag.dropped), (want, 0));
    // The result names the shape, and still meets the checked-in schema.
    let r = serde_json::to_value(common::result(&s)).unwrap();
    assert_eq!(r["plan"]["model"]["arrivals"]["gamma"]["shape"], 0.5);
    let invalid = crate::schema::invalid(&r);
    assert!(invalid.is_empty(), "{invalid:?}");
    // A seed draws other bursts, which the run sends, and the result names it.
    let seeded = due(&Rate::Constant(400.0), 0.5, 1.0, Some(11));
    assert_ne!(seeded, due(&Rate::Constant(400.0), 0.5, 1.0, None));
    let s = run_at(
        &url,
        "-q 400 -z 1s --arrivals gamma:0.5 --threads 2 --seed 11",
    )
    .await;
    assert_eq!(s.total.samples, seeded);
    let r = serde_json::to_value(common::result(&s)).unwrap();
    assert_eq!(r["plan"]["seed"], 11);
    let invalid = crate::schema::invalid(&r);
    assert!(invalid.is_empty(), "{invalid:?}");
}

/// Shards (`--shard I/N`, processes of their own) of two workers each take their turns of one
/// whole schedule: together they send it, the shape's or the one a seed draws.
#[test]
fn gamma_shards_send_the_whole_schedule_between_them() {
    let (_rt, t) = common::serve(HttpTarget::default());
    let url = t.url();
    let dir = tempfile::tempdir().unwrap();
    let rate = Rate::Constant(600.0);
    assert_ne!(due(&rate, 0.3, 1.0, None), due(&rate, 0.3, 1.0, Some(5)));
    for seed in [None, Some(5)] {
        let before = t.requests();
        for i in 0..2 {
            let json = dir.path().join(format!("shard-{i}.json"));
            let json = json.to_str().unwrap();
            let mut args = format!(
                "run {url} -q 600 -z 1s --arrivals gamma:0.3 --threads 2 --shard {i}/2 \
                 --no-tui --quiet --json {json}"
            );
            if let Some(seed) = seed {
                args += &format!(" --seed {seed}");
            }
            let out = common::throng(&args.split_whitespace().collect::<Vec<_>>());
            assert_eq!(out.status.code(), Some(0), "{}", common::said(&out));
            let r: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
            let scheduled = r["open_loop"]["scheduled"].as_u64().unwrap();
            assert!(scheduled > 100, "shard {i}, seed {seed:?}: {scheduled}");
        }
        let sent = t.requests() - before;
        assert_eq!(sent, due(&rate, 0.3, 1.0, seed), "seed {seed:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gamma_open_loop_follows_a_ramp_and_a_count() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    // 0 -> 600/s over 1 s, then 600/s for 1 s: 900 arrivals due, on average.
    let s = run_at(
        &url,
        "--rate-stages 1s:600,1s:600 --arrivals gamma:0.25 --threads 2",
    )
    .await;
    let stages = vec![
        Stage {
            duration: std::time::Duration::from_secs(1),
            target: 600.0,
        };
        2
    ];
    let want = due(&Rate::Stages { start: 0.0, stages }, 0.25, 2.0, None);
    assert!((750..=1050).contains(&want), "{want}");
    assert_eq!(s.total.samples, want);
    assert_eq!(target.requests(), want);
    // With -n, exactly that many, however bursty.
    let s = run_at(&url, "-q 1000 -n 333 --arrivals gamma:4").await;
    assert_eq!(s.total.samples, 333);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_runs_gamma_arrivals() {
    let target = HttpTarget::default().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Without a seed, the shape's schedule; with the file's `seed:`, its own.
    for (seed, line) in [(None, ""), (Some(3), "seed: 3\n")] {
        let file = dir.path().join("gamma.yaml");
        std::fs::write(
            &file,
            format!(
                "{line}targets:\n  a: {}\nload:\n  rate: 300\n  duration: 1s\n  \
                 arrivals: gamma:0.5\nsteps:\n  - label: x\n    request:\n      path: /\n",
                target.url()
            ),
        )
        .unwrap();
        let before = target.requests();
        let s = run_file(&file, &["--threads", "2"]).await;
        let want = due(&Rate::Constant(300.0), 0.5, 1.0, seed);
        assert_eq!(s.total.samples, want, "seed {seed:?}");
        assert_eq!(target.requests() - before, want);
    }
}

#[test]
fn a_bad_shape_exits_2_before_any_load() {
    let (_rt, t) = common::serve(HttpTarget::default());
    let url = t.url();
    let shape =
        "the shape must be a number above 0 (1 is poisson, below 1 burstier, above 1 more even)";
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec![&url, "-q", "10", "--arrivals", "gamma:0"],
            format!("--arrivals `gamma:0`: {shape}, not `0`"),
        ),
        (
            vec![&url, "-q", "10", "--arrivals", "gamma:-1"],
            format!("--arrivals `gamma:-1`: {shape}, not `-1`"),
        ),
        (
            vec![&url, "-q", "10", "--arrivals", "gamma:lots"],
            format!("--arrivals `gamma:lots`: {shape}, not `lots`"),
        ),
        (
            vec![&url, "-q", "10", "--arrivals", "gamma:inf"],
            format!("--arrivals `gamma:inf`: {shape}, not `inf`"),
        ),
        (
            vec![&url, "-q", "10", "--arrivals", "gamma"],
            "--arrivals `gamma` needs a shape: gamma:SHAPE".into(),
        ),
        (
            vec![&url, "-q", "10", "--arrivals", "bursty"],
            "--arrivals must be `even`, `poisson` or `gamma:SHAPE`, not `bursty`".into(),
        ),
        // As poisson is, gamma is refused with a closed loop: it has no arrivals to space.
        (
            vec![&url, "-c", "2", "--arrivals", "gamma:0.5"],
            "--max-in-flight, --queue and --arrivals belong to the open loop".into(),
        ),
        // A seed with nothing to seed: even arrivals, a closed loop.
        (
            vec![&url, "-q", "10", "--seed", "1"],
            "--seed seeds an open loop's random arrivals".into(),
        ),
        (
            vec![&url, "-c", "2", "--seed", "1"],
            "--seed seeds an open loop's random arrivals".into(),
        ),
    ];
    common::refused(&cases);
    // A scenario's bad shape is blamed on its place.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    std::fs::write(
        &file,
        format!(
            "targets:\n  a: {url}\nload:\n  rate: 10\n  arrivals: gamma:0\n\
             steps:\n  - label: x\n    request:\n      path: /\n"
        ),
    )
    .unwrap();
    let path = file.display().to_string();
    let out = common::throng(&["run", &path, "-n", "5", "--no-tui"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{path}:5:13: arrivals `gamma:0`: {shape}, not `0`"
        )),
        "{err}"
    );
    assert_eq!(t.requests(), 0, "no load was sent");
}
