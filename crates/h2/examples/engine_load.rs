//! throng-h2's client under throng's engine, as HTTP's and gRPC's drivers will run it: a
//! `Driver` whose workers each keep a `Pool` of one connection and whose users each hold a
//! seat on it, closed loop, one worker thread, the engine timing and recording every request
//! in its histograms. For `benches/h2.sh`, beside the bare `load` example and h2load; prints
//! the same `requests:` line as they do.
//!
//! ```text
//! cargo run --release -p throng-h2 --example engine_load -- http://127.0.0.1:8080/ -c 50 -z 5
//! ```

use std::net::ToSocketAddrs;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use throng_core::{ClosedLoop, Driver, ErrorClass, LoadModel, Outcome, RunPlan, StepInfo, Users};
use throng_h2::client::Target;
use throng_h2::conn::{Config, Keep, Request};
use throng_h2::hpack::Block;
use throng_h2::pool::{Pool, Seat, SendError};

struct H2Driver {
    target: Target,
    block: Vec<u8>,
    body: Bytes,
    grpc: bool,
    users: usize,
}

impl Driver for H2Driver {
    type Worker = Rc<Pool>;
    type Session = (Rc<Pool>, Seat);

    fn steps(&self) -> Vec<StepInfo> {
        vec![StepInfo {
            label: "request".into(),
        }]
    }

    fn worker(&self) -> Rc<Pool> {
        Rc::new(Pool::new(self.target.clone(), self.users, Some(1)))
    }

    fn session(&self, worker: &Rc<Pool>, _user: u64) -> (Rc<Pool>, Seat) {
        (worker.clone(), worker.join())
    }

    async fn execute(&self, (pool, seat): &mut (Rc<Pool>, Seat), _step: usize) -> Outcome {
        let req = Request {
            headers: &self.block,
            body: self.body.clone(),
            keep: Keep::default(),
        };
        match pool.send(seat, req).await {
            Ok(r) if r.status == 200 && (!self.grpc || r.grpc_status == Some(0)) => {
                Outcome::default()
            }
            Ok(r) => Outcome::failed(ErrorClass::Status, format!("status {}", r.status)),
            Err(SendError::Connect(o)) => o,
            Err(SendError::Stream(class, e)) => Outcome::failed(class, e.to_string()),
        }
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: engine_load http://HOST:PORT/PATH [-c USERS] [-z SECONDS | -n REQUESTS] [--grpc FRAME_FILE]"
    );
    std::process::exit(2)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut url, mut users, mut secs, mut grpc) = (None, 50usize, 5f64, None);
    let mut count: Option<u64> = None;
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "-c" => users = val().parse().unwrap_or_else(|_| usage()),
            "-n" => count = Some(val().parse().unwrap_or_else(|_| usage())),
            "-z" => {
                secs = val()
                    .trim_end_matches('s')
                    .parse()
                    .unwrap_or_else(|_| usage())
            }
            "--grpc" => grpc = Some(val()),
            _ if a.starts_with("http://") => url = Some(a),
            _ => usage(),
        }
    }
    let url = url.unwrap_or_else(|| usage());
    let rest = &url["http://".len()..];
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addrs: Vec<_> = match authority.to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(e) => {
            eprintln!("{authority}: {e}");
            std::process::exit(2)
        }
    };
    let body = match &grpc {
        Some(f) => match std::fs::read(f) {
            Ok(b) => Bytes::from(b),
            Err(e) => {
                eprintln!("{f}: {e}");
                std::process::exit(2)
            }
        },
        None => Bytes::new(),
    };
    let mut b = Block::builder();
    b.field(":method", if grpc.is_some() { b"POST" } else { b"GET" })
        .field(":scheme", b"http")
        .field(":path", path.as_bytes())
        .field(":authority", authority.as_bytes())
        .field("user-agent", b"throng-h2-engine");
    if grpc.is_some() {
        b.field("content-type", b"application/grpc")
            .field("te", b"trailers");
    }
    let driver = H2Driver {
        target: Target {
            addrs,
            authority: authority.to_string(),
            tls: None,
            connect_timeout: Duration::from_secs(5),
            config: Config::default(),
        },
        block: b.build().fixed().expect("no slots").to_vec(),
        body,
        grpc: grpc.is_some(),
        users,
    };
    let mut plan = RunPlan::new(
        url.clone(),
        LoadModel::Closed(ClosedLoop {
            users: Users::Fixed(users as u32),
            requests: count,
            iterations: None,
            duration: count.is_none().then(|| Duration::from_secs_f64(secs)),
            think_time: None,
        }),
    );
    plan.threads = 1;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let snap = match rt.block_on(throng_engine::run(plan, Arc::new(driver))) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    };
    let t = &snap.total;
    let ok = t.samples - t.errors;
    println!(
        "requests: {} total, {} started, {} done, {ok} succeeded, {} failed, 0 errored, 0 timeout",
        t.samples, t.samples, t.samples, t.errors
    );
    for e in &snap.errors {
        eprintln!("{e:?}");
    }
}
