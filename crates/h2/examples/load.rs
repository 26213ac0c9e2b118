//! A minimal closed-loop load driver on throng-h2, for `benches/h2.sh` to set beside h2load:
//! one thread (a current-thread runtime and a `LocalSet`, as one of the engine's workers),
//! `-c` users sharing `--connections` connections, each sending its request again as soon as
//! the last response ends, for `-z` seconds or `-n` requests in all. Prints a line in h2load's shape:
//! `requests: T total, T started, T done, N succeeded, F failed, 0 errored, 0 timeout`.
//!
//! ```text
//! cargo run --release -p throng-h2 --example load -- http://127.0.0.1:8080/ -c 50 -z 5
//! cargo run --release -p throng-h2 --example load -- http://127.0.0.1:8080/g.S/M -c 50 -z 5 --grpc frame.bin
//! ```

use std::cell::Cell;
use std::net::ToSocketAddrs;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use throng_h2::client::{connect, Target};
use throng_h2::conn::{Config, Keep, Request};
use throng_h2::hpack::Block;

fn usage() -> ! {
    eprintln!("usage: load http://HOST:PORT/PATH [-c USERS] [-z SECONDS | -n REQUESTS] [--connections N] [--grpc FRAME_FILE]");
    std::process::exit(2)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut url, mut users, mut secs, mut conns, mut grpc) = (None, 50usize, 5f64, 1usize, None);
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
            "--connections" => conns = val().parse().unwrap_or_else(|_| usage()),
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
    let addrs: Vec<_> = authority
        .to_socket_addrs()
        .unwrap_or_else(|e| {
            eprintln!("{authority}: {e}");
            std::process::exit(2)
        })
        .collect();
    let body = match &grpc {
        Some(f) => Bytes::from(std::fs::read(f).unwrap_or_else(|e| {
            eprintln!("{f}: {e}");
            std::process::exit(2)
        })),
        None => Bytes::new(),
    };
    let mut b = Block::builder();
    b.field(":method", if grpc.is_some() { b"POST" } else { b"GET" })
        .field(":scheme", b"http")
        .field(":path", path.as_bytes())
        .field(":authority", authority.as_bytes())
        .field("user-agent", b"throng-h2-load");
    if grpc.is_some() {
        b.field("content-type", b"application/grpc")
            .field("te", b"trailers");
    }
    let block: Rc<[u8]> = b.build().fixed().expect("no slots").into();
    let target = Target {
        addrs,
        authority: authority.to_string(),
        tls: None,
        connect_timeout: Duration::from_secs(5),
        config: Config::default(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (ok, failed) = rt.block_on(tokio::task::LocalSet::new().run_until(async move {
        let mut clients = Vec::new();
        for _ in 0..conns.max(1) {
            match connect(&target).await {
                Ok(c) => clients.push(c),
                Err(o) => {
                    eprintln!("connect: {}", o.message.unwrap_or_default());
                    std::process::exit(1)
                }
            }
        }
        let ok = Rc::new(Cell::new(0u64));
        let failed = Rc::new(Cell::new(0u64));
        let end = match count {
            Some(_) => Instant::now() + Duration::from_secs(86_400),
            None => Instant::now() + Duration::from_secs_f64(secs),
        };
        let budget = Rc::new(Cell::new(count.unwrap_or(u64::MAX)));
        let grpc = grpc.is_some();
        let mut tasks = Vec::new();
        for u in 0..users {
            let c = clients[u % clients.len()].clone();
            let (block, body, ok, failed) =
                (block.clone(), body.clone(), ok.clone(), failed.clone());
            let budget = budget.clone();
            tasks.push(tokio::task::spawn_local(async move {
                while Instant::now() < end && budget.get() > 0 {
                    budget.set(budget.get() - 1);
                    let req = Request {
                        headers: &block,
                        body: body.clone(),
                        keep: Keep::default(),
                    };
                    match c.send(req).await {
                        Ok(r) if r.status == 200 && (!grpc || r.grpc_status == Some(0)) => {
                            ok.set(ok.get() + 1)
                        }
                        _ => failed.set(failed.get() + 1),
                    }
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        (ok.get(), failed.get())
    }));
    let total = ok + failed;
    println!("requests: {total} total, {total} started, {total} done, {ok} succeeded, {failed} failed, 0 errored, 0 timeout");
}
