//! gRPC steps in scenarios: a flow mixing HTTP and gRPC steps, each on its own connection kind,
//! with templates in messages and metadata, extraction by JSONPath and by metadata, and status
//! checks by name.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use std::sync::Arc;

use throng::core::{ErrorClass, Snapshot};
use throng::testbed::{GrpcTarget, HttpTarget};

const FLOW: &str = r#"# HTTP and gRPC in one flow.
targets:
  web: WEB
  greeter: GREETER
  missing: MISSING
steps:
  - label: web
    request: { target: web, path: / }
    checks:
      - status: 200
  - label: hello
    grpc:
      target: greeter
      call: helloworld.Greeter/SayHello
      message: { name: "user{{ user }}" }
      metadata: { x-echo: "u-{{ user }}" }
    extract:
      greeting: { jsonpath: $.message }
      echoed: { metadata: x-echo }
    checks:
      - status: OK
  - label: echo
    grpc:
      target: greeter
      call: helloworld.Greeter/SayHello
      message: { name: "{{ greeting }} {{ echoed }}" }
    checks:
      - jsonpath: $.message
        equals: "Hello Hello user0 u-0"
  - label: stream
    grpc:
      target: greeter
      call: helloworld.Greeter/SayHellos
      message: { name: x, count: 4 }
    checks:
      - jsonpath: $[3].index
        equals: 3
  - label: collect
    grpc:
      target: greeter
      call: helloworld.Greeter.CollectHellos
      message: [{ name: a }, { name: "{{ greeting }}" }]
    checks:
      - jsonpath: $.message
        equals: "Hello a, Hello user0"
  - label: chat
    grpc:
      target: greeter
      call: helloworld.Greeter/Chat
      message: [{ name: a }, { name: b }]
    checks:
      - jsonpath: $[1].message
        equals: "Hello b"
  - label: not found
    grpc:
      target: missing
      call: helloworld.Greeter/SayHello
    checks:
      - status: NOT_FOUND
"#;

async fn run(text: &str, args: &[&str]) -> Result<Arc<Snapshot>, String> {
    let dir = tempfile::tempdir().unwrap();
    run_in(dir.path(), text, args).await
}

/// `run` with the scenario file written into `dir`.
async fn run_in(dir: &std::path::Path, text: &str, args: &[&str]) -> Result<Arc<Snapshot>, String> {
    let file = dir.join("flow.yaml");
    std::fs::write(&file, text).unwrap();
    let mut argv = vec![
        "throng".to_string(),
        "run".into(),
        file.display().to_string(),
    ];
    argv.extend(args.iter().map(|s| s.to_string()));
    let run = crate::common::parse(&argv).unwrap();
    let setup = throng::flags::scenario::build_scenario(&run).map_err(|e| e.to_string())?;
    Ok(throng::engine::run(setup.plan, Arc::new(setup.driver))
        .await
        .unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_mixes_http_and_grpc_steps() {
    let web = HttpTarget::default().start().await.unwrap();
    let greeter = GrpcTarget::default().start().await.unwrap();
    let missing = GrpcTarget {
        status: 5,
        ..GrpcTarget::default()
    }
    .start()
    .await
    .unwrap();
    let text = FLOW
        .replace("WEB", &web.url())
        .replace("GREETER", &greeter.url())
        .replace("MISSING", &missing.url());
    // One user, so `user0` and `u-0` are known; 3 iterations.
    let s = run(&text, &["-c", "1", "-i", "3"]).await.unwrap();
    for row in s.labels.iter().filter(|l| !l.parts) {
        assert_eq!(row.samples, 3, "{}: {:?}", row.label, s.errors);
    }
    // The server stream's 4 messages a call, and the bidi stream's 2 replies, have rows of
    // their own, after the steps.
    let parts: Vec<(&str, u64)> = s
        .labels
        .iter()
        .filter(|l| l.parts)
        .map(|l| (l.label.as_str(), l.samples))
        .collect();
    assert_eq!(parts, [("stream (messages)", 12), ("chat (messages)", 6)]);
    assert_eq!(s.labels.len(), 9);
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    assert_eq!(common::errors_of(&s, ErrorClass::Check), 0);
    assert_eq!(web.requests(), 3);
    // hello, echo, stream, collect and chat on one target; not found on the other.
    assert_eq!(greeter.calls(), 15);
    assert_eq!(missing.calls(), 3);
    let statuses: Vec<String> = s
        .statuses
        .iter()
        .map(|(st, n)| format!("{st}={n}"))
        .collect();
    assert_eq!(statuses, ["grpc 0 OK=15", "grpc 5 NOT_FOUND=3", "200=3"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_check_and_bad_steps_are_reported() {
    let greeter = GrpcTarget::default().start().await.unwrap();
    let url = greeter.url();
    let wrong = format!(
        "targets: {{ g: {url} }}\nsteps:\n  - label: x\n    grpc: {{ target: g, call: helloworld.Greeter/SayHello, message: {{ name: a }} }}\n    checks:\n      - jsonpath: $.message\n        equals: nope\n"
    );
    let s = run(&wrong, &["-n", "5"]).await.unwrap();
    assert_eq!(common::errors_of(&s, ErrorClass::Check), 5);
    let bad_status =
        format!("targets: {{ g: {url} }}\nsteps:\n  - label: x\n    grpc: {{ target: g, call: a.B/C }}\n    checks:\n      - status: FINE\n");
    let e = run(&bad_status, &["-n", "1"]).await.unwrap_err();
    assert!(e.contains(":6:") && e.contains("gRPC code"), "{e}");
    let unknown = format!("targets: {{ g: {url} }}\nsteps:\n  - label: x\n    grpc: {{ target: g, call: a.B/C, mesage: {{}} }}\n");
    let e = run(&unknown, &["-n", "1"]).await.unwrap_err();
    assert!(e.contains("unknown field `mesage`"), "{e}");
    let path = format!(
        "targets: {{ g: {url}/x }}\nsteps:\n  - label: x\n    grpc: {{ target: g, call: a.B/C }}\n"
    );
    let e = run(&path, &["-n", "1"]).await.unwrap_err();
    assert!(e.contains("has no path"), "{e}");
}

/// The bundled transport pair: the same bank operations over HTTP and gRPC on one service and
/// store, both clean, and money conserved across both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transport_scenarios_run_the_same_operations_over_both() {
    let bank = throng::testbed::BankService::default()
        .start()
        .await
        .unwrap();
    let grpc_url = bank.url().replace("http://", "grpc://");
    let root = env!("CARGO_MANIFEST_DIR");
    let mut rows = Vec::new();
    let mut opened = 0;
    for (file, url) in [
        ("transport-http", bank.url()),
        ("transport-grpc", grpc_url.clone()),
    ] {
        let text = std::fs::read_to_string(format!("{root}/scenarios/{file}.yaml"))
            .unwrap()
            .replace("http://127.0.0.1:8080", &url)
            .replace("grpc://127.0.0.1:8080", &url);
        let s = run(&text, &["-c", "4", "-n", "400"]).await.unwrap();
        assert_eq!(s.total.samples, 400, "{file}");
        assert_eq!(s.total.errors, 0, "{file}: {:?}", s.errors);
        rows.push(s.labels.iter().map(|l| l.label.clone()).collect::<Vec<_>>());
        opened += s.labels[0].samples + s.labels[1].samples;
    }
    assert_eq!(rows[0], rows[1], "the same rows, side by side");
    assert_eq!(rows[0], ["create A", "create B", "transfer", "balance"]);
    // Every account opened with 1000, over either transport, is in the one store; transfers
    // moved money and made none: the total over gRPC says so.
    let mut cfg = throng::grpc::GrpcConfig::new(&grpc_url, "bank.Bank/Total").unwrap();
    cfg.data = Some("{}".into());
    let d = throng::grpc::GrpcClient::one_step(cfg).await.unwrap();
    // gRPC's connections are local tasks (throng-h2's): a call outside the engine's workers
    // goes from a LocalSet.
    let local = tokio::task::LocalSet::new();
    let reply = local
        .run_until(async {
            let mut session = throng::core::Driver::session(&d, &throng::grpc::Pool::default(), 0);
            d.send(&mut session, true).await.1.unwrap()
        })
        .await;
    assert_eq!(reply.json.unwrap()["total"], (opened * 1000).to_string());
    assert_eq!(bank.server_errors(), 0);
}

/// A step's own `.proto`: no reflection needed, and its mistakes found when the file loads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_with_their_own_proto_need_no_reflection() {
    let bare = GrpcTarget {
        reflection: false,
        ..GrpcTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = bare.url();
    let proto = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/testbed/proto/greeter.proto"
    );
    let text = format!(
        "targets: {{ g: {url} }}\nsteps:\n  - label: with proto\n    grpc:\n      call: helloworld.Greeter/SayHello\n      proto: {proto}\n      message: {{ name: a }}\n    checks:\n      - jsonpath: $.message\n        equals: Hello a\n  - label: without\n    grpc: {{ call: helloworld.Greeter/SayHello }}\n"
    );
    let s = run(&text, &["-c", "1", "-i", "3"]).await.unwrap();
    assert_eq!(s.labels[0].samples, 3);
    assert_eq!(s.labels[0].errors, 0, "{:?}", s.errors);
    // The step without a proto fails, saying why.
    assert_eq!(s.labels[1].errors, 3);
    assert!(
        s.errors
            .iter()
            .any(|e| e.sample.contains("serves no reflection")),
        "{:?}",
        s.errors
    );
    assert_eq!(bare.calls(), 3);
    // Mistakes at their place: the method (line 5), the file (line 6), the message (line 7).
    let step = |call: &str, proto: &str, message: &str| {
        format!("targets: {{ g: {url} }}\nsteps:\n  - label: x\n    grpc:\n      call: {call}\n      proto: {proto}\n      message: {message}\n")
    };
    for (text, at, says) in [
        (
            step("helloworld.Greeter/Nope", proto, "{}"),
            ":5:",
            "has no method `Nope`",
        ),
        // The file's words, not a flag's (it said `--call`, which a scenario has none of).
        (
            step("Nope", proto, "{}"),
            ":5:",
            "`Nope` is not a method: write",
        ),
        (
            step("helloworld.Greeter/SayHello", proto, "{ nme: a }"),
            ":7:",
            "unknown field `nme`",
        ),
        // With a template: its value is rendered per call, its name is checked now (every call
        // used to fail at run time).
        (
            step(
                "helloworld.Greeter/SayHello",
                proto,
                "{ nam: \"{{ user }}\" }",
            ),
            ":5:",
            "message: unknown field `nam` in helloworld.HelloRequest",
        ),
        (
            step("helloworld.Greeter/SayHello", "/nonexistent.proto", "{}"),
            ":6:",
            "no such file",
        ),
    ] {
        let e = run(&text, &["-n", "1"]).await.unwrap_err();
        assert!(e.contains(at) && e.contains(says), "{e}");
        assert!(!e.contains("--"), "a file's mistake names no flag: {e}");
    }

    // A relative `proto` and `import_paths` are read from the scenario file's folder, as its
    // CSV data is, wherever throng is started (here the crate's root, which has no `protos/`).
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("protos/inc")).unwrap();
    std::fs::copy(proto, dir.path().join("protos/inc/greeter.proto")).unwrap();
    let text = format!(
        "targets: {{ g: {url} }}\nsteps:\n  - label: relative\n    grpc:\n      call: helloworld.Greeter/SayHello\n      proto: protos/inc/greeter.proto\n      import_paths: protos/inc\n      message: {{ name: b }}\n"
    );
    let s = run_in(dir.path(), &text, &["-n", "2"]).await.unwrap();
    assert_eq!((s.labels[0].samples, s.labels[0].errors), (2, 0));
    let text = text.replace("proto: greeter.proto", "proto: protos/inc/greeter.proto");
    let text = text.replace("      import_paths: protos/inc\n", "");
    let s = run_in(dir.path(), &text, &["-n", "2"]).await.unwrap();
    assert_eq!((s.labels[0].samples, s.labels[0].errors), (2, 0));
    assert!(!std::path::Path::new("protos/inc/greeter.proto").exists());
}

/// `--proto` (with `-I`) or `--protoset` on the command line describe the steps that name no
/// `proto`: no reflection needed, and a method that is not there is an error before any load.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_line_protos_serve_steps_without_their_own() {
    let bare = GrpcTarget {
        reflection: false,
        ..GrpcTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = bare.url();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/crates/testbed/proto");
    let flow = |call: &str| {
        format!("targets: {{ g: {url} }}\nsteps:\n  - label: hello\n    grpc:\n      call: {call}\n      message: {{ name: a }}\n    checks:\n      - jsonpath: $.message\n        equals: Hello a\n")
    };
    let hello = flow("helloworld.Greeter/SayHello");
    let proto = format!("{dir}/greeter.proto");
    let s = run(&hello, &["-c", "1", "-i", "3", "--proto", &proto])
        .await
        .unwrap();
    assert_eq!(
        (s.labels[0].samples, s.labels[0].errors),
        (3, 0),
        "{:?}",
        s.errors
    );
    // With an import path (which reaches the compiler: a missing one is named below).
    let s = run(&hello, &["-n", "2", "--proto", &proto, "-I", dir])
        .await
        .unwrap();
    assert_eq!((s.total.samples, s.total.errors), (2, 0), "{:?}", s.errors);
    assert_eq!(bare.calls(), 5);
    // A method the file lacks: at the step's `call` (line 5), before any call.
    let e = run(
        &flow("helloworld.Greeter/Nope"),
        &["-n", "1", "--proto", &proto],
    )
    .await
    .unwrap_err();
    assert!(
        e.contains(":5:") && e.contains("has no method `Nope`"),
        "{e}"
    );
    assert_eq!(bare.calls(), 5);
    // So is one missing from what reflection serves.
    let served = GrpcTarget::default().start().await.unwrap();
    let text = flow("helloworld.Greeter/Nope").replace(&url, &served.url());
    let e = run(&text, &["-n", "1"]).await.unwrap_err();
    assert!(
        e.contains(":5:") && e.contains("has no method `Nope`"),
        "{e}"
    );
    assert_eq!(served.calls(), 0);
    // Bad flags, from the binary: exit 2, naming the problem.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("flow.yaml");
    std::fs::write(&file, &hello).unwrap();
    let http = tmp.path().join("http.yaml");
    std::fs::write(
        &http,
        "targets: { w: http://127.0.0.1:9 }\nsteps:\n  - label: w\n    request: { target: w, path: / }\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    for (args, says) in [
        (
            vec![f, "--proto", "/nonexistent.proto"],
            "nonexistent.proto",
        ),
        (vec![f, "-I", dir], "-I/--import-path is for --proto files"),
        (
            vec![f, "--proto", &proto, "-I", "/nonexistent-dir"],
            "-I /nonexistent-dir: no such directory",
        ),
        (
            vec![f, "--call", "a.B/C"],
            "--call and --message-interval do not apply",
        ),
        (
            vec![http.to_str().unwrap(), "--connections", "2"],
            "--connections applies to grpc:// targets, and",
        ),
        (
            vec![f, "-c", "3", "--connections", "4"],
            "--connections 4: more connections than the",
        ),
        (
            vec![f, "-c", "30", "--connections", "2", "--streams", "10"],
            "--connections 2 with --streams 10 carry 20 calls at once",
        ),
        (
            vec![http.to_str().unwrap(), "--proto", &proto],
            "has no grpc:// target",
        ),
    ] {
        let mut argv = vec!["run"];
        argv.extend(args);
        argv.extend(["-n", "1", "--no-tui"]);
        let out = common::throng(&argv);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {err}");
        assert!(err.contains(says), "{argv:?}: {err}");
    }
    assert_eq!(bare.calls(), 5);
}

/// `--connections N`: a gRPC target's calls go over N connections in all, the users spread over
/// them, as for a URL; without it, each worker thread has one per `--streams` users.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_fix_how_many_connections_carry_a_targets_calls() {
    let proto = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/testbed/proto/greeter.proto"
    );
    for (extra, want) in [
        (&["--connections", "3"][..], 3),
        (&["--connections", "5"], 5),
        // One connection: one thread drives it.
        (&["--connections", "1"], 1),
        (&[], 2),
        (&["--streams", "3"], 4),
    ] {
        // No reflection (its question would be one more connection): the steps' method from
        // --proto.
        let t = GrpcTarget {
            reflection: false,
            ..GrpcTarget::default()
        }
        .start()
        .await
        .unwrap();
        let text = format!(
            "targets: {{ g: {} }}\nsteps:\n  - label: hello\n    grpc:\n      target: g\n      \
             call: helloworld.Greeter/SayHello\n",
            t.url()
        );
        let mut args = vec!["-c", "12", "-n", "120", "--threads", "2", "--proto", proto];
        args.extend(extra);
        let s = run(&text, &args).await.unwrap();
        assert_eq!((s.total.samples, s.total.errors), (120, 0), "{extra:?}");
        assert_eq!(t.calls(), 120, "{extra:?}");
        assert_eq!(t.connections(), want, "{extra:?}");
    }
}
