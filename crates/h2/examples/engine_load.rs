//! throng-h2's client under throng's engine, as HTTP's and gRPC's drivers will run it: a
//! `Driver` whose workers each keep a `Pool` of `--connections` (one by default) and whose
//! users each hold a seat on one of them, closed loop, one worker thread, the engine timing and
//! recording every request in its histograms. For `benches/h2.sh`, beside the bare `load`
//! example and h2load; prints the same `requests:` line as they do.
//!
//! ```text
//! cargo run --release -p throng-h2 --example engine_load -- http://127.0.0.1:8080/ -c 50 -z 5
//! ```

mod common;

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use throng_core::{ClosedLoop, Driver, ErrorClass, LoadModel, Outcome, RunPlan, StepInfo, Users};
use throng_h2::client::Target;
use throng_h2::conn::{Keep, Request};
use throng_h2::pool::{Pool, Seat, SendError};

struct H2Driver {
    target: Target,
    block: Vec<u8>,
    body: Bytes,
    grpc: bool,
    users: usize,
    conns: usize,
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
        Rc::new(Pool::new(self.target.clone(), self.users, Some(self.conns)))
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

fn main() {
    let a = common::args("engine_load", "throng-h2-engine");
    let url = format!("http://{}", a.target.authority);
    let (users, count, secs) = (a.users, a.count, a.secs);
    let driver = H2Driver {
        target: a.target,
        block: a.block,
        body: a.body,
        grpc: a.grpc,
        users,
        conns: a.conns,
    };
    let mut plan = RunPlan::new(
        url,
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
    common::print_requests(t.samples - t.errors, t.errors);
    for e in &snap.errors {
        eprintln!("{e:?}");
    }
}
