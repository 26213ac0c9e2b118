//! The server's own counters beside a run: `/varz` read idle, through the load and after it,
//! into core's watch readings, the figures the server itself counted.

use std::sync::Arc;
use std::time::Duration;

use throng_core::watch::{Server, Watched};
use throng_core::{DatabaseEvent, ErrorClass, FigureKind};
use throng_nats::monitor::{figures, Varz};
use throng_nats::NatsStep;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn varz_is_read_idle_under_load_and_after_it() {
    let server = NatsServer::start().unwrap();
    let responder = Responder::start(&server, "greeter", &[]);
    let varz = Varz::new(&server.monitor_url(), Duration::from_secs(2)).unwrap();
    let watched = Watched::idle(
        vec![varz],
        Duration::from_millis(1200),
        Duration::from_millis(100),
    )
    .await;
    assert!(watched.notes().is_empty(), "{:?}", watched.notes());
    let mut readings = watched.take().unwrap()();
    let s = run(
        closed_for(2, Duration::from_millis(1500)),
        Arc::new(steps(
            &server.url("greeter"),
            &options(),
            NatsStep::request("x"),
        )),
    )
    .await;
    let done = row(&s).samples;
    assert!(done > 0 && row(&s).errors == 0, "{}", errors(&s));
    readings.load_ended.send(()).unwrap();
    let mut events = Vec::new();
    while let Some(e) = readings.events.recv().await {
        events.push(e);
    }
    assert!(readings.warnings.await.unwrap().is_empty());
    let DatabaseEvent::Info(info) = &events[0] else {
        panic!("the first event names the server: {:?}", events[0]);
    };
    assert_eq!(info.figures, figures());
    // Open connections are a level, the rest running totals.
    let gauges: Vec<&str> = info
        .figures
        .iter()
        .filter(|f| f.kind == FigureKind::Gauge)
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(gauges, ["connections"]);
    assert!(info.transactions.is_empty());
    assert!(
        info.name.contains(&server.monitor.to_string()),
        "{}",
        info.name
    );
    let samples: Vec<_> = events[1..]
        .iter()
        .map(|e| match e {
            DatabaseEvent::Sample(0, s) => s.clone(),
            e => panic!("{e:?}"),
        })
        .collect();
    // Idle: now and a second later, then the rest of the window (negative t); the load's
    // once a second; the last after it.
    let idle: Vec<_> = samples.iter().filter(|s| s.t < 0.0).collect();
    assert_eq!(idle.len(), 3, "{samples:?}");
    assert!(samples.len() >= idle.len() + 2, "{samples:?}");
    let (before, after) = (idle.last().unwrap(), samples.last().unwrap());
    assert!(after.t > 1.5, "{}", after.t);
    let ix = |name: &str| info.figures.iter().position(|c| c.name == name).unwrap();
    // The load's messages as the server counted them: every request and its reply, in and
    // out (the responder's queue subscription and throng's reply inbox).
    let d = |name: &str| after.values[ix(name)] - before.values[ix(name)];
    assert_eq!(d("in_msgs"), 2 * done);
    assert_eq!(d("out_msgs"), 2 * done);
    assert!(d("in_bytes") >= 2 * done);
    assert_eq!(d("slow_consumers"), 0);
    // Idle, nothing moved.
    assert_eq!(idle[0].values[ix("in_msgs")], before.values[ix("in_msgs")]);
    // Open connections: the responder's, then throng's two workers' as well.
    assert_eq!(before.values[ix("connections")], 1);
    assert_eq!(responder.stop(), done);
}

#[tokio::test(flavor = "current_thread")]
async fn a_port_that_is_not_a_monitor_is_said() {
    let server = NatsServer::start().unwrap();
    // The client port answers NATS's INFO, not HTTP.
    let mut v = Varz::new(
        &format!("http://127.0.0.1:{}", server.port),
        Duration::from_secs(1),
    )
    .unwrap();
    let e = v.read().await.unwrap_err();
    assert!(e.message.contains("varz"), "{e}");
    assert_eq!(e.class, ErrorClass::Protocol, "{e}");
    let mut closed = Varz::new(
        &format!("http://127.0.0.1:{}", free_port()),
        Duration::from_secs(1),
    )
    .unwrap();
    assert_eq!(closed.read().await.unwrap_err().class, ErrorClass::Connect);
    assert!(Varz::new("127.0.0.1:8222", Duration::from_secs(1)).is_err());
}
