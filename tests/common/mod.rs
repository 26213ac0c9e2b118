//! Helpers shared by the integration tests: run the command line's own path in-process.

#![allow(dead_code)]

use std::sync::Arc;

use clap::Parser;
use throng::core::{RunPlan, Snapshot};
use throng::flags::RunArgs;
use throng::report::RunResult;

/// Parses `throng run ARGS...` exactly as the binary would.
pub(crate) fn args(args: &[&str]) -> RunArgs {
    parse(["throng", "run"].iter().chain(args)).expect("flags parse")
}

/// Parses a command line `throng run ...` (its first two words are those) as the binary would.
pub(crate) fn parse<S: AsRef<str>>(
    argv: impl IntoIterator<Item = S>,
) -> Result<RunArgs, clap::Error> {
    let words = argv.into_iter().skip(2).map(|w| w.as_ref().to_string());
    RunArgs::try_parse_from(std::iter::once("throng run".to_string()).chain(words))
}

/// The plan and the HTTP driver `throng run ARGS...` would build (an `http://` URL).
pub(crate) fn setup(args: &[&str]) -> (RunPlan, throng::http::flags::UrlDriver) {
    let a = self::args(args);
    let plan = a.run.plan(&a.url).expect("load flags validate");
    let (driver, _) = a
        .protocols
        .get::<throng::http::flags::HttpFlags>()
        .expect("HTTP's flags")
        .url_driver(&a.url, &a.request, &plan)
        .expect("flags validate");
    (plan, driver)
}

/// Runs `throng run ARGS...` in-process and returns the final snapshot.
pub(crate) async fn run(args: &[&str]) -> Arc<Snapshot> {
    let (plan, driver) = setup(args);
    throng::engine::run(plan, Arc::new(driver))
        .await
        .expect("run starts")
}

/// Runs `throng run FILE ARGS...` (a scenario file) in-process, through the command line's own
/// validation, and returns the final snapshot.
pub(crate) async fn run_file(file: &std::path::Path, args: &[&str]) -> Arc<Snapshot> {
    let mut argv = vec![
        "throng".to_string(),
        "run".into(),
        file.display().to_string(),
    ];
    argv.extend(args.iter().map(|s| s.to_string()));
    let run = parse(&argv).expect("flags parse");
    let setup = throng::flags::scenario::build_scenario(&run).unwrap_or_else(|e| panic!("{e}"));
    throng::engine::run(setup.plan, Arc::new(setup.driver))
        .await
        .expect("run starts")
}

/// The JSON-result view of a snapshot.
pub(crate) fn result(s: &Snapshot) -> RunResult {
    RunResult::from_snapshot(s)
}

/// The plan and the gRPC driver `throng run ARGS...` would build (a `grpc://` URL).
pub(crate) async fn grpc_driver(args: &[&str]) -> (RunPlan, throng::grpc::flags::UrlDriver) {
    let a = self::args(args);
    let mut plan = a.run.plan(&a.url).expect("load flags validate");
    let (driver, _) = a
        .protocols
        .get::<throng::grpc::flags::GrpcFlags>()
        .expect("gRPC's flags")
        .url_driver(&a.url, &a.request, &mut plan)
        .await
        .expect("the driver");
    (plan, driver)
}

/// Runs `throng run grpc://... ARGS...` in-process.
pub(crate) async fn grpc_run(args: &[&str]) -> Arc<Snapshot> {
    let (plan, d) = grpc_driver(args).await;
    throng::engine::run(plan, Arc::new(d)).await.expect("run")
}

/// Errors of a class in a snapshot.
pub(crate) fn errors_of(s: &Snapshot, class: throng::core::ErrorClass) -> u64 {
    s.errors
        .iter()
        .filter(|e| e.class == class)
        .map(|e| e.count)
        .sum()
}

/// Runs the built binary with `args`, no standard input, and returns what it did.
pub(crate) fn throng(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the binary runs")
}

/// Runs `throng run ARGS -n 5 --no-tui` for each case and checks that it exits 2 saying what
/// the case expects (bad input refused before any load).
pub(crate) fn refused(cases: &[(Vec<&str>, String)]) {
    for (args, says) in cases {
        let mut all = vec!["run"];
        all.extend(args.iter().copied());
        all.extend(["-n", "5", "--no-tui"]);
        let out = throng(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says.as_str()), "{args:?}: {err}");
    }
}

/// Starts a testbed target on a runtime of its own (for tests without one); keep both alive.
pub(crate) fn serve(
    t: throng::testbed::HttpTarget,
) -> (tokio::runtime::Runtime, throng::testbed::RunningTarget) {
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    let t = rt.block_on(t.start()).expect("the target starts");
    (rt, t)
}

/// A testbed target that answers after a fixed delay, on the current runtime.
pub(crate) async fn delayed(ms: u64) -> throng::testbed::RunningTarget {
    throng::testbed::HttpTarget {
        delay: throng::testbed::Delay::Fixed(std::time::Duration::from_millis(ms)),
        ..throng::testbed::HttpTarget::default()
    }
    .start()
    .await
    .expect("the target starts")
}

/// A testbed target with a connection fault, on the current runtime.
pub(crate) async fn faulty(fault: throng::testbed::Fault) -> throng::testbed::RunningTarget {
    throng::testbed::HttpTarget {
        fault: Some(fault),
        ..throng::testbed::HttpTarget::default()
    }
    .start()
    .await
    .expect("the target starts")
}

/// A testbed target serving TLS (ALPN `h2` and `http/1.1`), on the current runtime, and its
/// certificate written to a file in a temporary directory (give it to `--cacert`; the directory
/// goes with the returned guard).
pub(crate) async fn tls_target() -> (
    throng::testbed::RunningTarget,
    tempfile::TempDir,
    std::path::PathBuf,
) {
    let target = throng::testbed::HttpTarget {
        tls: true,
        ..throng::testbed::HttpTarget::default()
    }
    .start()
    .await
    .expect("the target starts");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, target.cert_pem.as_ref().expect("a TLS target")).expect("the CA file");
    (target, dir, ca)
}

/// Runs the built binary with `args` (no standard input) to its end.
pub(crate) fn throng_bin(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the binary runs")
}

/// The built example `name` (`examples/NAME.rs`): `cargo test` builds every example beside the
/// tests, in the target directory's `examples/`.
pub(crate) fn example(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let example = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("examples").join(name))
        .expect("the target directory");
    assert!(
        example.exists(),
        "{}: build it (cargo test builds every example; cargo build --example {name})",
        example.display()
    );
    example
}

/// A port on 127.0.0.1 that nothing listens on (bound, then let go): its connections are
/// refused.
pub(crate) fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Standard output then standard error, as text.
pub(crate) fn said(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The row labelled `label`.
pub(crate) fn row<'a>(s: &'a Snapshot, label: &str) -> &'a throng::core::LabelStats {
    s.labels
        .iter()
        .find(|l| l.label == label)
        .unwrap_or_else(|| {
            let labels: Vec<&str> = s.labels.iter().map(|l| l.label.as_str()).collect();
            panic!("no row {label}: {labels:?}")
        })
}

/// The samples of the row labelled `label`.
pub(crate) fn samples(s: &Snapshot, label: &str) -> u64 {
    row(s, label).samples
}

/// Checks that the binary exited 0 (else fails with its standard error) and returns its
/// standard output.
pub(crate) fn ok(out: &std::process::Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A file the binary wrote, as text.
pub(crate) fn written(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A JSON document the binary wrote.
pub(crate) fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&written(path)).expect("JSON")
}

/// A CSV document's cells, its header first.
pub(crate) fn csv_cells(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

/// Whether a figure read back (from CSV or JSON) equals the JSON's: to 1e-12 of it, as
/// serde_json's default float parsing may miss the last bit of what it wrote (a level row's
/// 1.1688029764100125 read back from the run's JSON as ...123).
pub(crate) fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1e-9)
}

/// Starts `throng serve ARGS... --port 0` (ARGS: the target and its flags), and returns it
/// with the URL it said it serves on (its first line); stop it with `kill -INT` and wait.
pub(crate) fn serve_bin(args: &[&str]) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let mut serve = std::process::Command::new(env!("CARGO_BIN_EXE_throng"))
        .arg("serve")
        .args(args)
        .args(["--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut line = String::new();
    BufReader::new(serve.stdout.take().expect("its standard output"))
        .read_line(&mut line)
        .expect("it says where it serves");
    let url = line.trim().strip_prefix("serving on ").unwrap_or_default();
    (serve, url.to_string())
}

/// throng-llm's testbed as the stream and LLM tests program it: the first token after
/// `TTFT_MS`, then one every `ITL_MS` (unless told otherwise), `TOKENS` in all.
pub(crate) mod llm {
    use std::time::Duration;

    use throng_llm::serve::{start, Fault, RunningLlm, ServeConfig, Spread};

    pub(crate) const TTFT_MS: u64 = 40;
    pub(crate) const ITL_MS: u64 = 10;
    pub(crate) const TOKENS: u32 = 6;

    /// The testbed with tokens `itl_ms` apart and `fault` on one reply in every `fault_every`.
    pub(crate) async fn testbed(fault: Option<Fault>, fault_every: u64, itl_ms: u64) -> RunningLlm {
        start(ServeConfig {
            ttft: Spread::Fixed(Duration::from_millis(TTFT_MS)),
            itl: Spread::Fixed(Duration::from_millis(itl_ms)),
            output_tokens: Spread::Fixed(TOKENS),
            fault,
            fault_every,
            ..ServeConfig::default()
        })
        .await
        .expect("the LLM testbed starts")
    }
}
