//! A minimal closed-loop load driver on throng-h2, for `benches/h2.sh` to set beside h2load:
//! one thread (a current-thread runtime and a `LocalSet`, as one of the engine's workers),
//! `-c` users sharing `--connections` connections, each sending its request again as soon as
//! the last response ends, for `-z` seconds or `-n` requests in all. Prints a line in h2load's
//! shape: `requests: T total, T started, T done, N succeeded, F failed, 0 errored, 0 timeout`.
//!
//! ```text
//! cargo run --release -p throng-h2 --example load -- http://127.0.0.1:8080/ -c 50 -z 5
//! cargo run --release -p throng-h2 --example load -- http://127.0.0.1:8080/g.S/M -c 50 -z 5 --grpc frame.bin
//! ```

mod common;

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use throng_h2::client::connect;
use throng_h2::conn::{Keep, Request};

fn main() {
    let a = common::args("load", "throng-h2-load");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (ok, failed) = rt.block_on(tokio::task::LocalSet::new().run_until(async move {
        let mut clients = Vec::new();
        for _ in 0..a.conns {
            match connect(&a.target).await {
                Ok(c) => clients.push(c),
                Err(o) => {
                    eprintln!("connect: {}", o.message.unwrap_or_default());
                    std::process::exit(1)
                }
            }
        }
        let ok = Rc::new(Cell::new(0u64));
        let failed = Rc::new(Cell::new(0u64));
        let end = match a.count {
            Some(_) => Instant::now() + Duration::from_secs(86_400),
            None => Instant::now() + Duration::from_secs_f64(a.secs),
        };
        let budget = Rc::new(Cell::new(a.count.unwrap_or(u64::MAX)));
        let block: Rc<[u8]> = a.block.into();
        let mut tasks = Vec::new();
        for u in 0..a.users {
            let c = clients[u % clients.len()].clone();
            let (block, body, grpc) = (block.clone(), a.body.clone(), a.grpc);
            let (ok, failed, budget) = (ok.clone(), failed.clone(), budget.clone());
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
    common::print_requests(ok, failed);
}
