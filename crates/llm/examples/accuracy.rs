//! How exactly the testbed keeps its programmed timing, and what reading a stream costs.
//!
//! `cargo run --release -p throng-llm --example accuracy -- [STREAMS] [TTFT_MS] [ITL_MS]
//! [TOKENS]` (defaults 1000, 50, 10, 50): the testbed on one thread (its own runtime), and a
//! plain hyper client on another, opening STREAMS connections, then sending a request on each,
//! spread evenly over one stream's length (so about STREAMS streams are open at once), each
//! reading one chat stream through throng-stream's SSE reader and the tracker. It prints the measured TTFT
//! minus each answer's programmed TTFT and the ITL samples as percentiles, and each thread's
//! CPU time per token. Then the reader alone: a recorded stream of 100,000 chunks fed one
//! chunk a slice through `Parser` and `Tracker`, CPU per event. With `TESTBED=ADDR` it reads
//! from a testbed already serving there (the `serve` example) instead of its own, for a side
//! by side with `aiohttp_client.py` against the same server.

use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use throng_llm::serve::{self, ServeConfig, Spread};
use throng_llm::{Api, RequestSpec, Token, Tracker};
use throng_stream::{Framing, Parser};

/// CPU time of the calling thread so far (`CLOCK_THREAD_CPUTIME_ID`: exact, where
/// `/proc`'s counts move only at the scheduler's ticks).
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

fn arg(i: usize, default: u64) -> u64 {
    std::env::args()
        .nth(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

/// A quantile of nanoseconds, in milliseconds.
fn millis(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1e6
}

fn print(name: &str, h: &Histogram<u64>) {
    println!(
        "{name:<28} n={:<7} p50={:>8.3} p90={:>8.3} p99={:>8.3} max={:>8.3} ms",
        h.len(),
        millis(h, 0.5),
        millis(h, 0.9),
        millis(h, 0.99),
        h.max() as f64 / 1e6
    );
}

/// One stream, connected at once and sent at `at`: (measured TTFT − programmed, the ITL
/// samples), in nanoseconds.
async fn one(
    addr: std::net::SocketAddr,
    body: Bytes,
    at: tokio::time::Instant,
) -> Option<(i64, Vec<u64>)> {
    let tcp = tokio::net::TcpStream::connect(addr).await.ok()?;
    tcp.set_nodelay(true).ok()?;
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .ok()?;
    tokio::task::spawn_local(conn);
    tokio::time::sleep_until(at).await;
    let req = hyper::Request::post(Api::Chat.path())
        .header("host", "testbed")
        .header("content-type", "application/json")
        .body(Full::new(body))
        .ok()?;
    let start = Instant::now();
    let resp = send.send_request(req).await.ok()?;
    let truth: i64 = resp.headers()["x-throng-ttft-us"]
        .to_str()
        .ok()?
        .parse()
        .ok()?;
    let mut body = resp.into_body();
    let mut parser = Parser::new(Framing::Sse, 64 * 1024);
    let mut tracker = Tracker::new(Api::Chat, start);
    let mut gaps = Vec::new();
    let mut ttft = 0i64;
    while let Some(frame) = body.frame().await {
        let frame = frame.ok()?;
        let Some(data) = frame.data_ref() else {
            continue;
        };
        let at = Instant::now();
        parser
            .feed(data, &mut |e| match tracker.event(at, e.data()) {
                Ok(Token::First(d)) => ttft = d.as_micros() as i64,
                Ok(Token::Next(d)) => gaps.push(d.as_nanos() as u64),
                _ => {}
            })
            .ok()?;
    }
    Some((ttft * 1000 - truth * 1000, gaps))
}

fn main() {
    let streams = arg(1, 1000) as usize;
    let ttft = Duration::from_millis(arg(2, 50));
    let itl = Duration::from_millis(arg(3, 10));
    let tokens = arg(4, 50) as u32;
    let config = ServeConfig {
        ttft: Spread::Fixed(ttft),
        itl: Spread::Fixed(itl),
        output_tokens: Spread::Fixed(tokens),
        ..ServeConfig::default()
    };
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    // TESTBED=ADDR: a testbed already serving (the `serve` example), timed by its own
    // settings; the ones given here then only say what to expect.
    let external: Option<std::net::SocketAddr> =
        std::env::var("TESTBED").ok().and_then(|a| a.parse().ok());
    let server = std::thread::spawn(move || {
        if let Some(addr) = external {
            addr_tx.send(addr).expect("the client waits");
            return (Duration::ZERO, None);
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async move {
            let running = serve::start(config).await.expect("the testbed starts");
            addr_tx.send(running.addr).expect("the client waits");
            let cpu = thread_cpu();
            let _ = stop_rx.await;
            (thread_cpu() - cpu, Some(running.lateness()))
        })
    });
    let addr = addr_rx.recv().expect("the testbed's address");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let body = Bytes::from(
        RequestSpec::new(Api::Chat, "m")
            .body(&throng_llm::generated_prompts(1, 100, 0)[0])
            .to_string(),
    );
    let cpu = thread_cpu();
    let wall = Instant::now();
    // Requests spread evenly over one stream's length (after a second to connect), so that
    // about STREAMS are open at once, as an open loop keeps them.
    let length = ttft + itl * tokens.saturating_sub(1);
    let results = rt.block_on(tokio::task::LocalSet::new().run_until(async {
        let t0 = tokio::time::Instant::now() + Duration::from_secs(1);
        let tasks: Vec<_> = (0..streams)
            .map(|i| {
                let at = t0 + length.mul_f64(i as f64 / streams as f64);
                tokio::task::spawn_local(one(addr, body.clone(), at))
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(tokio::time::timeout(Duration::from_secs(120), t).await);
        }
        out
    }));
    let client_cpu = thread_cpu() - cpu;
    let wall = wall.elapsed();
    let _ = stop_tx.send(());
    let (server_cpu, lateness) = server.join().expect("the testbed's thread");
    let mut late = Histogram::<u64>::new(3).expect("a histogram");
    let mut early = 0u64;
    let mut gaps = Histogram::<u64>::new(3).expect("a histogram");
    let mut ok = 0;
    for r in results.into_iter().flatten().flatten().flatten() {
        ok += 1;
        if r.0 < 0 {
            early += 1;
        }
        let _ = late.record(r.0.max(0) as u64);
        for g in r.1 {
            let _ = gaps.record(g);
        }
    }
    let events = ok as f64 * f64::from(tokens);
    println!(
        "{ok}/{streams} streams of {tokens} tokens, TTFT {ttft:?}, ITL {itl:?}, in {wall:.2?} (1 s of it connecting)"
    );
    print("TTFT measured − programmed", &late);
    println!("  (measured before programmed: {early})");
    print("ITL measured", &gaps);
    println!(
        "CPU per token: client (hyper + reader + tracker) {:.2} µs, testbed {:.2} µs",
        client_cpu.as_secs_f64() * 1e6 / events,
        server_cpu.as_secs_f64() * 1e6 / events
    );
    if let Some(lateness) = lateness {
        println!(
            "testbed's own writes: {} tokens, late by {lateness}",
            lateness.count
        );
    }
    let peak = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l.trim_start_matches("VmHWM:").trim().to_string())
        })
        .unwrap_or_default();
    println!("peak RSS of the process (testbed and client): {peak}");
    // The reader alone: a recorded stream, one chunk a slice.
    let chunk = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"system_fingerprint\":\"fp\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" ipsum\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n";
    let n = 100_000;
    let start = Instant::now();
    let mut parser = Parser::new(Framing::Sse, 64 * 1024);
    let mut tracker = Tracker::new(Api::Chat, start);
    let mut count = 0u64;
    let cpu = thread_cpu();
    for _ in 0..n {
        let at = Instant::now();
        parser
            .feed(chunk.as_bytes(), &mut |e| {
                if tracker.event(at, e.data()).is_ok() {
                    count += 1;
                }
            })
            .expect("a chunk under the cap");
    }
    let cpu = thread_cpu() - cpu;
    let mut sse = Parser::new(Framing::Sse, 64 * 1024);
    let mut framed = 0u64;
    let sse_cpu = thread_cpu();
    for _ in 0..n {
        sse.feed(chunk.as_bytes(), &mut |e| framed += e.data().len() as u64)
            .expect("a chunk under the cap");
    }
    let sse_cpu = thread_cpu() - sse_cpu;
    println!(
        "SSE reader alone: {:.0} ns CPU per event ({framed} bytes of data)",
        sse_cpu.as_nanos() as f64 / n as f64
    );
    println!(
        "reader and tracker: {count} events, {:.0} ns CPU per event (SSE reader + JSON chunk + tracker, a {}-byte chunk)",
        cpu.as_nanos() as f64 / n as f64,
        chunk.len()
    );
}
