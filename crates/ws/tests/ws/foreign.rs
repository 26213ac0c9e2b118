//! Against a WebSocket server no one here wrote: Python's `websockets`, which pings on its own
//! and closes a connection whose pongs are late. The test fails, never skips, when it cannot
//! start.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use throng_core::ErrorClass;
use throng_ws::status::{self, OPEN};
use throng_ws::{Until, WsStep};

use crate::common::*;

/// The server's process, killed when dropped.
struct Python {
    child: Child,
    port: u16,
}

impl Drop for Python {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Python {
    /// Starts the echo server for at most 60 s; panics, with Python's words, if it cannot.
    fn start() -> Python {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ws/echo_server.py");
        let mut child = Command::new("/usr/bin/python3")
            .arg(script)
            .arg("60")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("/usr/bin/python3 runs (apt-get install -y python3-websockets)");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
        match line.trim().parse() {
            Ok(port) => Python { child, port },
            Err(_) => {
                let _ = child.kill();
                let mut why = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = e.read_to_string(&mut why);
                }
                let _ = child.wait();
                panic!(
                    "Python's websockets server did not start (apt-get install -y \
                     python3-websockets): {line:?} {why}"
                );
            }
        }
    }

    fn url(&self) -> String {
        format!("ws://127.0.0.1:{}/echo", self.port)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pythons_websockets_echoes_every_message_counted_once() {
    let py = Python::start();
    let s = run(
        closed(2, 10),
        steps(&py.url(), &options(), WsStep::text(["one", "{\"two\": 2}"])),
    )
    .await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (20, 0), "{}", errors(&s));
    assert_eq!(parts(&s).samples, 40);
    assert_eq!(status_count(&s, OPEN), 20);
}

#[tokio::test(flavor = "current_thread")]
async fn its_pings_are_answered_and_its_close_code_is_the_status() {
    let py = Python::start();
    // Listening 600 ms through a dozen of its pings: a pong late by 200 ms would have it close
    // the connection (1011), failing the step.
    let listen = steps(
        &py.url(),
        &options(),
        WsStep::text(Vec::<String>::new()).until(Until::For(Duration::from_millis(600))),
    );
    let mut session = throng_core::Driver::session(&listen, &(), 0);
    let (o, reply) = listen.send(&mut session, true).await;
    assert_eq!(o.error, None, "{:?}", o.message);
    assert_eq!(o.status, OPEN);
    assert_eq!(reply.unwrap().meta("messages"), Some("0"));
    assert!(session.inner.is_connected());
    // The same connection still echoes.
    let echo = steps(&py.url(), &options(), WsStep::text(["still here"]));
    let (o, reply) = echo.send(&mut session, true).await;
    assert_eq!(o.error, None, "{:?}", o.message);
    assert_eq!(&reply.unwrap().body[..], b"still here");
    // Its close, with an application's code and reason.
    let close = steps(&py.url(), &options(), WsStep::text(["close"]));
    let (o, reply) = close.send(&mut session, true).await;
    assert_eq!(o.error, Some(ErrorClass::Status), "{:?}", o.message);
    assert_eq!(o.status, status::status(4001));
    assert_eq!(reply.unwrap().meta("close-reason"), Some("asked"));
    assert!(!session.inner.is_connected());
    // The next step opens another connection.
    let (o, _) = echo.send(&mut session, false).await;
    assert_eq!(o.error, None, "{:?}", o.message);
}
