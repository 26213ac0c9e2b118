//! The protocols added on the open contract, raw TCP and WebSocket, through the command line
//! as a user meets them: `throng run tcp://…` (and `tcps://…`) and `ws://…` against their crates' own testbed
//! servers, a scenario mixing them with HTTP, bad input (exit 2 naming the flag) and a target
//! that is not there. Their crates test framing, messages and the fault matrix themselves.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common::{closed_port, said, throng};

/// The JSON result a `--json FILE` run wrote.
fn result(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A row of a result, by label.
fn row<'a>(r: &'a serde_json::Value, label: &str) -> &'a serde_json::Value {
    let rows = r["labels"].as_array().unwrap();
    rows.iter()
        .find(|l| l["label"] == label)
        .unwrap_or_else(|| panic!("no row {label}: {r}"))
}

/// `throng serve tcp --tls` in-process, and its self-signed certificate written to `dir` for
/// `--cacert`.
async fn tls_tcp_target(
    dir: &std::path::Path,
) -> (throng_tcp::serve::RunningTcp, std::path::PathBuf) {
    let server = throng_tcp::serve::TcpTarget {
        tls: true,
        ..Default::default()
    }
    .start()
    .await
    .unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, server.cert_pem.as_ref().unwrap()).unwrap();
    (server, ca)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcp_url_runs_its_requests_and_the_server_counts_each() {
    let server = throng_tcp::serve::TcpTarget::default()
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = server.url();
    let o = tokio::task::spawn_blocking(move || {
        throng(&[
            "run",
            &url,
            "-d",
            "PING\\n",
            "-c",
            "3",
            "-n",
            "90",
            "--no-tui",
            "--json",
            json.to_str().unwrap(),
        ])
    })
    .await
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let r = result(&dir.path().join("r.json"));
    assert_eq!(r["total"]["samples"], 90, "{r}");
    assert_eq!(r["total"]["errors"], 0, "{r}");
    assert_eq!(server.requests(), 90);
    // One connection per user, kept.
    assert_eq!(server.connections(), 3);
    assert_eq!(r["status_codes"]["tcp ok"], 90, "{r}");
}

/// `tcps://` trusting the testbed's self-signed certificate by `--cacert`: every request
/// answered on two connections, each with its TLS handshake timed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcps_url_with_cacert_times_each_connections_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let (server, ca) = tls_tcp_target(dir.path()).await;
    let json = dir.path().join("r.json");
    let (url, j) = (server.url(), json.clone());
    let o = tokio::task::spawn_blocking(move || {
        let (ca, j) = (ca.to_str().unwrap(), j.to_str().unwrap());
        let args = [
            "run", &url, "-d", "PING\\n", "--cacert", ca, "-c", "2", "-n", "40",
        ];
        throng(&[&args[..], &["--no-tui", "--json", j]].concat())
    })
    .await
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let r = result(&json);
    assert_eq!(r["total"]["samples"], 40, "{r}");
    assert_eq!(r["total"]["errors"], 0, "{r}");
    assert_eq!(r["status_codes"]["tcp ok"], 40, "{r}");
    assert_eq!(server.requests(), 40);
    assert_eq!(server.connections(), 2);
    let phases = &r["total"]["phases"];
    assert_eq!(phases["tls"]["stats"]["count"], 2, "{r}");
    assert_eq!(phases["wait"]["stats"]["count"], 40, "{r}");
    assert_eq!(phases["reused_connections"], 38, "{r}");
}

/// A scenario file whose only TLS target is `tcps://` takes `--cacert` for it (it was refused
/// as a flag for https:// targets only), and a file with no TLS target still refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_with_a_tcps_target_takes_cacert() {
    let dir = tempfile::tempdir().unwrap();
    let (server, ca) = tls_tcp_target(dir.path()).await;
    let file = dir.path().join("tls.yaml");
    let steps = "load:\n  users: 2\n  iterations: 5\nsteps:\n  - label: echo\n    tcp:\n      send: \"hi\"\n      expect: \"hi\"\n";
    std::fs::write(
        &file,
        format!("targets:\n  line: {}\n{steps}", server.url()),
    )
    .unwrap();
    let plain = dir.path().join("plain.yaml");
    std::fs::write(
        &plain,
        format!("targets:\n  line: tcp://127.0.0.1:9\n{steps}"),
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let (f, p, c, j) = (file.clone(), plain.clone(), ca.clone(), json.clone());
    let (o, refused) = tokio::task::spawn_blocking(move || {
        let (c, j) = (c.to_str().unwrap(), j.to_str().unwrap());
        let run = |f: &std::path::Path| {
            throng(&[
                "run",
                f.to_str().unwrap(),
                "--cacert",
                c,
                "--no-tui",
                "--json",
                j,
            ])
        };
        (run(&f), run(&p))
    })
    .await
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let r = result(&json);
    assert_eq!(row(&r, "echo")["samples"], 10, "{r}");
    assert_eq!(row(&r, "echo")["errors"], 0, "{r}");
    assert_eq!(server.requests(), 10);
    assert_eq!(refused.status.code(), Some(2), "{}", said(&refused));
    assert!(
        said(&refused).contains("--cacert applies to TLS targets"),
        "{}",
        said(&refused)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ws_url_times_each_reply_as_a_part() {
    let server = throng_ws::serve::WsTarget::default().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = server.url();
    let o = tokio::task::spawn_blocking(move || {
        throng(&[
            "run",
            &url,
            "-d",
            "hello",
            "-c",
            "2",
            "-n",
            "40",
            "--no-tui",
            "--json",
            json.to_str().unwrap(),
        ])
    })
    .await
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let r = result(&dir.path().join("r.json"));
    assert_eq!(r["total"]["samples"], 40, "{r}");
    assert_eq!(r["total"]["errors"], 0, "{r}");
    let url = server.url();
    assert_eq!(row(&r, &format!("{url} (messages)"))["samples"], 40);
    assert_eq!(server.received(), 40);
    assert_eq!(server.handshakes(), 2);
}

/// A scenario of three protocols: an HTTP request, a TCP exchange whose reply is checked, and a
/// WebSocket message, each its row, every iteration reaching each server once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_mixes_http_tcp_and_websocket_steps() {
    let web = throng::testbed::HttpTarget::default()
        .start()
        .await
        .unwrap();
    let tcp = throng_tcp::serve::TcpTarget::default()
        .start()
        .await
        .unwrap();
    let ws = throng_ws::serve::WsTarget::default().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mix.yaml");
    std::fs::write(
        &file,
        format!(
            "targets:\n  web: {}\n  line: {}\n  socket: {}\nvariables:\n  who: 7\nload:\n  users: 2\n  iterations: 10\n\
             steps:\n  - label: page\n    request:\n      path: /\n\
             \x20 - label: echo\n    tcp:\n      send: \"n{{{{ who }}}}\"\n      expect: \"n{{{{ who }}}}\"\n\
             \x20 - label: hello\n    ws: hi\n",
            web.url(),
            tcp.url(),
            ws.url()
        ),
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let (f, j) = (file.clone(), json.clone());
    let o = tokio::task::spawn_blocking(move || {
        throng(&[
            "run",
            f.to_str().unwrap(),
            "--no-tui",
            "--json",
            j.to_str().unwrap(),
        ])
    })
    .await
    .unwrap();
    let r = result(&json);
    for label in ["page", "echo", "hello", "hello (messages)"] {
        assert_eq!(row(&r, label)["samples"], 20, "{label}: {r}");
        assert_eq!(row(&r, label)["errors"], 0, "{label}: {r}");
    }
    assert_eq!(r["status_codes"]["tcp ok"], 20, "{r}");
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert_eq!(web.requests(), 20);
    assert_eq!(tcp.requests(), 20);
    assert_eq!(ws.received(), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tcp_and_ws_input_exits_2_naming_it() {
    let port = closed_port();
    let tcp = format!("tcp://127.0.0.1:{port}");
    let tcps = format!("tcps://127.0.0.1:{port}");
    let ws = format!("ws://127.0.0.1:{port}/");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![&tcps, "-d", "x", "--cacert", "/nonexistent/ca.pem"],
            "cannot use CA file /nonexistent/ca.pem",
        ),
        (
            vec![&tcp, "-d", "x", "--cacert", "/nonexistent/ca.pem"],
            "--cacert applies to tcps:// targets",
        ),
        (vec![&tcp], "a tcp:// URL needs the request to send"),
        (vec![&tcp, "-d", "x", "--frame", "len3"], "--frame \"len3\""),
        (
            vec![&tcp, "-d", "x", "--max-reply", "0"],
            "--max-reply must be at least 1",
        ),
        (
            vec![&ws, "-d", "x", "--frame", "line"],
            "--frame applies to tcp:// and tcps:// targets",
        ),
        (
            vec![&ws, "-d", "x", "--expect", "0"],
            "--expect must be at least 1",
        ),
        (
            vec![&ws, "-d", "x", "--listen", "soon"],
            "--listen \"soon\"",
        ),
        (
            vec![&tcp, "-d", "x", "--binary"],
            "--binary applies to ws:// and wss:// targets",
        ),
    ];
    for (args, says) in cases {
        let mut all = vec!["run"];
        all.extend(args.iter().copied());
        all.extend(["-n", "5", "--no-tui"]);
        let o = tokio::task::spawn_blocking({
            let all: Vec<String> = all.iter().map(|s| s.to_string()).collect();
            move || throng(&all.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .await
        .unwrap();
        let err = said(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// Nothing listening: every request fails as `connect`, the run ends, and it says so (exit 1:
/// no request succeeded is a runtime failure, not bad input).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcp_or_ws_target_that_is_not_there_fails_as_connect() {
    let port = closed_port();
    for url in [
        format!("tcp://127.0.0.1:{port}"),
        format!("ws://127.0.0.1:{port}/"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        let (u, j) = (url.clone(), json.clone());
        let o = tokio::task::spawn_blocking(move || {
            throng(&[
                "run",
                &u,
                "-d",
                "x\\n",
                "-c",
                "1",
                "-z",
                "1s",
                "--no-tui",
                "--json",
                j.to_str().unwrap(),
            ])
        })
        .await
        .unwrap();
        let r = result(&json);
        let samples = r["total"]["samples"].as_u64().unwrap();
        assert!(samples >= 1, "{url}: {r}");
        assert_eq!(
            r["total"]["errors_by_class"]["connect"], samples,
            "{url}: {r}"
        );
        assert!(
            said(&o).contains("no request succeeded"),
            "{url}: {}",
            said(&o)
        );
    }
}

/// `throng serve tcp` and `throng serve ws`: each protocol's own testbed server, registered
/// with it, answers a run and says on Ctrl-C how much it served; a bad flag of theirs exits 2.
#[test]
fn throng_serve_runs_each_protocols_own_server() {
    for (target, extra, run) in [
        (
            "tcp",
            vec!["--frame", "crlf"],
            vec!["-d", "ping", "--frame", "crlf", "-t", "5s"],
        ),
        ("ws", vec!["--delay", "1ms"], vec!["-d", "ping", "-t", "5s"]),
    ] {
        let mut args = vec![target];
        args.extend(&extra);
        let (serve, url) = crate::common::serve_bin(&args);
        let mut args = vec!["run", url.as_str(), "-c", "2", "-n", "30", "--no-tui"];
        args.extend(&run);
        let o = throng(&args);
        assert_eq!(o.status.code(), Some(0), "{target}: {}", said(&o));
        assert!(said(&o).contains("0.00%"), "{target}: {}", said(&o));
        // Ctrl-C, as a person stops it.
        let _ = std::process::Command::new("kill")
            .args(["-INT", &serve.id().to_string()])
            .status();
        let out = serve.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("served 30 "), "{target}: {err}");
    }
    let o = throng(&["serve", "tcp", "--port", "0", "--fault", "bogus"]);
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    assert!(said(&o).contains("`bogus` is not a fault"), "{}", said(&o));
    let o = throng(&["serve", "ws", "--port", "0", "--mode", "push:x"]);
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    assert!(said(&o).contains("--mode"), "{}", said(&o));
}
