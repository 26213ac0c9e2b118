//! Client certificates (mutual TLS) against real servers that require one: the testbed's
//! HTTPS, gRPC over TLS and `tcps://` servers, each with a CA of its own for clients
//! (`client_ca`, rustls' `WebPkiClientVerifier`). With `--cert` and `--key` of that CA every
//! request succeeds; without a certificate, or with another CA's, every one fails as `tls`, and
//! promptly; files that cannot be used, or the flags where they mean nothing, exit 2 naming
//! the file or the flags before any load.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::path::{Path, PathBuf};
use std::sync::Arc;

use throng::core::{ErrorClass, Snapshot};
use throng::testbed::{GrpcTarget, HttpTarget, RunningTarget, TestCa};

use crate::common::{errors_of, grpc_run, run, run_file, throng};

/// The files of a run: the server's certificate (for `--cacert`), a client certificate and key
/// of the CA the servers require, another CA's pair, and a key that is not the certificate's.
struct Files {
    _dir: tempfile::TempDir,
    /// The CA the servers require clients' certificates of (PEM), for `client_ca`.
    ca: String,
    cert: PathBuf,
    key: PathBuf,
    stranger: PathBuf,
    stranger_key: PathBuf,
    dir: PathBuf,
}

impl Files {
    fn new() -> Files {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let ca = TestCa::new("clients' CA").unwrap();
        let (cert, key) = ca.issue("throng").unwrap();
        let (stranger, stranger_key) = TestCa::new("another CA").unwrap().issue("x").unwrap();
        Files {
            ca: ca.pem(),
            cert: write("cert.pem", &cert),
            key: write("key.pem", &key),
            stranger: write("stranger.pem", &stranger),
            stranger_key: write("stranger.key", &stranger_key),
            dir: dir.path().to_path_buf(),
            _dir: dir,
        }
    }

    /// The server's certificate written as `server.pem`, for `--cacert`.
    fn server(&self, pem: Option<&String>) -> String {
        let p = self.dir.join("server.pem");
        std::fs::write(&p, pem.unwrap()).unwrap();
        s(&p)
    }

    /// An HTTPS target requiring a certificate of the clients' CA, and its own certificate's
    /// file for `--cacert`.
    async fn https(&self) -> (RunningTarget, String) {
        let target = HttpTarget {
            tls: true,
            client_ca: Some(self.ca.clone()),
            ..HttpTarget::default()
        }
        .start()
        .await
        .unwrap();
        let ca = self.server(target.cert_pem.as_ref());
        (target, ca)
    }

    /// The three ways of showing oneself: the right pair, none, another CA's pair.
    fn identities(&self) -> [(&'static str, Vec<String>); 3] {
        [
            (
                "right",
                vec!["--cert".into(), s(&self.cert), "--key".into(), s(&self.key)],
            ),
            ("none", vec![]),
            (
                "another CA's",
                vec![
                    "--cert".into(),
                    s(&self.stranger),
                    "--key".into(),
                    s(&self.stranger_key),
                ],
            ),
        ]
    }
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// `base` followed by `extra`, as `&str`s.
fn args<'a>(base: &[&'a str], extra: &'a [String]) -> Vec<&'a str> {
    base.iter()
        .copied()
        .chain(extra.iter().map(String::as_str))
        .collect()
}

/// Runs `run`, 20 requests made as `who` showed itself (one of [`Files::identities`]), and
/// checks it: all answered with the right pair, else all failed as `tls`; within the 5 s
/// request timeout either way (a refused certificate is no hang). How many were answered.
async fn judged(who: &str, run: impl std::future::Future<Output = Arc<Snapshot>>) -> u64 {
    let started = std::time::Instant::now();
    let s = run.await;
    let case = format!("{who}: {:?}", s.errors);
    assert_eq!(s.total.samples, 20, "{case}");
    assert!(started.elapsed().as_secs() < 5, "{case}: no hang");
    match who {
        "right" => {
            assert_eq!(s.total.errors, 0, "{case}");
            20
        }
        _ => {
            assert_eq!(errors_of(&s, ErrorClass::Tls), 20, "{case}");
            0
        }
    }
}

/// HTTPS over HTTP/1.1 and HTTP/2: the right certificate is served every request; none, or
/// another CA's, fails every request as `tls`, within the run's bound (no hang), and none
/// reaches the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_takes_the_certificate_its_server_requires() {
    let f = Files::new();
    let (target, ca) = f.https().await;
    let url = format!("https://localhost:{}/", target.addr.port());
    let mut served = 0;
    for http2 in [false, true] {
        for (who, extra) in f.identities() {
            let mut base = vec![url.as_str(), "-c", "2", "-n", "20", "--cacert", &ca];
            base.extend(["-t", "5s", "--connect-timeout", "5s"]);
            if http2 {
                base.push("--http2");
            }
            served += judged(who, run(&args(&base, &extra))).await;
            assert_eq!(target.requests(), served, "{who}, http2 {http2}");
        }
    }
}

/// gRPC over TLS: the same three ways, every call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcs_takes_the_certificate_its_server_requires() {
    let f = Files::new();
    let t = GrpcTarget {
        tls: true,
        client_ca: Some(f.ca.clone()),
        ..GrpcTarget::default()
    };
    let t = t.start().await.unwrap();
    let ca = f.server(t.cert_pem.as_ref());
    let url = t.url();
    let mut served = 0;
    for (who, extra) in f.identities() {
        let base = [
            url.as_str(),
            "--call",
            "helloworld.Greeter/SayHello",
            "--proto",
            "crates/testbed/proto/greeter.proto",
            "-c",
            "2",
            "-n",
            "20",
            "-t",
            "5s",
            "--cacert",
            &ca,
        ];
        served += judged(who, grpc_run(&args(&base, &extra))).await;
        assert_eq!(t.calls(), served, "{who}");
    }
}

/// `tcps://` through the binary: the same three ways, counted in its JSON result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcps_takes_the_certificate_its_server_requires() {
    let f = Files::new();
    let mut server = throng_tcp::serve::TcpTarget::default();
    (server.tls, server.client_ca) = (true, Some(f.ca.clone()));
    let server = server.start().await.unwrap();
    let ca = f.server(server.cert_pem.as_ref());
    let json = s(&f.dir.join("r.json"));
    let url = server.url();
    let mut served = 0;
    for (who, extra) in f.identities() {
        let base = [
            "run", &url, "-d", "PING\\n", "--cacert", &ca, "-c", "2", "-n", "20", "-t", "5s",
            "--no-tui", "--json", &json,
        ];
        let all: Vec<String> = args(&base, &extra).iter().map(|a| a.to_string()).collect();
        let o = tokio::task::spawn_blocking(move || {
            throng(&all.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .await
        .unwrap();
        let said = String::from_utf8_lossy(&o.stderr).to_string();
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(r["total"]["samples"], 20, "{who}: {r}");
        match who {
            "right" => {
                assert_eq!(o.status.code(), Some(0), "{who}: {said}");
                assert_eq!(r["total"]["errors"], 0, "{who}: {r}");
                served += 20;
            }
            _ => {
                let tls = r["errors"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|e| e["class"] == "tls")
                    .map(|e| e["count"].as_u64().unwrap())
                    .sum::<u64>();
                assert_eq!(tls, 20, "{who}: {r}");
            }
        }
        assert_eq!(server.requests(), served, "{who}");
    }
}

/// A certificate or key that cannot be used, one without the other, or either on a plain
/// target: exit 2 naming the file or the flags, and no request reaches the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_client_certificates_are_refused_before_any_load() {
    let f = Files::new();
    let (target, ca) = f.https().await;
    let https = format!("https://localhost:{}/", target.addr.port());
    let plain = format!("http://127.0.0.1:{}/", target.addr.port());
    let missing = s(&f.dir.join("missing.key"));
    let (cert, key, stranger_key) = (s(&f.cert), s(&f.key), s(&f.stranger_key));
    let mut cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec![&https, "--cacert", &ca, "--cert", &cert, "--key", &missing],
            format!("cannot use client key {missing}: "),
        ),
        (
            vec![&https, "--cacert", &ca, "--cert", &missing, "--key", &key],
            format!("cannot use client certificate {missing}: "),
        ),
        (
            vec![
                &https,
                "--cacert",
                &ca,
                "--cert",
                &cert,
                "--key",
                &stranger_key,
            ],
            format!(
                "cannot use client key {stranger_key}: not the private key of the certificate \
                 in {cert}"
            ),
        ),
        (
            vec![&https, "--cacert", &ca, "--cert", &key, "--key", &key],
            format!("cannot use client certificate {key}: no PEM certificate in the file"),
        ),
        (
            vec![&https, "--cacert", &ca, "--cert", &cert],
            "--cert and --key go together (the client certificate and its private key); \
             --cert is given without --key"
                .into(),
        ),
        (
            vec![&https, "--key", &key],
            "--key is given without --cert".into(),
        ),
    ];
    // On a plain target of each protocol, as --cacert is refused there.
    let both = ["--cert", &cert, "--key", &key];
    let tcp = "--cert and --key apply to tcps:// targets; tcp://127.0.0.1:9 is plain tcp";
    for (url, own, says) in [
        (
            plain.as_str(),
            &[][..],
            format!("--cert and --key apply to https:// targets; {plain} is plain http"),
        ),
        (
            "grpc://127.0.0.1:9",
            &["--call", "a.B/C"][..],
            "--cert and --key apply to grpcs:// targets".into(),
        ),
        ("tcp://127.0.0.1:9", &["-d", "x"][..], tcp.into()),
        (
            "ws://127.0.0.1:9/",
            &["-d", "x"][..],
            "--cert and --key apply to wss:// targets".into(),
        ),
    ] {
        cases.push(([&[url][..], own, &both[..]].concat(), says));
    }
    let cases: Vec<(Vec<String>, String)> = cases
        .into_iter()
        .map(|(a, says)| (a.into_iter().map(String::from).collect(), says))
        .collect();
    tokio::task::spawn_blocking(move || {
        let cases: Vec<(Vec<&str>, String)> = cases
            .iter()
            .map(|(a, says)| (a.iter().map(String::as_str).collect(), says.clone()))
            .collect();
        crate::common::refused(&cases);
    })
    .await
    .unwrap();
    assert_eq!(target.connections(), 0, "no load reached the server");
}

/// A scenario file's HTTPS target takes `--cert` and `--key` as it takes `--cacert`: with the
/// right pair every iteration's request is answered; without, or with another CA's, each
/// fails as `tls`; one flag alone is refused, naming both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenarios_tls_targets_take_the_certificate() {
    let f = Files::new();
    let (target, ca) = f.https().await;
    let file = f.dir.join("mtls.yaml");
    std::fs::write(
        &file,
        format!(
            "targets: {{ t: 'https://localhost:{}' }}\nsteps:\n  - label: get\n    \
             request: {{ path: / }}\n",
            target.addr.port()
        ),
    )
    .unwrap();
    let mut served = 0;
    for (who, extra) in f.identities() {
        let base = ["-c", "2", "-i", "10", "-t", "5s", "--cacert", &ca];
        served += judged(who, run_file(&file, &args(&base, &extra))).await;
        assert_eq!(target.requests(), served, "{who}");
    }
    let run = crate::common::parse([
        "throng",
        "run",
        file.to_str().unwrap(),
        "--cert",
        f.cert.to_str().unwrap(),
    ])
    .unwrap();
    let e = throng::flags::scenario::build_scenario(&run)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("--cert is given without --key"), "{e}");
}
