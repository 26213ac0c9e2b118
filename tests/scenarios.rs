//! Scenario files end to end: the bundled ones against the testbed bank, invalid files with
//! their exact place, checks, groups, data files and extraction.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use throng::core::{ErrorClass, Snapshot};
use throng::testbed::BankService;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Writes `text` as a scenario with its targets pointed at `url`, and returns its path.
fn scenario_at(dir: &Path, name: &str, text: &str, url: &str) -> PathBuf {
    // The bank answers gRPC on the same port (scenarios/transport-grpc.yaml).
    let text = text
        .replace("http://127.0.0.1:8080", url)
        .replace("grpc://127.0.0.1:8080", &url.replace("http://", "grpc://"));
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

use common::run_file;

fn row<'a>(s: &'a Snapshot, label: &str) -> &'a throng::core::LabelStats {
    s.labels
        .iter()
        .find(|l| l.label == label)
        .unwrap_or_else(|| panic!("no row {label}"))
}

fn checks(s: &Snapshot) -> u64 {
    common::errors_of(s, ErrorClass::Check)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bundled_scenario_parses_and_runs_clean_against_the_testbed() {
    let bank = BankService::default().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut ran = 0;
    for entry in std::fs::read_dir(root().join("scenarios")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with('#'),
            "{} must open with a comment saying what it reproduces",
            path.display()
        );
        throng::scenario::load(&path, &throng::protocols()).unwrap_or_else(|e| panic!("{e}"));
        let name = path.file_name().unwrap().to_str().unwrap();
        // A scenario of a plain web service (web-compare.yaml) runs against the testbed's HTTP
        // target; the others against the bank.
        let web = throng::testbed::HttpTarget::default()
            .start()
            .await
            .unwrap();
        let url = if text.contains("\n  web: http://127.0.0.1:8080") {
            web.url()
        } else {
            bank.url()
        };
        let local = scenario_at(dir.path(), name, &text, &url);
        // A few seconds, lighter than the file's own load.
        let s = if text.contains("rate:") {
            run_file(&local, &["-q", "150", "-z", "2s"]).await
        } else {
            run_file(&local, &["-c", "4", "-z", "2s"]).await
        };
        assert!(s.total.samples > 50, "{name}: {} samples", s.total.samples);
        assert_eq!(s.total.errors, 0, "{name}: {:?}", s.errors);
        assert_eq!(checks(&s), 0);
        ran += 1;
    }
    assert_eq!(ran, 7);
    assert_eq!(bank.server_errors(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_count_completed_iterations_and_money_is_conserved() {
    let bank = BankService::default().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("scenarios/bank-transfer.yaml")).unwrap();
    let file = scenario_at(dir.path(), "bank.yaml", &text, &bank.url());
    let s = run_file(&file, &["-c", "3", "-i", "7"]).await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    // 3 users x 7 iterations: every step and both groups ran 21 times.
    for label in [
        "create A",
        "transfer",
        "balance A after",
        "open accounts",
        "transfer flow",
    ] {
        assert_eq!(row(&s, label).samples, 21, "{label}");
    }
    assert!(row(&s, "transfer flow").group && !row(&s, "transfer").group);
    // TOTAL counts requests, not groups: 7 steps x 21.
    assert_eq!(s.total.samples, 147);
    // A group takes at least as long as its steps.
    let flow = throng::core::Percentiles::of(&row(&s, "transfer flow").latency);
    let transfer = throng::core::Percentiles::of(&row(&s, "transfer").latency);
    assert!(flow.min >= transfer.min);
    // A group's bytes are its steps' bytes.
    let steps = [
        "balance A before",
        "balance B before",
        "transfer",
        "balance B after",
        "balance A after",
    ];
    let sent: u64 = steps.iter().map(|l| row(&s, l).bytes_sent).sum();
    let received: u64 = steps.iter().map(|l| row(&s, l).bytes_received).sum();
    assert!(sent > 0 && received > 0);
    assert_eq!(row(&s, "transfer flow").bytes_sent, sent);
    assert_eq!(row(&s, "transfer flow").bytes_received, received);
    let r = common::result(&s);
    assert_eq!(r.labels.len(), 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_checks_are_check_errors_on_their_label() {
    let bank = BankService::default().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
targets:
  bank: http://127.0.0.1:8080
steps:
  - label: create
    request: { method: POST, path: /client/new/50 }
    extract:
      id: { jsonpath: $.id }
      type: { header: content-type }
      digits: { regex: '"id":(\d+)' }
    checks:
      - status: 200
      - body_contains: '"id"'
  - label: wrong balance
    request: { path: "/client/{{ id }}/balance" }
    checks:
      - jsonpath: $.balance
        equals: 51
  - label: never reached
    request: { path: "/client/{{ digits }}/balance" }
"#;
    let file = scenario_at(dir.path(), "checks.yaml", text, &bank.url());
    let s = run_file(&file, &["-c", "2", "-i", "5"]).await;
    assert_eq!(row(&s, "create").errors, 0);
    assert_eq!(row(&s, "wrong balance").samples, 10);
    assert_eq!(row(&s, "wrong balance").errors, 10);
    assert_eq!(checks(&s), 10);
    let sample = &s
        .errors
        .iter()
        .find(|e| e.class == ErrorClass::Check)
        .unwrap()
        .sample;
    assert!(sample.contains("expected 51, got 50"), "{sample}");
    // The default skips the rest of the iteration.
    assert_eq!(row(&s, "never reached").samples, 0);

    // With on_failure: continue, the next step runs, with the regex-extracted id.
    let cont = text.replacen("steps:", "on_failure: continue\nsteps:", 1);
    let file = scenario_at(dir.path(), "continue.yaml", &cont, &bank.url());
    let s = run_file(&file, &["-c", "2", "-i", "5"]).await;
    assert_eq!(row(&s, "never reached").samples, 10);
    assert_eq!(row(&s, "never reached").errors, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_rows_feed_users_in_each_mode() {
    let bank = BankService::default().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("amounts.csv"), "opening\n100\n200\n300\n").unwrap();
    let text = |mode: &str, extra: &str| {
        format!(
            r#"
targets:
  bank: http://127.0.0.1:8080
data:
  row:
    file: amounts.csv
    mode: {mode}
    {extra}
steps:
  - label: open
    request: {{ method: POST, path: "/client/new/{{{{ row.opening }}}}" }}
    extract: {{ id: {{ jsonpath: $.id }} }}
  - label: read
    request: {{ path: "/client/{{{{ id }}}}/balance" }}
    checks:
      - jsonpath: $.balance
        equals: "{{{{ row.opening }}}}"
"#
        )
    };
    // Unique: three rows for five users: two users stop at once (the default for unique).
    let file = scenario_at(dir.path(), "unique.yaml", &text("unique", ""), &bank.url());
    let s = run_file(&file, &["-c", "5", "-i", "4"]).await;
    assert_eq!(row(&s, "open").samples, 12);
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    // Sequential with stop_user: exactly three iterations in all.
    let file = scenario_at(
        dir.path(),
        "seq.yaml",
        &text("sequential", "on_exhausted: stop_user"),
        &bank.url(),
    );
    let s = run_file(&file, &["-c", "2", "-i", "10"]).await;
    assert_eq!(row(&s, "open").samples, 3);
    // Sequential wrapping and random: every iteration runs and every balance checks out.
    for mode in ["sequential", "random"] {
        let file = scenario_at(
            dir.path(),
            &format!("{mode}.yaml"),
            &text(mode, ""),
            &bank.url(),
        );
        let s = run_file(&file, &["-c", "2", "-i", "6"]).await;
        assert_eq!(row(&s, "read").samples, 12, "{mode}");
        assert_eq!(s.total.errors, 0, "{mode}: {:?}", s.errors);
    }
    // The bank holds exactly what the rows opened.
    assert!(bank.requests() > 0);
}

/// Every file under tests/fixtures/invalid names the place of its problem, and exits 2.
#[test]
fn invalid_files_name_file_line_and_column() {
    let dir = root().join("tests/fixtures/invalid");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let expect = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect: "))
            .expect("a `# expect:` line");
        let out = Command::new(env!("CARGO_BIN_EXE_throng"))
            .args(["run", path.to_str().unwrap(), "--no-tui"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", path.display());
        assert!(
            err.contains(&format!("{}/{expect}", dir.display())),
            "{}:\n expected {expect:?}\n got {err}",
            path.display()
        );
        n += 1;
    }
    assert!(n >= 10);
}

#[test]
fn demo_runs_headless_with_no_check_failures() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("demo.json");
    let out = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(["demo", "-z", "3s", "-c", "4", "--no-tui", "--json"])
        .arg(&json)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let labels: Vec<&str> = r["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "create A",
            "create B",
            "balance A before",
            "balance B before",
            "transfer",
            "balance B after",
            "balance A after",
            "open accounts",
            "transfer flow"
        ]
    );
    assert_eq!(r["total"]["errors"], 0, "{}", r["errors"]);
    assert!(r["total"]["samples"].as_u64().unwrap() > 100);
    let groups: Vec<bool> = r["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["group"].as_bool().unwrap())
        .collect();
    assert_eq!(groups.iter().filter(|g| **g).count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_flow_with_a_custom_step() {
    use throng::scenario::{Builder, StepBuilder};
    let bank = BankService::default().start().await.unwrap();
    let scenario = Builder::new()
        .target("bank", &bank.url())
        .step(
            StepBuilder::post("create", "/client/new/75")
                .extract_json("id", "$.id")
                .check_status(200),
        )
        .custom("double it", |mut vars| async move {
            let id = vars.get("id").and_then(|v| v.as_i64()).unwrap_or(0);
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            vars.insert("twice".into(), serde_json::json!(id * 2));
            (vars, throng::core::Outcome::default())
        })
        .step(
            StepBuilder::get("read", "/client/{{ id }}/balance")
                .check_json("$.balance", serde_json::json!(75)),
        )
        .build(&throng::protocols())
        .unwrap();
    let driver = throng::scenario::ScenarioDriver::new(scenario, &Default::default()).unwrap();
    let model = throng::core::LoadModel::Closed(throng::core::ClosedLoop {
        users: throng::core::Users::Fixed(2),
        requests: None,
        iterations: Some(5),
        duration: None,
        think_time: None,
    });
    let s = throng::engine::run(
        throng::core::RunPlan::new("library", model),
        Arc::new(driver),
    )
    .await
    .unwrap();
    assert_eq!(
        s.labels
            .iter()
            .map(|l| l.label.as_str())
            .collect::<Vec<_>>(),
        ["create", "double it", "read"]
    );
    assert_eq!(row(&s, "double it").samples, 10);
    // The engine timed the custom step: it sleeps 2 ms.
    assert!(throng::core::Percentiles::of(&row(&s, "double it").latency).min >= 2000);
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
}

/// Each row keeps its failures by class: a flow of a step whose check fails and a step whose
/// target refuses connections, run as two shards by the binary. The JSON rows, the summary's
/// "by label" lines and the merge of the shards each say which step failed how; the classes of
/// the rows add up to the run's, and the flow's row counts each failed pass once, by its first
/// failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_row_keeps_its_failures_by_class_through_json_summary_and_merge() {
    use std::collections::BTreeMap;
    let bank = BankService::default().start().await.unwrap();
    let closed = common::closed_port();
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
targets:
  bank: http://127.0.0.1:8080
  dead: http://127.0.0.1:{closed}
on_failure: continue
steps:
  - label: create
    request: {{ target: bank, method: POST, path: /client/new/50 }}
    extract:
      id: {{ jsonpath: $.id }}
  - group: flow
    steps:
      - label: wrong balance
        request: {{ target: bank, path: "/client/{{{{ id }}}}/balance" }}
        checks:
          - jsonpath: $.balance
            equals: 51
      - label: nobody home
        request: {{ target: dead, path: / }}
"#
    );
    let file = scenario_at(dir.path(), "classes.yaml", &text, &bank.url());
    let file = file.to_str().unwrap();
    let classes = |r: &throng::report::RunResult, label: &str| -> BTreeMap<String, u64> {
        r.labels
            .iter()
            .find(|l| l.label == label)
            .unwrap_or_else(|| panic!("no row {label}"))
            .errors_by_class
            .clone()
    };
    let read = |path: &Path| -> throng::report::RunResult {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let want = |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> {
        pairs.iter().map(|(c, n)| (c.to_string(), *n)).collect()
    };
    let mut shards = Vec::new();
    for i in 0..2 {
        let json = dir.path().join(format!("s{i}.json"));
        let shard = format!("{i}/2");
        let out = common::throng(&[
            "run",
            file,
            "-c",
            "2",
            "-i",
            "5",
            "--shard",
            &shard,
            "--no-tui",
            "--json",
            json.to_str().unwrap(),
        ]);
        let said = common::said(&out);
        assert_eq!(out.status.code(), Some(0), "{said}");
        // Under Errors, a row per failing step and a column per class that failed.
        let by: Vec<&str> = said
            .lines()
            .skip_while(|l| *l != "  by label")
            .skip(1)
            .take(3)
            .collect();
        assert_eq!(by.len(), 3, "{said}");
        let header: Vec<&str> = by[0].split_whitespace().collect();
        assert_eq!(header[0], "Label", "{said}");
        let cells = |label: &str| -> BTreeMap<String, u64> {
            let line = by
                .iter()
                .find_map(|l| l.trim_start().strip_prefix(label))
                .unwrap_or_else(|| panic!("no {label} row under Errors: {said}"));
            let counts = line.split_whitespace().map(|n| n.parse::<u64>().unwrap());
            header[1..]
                .iter()
                .zip(counts)
                .filter(|(_, n)| *n > 0)
                .map(|(c, n)| (c.to_string(), n))
                .collect()
        };
        assert_eq!(cells("wrong balance"), want(&[("check", 5)]), "{said}");
        assert_eq!(cells("nobody home"), want(&[("connect", 5)]), "{said}");
        let r = read(&json);
        assert_eq!(classes(&r, "create"), BTreeMap::new());
        assert_eq!(classes(&r, "wrong balance"), want(&[("check", 5)]));
        assert_eq!(classes(&r, "nobody home"), want(&[("connect", 5)]));
        // The flow failed every pass, first at its check.
        assert_eq!(classes(&r, "flow"), want(&[("check", 5)]));
        // The steps' classes are the run's.
        let run: BTreeMap<String, u64> = r
            .errors
            .iter()
            .map(|e| (e.class.clone(), e.count))
            .collect();
        assert_eq!(run, want(&[("check", 5), ("connect", 5)]));
        shards.push(json.to_str().unwrap().to_string());
    }
    let merged = dir.path().join("merged.json");
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(String::as_str));
    args.extend(["--json", merged.to_str().unwrap()]);
    let out = common::throng(&args);
    assert_eq!(out.status.code(), Some(0), "{}", common::said(&out));
    let r = read(&merged);
    assert_eq!(classes(&r, "wrong balance"), want(&[("check", 10)]));
    assert_eq!(classes(&r, "nobody home"), want(&[("connect", 10)]));
    assert_eq!(classes(&r, "flow"), want(&[("check", 10)]));
    // The reports show the same table.
    let out = common::throng(&["report", merged.to_str().unwrap(), "--format", "markdown"]);
    let md = common::said(&out);
    assert_eq!(out.status.code(), Some(0), "{md}");
    let table = md
        .split("Errors by label:")
        .nth(1)
        .unwrap_or_else(|| panic!("{md}"));
    let row = |label: &str| -> Vec<String> {
        let line = table
            .lines()
            .find(|l| l.starts_with(&format!("| {label} |")))
            .unwrap_or_else(|| panic!("no {label} row: {md}"));
        line.split('|').map(|c| c.trim().to_string()).collect()
    };
    let head = row("Label");
    let col = |class: &str| head.iter().position(|h| h == class).unwrap();
    assert_eq!(row("wrong balance")[col("check")], "10", "{md}");
    assert_eq!(row("wrong balance")[col("connect")], "0", "{md}");
    assert_eq!(row("nobody home")[col("connect")], "10", "{md}");
    let html = dir.path().join("r.html");
    let out = common::throng(&[
        "report",
        merged.to_str().unwrap(),
        "--format",
        "html",
        "-o",
        html.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::said(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h3>By label</h3>"), "{page}");
}

/// `on_failure: continue` holds for a step whose target refuses its connection as for one whose
/// request fails: the next step runs (it used to end the iteration, so a healthy target after a
/// dead one was never reached); without it, the iteration stops at the refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_goes_on_to_the_next_step_under_on_failure_continue() {
    let bank = BankService::default().start().await.unwrap();
    let closed = common::closed_port();
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
targets:
  dead: http://127.0.0.1:{closed}
  bank: http://127.0.0.1:8080
on_failure: continue
steps:
  - label: refused
    request: {{ target: dead, path: / }}
  - label: fine
    request: {{ target: bank, method: POST, path: /client/new/50 }}
"#
    );
    let file = scenario_at(dir.path(), "refused.yaml", &text, &bank.url());
    let s = run_file(&file, &["-c", "2", "-i", "3"]).await;
    assert_eq!(row(&s, "refused").samples, 6);
    assert_eq!(common::errors_of(&s, ErrorClass::Connect), 6);
    assert_eq!(row(&s, "fine").samples, 6);
    assert_eq!(row(&s, "fine").errors, 0);

    let stop = text.replacen("on_failure: continue\n", "", 1);
    let file = scenario_at(dir.path(), "stop.yaml", &stop, &bank.url());
    let s = run_file(&file, &["-c", "2", "-i", "3"]).await;
    assert_eq!(row(&s, "refused").samples, 6);
    assert_eq!(row(&s, "fine").samples, 0);
}
