//! `throng compare` and `throng report`: the noise verdicts and regression thresholds judged on
//! synthetic runs whose figures are known in advance (the engine on tokio's paused clock, so
//! this machine's noise is not what is judged: real noise is the benchmarks' business), refused
//! comparisons, A/B runs and every report format read back from real runs.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{delayed, ok, result, run, throng};
use throng::core::{ClosedLoop, Driver, LoadModel, Outcome, RunPlan, StepInfo, Users};
use throng::report::{
    compare, render_comparison, Figure, NoiseMethod, Regression, RunResult, Side, Verdict,
};

/// A target whose requests take `ms` on the run's clock, give or take a spread of up to 0.5 ms
/// that repeats request by request: the same `ms` gives the same run, to the microsecond.
struct Synthetic {
    ms: u64,
    sent: AtomicU64,
}

impl Driver for Synthetic {
    type Worker = ();
    type Session = ();

    fn steps(&self) -> Vec<StepInfo> {
        vec![StepInfo {
            label: "GET /".into(),
        }]
    }

    fn worker(&self) {}

    fn session(&self, _worker: &(), _user: u64) {}

    async fn execute(&self, _session: &mut (), _step: usize) -> Outcome {
        let i = self.sent.fetch_add(1, Ordering::Relaxed);
        let spread = (i * 37 % 11) * 50;
        tokio::time::sleep(Duration::from_micros(self.ms * 1000 + spread)).await;
        Outcome::default()
    }
}

/// One closed-loop run of 4 users for 4 seconds against a synthetic target of `ms`, on tokio's
/// paused clock (it takes no wall time, and its timings are exact).
async fn measure(ms: u64) -> RunResult {
    measure_for(ms, 4).await
}

/// The same for `secs` seconds.
async fn measure_for(ms: u64, secs: u64) -> RunResult {
    let model = LoadModel::Closed(ClosedLoop {
        users: Users::Fixed(4),
        requests: None,
        iterations: None,
        duration: Some(Duration::from_secs(secs)),
        think_time: None,
    });
    let driver = Arc::new(Synthetic {
        ms,
        sent: AtomicU64::new(0),
    });
    let extras = throng::engine::Extras {
        on_caller: true,
        ..Default::default()
    };
    let set = tokio::task::LocalSet::new();
    let snapshot = set
        .run_until(async move {
            let handle =
                throng::engine::start_with(RunPlan::new("synthetic", model), driver, extras)
                    .await
                    .expect("the run starts");
            handle.wait().await
        })
        .await;
    result(&snapshot)
}

fn side(name: &str, r: &RunResult) -> Side {
    Side {
        name: name.into(),
        runs: vec![r.clone()],
    }
}

/// The tests of this file run one at a time: one judges noise from one-second spreads, and a
/// browser or a second load beside it on two cores is the very noise it would then see.
pub(crate) static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn write(dir: &Path, name: &str, r: &RunResult) -> String {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(r).expect("serialises")).expect("writes");
    p.display().to_string()
}

#[tokio::test(start_paused = true)]
async fn a_slower_target_is_beyond_noise_and_the_same_target_is_within_it() {
    let a = measure(2).await;
    let again = measure(2).await;
    let b = measure(6).await;

    let c = compare(
        &[side("a", &a), side("again", &again), side("b", &b)],
        false,
    )
    .expect("the same plan compares");
    assert_eq!(c.method, NoiseMethod::Intervals);
    assert_eq!(c.labels.len(), 1, "one step: no TOTAL row of its own");
    let row = |f: Figure| {
        c.labels[0]
            .rows
            .iter()
            .find(|r| r.figure == f)
            .expect("every figure has a row")
            .clone()
    };
    let p50 = row(Figure::P50);
    let (base, same, slower) = (&p50.cells[0], &p50.cells[1], &p50.cells[2]);
    let diff = slower.value.unwrap() - base.value.unwrap();
    // 6 ms against 2 ms, each with the same spread.
    assert!((3.9..4.1).contains(&diff), "p50 difference {diff} ms");
    assert_eq!(
        same.change,
        Some(0.0),
        "the same target, the same run: {p50:?}"
    );
    assert_eq!(slower.verdict, Verdict::Beyond, "{p50:?}");
    assert!(slower.change.unwrap() > 30.0, "{p50:?}");
    assert_eq!(same.verdict, Verdict::Within, "{p50:?}");
    assert_eq!(row(Figure::Mean).cells[2].verdict, Verdict::Beyond);
    // A third of the latency, about three times the throughput, and beyond noise too.
    let rps = row(Figure::Throughput);
    assert!(rps.cells[2].change.unwrap() < -20.0, "{rps:?}");
    assert_eq!(rps.cells[2].verdict, Verdict::Beyond, "{rps:?}");
    // Samples are counts, not judged.
    assert_eq!(row(Figure::Samples).cells[2].verdict, Verdict::Unknown);

    // Regression thresholds: the slower target fails `p50<+10%`, the same target passes it.
    let r: Regression = "p50<+10%".parse().expect("parses");
    let out = r.evaluate(&c);
    assert_eq!(out.len(), 2);
    assert!(out[0].passed, "{out:?}");
    assert!(!out[1].passed, "{out:?}");
    // In milliseconds (the median: a machine's hiccup moves the mean more).
    let abs: Regression = "p50<+1ms".parse().expect("parses");
    let out = abs.evaluate(&c);
    assert!(out[0].passed && !out[1].passed, "{out:?}");
    assert!(out[1].observed.unwrap() > 1.0, "{out:?}");

    // The same through the command line, on the files `--json` would have written.
    let dir = tempfile::tempdir().expect("a temp dir");
    let fa = write(dir.path(), "fast.json", &a);
    let fb = write(dir.path(), "slow.json", &b);
    let out = throng(&["compare", &fa, &fb, "--threshold", "p50<+10%"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(99), "{stdout}");
    assert!(stdout.contains("fast (baseline)"), "{stdout}");
    assert!(stdout.contains("FAIL  p50<+10% (slow"), "{stdout}");
    let p50_line = stdout
        .lines()
        .find(|l| l.starts_with("p50 ms"))
        .expect("a p50 line");
    assert!(
        p50_line.ends_with('*'),
        "beyond noise is marked: {p50_line}"
    );
    let out = throng(&["compare", &fa, &fb, "--threshold", "p50<+500%"]);
    assert_eq!(out.status.code(), Some(0));
    // Markdown: every line of a table has the header's number of cells.
    let out = throng(&["compare", &fa, &fb, "--format", "markdown"]);
    assert_eq!(out.status.code(), Some(0));
    let md = String::from_utf8_lossy(&out.stdout);
    let table: Vec<&str> = md.lines().take_while(|l| l.starts_with('|')).collect();
    assert_eq!(table.len(), 2 + Figure::ALL.len(), "{md}");
    assert!(table.iter().all(|l| l.matches(" | ").count() == 2), "{md}");
}

/// Every cell's verdict of a comparison.
fn verdicts(c: &throng::report::Comparison) -> Vec<Verdict> {
    c.labels
        .iter()
        .flat_map(|l| &l.rows)
        .flat_map(|r| r.cells.iter().map(|c| c.verdict))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn too_few_rounds_or_seconds_are_said_rather_than_judged() {
    let (a, b) = (measure(2).await, measure(6).await);
    let rounds = |name: &str, r: &RunResult, n: usize| Side {
        name: name.into(),
        runs: vec![r.clone(); n],
    };
    // Two rounds a side: three times the latency is neither within the noise nor beyond it,
    // and the legend says why instead of explaining marks that no cell has.
    let c = compare(&[rounds("a", &a, 2), rounds("b", &b, 2)], false).expect("compares");
    assert_eq!(c.method, NoiseMethod::Rounds);
    assert!(verdicts(&c).iter().all(|v| *v == Verdict::Unknown), "{c:?}");
    let text = render_comparison(&c);
    assert!(
        text.contains("the rounds (2 and 2) are too few to judge (--rounds 3 or more)"),
        "{text}"
    );
    assert!(!text.contains("beyond the noise"), "{text}");
    assert!(!text.contains('*') && !text.contains('~'), "{text}");

    // Three rounds a side are judged, and the legend is the test's.
    let c = compare(&[rounds("a", &a, 3), rounds("b", &b, 3)], false).expect("compares");
    assert!(verdicts(&c).contains(&Verdict::Beyond), "{c:?}");
    let text = render_comparison(&c);
    assert!(
        text.contains(
            "* beyond the noise, ~ within it: Welch's t-test at 95% over the rounds (3 and 3)"
        ),
        "{text}"
    );

    // One run a side of two seconds: too short for its seconds' spread.
    let (a, b) = (measure_for(2, 2).await, measure_for(6, 2).await);
    let c = compare(&[side("a", &a), side("b", &b)], false).expect("compares");
    assert!(verdicts(&c).iter().all(|v| *v == Verdict::Unknown), "{c:?}");
    let text = render_comparison(&c);
    assert!(
        text.contains("not judged against the noise: the runs have fewer than three whole seconds"),
        "{text}"
    );
    assert!(!text.contains("beyond the noise"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_of_different_plans_are_refused_unless_forced_and_bad_input_exits_2() {
    let _one = ONE_AT_A_TIME.lock().await;
    let t = delayed(1).await;
    let a = result(&*run(&[&t.url(), "-c", "2", "-n", "50"]).await);
    let b = result(&*run(&[&t.url(), "-c", "3", "-n", "50"]).await);
    let dir = tempfile::tempdir().expect("a temp dir");
    let (fa, fb) = (
        write(dir.path(), "a.json", &a),
        write(dir.path(), "b.json", &b),
    );

    let out = throng(&["compare", &fa, &fb]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("did not run the same plan"), "{err}");
    assert!(err.contains("2 users") && err.contains("3 users"), "{err}");
    assert_eq!(
        throng(&["compare", &fa, &fb, "--force"]).status.code(),
        Some(0)
    );

    for (args, says) in [
        (vec!["compare", &fa], "at least two results"),
        (
            vec!["compare", &fa, "/nonexistent.json"],
            "cannot read the result",
        ),
        (
            vec!["compare", &fa, &fb, "--force", "--threshold", "p99<10%"],
            "give its sign",
        ),
        (
            vec!["compare", &fa, &fb, "--force", "--threshold", "p42<+1%"],
            "unknown figure",
        ),
        (
            vec![
                "compare",
                &fa,
                &fb,
                "--force",
                "--threshold",
                "p99{nope}<+1%",
            ],
            "no step is labelled",
        ),
        (
            vec!["report", &fa, "--format", "pdf"],
            "not a report format",
        ),
    ] {
        let out = throng(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\n  \"schema_version\": 2,\n  oops\n}").expect("writes");
    let out = throng(&[
        "report",
        &junk.display().to_string(),
        "--format",
        "markdown",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("junk.json:3:3: not a throng result"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_against_a_sweep_of_other_plans_is_refused_and_a_sweeps_own_levels_are_not() {
    let _one = ONE_AT_A_TIME.lock().await;
    let t = delayed(1).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let run4 = write(
        dir.path(),
        "four.json",
        &result(&*run(&[&t.url(), "-c", "4", "-n", "40"]).await),
    );
    let sweep = dir.path().join("sweep.json").display().to_string();
    let out = throng(&[
        "run",
        &t.url(),
        "--sweep",
        "users=1,2,3",
        "-n",
        "30",
        "--no-tui",
        "--quiet",
        "--json",
        &sweep,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", common::said(&out));

    // A 4-user run against 1, 2 and 3 users: every % would be against another plan.
    for args in [
        vec!["compare", &run4, &sweep],
        vec!["compare", &sweep, &run4],
    ] {
        let out = throng(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            common::said(&out)
        );
        assert!(err.contains("did not run the same plan"), "{err}");
        assert!(err.contains(&format!("(of {sweep})")), "{err}");
        assert!(err.contains("4 users"), "{err}");
        assert!(out.stdout.is_empty(), "no table: {}", common::said(&out));
    }
    // The sweep's own levels are compared with its first, as they always were, and --force
    // compares the run with them anyway.
    let out = throng(&["compare", &sweep]);
    assert_eq!(out.status.code(), Some(0), "{}", common::said(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 user (baseline)"),
        "{}",
        common::said(&out)
    );
    let out = throng(&["compare", &run4, &sweep, "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::said(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_report_format_reads_back_to_the_runs_numbers() {
    let _one = ONE_AT_A_TIME.lock().await;
    let t = delayed(1).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let d = |n: &str| dir.path().join(n).display().to_string();
    let url = t.url();
    // A run that writes its reports itself, with one threshold that fails and one that passes.
    let out = throng(&[
        "run",
        &url,
        "-c",
        "2",
        "-n",
        "300",
        "--no-tui",
        "--quiet",
        "--json",
        &d("r.json"),
        "--report",
        &format!("markdown:{}", d("r.md")),
        "--report",
        &format!("csv:{}", d("r.csv")),
        "--report",
        &format!("junit:{}", d("r.xml")),
        "--threshold",
        "p99<1s",
        "--threshold",
        "rps>1000000",
    ]);
    assert_eq!(
        out.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: RunResult =
        serde_json::from_str(&std::fs::read_to_string(d("r.json")).expect("json")).expect("parses");
    assert_eq!(r.total.samples, 300);

    // Markdown: the aggregate table's 13 columns on every line, the label and its count.
    let md = std::fs::read_to_string(d("r.md")).expect("markdown written");
    let table: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("| Label"))
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(table.len(), 4, "header, rule, the label, TOTAL: {md}");
    assert!(table.iter().all(|l| l.matches(" | ").count() == 12), "{md}");
    assert!(table[2].starts_with("| GET / | 300 |"), "{md}");

    // CSV: the table and the series, read back by a CSV parser.
    let rows = read_csv(&d("r.csv"));
    assert_eq!(rows[0][0], "label");
    let total = rows.iter().find(|r| r[0] == "TOTAL").expect("a TOTAL line");
    assert_eq!(total[2], "300");
    let p50: f64 = total[7].parse().expect("p50 is a number");
    assert!((p50 - r.total.latency.p50).abs() < 1e-9);
    let series = read_csv(&d("r.series.csv"));
    assert_eq!(series[0][1], "requests");
    let sum: u64 = series[1..]
        .iter()
        .map(|r| r[1].parse::<u64>().expect("a count"))
        .sum();
    assert_eq!(sum, 300, "the seconds add up to the run");

    // JUnit: well-formed XML, one case per threshold and one for checks, one failure.
    let xml = std::fs::read_to_string(d("r.xml")).expect("junit written");
    let cases = junit_cases(&xml);
    assert_eq!(cases.len(), 3, "{xml}");
    assert_eq!(cases.iter().filter(|c| c.1).count(), 1, "{xml}");
    assert!(cases.iter().any(|c| c.0 == "rps>1000000" && c.1), "{xml}");
    assert!(xml.contains("failures=\"1\""), "{xml}");
    // Valid against the JUnit XSD CI systems read (tests/fixtures/junit.xsd), which has teeth:
    // a test case without its class name is refused.
    assert!(xmllint(&d("r.xml")), "{xml}");
    std::fs::write(
        d("bad.xml"),
        xml.replace("classname=\"throng.checks\" ", ""),
    )
    .expect("writes");
    assert!(
        !xmllint(&d("bad.xml")),
        "the schema refuses a testcase with no classname"
    );

    // `throng report` gives the same documents from the JSON.
    let out = throng(&["report", &d("r.json"), "--format", "junit"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), xml);
}

/// Whether `path` validates against the JUnit XSD (xmllint, from Debian's libxml2-utils: the
/// test command installs it).
fn xmllint(path: &str) -> bool {
    let xsd = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/junit.xsd");
    std::process::Command::new("xmllint")
        .args(["--noout", "--schema", xsd, path])
        .output()
        .expect("xmllint runs (apt-get install libxml2-utils)")
        .status
        .success()
}

fn read_csv(path: &str) -> Vec<Vec<String>> {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(path)
        .expect("opens");
    r.records()
        .map(|rec| rec.expect("a record").iter().map(String::from).collect())
        .collect()
}

/// (name, failed) of each test case, read by an XML parser.
fn junit_cases(xml: &str) -> Vec<(String, bool)> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut cases = Vec::new();
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) | Event::Empty(e) if e.name().as_ref() == b"testcase" => {
                let name = e
                    .try_get_attribute("name")
                    .expect("attributes parse")
                    .expect("a name")
                    .unescape_value()
                    .expect("unescapes")
                    .into_owned();
                cases.push((name, false));
            }
            Event::Start(e) | Event::Empty(e) if e.name().as_ref() == b"failure" => {
                if let Some(last) = cases.last_mut() {
                    last.1 = true;
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    cases
}

/// Headless Chromium from Debian's packages (the test command installs it when missing).
fn chromium() -> &'static str {
    for c in ["chromium", "chromium-browser"] {
        if std::process::Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return c;
        }
    }
    panic!("chromium is not installed: apt-get install chromium (./scripts/test does it)")
}

/// The DOM headless Chromium builds from a page, with no network.
pub(crate) fn dump_dom(page: &Path) -> String {
    let out = std::process::Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_html_report_draws_its_charts_in_a_real_browser() {
    let _one = ONE_AT_A_TIME.lock().await;
    let t = delayed(2).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let html = dir.path().join("report.html");
    let out = throng(&[
        "run",
        &t.url(),
        "-c",
        "3",
        "-z",
        "3s",
        "--no-tui",
        "--quiet",
        "--report",
        &format!("html:{}", html.display()),
        "--threshold",
        "p99<1s",
    ]);
    ok(&out);
    let page = std::fs::read_to_string(&html).expect("the report is written");
    // Self-contained: nothing to fetch, no script.
    for needle in ["src=", "href=", "<script", "@import", "url("] {
        assert!(
            !page.contains(needle),
            "the page refers to something outside: {needle}"
        );
    }
    // Opened by a real browser with no network: the DOM it built has every chart with its data.
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("html-report.png");
    let browser = |args: &[&str]| {
        std::process::Command::new(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "--window-size=1000,1600",
            ])
            .args(args)
            .arg(format!("file://{}", html.display()))
            .output()
            .expect("chromium runs")
    };
    let dom = browser(&["--dump-dom"]);
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
    let err =
        String::from_utf8_lossy(&browser(&[&format!("--screenshot={}", shot.display())]).stderr)
            .into_owned();
    assert!(!err.contains("Uncaught"), "script errors: {err}");
    assert!(shot.exists(), "a screenshot for a person to look at: {err}");
    for id in ["chart-latency", "chart-throughput", "chart-distribution"] {
        let at = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("no {id}"));
        let figure = &dom[at..at + dom[at..].find("</figure>").expect("closed")];
        assert!(figure.contains("<svg"), "{id} has no SVG");
        // Each line is a polyline; the longest has a point per second at least.
        let points = figure
            .split("<polyline")
            .skip(1)
            .map(|p| {
                let attr = &p[p.find("points=\"").expect("points") + 8..];
                attr[..attr.find('"').expect("closed")]
                    .split_whitespace()
                    .count()
            })
            .max()
            .unwrap_or(0);
        assert!(points >= 3, "{id}: {points} points");
    }
    assert!(dom.contains("<td>GET /</td>"), "the summary table is there");
    assert!(dom.contains("p99&lt;1s"), "the threshold is there");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ab_run_alternates_the_sides_and_writes_one_comparison() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (a, b) = (delayed(1).await, delayed(5).await);
    let dir = tempfile::tempdir().expect("a temp dir");
    let json = dir.path().join("ab.json");
    let md = dir.path().join("ab.md");
    let side_a = format!("a={}", a.url());
    let side_b = format!("b={}", b.url());
    let out = throng(&[
        "run",
        "http://127.0.0.1/",
        "--target",
        &side_a,
        "--target",
        &side_b,
        "-c",
        "2",
        "-n",
        "100",
        "--rounds",
        "2",
        "--no-tui",
        "--json",
        &json.display().to_string(),
        "--report",
        &format!("markdown:{}", md.display()),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // A B A B, each run on its own target.
    let order: Vec<&str> = err.lines().filter(|l| l.starts_with("run ")).collect();
    assert_eq!(order.len(), 4, "{err}");
    for (line, want) in order
        .iter()
        .zip(["a, round 1", "b, round 1", "a, round 2", "b, round 2"])
    {
        assert!(line.contains(want), "{line} should be {want}");
    }
    assert_eq!(a.requests(), 200, "two rounds of 100 on a");
    assert_eq!(b.requests(), 200, "two rounds of 100 on b");
    assert!(stdout.contains("a (baseline)"), "{stdout}");
    assert!(
        stdout.contains("the rounds (2 and 2) are too few to judge"),
        "{stdout}"
    );
    // The grid's result keeps every run with its coordinates, and `throng compare` reads it
    // back as its sides.
    let doc = common::json(&json);
    assert_eq!(doc["kind"], "grid");
    let runs = doc["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 4);
    for r in runs {
        assert_eq!(r["result"]["total"]["samples"], 100);
    }
    assert_eq!(
        (&runs[3]["side"], &runs[3]["round"]),
        (&"b".into(), &2.into())
    );
    assert!(runs[3]["result"]["plan"]["target"]
        .as_str()
        .expect("a target")
        .starts_with("b, round 2 of 2: "));
    let rows = doc["rows"].as_array().expect("the level table");
    assert_eq!(rows.len(), 2, "a row per side, its rounds merged");
    assert_eq!(rows[0]["total"]["samples"], 200);
    let again = throng(&["compare", &json.display().to_string()]);
    assert_eq!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stdout).contains("a (baseline)"));
    let md = std::fs::read_to_string(&md).expect("the markdown comparison");
    assert!(md.contains("| GET / | a (baseline) | b |"), "{md}");
    assert!(md.contains("| Side | Throughput (/s) |"), "{md}");
    // Each side's own aggregate table, its two rounds merged (200 requests), in the markdown and
    // the HTML; the HTML's percentile chart is each side's merged rounds, its series every round.
    assert!(
        md.contains("**a** (latencies in ms, 2 rounds merged)"),
        "{md}"
    );
    let merged_row = md
        .lines()
        .find(|l| l.starts_with("| TOTAL | 200 |"))
        .unwrap_or_else(|| panic!("a merged TOTAL row: {md}"));
    assert!(!merged_row.is_empty());
    let html = throng(&["report", &json.display().to_string(), "--format", "html"]);
    let html = String::from_utf8_lossy(&html.stdout);
    assert!(
        html.contains("<h2>b (latencies in ms, rounds merged)</h2>"),
        "{html}"
    );
    assert!(
        html.contains("<td>TOTAL</td><td>200</td>"),
        "the merged table"
    );
    let distribution = &html[html
        .find("id=\"chart-distribution\"")
        .expect("the spectrum")..];
    let distribution = &distribution[..distribution.find("</figure>").expect("closed")];
    assert!(
        distribution.contains("\na\n") && !distribution.contains("round 1"),
        "one spectrum a side, of its rounds merged"
    );
    let latency = &html[html.find("id=\"chart-latency\"").expect("the series")..];
    assert!(latency.contains("a round 2 p50"), "every round's series");

    // A scenario of one target: the sides take its place.
    let file = dir.path().join("one.yaml");
    std::fs::write(&file, "targets:\n  api: http://127.0.0.1:1\nsteps:\n  - label: get\n    request:\n      path: /\n")
        .expect("writes");
    let out = throng(&[
        "run",
        &file.display().to_string(),
        "--target",
        &side_a,
        "--target",
        &side_b,
        "-c",
        "1",
        "-n",
        "20",
        "--no-tui",
        "--quiet",
    ]);
    let stdout = ok(&out);
    assert_eq!((a.requests(), b.requests()), (220, 220));
    assert!(stdout.contains("get "));

    // Wrong input, before any load.
    for (args, says) in [
        (
            vec!["run", "http://127.0.0.1/", "--until", "p99>1s", "-n", "1"],
            "give --sweep too",
        ),
        (
            vec!["run", "http://127.0.0.1/", "--target", &side_a, "-n", "1"],
            "two or more sides",
        ),
        (
            vec![
                "run",
                "http://127.0.0.1/",
                "--target",
                &side_a,
                "--target",
                &side_a,
                "-n",
                "1",
            ],
            "a name of its own",
        ),
        (
            vec![
                "run",
                "http://127.0.0.1/",
                "--target",
                &side_a,
                "--target",
                &side_b,
                "-n",
                "1",
                "--report",
                "junit:/tmp/x.xml",
            ],
            "html, markdown, csv or json",
        ),
        (
            vec![
                "run",
                "http://127.0.0.1/",
                "--target",
                &side_a,
                "--target",
                &side_b,
                "-n",
                "1",
                "--cooldown",
                "soon",
            ],
            "--cooldown",
        ),
        (
            vec![
                "run",
                "http://127.0.0.1/",
                "--target",
                &side_a,
                "--target",
                "b=http://127.0.0.1:99999/",
                "-n",
                "1",
            ],
            "99999",
        ),
    ] {
        let out = throng(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert_eq!(
        (a.requests(), b.requests()),
        (220, 220),
        "bad input sent nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_samples_file_holds_every_request_in_jmeters_format() {
    let _one = ONE_AT_A_TIME.lock().await;
    let t = delayed(2).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let jtl = dir.path().join("s.jtl");
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64;
    let out = throng(&[
        "run",
        &t.url(),
        "-c",
        "3",
        "-n",
        "300",
        "--no-tui",
        "--quiet",
        "--samples",
        &jtl.display().to_string(),
    ]);
    ok(&out);
    let rows = read_csv(&jtl.display().to_string());
    assert_eq!(rows[0].join(","), throng::report::JTL_HEADER);
    assert_eq!(rows.len(), 301, "a line per request");
    for r in &rows[1..] {
        let stamp: u64 = r[0].parse().expect("epoch ms");
        assert!(stamp >= before && stamp < before + 60_000, "{r:?}");
        let elapsed: u64 = r[1].parse().expect("ms");
        assert!((2..1000).contains(&elapsed), "a 2 ms target: {r:?}");
        assert_eq!(
            (&r[2][..], &r[3][..], &r[4][..], &r[7][..]),
            ("GET /", "200", "OK", "true")
        );
        // JMeter's active threads: the users alive, never 0 (its graphs were empty).
        let active: u64 = r[11].parse().expect("grpThreads");
        assert!((1..=3).contains(&active) && r[12] == r[11], "{r:?}");
        assert_eq!(r[13], t.url());
    }
    // A thread per user, as JMeter names its threads (the worker thread stood for 100 users).
    let mut threads: Vec<&str> = rows[1..].iter().map(|r| r[5].as_str()).collect();
    threads.sort_unstable();
    threads.dedup();
    assert_eq!(threads, ["throng 1-1", "throng 1-2", "throng 1-3"]);
    // Users alive, counted over users (the run is too short for every worker's count to meet
    // in one line: each worker hands its samples over once, at the end).
    assert!(rows[1..].iter().any(|r| r[11] != "1"), "{rows:?}");

    // A scenario's URL column holds each step's target, not the file's name.
    let file = dir.path().join("two.yaml");
    std::fs::write(
        &file,
        format!(
            "targets:\n  api: {}\nsteps:\n  - label: page\n    request:\n      path: /\n",
            t.url()
        ),
    )
    .expect("writes");
    let out = throng(&[
        "run",
        &file.display().to_string(),
        "-c",
        "1",
        "-n",
        "3",
        "--no-tui",
        "--quiet",
        "--samples",
        &jtl.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let rows = read_csv(&jtl.display().to_string());
    assert!(rows[1..].iter().all(|r| r[13] == t.url()), "{rows:?}");

    // A dead target: every attempt is a failed line with its class and message.
    let out = throng(&[
        "run",
        "http://127.0.0.1:1/",
        "-c",
        "1",
        "-n",
        "5",
        "--no-tui",
        "--quiet",
        "--samples",
        &jtl.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let rows = read_csv(&jtl.display().to_string());
    assert_eq!(rows.len(), 6);
    assert!(
        rows[1..]
            .iter()
            .all(|r| r[7] == "false" && r[4] == "connect" && r[8].contains("refused")),
        "{rows:?}"
    );

    // A path that cannot be written stops the run before any load.
    let out = throng(&[
        "run",
        &t.url(),
        "-n",
        "5",
        "--samples",
        "/nonexistent/dir/s.jtl",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--samples"));
}
