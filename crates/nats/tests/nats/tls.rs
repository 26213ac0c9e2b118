//! `tls://`: NATS over TLS against nats-server started with `--tls` and a certificate made by
//! the test: request–reply answered by a responder connected over TLS, publish–consume with
//! throng's subscribers over TLS too, and each way TLS can fail (an untrusted certificate, a
//! plain server behind `tls://`, a CA file that cannot be read) ending in its class or its
//! message, not a hang.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use throng_core::step::ClientOptions;
use throng_core::ErrorClass;
use throng_nats::status::OK;
use throng_nats::{Mode, NatsClient, NatsOptions, NatsStep};

use crate::common::*;

/// A certificate for 127.0.0.1 and its key, in files removed on drop.
struct Cert {
    dir: PathBuf,
}

impl Cert {
    fn new() -> Cert {
        let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let cert = rcgen::generate_simple_self_signed(names).unwrap();
        let dir = std::env::temp_dir().join(format!("throng-nats-tls-{}", free_port()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cert.pem"), cert.cert.pem()).unwrap();
        std::fs::write(dir.join("key.pem"), cert.key_pair.serialize_pem()).unwrap();
        Cert { dir }
    }

    fn pem(&self) -> PathBuf {
        self.dir.join("cert.pem")
    }

    /// nats-server requiring TLS with this certificate.
    fn server(&self) -> NatsServer {
        let (cert, key) = (self.pem(), self.dir.join("key.pem"));
        let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
        NatsServer::with_args(&["--tls", "--tlscert", cert, "--tlskey", key]).unwrap()
    }
}

impl Drop for Cert {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn trusting(cacert: Option<&Path>, insecure: bool, own: NatsOptions) -> ClientOptions {
    let mut o = with(own);
    o.cacert = cacert.map(Path::to_path_buf);
    o.insecure = insecure;
    o
}

/// A responder on async-nats over TLS: answers `hello PAYLOAD`, counting what it answered.
async fn responder(port: u16, ca: &Path, subject: &str) -> Arc<std::sync::atomic::AtomicU64> {
    let client = async_nats::ConnectOptions::new()
        .require_tls(true)
        .add_root_certificates(ca.to_path_buf())
        .connect(format!("tls://127.0.0.1:{port}"))
        .await
        .unwrap();
    let mut sub = client.subscribe(subject.to_string()).await.unwrap();
    client.flush().await.unwrap();
    let answered = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = answered.clone();
    tokio::spawn(async move {
        while let Some(m) = sub.next().await {
            if let Some(reply) = m.reply {
                let mut body = b"hello ".to_vec();
                body.extend_from_slice(&m.payload);
                let _ = client.publish(reply, body.into()).await;
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    answered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_requests_are_answered_trusting_the_servers_certificate() {
    let cert = Cert::new();
    let server = cert.server();
    let answered = responder(server.port, &cert.pem(), "greeter").await;
    let url = format!("tls://127.0.0.1:{}/greeter", server.port);
    let opts = trusting(Some(&cert.pem()), false, NatsOptions::default());
    let in_before = counter(&server, "in_msgs").await;
    let plan = Arc::new(steps(&url, &opts, NatsStep::request("world")));
    assert_eq!(plan.client().shown_url(), url);
    let s = run(closed(3, 20), plan.clone()).await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (60, 0), "{}", errors(&s));
    assert_eq!(status_count(&s, OK), 60);
    assert_eq!(answered.load(std::sync::atomic::Ordering::Relaxed), 60);
    assert_eq!(counter(&server, "in_msgs").await - in_before, 120);
    assert_eq!(count(&plan, "nats_connections"), 2);
    // The same server taken on any certificate.
    let opts = trusting(None, true, NatsOptions::default());
    let s = run(
        closed(1, 5),
        Arc::new(steps(&url, &opts, NatsStep::request("x"))),
    )
    .await;
    assert_eq!((row(&s).samples, row(&s).errors), (5, 0), "{}", errors(&s));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_publish_consume_delivers_every_message_to_subscribers_over_tls() {
    let cert = Cert::new();
    let server = cert.server();
    let url = format!("tls://127.0.0.1:{}/ticks", server.port);
    let own = NatsOptions {
        mode: Mode::Publish,
        subscribers: 2,
        ..NatsOptions::default()
    };
    let opts = trusting(Some(&cert.pem()), false, own);
    let plan = Arc::new(steps(&url, &opts, NatsStep::publish("tick")));
    let s = run(closed(2, 20), plan.clone()).await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (40, 0), "{}", errors(&s));
    assert_eq!(parts(&s).samples, 80);
    for (name, want) in [
        ("nats_published", 40),
        ("nats_delivered", 40),
        ("nats_lost", 0),
        ("nats_subscribers", 2),
    ] {
        assert_eq!(count(&plan, name), want, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_certificate_and_a_plain_server_behind_tls_are_class_tls_at_once() {
    let cert = Cert::new();
    let tls_server = cert.server();
    let plain = NatsServer::start().unwrap();
    for (what, port) in [("untrusted", tls_server.port), ("plain", plain.port)] {
        let url = format!("tls://127.0.0.1:{port}/greeter");
        // The web roots do not hold the test's certificate; the plain server takes any.
        let opts = trusting(None, what == "plain", NatsOptions::default());
        let started = Instant::now();
        let s = run(
            closed(2, 3),
            Arc::new(steps(&url, &opts, NatsStep::request("x"))),
        )
        .await;
        let r = row(&s);
        let m = format!("{what}: {}", errors(&s));
        assert_eq!(r.samples, 6, "{m}");
        assert_eq!(class(r, ErrorClass::Tls), 6, "{m}");
        // The engine backs off between failed connects; no connect timeout waited out.
        assert!(started.elapsed() < Duration::from_secs(10), "{m}");
    }
}

#[test]
fn a_ca_file_that_cannot_be_read_or_a_ca_for_plain_nats_is_said_before_any_load() {
    let missing = std::env::temp_dir().join("throng-nats-no-such-ca.pem");
    let opts = trusting(Some(&missing), false, NatsOptions::default());
    let e = NatsClient::new("tls://127.0.0.1:4222/x", &opts).unwrap_err();
    assert!(e.contains("cannot use CA file"), "{e}");
    assert!(e.contains("throng-nats-no-such-ca.pem"), "{e}");
    let e = NatsClient::new("nats://127.0.0.1:4222/x", &opts).unwrap_err();
    assert_eq!(
        e,
        "--cacert applies to tls:// targets; nats://127.0.0.1:4222/x is plain NATS"
    );
    // -k alone means nothing to plain NATS, and is no error (another side may be TLS).
    let opts = trusting(None, true, NatsOptions::default());
    assert!(NatsClient::new("nats://127.0.0.1:4222/x", &opts).is_ok());
}

/// nats-server with `--tlsverify` requires a client certificate of its `--tlscacert`: with
/// `--cert` and `--key` (`ClientOptions::identity`) every message is published and delivered
/// to throng's subscriber; without a certificate, or with another CA's, every request fails as
/// `tls`, promptly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_verify_takes_the_client_certificate_of_its_ca() {
    let cert = Cert::new();
    let write = |name: &str, text: &str| {
        let p = cert.dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let clients = throng_net::TestCa::new("clients' CA").unwrap();
    let (c, k) = clients.issue("throng").unwrap();
    let right = (write("client.pem", &c), write("client.key", &k));
    let (c, k) = throng_net::TestCa::new("another CA")
        .unwrap()
        .issue("throng")
        .unwrap();
    let stranger = (write("stranger.pem", &c), write("stranger.key", &k));
    let ca = write("clients.pem", &clients.pem());
    let (pem, key) = (cert.pem(), cert.dir.join("key.pem"));
    let server = NatsServer::with_args(&[
        "--tls",
        "--tlscert",
        pem.to_str().unwrap(),
        "--tlskey",
        key.to_str().unwrap(),
        "--tlsverify",
        "--tlscacert",
        ca.to_str().unwrap(),
    ])
    .unwrap();
    let url = format!("tls://127.0.0.1:{}/ticks", server.port);
    let own = NatsOptions {
        mode: Mode::Publish,
        subscribers: 1,
        ..NatsOptions::default()
    };
    let shown = |pair: Option<&(PathBuf, PathBuf)>| {
        let mut o = trusting(Some(&cert.pem()), false, own.clone());
        o.identity = pair.map(|(cert, key)| throng_core::step::Identity {
            cert: cert.clone(),
            key: key.clone(),
        });
        o
    };
    let plan = Arc::new(steps(&url, &shown(Some(&right)), NatsStep::publish("t")));
    let s = run(closed(2, 10), plan.clone()).await;
    assert_eq!((row(&s).samples, row(&s).errors), (20, 0), "{}", errors(&s));
    assert_eq!(count(&plan, "nats_delivered"), 20);
    for (what, pair) in [("none", None), ("another CA's", Some(&stranger))] {
        let started = Instant::now();
        let plan = Arc::new(steps(&url, &shown(pair), NatsStep::publish("t")));
        let s = run(closed(2, 3), plan).await;
        let m = format!("{what}: {}", errors(&s));
        assert_eq!(row(&s).samples, 6, "{m}");
        assert_eq!(class(row(&s), ErrorClass::Tls), 6, "{m}");
        assert!(started.elapsed() < Duration::from_secs(10), "{m}");
    }
}
