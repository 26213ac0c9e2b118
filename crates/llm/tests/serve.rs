//! The testbed read by a plain hyper client through throng-stream's SSE reader and the
//! tracker: the figures measured must match what the testbed was programmed to do (each
//! answer's truth is in its headers), with wide margins for a loaded machine.
#![allow(clippy::unwrap_used)] // helpers of tests: a failure is the test's

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Value};
use throng_llm::serve::{self, Fault, ServeConfig, Spread};
use throng_llm::{Api, Figures, RequestSpec, Token, TokenSource, Tracker};
use throng_stream::{Framing, Parser};

/// Every test's bound: nothing here may hang.
const BOUND: Duration = Duration::from_secs(20);

/// How late a measured time may be against the truth on a busy machine (tokio's timer is
/// up to a millisecond late; other helpers' builds share the two cores).
const LATE: Duration = Duration::from_millis(25);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// One answer as the client saw it.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: http::HeaderMap,
    figures: Figures,
    /// The ITL samples, in order.
    gaps: Vec<Duration>,
    /// Each SSE event's data.
    events: Vec<String>,
    /// The body ended in an error (a cut stream).
    cut: bool,
    /// The body was still open when the reader gave up (a stall).
    stalled: bool,
    /// The body of an answer other than 200.
    raw: Vec<u8>,
}

impl Answer {
    fn truth(&self, name: &str) -> u64 {
        self.headers[name].to_str().unwrap().parse().unwrap()
    }
}

enum Conn {
    H1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

async fn connect(addr: std::net::SocketAddr, h2: bool) -> Conn {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let io = TokioIo::new(tcp);
    if h2 {
        let (send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .unwrap();
        tokio::spawn(conn);
        Conn::H2(send)
    } else {
        let (send, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
        tokio::spawn(conn);
        Conn::H1(send)
    }
}

/// Sends `body` to `api`'s path and reads the answer, giving up on a silent body after
/// `patience`.
async fn ask(conn: &mut Conn, api: Api, body: &Value, patience: Duration) -> Answer {
    let req = Request::post(api.path())
        .header("host", "testbed")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let start = Instant::now();
    let resp = match conn {
        Conn::H1(s) => s.send_request(req).await.unwrap(),
        Conn::H2(s) => s.send_request(req).await.unwrap(),
    };
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let mut body = resp.into_body();
    let mut parser = Parser::new(Framing::Sse, 64 * 1024);
    let mut tracker = Tracker::new(api, start);
    let (mut gaps, mut events, mut raw) = (Vec::new(), Vec::new(), Vec::new());
    let (mut cut, mut stalled) = (false, false);
    loop {
        let frame = match tokio::time::timeout(patience, body.frame()).await {
            Err(_) => {
                stalled = true;
                break;
            }
            Ok(None) => break,
            Ok(Some(Err(_))) => {
                cut = true;
                break;
            }
            Ok(Some(Ok(frame))) => frame,
        };
        let Some(data) = frame.data_ref() else {
            continue;
        };
        if status != 200 {
            raw.extend_from_slice(data);
            continue;
        }
        let at = Instant::now();
        parser
            .feed(data, &mut |e| {
                events.push(String::from_utf8_lossy(e.data()).into_owned());
                if let Token::Next(gap) = tracker.event(at, e.data()).unwrap() {
                    gaps.push(gap);
                }
            })
            .unwrap();
    }
    if !cut && !stalled {
        assert!(
            !parser.finish(&mut |_| {}).unwrap().partial,
            "a whole answer ends between events"
        );
    }
    Answer {
        status,
        headers,
        figures: tracker.figures(),
        gaps,
        events,
        cut,
        stalled,
        raw,
    }
}

fn request(api: Api, max_tokens: Option<u32>, usage: bool) -> Value {
    let mut spec = RequestSpec::new(api, "m1");
    spec.max_tokens = max_tokens;
    spec.include_usage = usage;
    let prompt = throng_llm::generated_prompts(1, 12, 0).remove(0);
    spec.body(&prompt)
}

/// A testbed of fixed TTFT, gap and length (in milliseconds and tokens).
fn fixed(ttft: u64, itl: u64, tokens: u32) -> ServeConfig {
    ServeConfig {
        ttft: Spread::Fixed(ms(ttft)),
        itl: Spread::Fixed(ms(itl)),
        output_tokens: Spread::Fixed(tokens),
        ..ServeConfig::default()
    }
}

/// A chat request asking usage, read with two seconds' patience.
async fn chat(conn: &mut Conn) -> Answer {
    ask(conn, Api::Chat, &request(Api::Chat, None, true), ms(2000)).await
}

/// An answer's chunks, `[DONE]` (which must be last) left out.
fn chunks(a: &Answer) -> Vec<Value> {
    assert_eq!(a.events.last().map(String::as_str), Some("[DONE]"));
    a.events[..a.events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect()
}

/// The ITL samples of an answer against a gap programmed in `low..=high`: their median within
/// a millisecond of it, at most one of them more than `LATE` over it (a machine shared with
/// other builds holds a thread up for tens of milliseconds now and then), and their sum the
/// time from the first token to the last. A sample alone may be short: a token (or the
/// reader) held up makes the next gap shorter, as the schedule does not slip.
fn gaps_within(a: &Answer, low: Duration, high: Duration) {
    let over = a.gaps.iter().filter(|g| **g > high + LATE).count();
    assert!(
        over <= 1,
        "{over} gaps over {:?}: {:?}",
        high + LATE,
        a.gaps
    );
    within(
        "median ITL",
        median(a.gaps.clone()),
        low - ms(1),
        high + ms(1),
    );
    let f = &a.figures;
    assert_eq!(
        a.gaps.iter().sum::<Duration>(),
        f.e2e - f.ttft.unwrap(),
        "the gaps add up to the time from the first token to the last"
    );
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn within(what: &str, measured: Duration, low: Duration, high: Duration) {
    assert!(
        measured >= low && measured <= high,
        "{what}: {measured:?} not within {low:?}..={high:?}"
    );
}

#[tokio::test]
async fn a_chat_stream_over_http1_has_the_programmed_ttft_gaps_and_length() {
    tokio::time::timeout(BOUND, async {
        let server = serve::start(fixed(40, 10, 20)).await.unwrap();
        let mut conn = connect(server.addr, false).await;
        let mut answers = Vec::new();
        for _ in 0..3 {
            answers.push(chat(&mut conn).await);
        }
        for a in &answers {
            assert_eq!(a.status, 200);
            assert_eq!(a.headers["content-type"], "text/event-stream");
            let truth = (
                a.truth("x-throng-ttft-us"),
                a.truth("x-throng-output-tokens"),
            );
            assert_eq!(truth, (40_000, 20));
            let f = a.figures;
            assert!(
                f.ttft.unwrap() >= ms(40),
                "never before the programmed TTFT"
            );
            assert_eq!(
                (f.output_tokens, f.source, f.content_events),
                (20, TokenSource::Usage, 20)
            );
            assert_eq!(
                f.prompt_tokens,
                Some(12),
                "the testbed counts the prompt's words"
            );
            assert!(f.done && !a.cut && !a.stalled);
            assert_eq!(a.gaps.len(), 19);
            gaps_within(a, ms(10), ms(10));
        }
        // Timing by the median of three answers: a hold-up of the machine's does not hit two.
        let of =
            |f: fn(&Figures) -> Duration| median(answers.iter().map(|a| f(&a.figures)).collect());
        within("TTFT", of(|f| f.ttft.unwrap()), ms(40), ms(40) + LATE);
        // The schedule is absolute: lateness does not add up, so TPOT (the mean gap) is close,
        // below the gap by at most the first token's lateness over 19 gaps.
        let tpot = of(|f| f.tpot.unwrap());
        within(
            "TPOT",
            tpot,
            Duration::from_micros(8_500),
            Duration::from_micros(11_500),
        );
        within("e2e", of(|f| f.e2e), ms(40 + 190), ms(40 + 190) + LATE);
        assert_eq!(server.requests(), 3);
        // The testbed times its own writes: every token of the three, none written early
        // (the clock's lateness is never negative), the median well inside the margin.
        let late = server.lateness();
        assert_eq!(late.count, 60, "{late}");
        assert!(late.p50 < LATE, "{late}");
        assert!(
            late.p50 <= late.p90 && late.p90 <= late.p99 && late.p99 <= late.max,
            "{late}"
        );
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn chunks_have_openai_exact_shape() {
    tokio::time::timeout(BOUND, async {
        let server = serve::start(fixed(1, 1, 3)).await.unwrap();
        let mut conn = connect(server.addr, false).await;
        let a = chat(&mut conn).await;
        let json = chunks(&a);
        // Role, 3 tokens, finish, usage; then [DONE].
        assert_eq!(json.len(), 6);
        for chunk in &json {
            assert_eq!(chunk["object"], "chat.completion.chunk");
            assert_eq!(chunk["model"], "m1", "the request's model is echoed");
            assert_eq!(chunk["id"], "chatcmpl-0");
            assert!(chunk["created"].is_u64());
        }
        assert_eq!(
            json[0]["choices"][0]["delta"],
            json!({"role": "assistant", "content": ""})
        );
        assert_eq!(json[1]["choices"][0]["delta"], json!({"content": "lorem"}));
        assert_eq!(json[2]["choices"][0]["delta"], json!({"content": " ipsum"}));
        assert_eq!(json[1]["choices"][0]["finish_reason"], Value::Null);
        assert_eq!(json[1]["usage"], Value::Null);
        assert!(json[1].as_object().unwrap().contains_key("usage"));
        assert_eq!(json[4]["choices"][0]["delta"], json!({}));
        assert_eq!(json[4]["choices"][0]["finish_reason"], "stop");
        assert_eq!(json[5]["choices"], json!([]));
        assert_eq!(
            json[5]["usage"],
            json!({"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15})
        );
        // Completions, no usage asked: text chunks, no usage field, no usage chunk.
        let a = ask(
            &mut conn,
            Api::Completions,
            &request(Api::Completions, Some(2), false),
            ms(2000),
        )
        .await;
        let json = chunks(&a);
        assert_eq!(json.len(), 3);
        assert_eq!(json[0]["object"], "text_completion");
        assert_eq!(json[0]["id"], "cmpl-1");
        assert_eq!(json[0]["choices"][0]["text"], "lorem");
        assert!(!json[0].as_object().unwrap().contains_key("usage"));
        // max_tokens 2 cut the programmed 3: finished for length.
        assert_eq!(
            json[2]["choices"][0],
            json!({"text": "", "index": 0, "logprobs": null, "finish_reason": "length"})
        );
        assert_eq!(
            (a.figures.output_tokens, a.figures.source),
            (2, TokenSource::Counted)
        );
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn concurrent_completions_over_h2c_follow_their_drawn_truth() {
    tokio::time::timeout(BOUND, async {
        let config = ServeConfig {
            ttft: "20ms..80ms".parse().unwrap(),
            itl: "4ms..12ms".parse().unwrap(),
            output_tokens: "10..30".parse().unwrap(),
            seed: 7,
            ..ServeConfig::default()
        };
        let server = serve::start(config.clone()).await.unwrap();
        let conn = connect(server.addr, true).await;
        let Conn::H2(send) = conn else { unreachable!() };
        let body = request(Api::Completions, None, true);
        let answers = futures_join(
            (0..8)
                .map(|_| {
                    let mut conn = Conn::H2(send.clone());
                    let body = body.clone();
                    tokio::spawn(
                        async move { ask(&mut conn, Api::Completions, &body, ms(2000)).await },
                    )
                })
                .collect(),
        )
        .await;
        let mut ttfts = Vec::new();
        for a in &answers {
            assert_eq!(a.status, 200);
            let truth = Duration::from_micros(a.truth("x-throng-ttft-us"));
            within("drawn TTFT", truth, ms(20), ms(80));
            ttfts.push(truth);
            assert!(
                a.figures.ttft.unwrap() >= truth,
                "never before the programmed TTFT"
            );
            let tokens = a.truth("x-throng-output-tokens");
            assert!((10..=30).contains(&tokens));
            assert_eq!(a.figures.output_tokens, tokens);
            assert_eq!(a.gaps.len() as u64, tokens - 1);
            gaps_within(a, ms(4), ms(12));
            assert!(a.figures.tpot.unwrap() >= ms(3));
        }
        // At most one answer held up by the machine past the margins.
        let late = |a: &Answer| {
            let truth = Duration::from_micros(a.truth("x-throng-ttft-us"));
            a.figures.ttft.unwrap() > truth + LATE || a.figures.tpot.unwrap() > ms(12) + ms(2)
        };
        let held = answers.iter().filter(|a| late(a)).count();
        assert!(held <= 1, "{held} answers late past the margins");
        ttfts.sort();
        assert_ne!(ttfts.first(), ttfts.last(), "TTFT is drawn per request");
        // The same seed draws the same values for the same request index.
        let again = serve::start(config).await.unwrap();
        let mut conn = connect(again.addr, false).await;
        let mut first = Vec::new();
        for _ in 0..3 {
            let a = ask(&mut conn, Api::Completions, &body, ms(2000)).await;
            first.push((
                a.truth("x-throng-ttft-us"),
                a.truth("x-throng-output-tokens"),
            ));
        }
        let mut by_index: Vec<_> = answers
            .iter()
            .map(|a| {
                (
                    a.truth("x-throng-request"),
                    (
                        a.truth("x-throng-ttft-us"),
                        a.truth("x-throng-output-tokens"),
                    ),
                )
            })
            .collect();
        by_index.sort();
        let want: Vec<_> = by_index[..3].iter().map(|(_, t)| *t).collect();
        assert_eq!(first, want);
    })
    .await
    .unwrap();
}

async fn futures_join(handles: Vec<tokio::task::JoinHandle<Answer>>) -> Vec<Answer> {
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

#[tokio::test]
async fn faults_cut_fail_and_stall_streams() {
    tokio::time::timeout(BOUND, async {
        let base = fixed(5, 5, 10);
        for h2 in [false, true] {
            let server = serve::start(ServeConfig {
                fault: Some(Fault::Cut(3)),
                ..base.clone()
            })
            .await
            .unwrap();
            let mut conn = connect(server.addr, h2).await;
            let a = chat(&mut conn).await;
            assert!(a.cut, "h2 {h2}: the body ends in an error");
            assert_eq!(a.figures.content_events, 3, "h2 {h2}");
            assert!(!a.figures.done);
            assert_eq!(a.figures.source, TokenSource::Counted, "no usage came");
        }
        let server = serve::start(ServeConfig {
            fault: Some(Fault::Status(500)),
            fault_every: 2,
            ..base.clone()
        })
        .await
        .unwrap();
        let mut conn = connect(server.addr, false).await;
        let a = chat(&mut conn).await;
        assert_eq!(a.status, 500);
        let error: Value = serde_json::from_slice(&a.raw).unwrap();
        assert_eq!(error["error"]["type"], "server_error");
        assert!(error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("fault"));
        let a = chat(&mut conn).await;
        assert_eq!(
            (a.status, a.figures.output_tokens),
            (200, 10),
            "every second request is faulted"
        );
        let server = serve::start(ServeConfig {
            fault: Some(Fault::Stall(2)),
            ..base
        })
        .await
        .unwrap();
        let mut conn = connect(server.addr, false).await;
        let a = ask(
            &mut conn,
            Api::Chat,
            &request(Api::Chat, None, true),
            ms(300),
        )
        .await;
        assert!(a.stalled && !a.cut);
        assert_eq!(a.figures.content_events, 2);
        // A stalled stream ends when the server stops: nothing outlives it.
        let mut conn = connect(server.addr, true).await;
        let body = request(Api::Chat, None, true);
        let pending = tokio::spawn(async move { ask(&mut conn, Api::Chat, &body, ms(5000)).await });
        tokio::time::sleep(ms(100)).await;
        server.stop();
        let a = tokio::time::timeout(ms(2000), pending)
            .await
            .unwrap()
            .unwrap();
        assert!(
            !a.stalled,
            "the stop ended the stream before the reader gave up"
        );
        assert!(!a.figures.done);
        assert_eq!(a.figures.content_events, 2);
    })
    .await
    .unwrap();
}

async fn plain(addr: std::net::SocketAddr, method: &str, path: &str, body: &str) -> (u16, Value) {
    let mut conn = connect(addr, false).await;
    let Conn::H1(send) = &mut conn else {
        unreachable!()
    };
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "testbed")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let resp = send.send_request(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn whole_answers_models_and_bad_requests() {
    tokio::time::timeout(BOUND, async {
        let server = serve::start(fixed(30, 2, 4)).await.unwrap();
        let started = Instant::now();
        let (status, v) = plain(
            server.addr,
            "POST",
            "/v1/chat/completions",
            r#"{"messages":[{"role":"user","content":"hi there"}]}"#,
        )
        .await;
        assert!(
            started.elapsed() >= ms(36),
            "a whole answer waits for its last token"
        );
        assert_eq!(status, 200);
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["model"], "throng-testbed");
        assert_eq!(
            v["choices"][0]["message"]["content"],
            "lorem ipsum dolor sit"
        );
        assert_eq!(
            v["usage"],
            json!({"prompt_tokens": 2, "completion_tokens": 4, "total_tokens": 6})
        );
        let (status, v) = plain(server.addr, "GET", "/v1/models", "").await;
        assert_eq!(
            (status, &v["data"][0]["id"]),
            (200, &json!("throng-testbed"))
        );
        let (status, v) = plain(server.addr, "POST", "/v1/embeddings", "{}").await;
        assert_eq!(status, 404);
        assert_eq!(v["error"]["type"], "invalid_request_error");
        let (status, _) = plain(server.addr, "GET", "/v1/completions", "").await;
        assert_eq!(status, 405);
        let (status, v) = plain(server.addr, "POST", "/v1/completions", "{oops").await;
        assert_eq!(status, 400);
        assert!(v["error"]["message"].as_str().unwrap().contains("not JSON"));
        let (status, v) = plain(
            server.addr,
            "POST",
            "/v1/chat/completions",
            r#"{"prompt":"x"}"#,
        )
        .await;
        assert_eq!(status, 400);
        assert!(v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`messages`"));
        assert_eq!(
            server.requests(),
            1,
            "only completions that were answered count"
        );
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn serve_runs_until_stopped() {
    tokio::time::timeout(BOUND, async {
        // A free port, then served: another process could take it in between, which this
        // machine's tests do not.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let config = ServeConfig {
            listen: port,
            output_tokens: Spread::Fixed(2),
            ttft: Spread::Fixed(ms(1)),
            ..ServeConfig::default()
        };
        let served = tokio::spawn(serve::serve(config, async {
            let _ = stopped.await;
        }));
        let mut conn = loop {
            if let Ok(tcp) = tokio::net::TcpStream::connect(port).await {
                drop(tcp);
                break connect(port, false).await;
            }
            tokio::time::sleep(ms(5)).await;
        };
        let a = chat(&mut conn).await;
        assert_eq!(a.figures.output_tokens, 2);
        stop.send(()).unwrap();
        served.await.unwrap().unwrap();
        assert!(
            tokio::net::TcpStream::connect(port).await.is_err(),
            "stopped serving"
        );
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn beyond_max_streams_a_request_waits_and_its_ttft_counts_the_wait() {
    tokio::time::timeout(BOUND, async {
        // Each answer ends 50 + 9 × 10 = 140 ms after it began.
        let server = serve::start(ServeConfig {
            max_streams: Some(2),
            ..fixed(50, 10, 10)
        })
        .await
        .unwrap();
        let Conn::H2(send) = connect(server.addr, true).await else {
            unreachable!()
        };
        let tasks: Vec<_> = (0..3)
            .map(|_| {
                let mut conn = Conn::H2(send.clone());
                tokio::spawn(async move { chat(&mut conn).await })
            })
            .collect();
        let mut answers = futures_join(tasks).await;
        answers.sort_by_key(|a| a.truth("x-throng-queued-us"));
        for a in &answers[..2] {
            assert!(a.truth("x-throng-queued-us") < 20_000, "two begin at once");
        }
        let last = &answers[2];
        let queued = Duration::from_micros(last.truth("x-throng-queued-us"));
        // From its own arrival, a hair after the first began (139.986 ms seen): 140 ms less
        // that gap, which a busy machine can stretch to some milliseconds.
        within("the third's wait", queued, ms(130), ms(140) + LATE);
        let ttft = last.figures.ttft.unwrap();
        assert!(
            ttft >= queued + ms(50),
            "TTFT {ttft:?} holds the wait {queued:?}"
        );
        assert!(answers
            .iter()
            .all(|a| a.figures.output_tokens == 10 && a.figures.done));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn prefill_adds_its_time_per_prompt_token_to_the_ttft() {
    tokio::time::timeout(BOUND, async {
        let server = serve::start(ServeConfig {
            prefill: ms(2),
            ..fixed(10, 1, 3)
        })
        .await
        .unwrap();
        let mut conn = connect(server.addr, false).await;
        // The request's prompt is 12 words: 10 ms and 12 × 2 ms.
        let a = chat(&mut conn).await;
        assert_eq!(a.truth("x-throng-ttft-us"), 34_000);
        assert!(a.figures.ttft.unwrap() >= ms(34));
        let long =
            RequestSpec::new(Api::Chat, "m").body(&throng_llm::generated_prompts(1, 50, 0)[0]);
        let a = ask(&mut conn, Api::Chat, &long, ms(2000)).await;
        assert_eq!(a.truth("x-throng-ttft-us"), 110_000);
        assert_eq!(a.figures.prompt_tokens, Some(50));
    })
    .await
    .unwrap();
}

/// The testbed's thread held up when a request comes, as a core busy writing a thousand
/// streams' tokens holds it: the request is read late, and its TTFT still runs from its
/// arrival (the kernel's stamp), so the client sees the programmed TTFT, not it plus the wait.
#[test]
fn a_request_read_late_keeps_its_ttft_from_its_arrival() {
    let (tx, rx) = std::sync::mpsc::channel();
    let testbed = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let server = serve::start(fixed(100, 10, 3)).await.unwrap();
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            tx.send((server.addr, tokio::runtime::Handle::current(), stop))
                .unwrap();
            let _ = stopped.await;
            server.read_waits()
        })
    });
    let (addr, handle, stop) = rx.recv().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answer = rt.block_on(async {
        tokio::time::timeout(BOUND, async {
            let mut conn = connect(addr, false).await;
            // The testbed's one thread busy for 80 ms from now; the request comes 10 ms into it.
            handle.spawn(async { std::thread::sleep(ms(80)) });
            tokio::time::sleep(ms(10)).await;
            chat(&mut conn).await
        })
        .await
    });
    let _ = stop.send(());
    let read = testbed.join().unwrap();
    let a = answer.unwrap();
    assert_eq!(a.status, 200);
    assert_eq!(read.count, 1);
    assert!(read.max >= ms(40), "the request waited to be read: {read}");
    let ttft = a.figures.ttft.unwrap();
    // Read at about 70 ms, a TTFT from the read would be about 170 ms.
    within("TTFT", ttft, ms(100), ms(100) + LATE);
}
