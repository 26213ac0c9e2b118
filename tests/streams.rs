//! Responses read as streams of events (`--stream sse|ndjson|chunks`, a step's `stream:`)
//! against throng-llm's OpenAI-compatible testbed, whose timing and faults are programmed:
//! parts counted and timed as the testbed sends them, cut streams classified, events so far
//! counted.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use common::llm::{self, ITL_MS, TOKENS, TTFT_MS};
use common::{errors_of, refused, row, run, run_file};
use throng::core::{ErrorClass, LabelStats, Snapshot};
use throng_llm::serve::{Fault, RunningLlm};

/// A completions request asking for a stream (the legacy API: a chunk per token, no role
/// chunk before the first).
const BODY: &str = r#"{"model":"m","prompt":"hello there","stream":true}"#;

/// The testbed with `fault` on every reply, tokens `ITL_MS` apart.
async fn testbed(fault: Option<Fault>) -> RunningLlm {
    llm::testbed(fault, 1, ITL_MS).await
}

/// `throng run` of the testbed's completions, POST, with `extra` flags.
async fn run_stream(llm: &RunningLlm, extra: &[&str]) -> std::sync::Arc<Snapshot> {
    let url = format!("{}/v1/completions", llm.url());
    let mut args = vec![
        url.as_str(),
        "-m",
        "POST",
        "-d",
        BODY,
        "-H",
        "content-type: application/json",
    ];
    args.extend_from_slice(extra);
    run(&args).await
}

fn ms(s: &LabelStats, q: f64) -> f64 {
    s.latency.value_at_quantile(q) as f64 / 1000.0
}

const EVENTS: &str = "POST /v1/completions (events)";

/// A parts row of answers timed as the testbed's: its median a token gap, its top a first token
/// (wide margins: a shared machine only adds).
fn timed_as_programmed(parts: &LabelStats) {
    let (p50, max) = (ms(parts, 0.5), ms(parts, 1.0));
    // Wide above, never below: two cores running the other tests delay a read by tens of
    // ms (a 40 ms margin on the slowest part failed at a load average of 9), while a gap timed
    // from the wrong instant (the request's start) would put the median at 20 ms or more.
    let itl = ITL_MS as f64;
    assert!((itl - 1.0..itl + 10.0).contains(&p50), "parts p50 {p50} ms");
    let ttft = TTFT_MS as f64;
    assert!(
        (ttft - 1.0..ttft + 150.0).contains(&max),
        "parts max {max} ms"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_sent_events_are_parts_timed_from_the_one_before() {
    let llm = testbed(None).await;
    let s = run_stream(&llm, &["--stream", "sse", "-c", "2", "-n", "10"]).await;
    let calls = row(&s, "POST /v1/completions");
    assert_eq!((calls.samples, calls.errors), (10, 0), "{:?}", s.errors);
    // Each answer: a chunk per token, the last with the finish chunk after it in one write,
    // then `[DONE]`, which is an end marker and not an event.
    let parts = row(&s, EVENTS);
    assert!(parts.parts);
    assert_eq!(parts.samples, 10 * (u64::from(TOKENS) + 1));
    // Sorted, an answer's parts are: the finish chunk (~0), five gaps of ITL, the TTFT.
    timed_as_programmed(parts);
    let low = ms(parts, 1.0 / 7.0 - 0.01);
    assert!(
        low < 3.0,
        "the finish chunk comes with the last token: {low} ms"
    );
    // TOTAL counts requests, not parts.
    assert_eq!(s.total.samples, 10);

    // Raw chunks: a part per chunk of the body as it arrives (a frame each: at least that).
    let s = run_stream(&llm, &["--stream", "chunks", "-c", "1", "-n", "4"]).await;
    assert_eq!(row(&s, "POST /v1/completions").errors, 0, "{:?}", s.errors);
    let chunks = row(&s, EVENTS).samples;
    assert!(
        (4 * u64::from(TOKENS)..=8 * u64::from(TOKENS)).contains(&chunks),
        "{chunks} chunks"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_stream_is_cut_and_its_events_still_count() {
    // Cut after 3 tokens: the connection closes without the body's end. (hyper drops what it
    // had not flushed when the body fails, so a testbed whose timer ran late on a busy machine,
    // cutting at once after a token, loses that token: 40 ms gaps make it rare, and each
    // answer still has 2 or 3 events.)
    let llm = llm::testbed(Some(Fault::Cut(3)), 1, 40).await;
    let s = run_stream(&llm, &["--stream", "sse", "-c", "1", "-n", "5"]).await;
    assert_eq!(errors_of(&s, ErrorClass::Cut), 5, "{:?}", s.errors);
    let parts = row(&s, EVENTS).samples;
    assert!((10..=15).contains(&parts), "{parts} events");
    let sample = s
        .errors
        .iter()
        .find(|e| e.class == ErrorClass::Cut)
        .unwrap();
    assert!(
        sample.sample.contains("after 3 events") || sample.sample.contains("after 2 events"),
        "{}",
        sample.sample
    );

    // Cut before any event: no stream came, a reset as without --stream.
    let llm = testbed(Some(Fault::Cut(0))).await;
    let s = run_stream(&llm, &["--stream", "sse", "-c", "1", "-n", "3"]).await;
    assert_eq!(errors_of(&s, ErrorClass::Reset), 3, "{:?}", s.errors);
    assert_eq!(row(&s, EVENTS).samples, 0);

    // Silent after 2 tokens: a timeout, its events counted.
    let llm = testbed(Some(Fault::Stall(2))).await;
    let s = run_stream(
        &llm,
        &["--stream", "sse", "-c", "2", "-n", "4", "-t", "300ms"],
    )
    .await;
    assert_eq!(errors_of(&s, ErrorClass::Timeout), 4, "{:?}", s.errors);
    let parts = row(&s, EVENTS);
    assert_eq!(parts.samples, 8);
    assert!(ms(parts, 1.0) >= TTFT_MS as f64 - 1.0);

    // An error status: its body is no stream.
    let llm = testbed(Some(Fault::Status(500))).await;
    let s = run_stream(&llm, &["--stream", "sse", "-c", "1", "-n", "3"]).await;
    assert_eq!(errors_of(&s, ErrorClass::Status), 3, "{:?}", s.errors);
    assert_eq!(row(&s, EVENTS).samples, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_step_reads_a_stream_and_checks_its_last_event() {
    let llm = testbed(None).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stream.yaml");
    let step = |label: &str, want: &str| {
        format!(
            "  - label: {label}\n    request:\n      method: POST\n      path: /v1/completions\n      \
             json: {{ model: m, prompt: hi, stream: true }}\n      stream: sse\n    checks:\n      \
             - jsonpath: $.choices[0].finish_reason\n        equals: {want}\n"
        )
    };
    std::fs::write(
        &file,
        format!(
            "targets:\n  llm: {}\nload:\n  users: 1\n  requests: 6\nsteps:\n{}{}",
            llm.url(),
            step("stop", "stop"),
            step("length", "length"),
        ),
    )
    .unwrap();
    let s = run_file(&file, &[]).await;
    // The last event is the finish chunk, JSON on its own (the whole body is not): `stop`.
    assert_eq!(row(&s, "stop").errors, 0, "{:?}", s.errors);
    assert_eq!(row(&s, "stop").samples, 3);
    assert_eq!(row(&s, "length").errors, 3, "{:?}", s.errors);
    assert_eq!(errors_of(&s, ErrorClass::Check), 3);
    assert_eq!(
        row(&s, "stop (events)").samples,
        3 * (u64::from(TOKENS) + 1)
    );
    assert_eq!(
        row(&s, "length (events)").samples,
        3 * (u64::from(TOKENS) + 1)
    );
}

/// Over HTTP/2 (h2c, the testbed's hyper server), a stream is read as it arrives from
/// throng-h2's DATA frames: the same parts as over HTTP/1.1, 20 users sharing 2 connections; a
/// stream cut off is `cut` with its events counted; `--llm`'s tokens are timed as programmed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_reads_streams_as_http1_does() {
    let llm = testbed(None).await;
    let h2 = ["--http2", "--streams", "10", "--threads", "1"];
    let s = run_stream(
        &llm,
        &[&["--stream", "sse", "-c", "20", "-n", "60"][..], &h2].concat(),
    )
    .await;
    let calls = row(&s, "POST /v1/completions");
    assert_eq!((calls.samples, calls.errors), (60, 0), "{:?}", s.errors);
    let parts = row(&s, EVENTS);
    assert_eq!(parts.samples, 60 * (u64::from(TOKENS) + 1));
    timed_as_programmed(parts);
    assert_eq!(s.total.samples, 60);
    assert_eq!(s.total.phases.as_ref().map(|p| p.new), Some(2));

    // Raw chunks: a part per read that brought DATA (the frames one read brings are one
    // part: the last token, the finish chunk and `[DONE]` at least; a busy machine joins more).
    let s = run_stream(
        &llm,
        &[&["--stream", "chunks", "-c", "1", "-n", "4"][..], &h2].concat(),
    )
    .await;
    assert_eq!(row(&s, "POST /v1/completions").errors, 0, "{:?}", s.errors);
    let chunks = row(&s, EVENTS).samples;
    assert!(
        (4 * 3..=8 * u64::from(TOKENS)).contains(&chunks),
        "{chunks} chunks"
    );

    // Cut after 3 tokens: hyper resets the stream, and the events that came count.
    let cut = llm::testbed(Some(Fault::Cut(3)), 1, 40).await;
    let s = run_stream(
        &cut,
        &[&["--stream", "sse", "-c", "1", "-n", "5"][..], &h2].concat(),
    )
    .await;
    assert_eq!(errors_of(&s, ErrorClass::Cut), 5, "{:?}", s.errors);
    let parts = row(&s, EVENTS).samples;
    assert!((10..=15).contains(&parts), "{parts} events");

    // Cut before any event, without --stream: hyper resets the stream (RST_STREAM) after the
    // head, each request fails as `reset`, and the connection goes on (one for all ten).
    let cut = testbed(Some(Fault::Cut(0))).await;
    let s = run_stream(&cut, &[&["-c", "2", "-n", "10"][..], &h2].concat()).await;
    assert_eq!(errors_of(&s, ErrorClass::Reset), 10, "{:?}", s.errors);
    assert!(
        s.errors
            .iter()
            .all(|e| e.sample.contains("reset the stream")),
        "{:?}",
        s.errors
    );
    assert_eq!(s.total.phases.as_ref().map(|p| p.new), Some(1));

    // Silent after 2 tokens: each answer times out at its deadline on the shared connection
    // (throng-h2's timer, not tokio's), its stream reset and its events counted; two rounds
    // of 300 ms, not the stall's forever.
    let stall = testbed(Some(Fault::Stall(2))).await;
    let began = std::time::Instant::now();
    let s = run_stream(
        &stall,
        &[
            &["--stream", "sse", "-c", "2", "-n", "4", "-t", "300ms"][..],
            &h2,
        ]
        .concat(),
    )
    .await;
    assert!(began.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(errors_of(&s, ErrorClass::Timeout), 4, "{:?}", s.errors);
    let parts = row(&s, EVENTS);
    assert_eq!(parts.samples, 8);
    assert!(ms(parts, 1.0) >= TTFT_MS as f64 - 1.0);
    assert!(
        s.errors.iter().all(|e| e.sample.contains("within 300ms")),
        "{:?}",
        s.errors
    );

    let s = run(&[
        &[&llm.url(), "--llm", "--model", "m", "-c", "2", "-n", "10"][..],
        &h2,
    ]
    .concat())
    .await;
    let calls = row(&s, "POST /v1/chat/completions");
    assert_eq!((calls.samples, calls.errors), (10, 0), "{:?}", s.errors);
    let tokens = row(&s, "POST /v1/chat/completions (tokens)");
    assert_eq!(tokens.samples, 10 * u64::from(TOKENS));
    timed_as_programmed(tokens);
}

#[test]
fn stream_flags_are_checked_before_the_load() {
    let url = format!("http://127.0.0.1:{}/", common::closed_port());
    refused(&[(
        vec![&url, "--stream", "xml"],
        "expected sse, ndjson or chunks".into(),
    )]);
}

/// `throng serve llm`: HTTP's testbed server, registered with it, answers a streamed run with
/// its programmed token count and says on Ctrl-C how much it served; a bad flag exits 2.
#[test]
fn throng_serve_llm_streams_as_programmed() {
    let (serve, url) = common::serve_bin(&[
        "llm",
        "--ttft",
        "5ms",
        "--itl",
        "1ms",
        "--output-tokens",
        "4",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let o = common::throng(&[
        "run",
        &format!("{url}/v1/completions"),
        "-m",
        "POST",
        "-d",
        BODY,
        "--stream",
        "sse",
        "-c",
        "2",
        "-n",
        "10",
        "--no-tui",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::said(&o));
    let r = common::json(&json);
    let events = r["labels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["label"] == EVENTS)
        .unwrap_or_else(|| panic!("{}", r["labels"]));
    // Four tokens and the finish chunk an answer.
    assert_eq!(events["samples"], 50, "{events}");
    let _ = std::process::Command::new("kill")
        .args(["-INT", &serve.id().to_string()])
        .status();
    let out = serve.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("served 10 "), "{err}");
    let o = common::throng(&["serve", "llm", "--port", "0", "--fault", "bogus"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::said(&o));
    assert!(
        common::said(&o).contains("`bogus` is not a fault"),
        "{}",
        common::said(&o)
    );
}

/// `--llm`: OpenAI-compatible requests built from prompts, one a call in turn; the answer's
/// content chunks are the `(tokens)` row, exactly the tokens the testbed sent (no role, finish
/// or usage chunk), the first its TTFT and the rest its gaps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_requests_time_each_token() {
    let llm = testbed(None).await;
    // The URL has no path: chat's endpoint.
    let s = run(&[&llm.url(), "--llm", "--model", "m", "-c", "2", "-n", "10"]).await;
    let calls = row(&s, "POST /v1/chat/completions");
    assert_eq!((calls.samples, calls.errors), (10, 0), "{:?}", s.errors);
    let tokens = row(&s, "POST /v1/chat/completions (tokens)");
    assert_eq!(tokens.samples, 10 * u64::from(TOKENS));
    timed_as_programmed(tokens);

    // --max-tokens caps every answer; completions' endpoint with --llm completions.
    let s = run(&[
        &llm.url(),
        "--llm",
        "completions",
        "--model",
        "m",
        "--max-tokens",
        "3",
        "--prompt-tokens",
        "8",
        "-c",
        "1",
        "-n",
        "4",
    ])
    .await;
    assert_eq!(row(&s, "POST /v1/completions").errors, 0, "{:?}", s.errors);
    assert_eq!(row(&s, "POST /v1/completions (tokens)").samples, 12);

    // A prompts file: its prompts in turn, each with its own max_tokens.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prompts.jsonl");
    std::fs::write(
        &file,
        "{\"prompt\": \"one\", \"max_tokens\": 2}\n{\"prompt\": \"two\", \"max_tokens\": 4}\n",
    )
    .unwrap();
    let s = run(&[
        &format!("{}/v1/chat/completions", llm.url()),
        "--llm",
        "--model",
        "m",
        "--prompts",
        file.to_str().unwrap(),
        "-c",
        "1",
        "-n",
        "5",
    ])
    .await;
    assert_eq!(
        row(&s, "POST /v1/chat/completions").errors,
        0,
        "{:?}",
        s.errors
    );
    // 2 + 4 + 2 + 4 + 2.
    assert_eq!(row(&s, "POST /v1/chat/completions (tokens)").samples, 14);
}

#[test]
fn llm_flags_are_checked_before_the_load() {
    let url = format!("http://127.0.0.1:{}", common::closed_port());
    refused(&[
        (vec![&url, "--llm"], "give --model NAME".into()),
        (vec![&url, "--model", "m"], "give --llm too".into()),
        (
            vec![
                &url,
                "--llm",
                "--model",
                "m",
                "--prompts",
                "/nonexistent.jsonl",
            ],
            "/nonexistent.jsonl".into(),
        ),
        (
            vec![&url, "--llm", "--model", "m", "-d", "{}"],
            "not -d".into(),
        ),
        (
            vec![&url, "--llm", "bard", "--model", "m"],
            "chat or completions".into(),
        ),
    ]);
}
