//! throng-nats under throng's engine, as `throng run nats://…` runs it (`Steps<NatsClient>`,
//! every request timed and recorded), one worker thread, closed loop of `-c` users for `-n`
//! requests, without the command line's outputs: for CPU per request beside `requester.go`, a
//! nats.go client doing the same. Prints `requests: N in S s`.
//!
//! ```text
//! cargo run --release -p throng-nats --example nats_load -- nats://127.0.0.1:4222/greeter 10 200000 [publish]
//! GO111MODULE=off GOPATH=/usr/share/gocode go build -o requester crates/nats/examples/requester.go
//! ./requester -url nats://127.0.0.1:4222 -subject greeter -c 10 -n 200000 [-publish]
//! ```
//!
//! Measured (2 cores shared with other builds, so indicative; nats-server 2.9.10 and the test
//! responder of `tests/nats/responder.go` on the same machine; user + system CPU of the client
//! process by `/usr/bin/time`, three alternating rounds of 200,000 with 10 users or goroutines
//! on one connection): request–reply, throng 2.9-3.3 µs a request (0.58, 0.66, 0.65 s) against
//! nats.go's 12.7-13.6 µs (2.72, 2.53, 2.66 s), 0.24x, at 72,000-78,000 against 37,000-40,000
//! requests/s; publish–consume (each message awaited by one subscriber on a connection of its
//! own, the subscribers' thread included), throng 5.6-5.9 µs a message (1.17, 1.12, 1.15 s)
//! against 12.3-12.6 µs (2.47, 2.51, 2.46 s), 0.46x. Most of the request–reply difference is
//! system time (0.26-0.31 s against 1.75-1.87 s): nats.go makes many more system calls for
//! the same requests (not looked into further).

use std::sync::Arc;
use std::time::Instant;

use throng_core::step::ClientOptions;
use throng_core::{ClosedLoop, LoadModel, RunPlan, Users};
use throng_nats::{Mode, NatsOptions, NatsStep};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let url = args
        .get(1)
        .cloned()
        .unwrap_or("nats://127.0.0.1:4222/greeter".into());
    let users: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10);
    let requests: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let publish = args.get(4).is_some_and(|a| a == "publish");
    let own = NatsOptions {
        mode: if publish {
            Mode::Publish
        } else {
            Mode::Request
        },
        ..NatsOptions::default()
    };
    let step = match publish {
        true => NatsStep::publish("hello"),
        false => NatsStep::request("hello"),
    };
    let client = match throng_nats::NatsClient::new(&url, &ClientOptions::default().with(own)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let Ok(steps) = throng_nats::Steps::new(client, step, "request") else {
        eprintln!("no step");
        std::process::exit(2);
    };
    let mut plan = RunPlan::new(
        url,
        LoadModel::Closed(ClosedLoop {
            users: Users::Fixed(users),
            requests: Some(requests),
            iterations: None,
            duration: None,
            think_time: None,
        }),
    );
    plan.threads = 1;
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        std::process::exit(1);
    };
    let started = Instant::now();
    match rt.block_on(throng_engine::run(plan, Arc::new(steps))) {
        Ok(s) => {
            let t = &s.total;
            println!(
                "requests: {} in {:.2} s ({} errors)",
                t.samples,
                started.elapsed().as_secs_f64(),
                t.errors
            );
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
