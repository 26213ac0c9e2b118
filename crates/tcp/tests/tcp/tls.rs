//! `tcps://`: raw TCP over TLS, against the crate's own testbed with its self-signed
//! certificate and against Python's `ssl` echoing lines; the handshake timed as its own phase
//! once a connection, and each way TLS can fail (an untrusted certificate, a server that
//! speaks plain TCP, a CA file that cannot be read) ending in its class or its message, not a
//! hang.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use throng_core::step::ClientOptions;
use throng_core::{ErrorClass, Phase, Snapshot};
use throng_tcp::serve::{RunningTcp, TcpTarget};
use throng_tcp::status::OK;
use throng_tcp::{TcpClient, TcpOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::*;

/// A file of the test's own under the temporary directory, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, contents: &str) -> TempFile {
        let path = std::env::temp_dir().join(format!("throng-tcp-{}-{name}", std::process::id()));
        std::fs::write(&path, contents).unwrap();
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

async fn tls_target(framing: &str, split: bool) -> RunningTcp {
    TcpTarget {
        framing: framing.parse().unwrap(),
        split,
        tls: true,
        ..TcpTarget::default()
    }
    .start()
    .await
    .unwrap()
}

/// Options trusting `cacert` (or nothing but the web roots), or any certificate.
fn trusting(cacert: Option<&Path>, insecure: bool, framing: &str) -> ClientOptions {
    let tcp = TcpOptions {
        framing: framing.parse().unwrap(),
        ..TcpOptions::default()
    };
    let mut o = client_options(Duration::from_secs(2), tcp);
    o.cacert = cacert.map(Path::to_path_buf);
    o.insecure = insecure;
    o
}

/// Every one of `n` requests answered, each connection's handshake timed once.
fn all_answered(s: &Snapshot, n: u64, connections: u64, what: &str) {
    let what = format!("{what}: {}", errors(s));
    assert_eq!(s.total.samples, n, "{what}");
    assert_eq!(s.total.errors, 0, "{what}");
    assert_eq!(status(s, OK), n, "{what}");
    let phases = s.total.phases.as_deref().expect("tcps reports phases");
    assert_eq!(phases.of(Phase::Tls).len(), connections, "{what}");
    assert_eq!(phases.of(Phase::Connect).len(), connections, "{what}");
    for p in [Phase::Send, Phase::Wait, Phase::Receive] {
        assert_eq!(phases.of(p).len(), n, "{p:?} {what}");
    }
    assert_eq!(phases.new, connections, "{what}");
    assert_eq!(phases.reused, n - connections, "{what}");
    // A handshake is a round trip and two of rustls' computations: never nothing.
    assert!(phases.of(Phase::Tls).min() >= 1, "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcps_to_the_testbed_trusting_its_certificate_times_the_handshake_once_a_connection() {
    // Lines whole, and length prefixes split across TLS records.
    for (framing, split) in [("line", false), ("len4", true)] {
        let server = tls_target(framing, split).await;
        let ca = TempFile::new(
            &format!("ca-{framing}.pem"),
            server.cert_pem.as_ref().unwrap(),
        );
        assert!(
            server.url().starts_with("tcps://127.0.0.1:"),
            "{}",
            server.url()
        );
        // The certificate names localhost too: looked up, and checked against that name.
        let by_name = format!("tcps://localhost:{}", server.addr.port());
        for (name, url, plan) in [
            ("closed", server.url(), closed(2, 5)),
            ("open", by_name, open(50.0, Some(10), None)),
        ] {
            let before = (server.requests(), server.connections());
            let options = trusting(Some(&ca.0), false, framing);
            let s = run(plan, steps(&url, b"hello", Some("hello"), &options)).await;
            let what = format!("{framing} {name}");
            let conns = server.connections() - before.1;
            all_answered(&s, 10, conns, &what);
            assert_eq!(server.requests() - before.0, 10, "{what}");
            if name == "closed" {
                assert_eq!(conns, 2, "one connection a user: {what}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_takes_any_certificate_and_without_it_an_untrusted_one_is_class_tls() {
    let server = tls_target("line", false).await;
    let options = trusting(None, true, "line");
    let s = run(
        closed(2, 4),
        steps(&server.url(), b"x", Some("x"), &options),
    )
    .await;
    all_answered(&s, 8, 2, "insecure");
    // The web roots do not hold a certificate made a moment ago.
    let requests = server.requests();
    let options = trusting(None, false, "line");
    let s = run(closed(2, 4), steps(&server.url(), b"x", None, &options)).await;
    let what = errors(&s);
    assert_eq!(s.total.samples, 8, "{what}");
    assert_eq!(class(&s, ErrorClass::Tls), 8, "{what}");
    assert!(what.contains("UnknownIssuer"), "{what}");
    assert_eq!(
        server.requests(),
        requests,
        "no request reached the server: {what}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_speaking_plain_tcp_behind_tcps_is_class_tls_at_once() {
    // A plain server that greets first, as SMTP's and many internal services do: its greeting
    // is no TLS record.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = s.write_all(b"220 plain text here\r\n").await;
                let mut sink = [0u8; 1024];
                while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
            });
        }
    });
    let url = format!("tcps://127.0.0.1:{port}");
    for (name, plan) in [
        ("closed", closed(2, 4)),
        ("open", open(40.0, Some(8), None)),
    ] {
        let started = std::time::Instant::now();
        let options = trusting(None, true, "line");
        let s = run(plan, steps(&url, b"x", None, &options)).await;
        let what = format!("{name}: {}", errors(&s));
        assert_eq!(s.total.samples, 8, "{what}");
        assert_eq!(class(&s, ErrorClass::Tls), 8, "{what}");
        // Not the connect timeout (2 s) waited out: the first bytes give it away.
        assert!(started.elapsed() < Duration::from_millis(1500), "{what}");
    }
}

#[test]
fn a_ca_file_that_cannot_be_read_or_a_ca_for_plain_tcp_is_said_before_any_load() {
    let missing = std::env::temp_dir().join("throng-tcp-no-such-ca.pem");
    let options = trusting(Some(&missing), false, "line");
    let e = TcpClient::new("tcps://127.0.0.1:9", TcpOptions::default(), &options).unwrap_err();
    assert!(e.contains("cannot use CA file"), "{e}");
    assert!(e.contains("throng-tcp-no-such-ca.pem"), "{e}");
    let empty = TempFile::new("empty.pem", "not a certificate\n");
    let options = trusting(Some(&empty.0), false, "line");
    let e = TcpClient::new("tcps://127.0.0.1:9", TcpOptions::default(), &options).unwrap_err();
    assert!(e.contains("no PEM certificate"), "{e}");
    let e = TcpClient::new("tcp://127.0.0.1:9", TcpOptions::default(), &options).unwrap_err();
    assert_eq!(
        e,
        "--cacert applies to tcps:// targets; tcp://127.0.0.1:9 is plain tcp"
    );
}

/// Python's `ssl` over `socketserver`, echoing lines: its certificate and key files as
/// arguments; prints its port, then serves.
const TLS_ECHO: &str = r#"
import socketserver, ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
class Echo(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            line = self.rfile.readline()
            if not line:
                return
            self.wfile.write(line)
class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    def get_request(self):
        sock, addr = self.socket.accept()
        return ctx.wrap_socket(sock, server_side=True), addr
server = Server(("127.0.0.1", 0), Echo)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// A child process, killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pythons_ssl_server_echoes_lines_over_tcps() {
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let cert = rcgen::generate_simple_self_signed(names).unwrap();
    let pem = TempFile::new("py-cert.pem", &cert.cert.pem());
    let key = TempFile::new("py-key.pem", &cert.key_pair.serialize_pem());
    let mut child = Command::new("/usr/bin/python3")
        .args(["-u", "-c", TLS_ECHO])
        .arg(&pem.0)
        .arg(&key.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("/usr/bin/python3 runs");
    let stdout = child.stdout.take().unwrap();
    let _child = Killed(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let port: u16 = line.trim().parse().unwrap_or_else(|_| panic!("{line:?}"));
    let url = format!("tcps://127.0.0.1:{port}");
    for (name, plan) in [
        ("closed", closed(3, 10)),
        ("open", open(100.0, Some(30), None)),
    ] {
        let options = trusting(Some(&pem.0), false, "line");
        let driver = steps(&url, b"hello there", Some("hello there"), &options);
        let s = run(plan, driver).await;
        let phases = s.total.phases.as_deref().expect("tcps reports phases");
        let conns = phases.new;
        all_answered(&s, 30, conns, name);
        assert!((1..=30).contains(&conns), "{name}: {conns} connections");
    }
}
