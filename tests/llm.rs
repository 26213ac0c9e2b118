//! LLM serving's figures per label (TTFT, ITL, TPOT, end to end, output tokens, goodput)
//! against throng-llm's testbed, whose timing and faults are programmed: each figure checked
//! against the truth, failures kept out of them, goodput judged, thresholds on them, the
//! result merged exactly, a scenario's `llm:` key, and bad input refused at its place.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use std::time::Duration;

use common::llm::{self, ITL_MS, TOKENS, TTFT_MS};
use common::{errors_of, result, row, run, run_file};
use throng::core::stream::StreamStats;
use throng::core::{ErrorClass, Snapshot};
use throng_llm::serve::{start, Fault, RunningLlm, ServeConfig, Spread};

const CHAT: &str = "POST /v1/chat/completions";

/// The testbed with `fault` on one reply in every `fault_every`, tokens `ITL_MS` apart.
async fn testbed(fault: Option<Fault>, fault_every: u64) -> RunningLlm {
    llm::testbed(fault, fault_every, ITL_MS).await
}

/// `throng run URL --llm --model m` of the testbed with `extra` flags, in-process.
async fn run_llm(llm: &RunningLlm, extra: &[&str]) -> std::sync::Arc<Snapshot> {
    let url = llm.url();
    let mut args = vec![url.as_str(), "--llm", "--model", "m"];
    args.extend_from_slice(extra);
    run(&args).await
}

fn stream<'a>(s: &'a Snapshot, label: &str) -> &'a StreamStats {
    row(s, label)
        .stream
        .as_deref()
        .unwrap_or_else(|| panic!("no streams in {label}"))
}

fn at(h: &throng::core::histogram::Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

/// Each figure as programmed (wide margins: a shared machine only adds), the tokens the
/// server's own count, every request good against loose objectives and none against tight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_figure_of_a_label_is_the_testbeds_truth() {
    let llm = testbed(None, 1).await;
    let args = |goodput: &str| {
        let url = llm.url();
        let argv = [url.as_str(), "--llm", "--model", "m", "-c", "4", "-n", "20"];
        let mut argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
        argv.extend(["--goodput".to_string(), goodput.to_string()]);
        argv
    };
    let loose = args("ttft<500ms,tpot<40ms");
    let s = run(&loose.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let t = stream(&s, CHAT);
    assert_eq!((t.requests, t.output_tokens), (20, 20 * u64::from(TOKENS)));
    assert_eq!((t.told, t.counted), (20, 0), "the testbed sends usage");
    let ttft = at(&t.ttft, 0.5);
    assert!((39.9..70.0).contains(&ttft), "TTFT p50 {ttft} ms");
    let itl = at(&t.itl, 0.5);
    assert!((8.0..18.0).contains(&itl), "ITL p50 {itl} ms");
    assert_eq!(t.itl.len(), 20 * u64::from(TOKENS - 1));
    let tpot = at(&t.tpot, 0.5);
    assert!((9.9..18.0).contains(&tpot), "TPOT p50 {tpot} ms");
    let e2e = at(&t.e2e, 0.5);
    let truth = (TTFT_MS + ITL_MS * u64::from(TOKENS - 1)) as f64;
    assert!(
        (truth - 0.1..truth + 40.0).contains(&e2e),
        "e2e p50 {e2e} ms"
    );
    assert_eq!(t.tokens.max(), u64::from(TOKENS));
    assert_eq!(t.good, 20);
    // The TOTAL row is the label's.
    assert_eq!(s.total.stream.as_deref().unwrap().requests, 20);
    // In the result: its figures, its tokens a second, its goodput's share.
    let r = result(&s);
    let j = r.labels[0].stream.as_ref().unwrap();
    assert_eq!(j.tokens_from, "server");
    assert_eq!(j.goodput.as_ref().unwrap().share, 1.0);
    assert!((j.tokens_per_s - 120.0 / r.duration).abs() < 1e-6);
    assert_eq!(j.itl.stats.count, 100);
    let summary = throng::report::render_summary(&r);
    assert!(summary.contains("Streams p50/p99 ms   ttft "), "{summary}");
    assert!(summary.contains("goodput"), "{summary}");
    let md = throng::report::render_markdown(&r);
    assert!(md.contains("| TTFT p50/p99 |"), "{md}");

    let tight = args("ttft<1ms");
    let s = run(&tight.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(stream(&s, CHAT).good, 0);
    // Without --goodput, none is judged and the result says none.
    let s = run_llm(&llm, &["-c", "1", "-n", "2"]).await;
    assert!(result(&s).labels[0]
        .stream
        .as_ref()
        .unwrap()
        .goodput
        .is_none());
}

/// Against a failing testbed: a cut stream, an error status and a stall are failures, kept
/// out of every figure (but a stall's TTFT, which it had); goodput counts the good only, and
/// its share is of every request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_kept_out_of_the_figures_and_are_never_good() {
    let loose = "ttft<5s,tpot<1s";
    // Every other answer is cut after 3 tokens.
    let llm = testbed(Some(Fault::Cut(3)), 2).await;
    let s = run_llm(&llm, &["-c", "1", "-n", "10", "--goodput", loose]).await;
    assert_eq!(errors_of(&s, ErrorClass::Cut), 5, "{:?}", s.errors);
    let t = stream(&s, CHAT);
    assert_eq!((t.requests, t.good, t.ttft.len()), (5, 5, 5));
    assert_eq!(t.output_tokens, 5 * u64::from(TOKENS));
    assert_eq!(t.itl.len(), 5 * u64::from(TOKENS - 1));
    let goodput = result(&s).labels[0].stream.clone().unwrap().goodput;
    assert_eq!(goodput.unwrap().share, 0.5);

    // An error status: no stream at all.
    let llm = testbed(Some(Fault::Status(500)), 1).await;
    let s = run_llm(&llm, &["-c", "1", "-n", "3"]).await;
    assert_eq!(errors_of(&s, ErrorClass::Status), 3);
    assert!(row(&s, CHAT).stream.is_none());

    // A stall after 2 tokens: a timeout whose TTFT is its first token's; nothing else.
    let llm = testbed(Some(Fault::Stall(2)), 1).await;
    let s = run_llm(
        &llm,
        &[
            "-c",
            "1",
            "-n",
            "2",
            "--timeout",
            "300ms",
            "--goodput",
            loose,
        ],
    )
    .await;
    assert_eq!(errors_of(&s, ErrorClass::Timeout), 2, "{:?}", s.errors);
    let t = stream(&s, CHAT);
    assert_eq!(
        (t.requests, t.good, t.ttft.len(), t.itl.len()),
        (0, 0, 2, 0)
    );
    let ttft = at(&t.ttft, 1.0);
    assert!((39.9..200.0).contains(&ttft), "a stall's TTFT {ttft} ms");
    // A stall before any token: its TTFT is its age, at least the timeout.
    let llm = testbed(Some(Fault::Stall(0)), 1).await;
    let s = run_llm(&llm, &["-c", "1", "-n", "1", "--timeout", "300ms"]).await;
    let ttft = at(&stream(&s, CHAT).ttft, 1.0);
    assert!(ttft >= 299.0, "a stall with no token: TTFT {ttft} ms");
}

/// Two shards' results merge into the whole: counts add, histograms add bucket by bucket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_merge_their_streams_exactly() {
    let llm = testbed(None, 1).await;
    let shard = |i: &'static str| {
        let url = llm.url();
        async move {
            let args = [
                url.as_str(),
                "--llm",
                "--model",
                "m",
                "-c",
                "2",
                "-n",
                "8",
                "--shard",
                i,
                "--goodput",
                "ttft<5s",
            ];
            let a = common::args(&args);
            let mut plan = a.run.plan(&a.url).unwrap();
            plan.shard = a.run.shard(&|_| None).unwrap();
            let (driver, _) = a
                .protocols
                .get::<throng::http::flags::HttpFlags>()
                .unwrap()
                .url_driver(&a.url, &a.request, &plan)
                .unwrap();
            let s = throng::engine::run(plan, std::sync::Arc::new(driver))
                .await
                .unwrap();
            result(&s)
        }
    };
    let (a, b) = (shard("0/2").await, shard("1/2").await);
    let merged = throng::report::merge(&[a.clone(), b.clone()]).unwrap();
    let (sa, sb) = (
        a.labels[0].stream.as_ref().unwrap(),
        b.labels[0].stream.as_ref().unwrap(),
    );
    let m = merged.labels[0].stream.as_ref().unwrap();
    assert_eq!(m.requests, sa.requests + sb.requests);
    assert_eq!(m.requests, 8);
    assert_eq!(m.output_tokens, 8 * u64::from(TOKENS));
    assert_eq!(m.itl.stats.count, sa.itl.stats.count + sb.itl.stats.count);
    assert_eq!(m.goodput.as_ref().unwrap().good, 8);
    let ttft = throng::core::histogram::decode(&m.ttft.hdr).unwrap();
    let mut sum = throng::core::histogram::decode(&sa.ttft.hdr).unwrap();
    sum.add(throng::core::histogram::decode(&sb.ttft.hdr).unwrap())
        .unwrap();
    assert_eq!(ttft, sum);
    assert_eq!(m.ttft.stats.max, sa.ttft.stats.max.max(sb.ttft.stats.max));
}

/// Thresholds on a stream's figures: pass, fail (exit 99), and bad ones refused (exit 2);
/// a bad `--goodput` is refused naming the flag and the objective.
#[test]
fn thresholds_on_streams_and_bad_goodput() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let llm = rt.block_on(testbed(None, 1));
    let url = llm.url();
    let go = |extra: &[&str]| {
        let mut args = vec!["run", &url, "--llm", "--model", "m", "-c", "2", "-n", "6"];
        args.extend(["--no-tui"]);
        args.extend(extra);
        common::throng(&args)
    };
    let o = go(&[
        "--threshold",
        "ttft_p99<5s",
        "--threshold",
        "itl_p50{POST /v1/chat/completions}<1s",
        "--goodput",
        "ttft<5s",
    ]);
    let said = common::said(&o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    assert!(said.contains("Streams p50/p99 ms"), "{said}");
    assert!(said.contains("goodput"), "{said}");
    let o = go(&["--threshold", "ttft_p99<1ms"]);
    assert_eq!(o.status.code(), Some(99), "{}", common::said(&o));
    let o = go(&["--threshold", "itl_p99<1ms", "--threshold", "tpot_mean<1s"]);
    let said = common::said(&o);
    assert_eq!(o.status.code(), Some(99), "{said}");
    assert!(said.contains("FAIL itl_p99<1ms"), "{said}");
    assert!(said.contains("ok   tpot_mean<1s"), "{said}");
    for (bad, says) in [
        ("ttft<200", "--goodput `ttft<200`: `200` needs a unit"),
        ("ttft<1ms,itl<2ms", "`itl` is not a figure goodput bounds"),
        ("ttft>1ms", "expected FIGURE<DURATION"),
        ("", "an empty objective"),
    ] {
        let o = go(&["--goodput", bad]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains(says), "{bad}: {err}");
    }
    let o = go(&["--threshold", "ttft_rps>1"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::said(&o));
}

/// A scenario's request step with `llm:`: the same requests as `--llm`, read as tokens; a bad
/// key refused at its file, line and column.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_steps_llm_key() {
    let llm = testbed(None, 1).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("prompts.jsonl"),
        "{\"prompt\": \"one\", \"max_tokens\": 2}\n{\"prompt\": \"two\", \"max_tokens\": 4}\n",
    )
    .unwrap();
    let file = dir.path().join("llm.yaml");
    let write_to = |path: &str, llm_key: &str| {
        std::fs::write(
            &file,
            format!(
                "targets:\n  llm: {}\nload:\n  users: 1\n  requests: 4\nsteps:\n  - label: chat\n    \
                 request:\n      path: {path}\n      llm:\n{llm_key}",
                llm.url()
            ),
        )
        .unwrap();
    };
    let write = |llm_key: &str| write_to("/v1/chat/completions", llm_key);
    write("        model: m\n        prompts: prompts.jsonl\n");
    let s = run_file(&file, &["--goodput", "ttft<5s"]).await;
    assert_eq!(row(&s, "chat").errors, 0, "{:?}", s.errors);
    let t = stream(&s, "chat");
    // 2 + 4 + 2 + 4 tokens, each answer good.
    assert_eq!((t.requests, t.output_tokens, t.good), (4, 12, 4));
    assert_eq!(row(&s, "chat (tokens)").samples, 12);

    write_to(
        "/v1/completions",
        "        model: m\n        api: completions\n        prompt_tokens: 3\n        max_tokens: 2\n",
    );
    let s = run_file(&file, &[]).await;
    assert_eq!(stream(&s, "chat").output_tokens, 8, "{:?}", s.errors);

    let f = file.display().to_string();
    for (key, place, says) in [
        (
            "        model: m\n        api: bard\n",
            "12:14",
            "llm: api: `bard`",
        ),
        ("        api: chat\n", "11:9", "llm needs `model`"),
        (
            "        model: m\n        max_tokens: 0\n",
            "12:21",
            "max_tokens is a whole number",
        ),
        (
            "        model: m\n        temperature: 1\n",
            "12:22",
            "unknown field `temperature`",
        ),
        (
            "        model: m\n        prompts: none.jsonl\n",
            "12:18",
            "none.jsonl",
        ),
        (
            "        model: m\n        prompts: prompts.jsonl\n        prompt_tokens: 3\n",
            "13:24",
            "not both",
        ),
    ] {
        write(key);
        let o = common::throng(&["run", &f, "--no-tui"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{key}: {err}");
        assert!(err.contains(&format!("{f}:{place}")), "{key}: {err}");
        assert!(err.contains(says), "{key}: {err}");
    }
    // A body of its own beside `llm`.
    std::fs::write(
        &file,
        format!(
            "targets:\n  llm: {}\nsteps:\n  - label: x\n    request:\n      path: \
             /v1/chat/completions\n      body: hi\n      llm: {{ model: m }}\n",
            llm.url()
        ),
    )
    .unwrap();
    let o = common::throng(&["run", &f, "-n", "1", "--no-tui"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{f}:7:13")), "{err}");
    assert!(err.contains("not `body` or `json`"), "{err}");
}

/// The accuracy goal, with wide margins (benches/llm.sh has the tight ones at 1,000 streams,
/// on a release build): open loop against TTFT 50 ms and token gaps of 10 ms, 64 tokens, about
/// a hundred streams at once (a debug build, and the testbed in the same process, on a machine
/// other tests and builds share: 10,000 tokens a second is what it keeps up with); a warm-up
/// first, so that opening the connections is not in the figures. Measured 51.2 to 51.6 ms TTFT
/// p50 and 10.0 ms ITL p50 on a quiet machine, 62 ms TTFT p50 beside a release build: the
/// margins catch a wrong origin or a lost lag (TTFT off by its 50 ms), not the machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttft_and_itl_at_hundreds_of_streams_are_the_programmed_ones() {
    let llm = start(ServeConfig {
        ttft: Spread::Fixed(Duration::from_millis(50)),
        itl: Spread::Fixed(Duration::from_millis(10)),
        output_tokens: Spread::Fixed(64),
        ..ServeConfig::default()
    })
    .await
    .unwrap();
    // 150 arrivals a second, each stream 0.68 s long: about 100 at once.
    let s = run_llm(
        &llm,
        &[
            "--prompt-tokens",
            "8",
            "-q",
            "150",
            "-z",
            "3s",
            "--warmup",
            "1s",
            "--max-in-flight",
            "600",
        ],
    )
    .await;
    assert_eq!(row(&s, CHAT).errors, 0, "{:?}", s.errors);
    let t = stream(&s, CHAT);
    assert!(t.requests >= 400, "{}", t.requests);
    let ttft = (at(&t.ttft, 0.5), at(&t.ttft, 0.9));
    let itl = (at(&t.itl, 0.5), at(&t.itl, 0.9));
    assert!((49.9..80.0).contains(&ttft.0), "TTFT p50 {} ms", ttft.0);
    assert!((49.9..150.0).contains(&ttft.1), "TTFT p90 {} ms", ttft.1);
    assert!((9.0..11.5).contains(&itl.0), "ITL p50 {} ms", itl.0);
    assert!((9.0..25.0).contains(&itl.1), "ITL p90 {} ms", itl.1);
}

/// `throng serve llm` with programmed timing, as a child process, and its URL.
struct Served(std::process::Child, String);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve_llm(args: &[&str]) -> Served {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(["serve", "llm", "--port", "0"])
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(out).read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("serving on ")
        .unwrap_or_else(|| panic!("throng serve llm said {line:?}"))
        .to_string();
    Served(child, url)
}

/// A scrape of `/metrics` on 127.0.0.1:`port`, or `None` when nothing answers yet.
fn scrape(port: u16) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.contains(" 200 ").then(|| body.to_string())
}

/// The value of the sample `name{...}` (the one series it has) in a scrape.
fn sample(text: &str, name: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{name}{{")))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// The upper bound (seconds) of the bucket of histogram `name` that holds quantile `q`.
fn bucket_at(text: &str, name: &str, q: f64) -> f64 {
    let count = sample(text, &format!("{name}_count"));
    let prefix = format!("{name}_bucket{{");
    for l in text.lines().filter(|l| l.starts_with(&prefix)) {
        let n: f64 = l.rsplit(' ').next().unwrap().parse().unwrap();
        if n >= q * count {
            let le = l.split("le=\"").nth(1).unwrap().split('"').next().unwrap();
            return le.parse().unwrap();
        }
    }
    panic!("{name}: no bucket holds {q}")
}

/// The stream figures live in Prometheus (a scrape of `--metrics-listen` as the run ends) and
/// in a grid's tables (its level table, each run's, a pivot of `ttft_p99` and the like), each
/// against `throng serve llm`'s programmed TTFT 40 ms, gaps of 10 ms and 6 tokens. Margins are
/// wide (a bucket's 9% and a shared machine's delay) but catch a figure in the wrong family
/// or off by its origin; the counts are exact.
#[test]
fn stream_figures_in_prometheus_and_in_a_grid() {
    let served = serve_llm(&["--ttft", "40ms", "--itl", "10ms", "--output-tokens", "6"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let port = common::closed_port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_throng"))
        .args([
            "run", &served.1, "--llm", "--model", "m", "-c", "4", "-z", "2s",
        ])
        .args(["--goodput", "ttft<500ms", "--no-tui", "--quiet"])
        .args([
            "--metrics-listen",
            &listen,
            "--json",
            json.to_str().unwrap(),
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The endpoint stays up after the run until a scrape has read the final counts.
    let mut last = None;
    while child.try_wait().unwrap().is_none() {
        if let Some(text) = scrape(port) {
            last = Some(text);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let text = last.expect("a scrape of /metrics");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let s = &r["labels"][0]["stream"];
    let requests = s["requests"].as_f64().unwrap();
    assert!(requests >= 20.0, "{requests}");
    assert_eq!(sample(&text, "throng_streams_total"), requests);
    assert_eq!(sample(&text, "throng_output_tokens_total"), requests * 6.0);
    assert_eq!(s["output_tokens"].as_f64().unwrap(), requests * 6.0);
    assert_eq!(sample(&text, "throng_good_streams_total"), requests);
    assert_eq!(sample(&text, "throng_itl_seconds_count"), requests * 5.0);
    for (figure, truth) in [
        ("ttft", 0.040),
        ("itl", 0.010),
        ("tpot", 0.010),
        ("e2e", 0.090),
    ] {
        let name = format!("throng_{figure}_seconds");
        // The bucket holding a percentile is the run's own percentile, a bucket wide; the
        // median is the programmed value, with a shared machine's delay.
        for q in ["p50", "p99"] {
            let at = bucket_at(&text, &name, if q == "p50" { 0.5 } else { 0.99 });
            let own = s[figure]["stats"][q].as_f64().unwrap() / 1000.0;
            assert!(
                own <= at * 1.001 && at <= own * (1.0 + throng::metrics::QUANTILE_ERROR),
                "{name} {q}: bucket up to {at} s, the result's {own} s"
            );
        }
        let at = bucket_at(&text, &name, 0.5);
        assert!(
            (truth * 0.8..truth * 1.8 + 0.005).contains(&at),
            "{name} p50: bucket up to {at} s, programmed {truth} s"
        );
        let mean = sample(&text, &format!("{name}_sum")) / sample(&text, &format!("{name}_count"));
        assert!(
            (truth * 0.8..truth * 1.8 + 0.005).contains(&mean),
            "{name} mean {mean} s, programmed {truth} s"
        );
    }

    // A sweep of two levels: the stream columns in its level table, each run's streams table
    // in the Markdown, and a pivot of stream figures.
    let g = dir.path().join("g.json");
    let md = dir.path().join("g.md");
    let o = common::throng(&[
        "run",
        &served.1,
        "--llm",
        "--model",
        "m",
        "--sweep",
        "users=1,2",
        "-z",
        "1s",
        "--goodput",
        "ttft<500ms",
        "--no-tui",
        "--json",
        g.to_str().unwrap(),
        "--report",
        &format!("markdown:{}", md.display()),
    ]);
    let said = common::said(&o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    let table = said
        .lines()
        .find(|l| l.contains("Throughput (/s)"))
        .unwrap_or_else(|| panic!("no level table in\n{said}"));
    for column in ["TTFT p50", "TTFT p99", "ITL p99", "Tokens /s", "Goodput /s"] {
        assert!(table.contains(column), "{column}: {table}");
    }
    let md = std::fs::read_to_string(&md).unwrap();
    assert_eq!(md.matches("| TTFT p50/p99 |").count(), 2, "{md}");
    assert!(md.contains("| TPOT p99 |"), "{md}");
    let o = common::throng(&[
        "report",
        g.to_str().unwrap(),
        "--format",
        "csv",
        "--pivot",
        "side",
        "--columns",
        "ttft_p99,itl_p50,tokens,goodput",
    ]);
    let csv = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(0), "{}", common::said(&o));
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows[0][1..],
        ["TTFT p99 (ms)", "ITL p50 (ms)", "Tokens /s", "Goodput /s"],
        "{csv}"
    );
    assert_eq!(rows.len(), 3, "{csv}");
    // The pivot's cells are the level table's, every digit; the truth bounds them below.
    let g: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&g).unwrap()).unwrap();
    for (i, row) in rows[1..].iter().enumerate() {
        let v: Vec<f64> = row[1..].iter().map(|c| c.parse().unwrap()).collect();
        let s = &g["rows"][i]["total"]["stream"];
        let own = [
            s["ttft"]["stats"]["p99"].as_f64().unwrap(),
            s["itl"]["stats"]["p50"].as_f64().unwrap(),
            s["tokens_per_s"].as_f64().unwrap(),
            s["goodput"]["per_s"].as_f64().unwrap(),
        ];
        assert_eq!(v, own, "{csv}");
        // A token late behind a busy core shortens the gap after it: the ITL median may dip.
        assert!(v[0] >= 39.9 && v[1] >= 8.0, "{csv}");
        // An answer of 6 tokens takes 90 ms: at most 66 tokens a second a user.
        let users = (i + 1) as f64;
        assert!(
            (10.0 * users..67.0 * users).contains(&v[2]),
            "tokens/s {csv}"
        );
        assert!((v[3] * 6.0 - v[2]).abs() < 0.5, "every answer good: {csv}");
    }
}

/// A scenario file's `goodput:` judges its streams as `--goodput` does, the flag going over
/// it; a bad one is refused at its file, line and column, exit 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_files_goodput() {
    let llm = testbed(None, 1).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("good.yaml");
    let write = |goodput: &str| {
        std::fs::write(
            &file,
            format!(
                "targets:\n  llm: {}\ngoodput: {goodput}\nload:\n  users: 2\n  requests: 6\n\
                 steps:\n  - label: chat\n    request:\n      path: /v1/chat/completions\n      \
                 llm: {{ model: m, max_tokens: 4 }}\n",
                llm.url()
            ),
        )
        .unwrap();
    };
    write("\"ttft<5s, tpot<=1s\"");
    let s = run_file(&file, &[]).await;
    assert_eq!(s.plan.goodput.to_string(), "ttft<5000ms,tpot<=1000ms");
    assert_eq!(
        (stream(&s, "chat").requests, stream(&s, "chat").good),
        (6, 6)
    );
    write("ttft<1ms");
    let s = run_file(&file, &[]).await;
    assert_eq!(stream(&s, "chat").good, 0);
    let s = run_file(&file, &["--goodput", "e2e<5s"]).await;
    assert_eq!(s.plan.goodput.to_string(), "e2e<5000ms");
    assert_eq!(stream(&s, "chat").good, 6, "the flag goes over the file");

    let f = file.display().to_string();
    for (bad, says) in [
        ("ttft<200", "goodput: `ttft<200`: `200` needs a unit"),
        (
            "\"ttft<1ms,itl<2ms\"",
            "`itl` is not a figure goodput bounds",
        ),
        ("\"\"", "an empty objective"),
        ("[ttft]", "goodput"),
    ] {
        write(bad);
        let o = common::throng(&["run", &f, "--no-tui"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains(&format!("{f}:3:10")), "{bad}: {err}");
        assert!(err.contains(says), "{bad}: {err}");
    }
}
