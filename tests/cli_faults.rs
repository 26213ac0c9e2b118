//! The built binary under faults and mistyped input: exit codes, messages, results kept.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use throng::testbed::{Fault, HttpTarget};

use common::{serve as start, throng};

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A hung target fails its thresholds from the command line too (it used to pass both).
#[test]
fn a_hung_target_fails_the_thresholds() {
    let (_rt, t) = start(HttpTarget {
        fault: Some(Fault::Hang),
        ..HttpTarget::default()
    });
    let url = format!("{}/", t.url());
    let out = throng(&[
        "run",
        &url,
        "-q",
        "50",
        "-z",
        "1s",
        "--grace",
        "300ms",
        "--quiet",
        "--threshold",
        "error_rate<1%",
        "--threshold",
        "p99<100ms",
    ]);
    assert_eq!(out.status.code(), Some(99), "{}", text(&out));
    let s = text(&out);
    assert!(s.contains("FAIL error_rate<1%"), "{s}");
    assert!(s.contains("FAIL p99<100ms"), "{s}");
    assert!(s.contains("aborted"), "{s}");
}

/// Arrivals dropped for want of a slot are failures of class `dropped`: they fail an error-rate
/// threshold and a `dropped` one (at 1,000/s with 10 slots and 10 queued against a 100 ms
/// target, 2,690 of 3,000 were dropped, Error % was 0.00 and `error_rate<1%` passed).
#[test]
fn dropped_arrivals_fail_the_thresholds() {
    let (_rt, t) = start(HttpTarget {
        delay: throng::testbed::Delay::Fixed(Duration::from_millis(100)),
        ..HttpTarget::default()
    });
    let url = format!("{}/", t.url());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = throng(&[
        "run",
        &url,
        "-q",
        "300",
        "--max-in-flight",
        "10",
        "--queue",
        "10",
        "-z",
        "1s",
        "--quiet",
        "--threshold",
        "error_rate<1%",
        "--threshold",
        "dropped<1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(99), "{}", text(&out));
    let s = text(&out);
    assert!(s.contains("FAIL error_rate<1%"), "{s}");
    assert!(s.contains("FAIL dropped<1"), "{s}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let o = &r["open_loop"];
    let dropped = o["dropped"].as_u64().unwrap();
    // 10 slots of 100 ms start about 100 of the 300 in 1 s.
    assert!(dropped > 100, "{o}");
    assert_eq!(r["total"]["dropped"].as_u64(), Some(dropped));
    // Every arrival is one sample: started, dropped or still queued at the end.
    assert_eq!(r["total"]["samples"].as_u64(), o["scheduled"].as_u64());
    let class = r["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["class"] == "dropped")
        .expect("a dropped class");
    assert_eq!(class["count"].as_u64(), Some(dropped));
    let rate = r["total"]["error_rate"].as_f64().unwrap();
    assert!(rate > 0.3, "{rate}");
}

/// A result file that cannot be written is refused before the load (exit 2, at once); one that
/// fails only at the end is written elsewhere, and the run says where (exit 1).
#[test]
fn the_result_path_is_checked_before_the_load() {
    let (_rt, t) = start(HttpTarget::default());
    let url = format!("{}/", t.url());
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/r.json");
    let is_dir = dir.path().to_str().unwrap().to_string();
    for (path, says) in [
        (missing.to_str().unwrap(), "does not exist"),
        (is_dir.as_str(), "is a directory"),
    ] {
        let began = Instant::now();
        let out = throng(&[
            "run", &url, "-c", "1", "-z", "30s", "--quiet", "--json", path,
        ]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(says), "{}", text(&out));
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "ran the load first"
        );
    }
    assert_eq!(t.requests(), 0, "no load before the check");
    if std::path::Path::new("/dev/full").exists() {
        let out = throng(&[
            "run",
            &url,
            "-c",
            "1",
            "-n",
            "5",
            "--quiet",
            "--json",
            "/dev/full",
        ]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        let spare = err
            .split("the result was written to ")
            .nth(1)
            .and_then(|r| r.split(" instead").next())
            .unwrap_or_else(|| panic!("no spare path in {err}"));
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(spare).unwrap()).unwrap();
        assert_eq!(r["total"]["samples"], 5);
        let _ = std::fs::remove_file(spare);
    }
}

/// A second SIGTERM (or Ctrl-C) during the grace period cuts it short; the result is written.
#[cfg(unix)]
#[test]
fn a_second_signal_cuts_the_grace_short() {
    let (_rt, t) = start(HttpTarget {
        fault: Some(Fault::Hang),
        ..HttpTarget::default()
    });
    let url = format!("{}/", t.url());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let child = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args([
            "run", &url, "-c", "3", "-z", "60s", "--grace", "60s", "--quiet", "--json",
        ])
        .arg(&json)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let kill = |pid: u32| {
        assert!(Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap()
            .success());
    };
    std::thread::sleep(Duration::from_millis(1000));
    kill(child.id());
    std::thread::sleep(Duration::from_millis(500));
    let sent = Instant::now();
    kill(child.id());
    let out = child.wait_with_output().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "{:?}",
        sent.elapsed()
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["interrupted"], true, "{}", text(&out));
    assert_eq!(r["aborted"], 3);
    assert_eq!(r["total"]["errors"], 3);
}

/// Input that used to be accepted with a wrong meaning, or refused with clap's words.
#[test]
fn lenient_input_is_refused_with_a_message() {
    let url = "http://127.0.0.1:9/";
    for (args, says) in [
        (vec!["-q", "-10", "-z", "1s"], "positive number"),
        (vec!["-q", "1e308", "-z", "1s"], "past any generator"),
        (vec!["--rate-stages", "1s:1e308"], "past any generator"),
        (vec!["-c", "-3", "-z", "1s"], "at least 1"),
        (vec!["-c", "0", "-z", "1s"], "at least 1"),
        (vec!["-n", "-5"], "at least 1"),
        (vec!["-c", "1", "-z", "1s", "-t", "0s"], "longer than zero"),
        (
            vec!["-c", "1", "-z", "1s", "--connect-timeout", "0s"],
            "longer than zero",
        ),
        (
            vec!["-c", "1", "-z", "1s", "--cacert", "/etc/hostname"],
            "https://",
        ),
        (
            vec!["-c", "5", "-q", "10", "--max-in-flight", "5", "-z", "1s"],
            "give one",
        ),
    ] {
        let mut a = vec!["run", url];
        a.extend(&args);
        let out = throng(&a);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(says), "{args:?}: {}", text(&out));
        assert!(!text(&out).contains("panicked"), "{args:?}");
    }
}

/// `-c 500 -q 3000`, as oha and hey users write a rate-limited run: the open loop, at most 500 in
/// flight.
#[test]
fn connections_with_a_rate_bound_the_open_loop() {
    let (_rt, t) = start(HttpTarget::default());
    let url = format!("{}/", t.url());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = throng(&[
        "run",
        &url,
        "-c",
        "7",
        "-q",
        "100",
        "-z",
        "1s",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["plan"]["model"]["kind"], "open");
    assert_eq!(r["plan"]["model"]["max_in_flight"], 7);
    assert_eq!(r["open_loop"]["scheduled"], 100);
}

/// `--target NAME=URL` and `THRONG_TARGET_<NAME>` send a scenario's steps elsewhere than its file
/// says (the bundled files name 127.0.0.1:8080): the bank started here on a free port gets them.
#[test]
fn targets_are_overridden_by_flag_and_environment() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let bank = rt
        .block_on(throng::testbed::BankService::default().start())
        .unwrap();
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/bank-transfer.yaml");
    let flag = format!("bank={}", bank.url());
    let out = throng(&[
        "run", file, "--target", &flag, "-c", "2", "-i", "3", "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let by_flag = bank.requests();
    assert!(by_flag >= 6, "the bank saw {by_flag} requests");
    // The environment, and the flag winning over it.
    let out = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(["run", file, "-c", "1", "-i", "2", "--quiet"])
        .env("THRONG_TARGET_BANK", bank.url())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(bank.requests() > by_flag, "the variable sent nothing");
    let out = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args([
            "run", file, "--target", &flag, "-c", "1", "-i", "1", "--quiet",
        ])
        .env("THRONG_TARGET_BANK", "http://127.0.0.1:99999/")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "the flag wins: {}", text(&out));
    for (args, says) in [
        (
            vec![
                "run",
                file,
                "--target",
                "nosuch=http://127.0.0.1:1/",
                "-n",
                "1",
            ],
            "no target named \"nosuch\"",
        ),
        (
            vec![
                "run",
                file,
                "--target",
                "bank=http://127.0.0.1:99999/",
                "-n",
                "1",
            ],
            "99999",
        ),
        (vec!["run", file, "--target", "bank", "-n", "1"], "NAME=URL"),
        (
            vec![
                "run",
                "http://127.0.0.1:1/",
                "--target",
                "a=http://127.0.0.1:2/",
                "-n",
                "1",
            ],
            "two or more sides",
        ),
    ] {
        let out = throng(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(says), "{args:?}: {}", text(&out));
    }
}
