//! The client against grpc-go (Debian's 1.33), a gRPC stack no one here wrote: its health
//! service's unary Check (a gRPC frame with `te: trailers`; grpc-status in the trailers, or in
//! a trailers-only answer), 200 calls at once on one connection (grpc-go pings at every batch
//! it reads, for its bandwidth estimate), and its server-streaming Watch read as it arrives and
//! dropped halfway. The server is `testdata/grpc/server.go`, built as the root's gRPC tests
//! build it (`scripts/test` installs golang-go and golang-google-grpc-dev); the test fails,
//! never skips, without Go.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::Duration;

use throng_h2::client::{connect, Target};
use throng_h2::conn::{Config, Keep, Request};
use tokio::task::LocalSet;
use tokio::time::timeout;

mod common;
use common::{health_call, send, BOUND};

fn server_binary() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let bin = target.join("grpc-go-server");
    if !bin.exists() {
        let out = Command::new("go")
            .args(["build", "-o"])
            .arg(&bin)
            .arg(root.join("testdata/grpc/server.go"))
            .env("GO111MODULE", "off")
            .env("GOPATH", "/usr/share/gocode")
            .output()
            .expect("go is installed (apt-get install golang-go golang-google-grpc-dev)");
        assert!(
            out.status.success(),
            "building the grpc-go server: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    bin
}

/// The running server; killed when dropped.
struct GoServer {
    child: Child,
    addr: SocketAddr,
}

impl GoServer {
    fn start() -> GoServer {
        let mut child = Command::new(server_binary())
            .args(["-addr", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("the grpc-go server starts");
        let mut line = String::new();
        let out = child.stdout.take().expect("stdout");
        BufReader::new(out)
            .read_line(&mut line)
            .expect("its address");
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .expect("listening on")
            .parse()
            .expect("an address");
        GoServer { child, addr }
    }
}

impl Drop for GoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn grpc_go_unary_many_at_once_and_a_server_stream() {
    let server = GoServer::start();
    let addr = server.addr;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(LocalSet::new().run_until(async move {
        let t = Target {
            addrs: vec![addr],
            authority: addr.to_string(),
            tls: None,
            connect_timeout: Duration::from_secs(5),
            config: Config::default(),
        };
        let c = connect(&t).await.expect("connect");
        let auth = addr.to_string();
        let (h, b) = health_call(&auth, "Check", "throng.Test");
        let r = send(&c, &h, b).await.expect("Check");
        assert_eq!((r.status, r.grpc_status), (200, Some(0)));
        // HealthCheckResponse{status: SERVING}.
        assert_eq!(&r.body[..], &[0, 0, 0, 0, 2, 0x08, 0x01]);
        assert!(r
            .trailers
            .iter()
            .any(|(n, v)| n == b"grpc-status" && v == b"0"));
        let (h, b) = health_call(&auth, "Check", "no.Such");
        let r = send(&c, &h, b).await.expect("Check");
        assert_eq!(r.grpc_status, Some(5), "NOT_FOUND");
        assert!(r.body.is_empty(), "trailers-only");
        // 200 at once.
        let (h, b) = health_call(&auth, "Check", "throng.Test");
        let h = Rc::new(h);
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..200 {
            let (c, h, b) = (c.clone(), h.clone(), b.clone());
            set.spawn_local(async move { send(&c, &h, b).await });
        }
        while let Some(r) = set.join_next().await {
            assert_eq!(r.expect("task").expect("Check").grpc_status, Some(0));
        }
        // Watch streams the status and then every change: the first message as it comes, then
        // the call dropped (reset) and the connection going on.
        let (h, b) = health_call(&auth, "Watch", "throng.Test");
        let req = Request {
            headers: &h,
            body: b,
            keep: Keep::default(),
        };
        let mut watch = c.send_streaming(req).expect("Watch");
        let first = timeout(BOUND, watch.data()).await.expect("bounded");
        assert_eq!(first.as_deref(), Some(&[0, 0, 0, 0, 2, 0x08, 0x01][..]));
        drop(watch);
        let (h, b) = health_call(&auth, "Check", "throng.Test");
        let r = send(&c, &h, b).await.expect("after the reset");
        assert_eq!(r.grpc_status, Some(0));
        assert!(c.is_usable());
    }));
}
