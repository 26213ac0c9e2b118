//! `--container` against the real Docker engine on this machine.
//!
//! Each test builds an image FROM scratch holding the `throng` binary under test and the shared
//! libraries `ldd` lists for it (nothing can be pulled: there is no registry), runs it as
//! `throng serve http` with its port published on 127.0.0.1, and drives a bounded load at it.
//! A guard removes the containers and the image even when an assertion fails. Without an
//! engine these tests fail, saying how to reach one: they never pass by skipping.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;

/// Removes what a test created, however it ends.
pub(crate) struct Cleanup {
    pub(crate) containers: Vec<String>,
    pub(crate) image: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = Command::new("docker").args(["rm", "-f", c]).output();
        }
        let _ = Command::new("docker")
            .args(["rmi", "-f", &self.image])
            .output();
    }
}

fn docker(args: &[&str]) -> Output {
    let out = Command::new("docker")
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run `docker {}`: {e} (install the docker CLI)",
                args.join(" ")
            )
        });
    assert!(
        out.status.success(),
        "`docker {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Fails the test, with directions, when no engine answers.
pub(crate) fn require_engine() {
    let out = Command::new("docker")
        .args(["version", "--format", "{{.Server.APIVersion}}"])
        .output();
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "the Docker engine is unreachable ({}): start it (`sudo service docker start`), \
             or point DOCKER_HOST at its socket (DOCKER_HOST=unix:///path/to/docker.sock); \
             these tests need it and do not skip",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => panic!(
            "cannot run the docker CLI ({e}): install it and start the engine; these tests need it \
             and do not skip"
        ),
    }
}

/// Copies `from` to `root` + `from` (following symlinks).
fn copy_at(root: &Path, from: &Path) {
    let to = root.join(from.strip_prefix("/").expect("absolute path"));
    std::fs::create_dir_all(to.parent().expect("has a parent")).expect("mkdir");
    std::fs::copy(from, &to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
}

/// Builds `tag` FROM scratch: the throng binary, its shared libraries, `serve http` on 8080.
pub(crate) fn build_image(tag: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("rootfs");
    let bin = Path::new(env!("CARGO_BIN_EXE_throng"));
    std::fs::create_dir_all(&root).expect("mkdir");
    // Stripped, as `benches/scratch-image.sh` and `swarm.rs` do: the debug build is about
    // 460 MB, 74 MB stripped (in about 1 s), and every image build sends it to the engine.
    let strip = Command::new("strip")
        .arg("-o")
        .arg(root.join("throng"))
        .arg(bin)
        .status()
        .unwrap_or_else(|e| panic!("cannot run strip: {e} (install binutils)"));
    assert!(strip.success(), "strip {} failed", bin.display());
    let ldd = Command::new("ldd").arg(bin).output().expect("run ldd");
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
        let path = line
            .split("=>")
            .last()
            .and_then(|s| s.split_whitespace().next())
            .filter(|p| p.starts_with('/'));
        if let Some(p) = path {
            copy_at(&root, Path::new(p));
        }
    }
    std::fs::write(
        dir.path().join("Dockerfile"),
        "FROM scratch\nCOPY rootfs/ /\nENTRYPOINT [\"/throng\"]\n\
         CMD [\"serve\", \"http\", \"--host\", \"0.0.0.0\", \"--port\", \"8080\"]\n",
    )
    .expect("write the Dockerfile");
    let ctx = dir.path().to_str().expect("utf-8 path");
    docker(&["build", "-q", "-t", tag, ctx]);
    dir
}

/// A test's image FROM scratch and the names of its containers, all removed when dropped.
pub(crate) struct Scratch {
    /// The containers' names (`throng-it-WHAT-NAME-PID`), in the order asked for.
    pub(crate) names: Vec<String>,
    /// The image's tag (`throng-it-WHAT:PID`).
    pub(crate) image: String,
    _cleanup: Cleanup,
    _ctx: tempfile::TempDir,
}

/// Checks that the engine answers, builds the image of a test about `what` and names its
/// containers; none runs yet.
pub(crate) fn scratch(what: &str, names: &[&str]) -> Scratch {
    require_engine();
    let pid = std::process::id();
    let image = format!("throng-it-{what}:{pid}");
    let names: Vec<String> = names
        .iter()
        .map(|n| format!("throng-it-{what}-{n}-{pid}"))
        .collect();
    let cleanup = Cleanup {
        containers: names.clone(),
        image: image.clone(),
    };
    let ctx = build_image(&image);
    Scratch {
        names,
        image,
        _cleanup: cleanup,
        _ctx: ctx,
    }
}

/// Starts a container of `image` with 8080 published on a random 127.0.0.1 port; the port.
pub(crate) fn run_container(name: &str, image: &str) -> u16 {
    run_with(name, image, &[])
}

/// Starts a container of `image` as `throng serve http --delay DELAY`; its published port.
fn run_delayed(name: &str, image: &str, delay: &str) -> u16 {
    let serve = [
        "serve", "http", "--host", "0.0.0.0", "--port", "8080", "--delay", delay,
    ];
    run_with(name, image, &serve)
}

/// Starts a container of `image` (with `args` instead of its command, if any) with 8080
/// published on a random 127.0.0.1 port, and waits until it answers; the port.
fn run_with(name: &str, image: &str, args: &[&str]) -> u16 {
    let label = format!("throng-it={name}");
    let mut argv = vec![
        "run",
        "-d",
        "--name",
        name,
        "--label",
        &label,
        "-p",
        "127.0.0.1::8080",
        image,
    ];
    argv.extend_from_slice(args);
    docker(&argv);
    let port = text(&docker(&["port", name, "8080/tcp"]));
    let port: u16 = port
        .lines()
        .next()
        .and_then(|l| l.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no published port in {port:?}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{name} does not answer on 127.0.0.1:{port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    port
}

/// Parses `docker stats` sizes: `1.438MiB`, `23.54GiB` (binary) or `9.42MB`, `512kB` (decimal).
fn size(s: &str) -> f64 {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().unwrap_or_else(|_| panic!("not a size: {s:?}"));
    let mult = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        _ => panic!("unknown unit in {s:?}"),
    };
    n * mult
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn container_stats_match_docker_stats() {
    let it = scratch("stats", &["target"]);
    let (name, image) = (it.names[0].clone(), it.image.clone());
    let port = run_container(&name, &image);
    let out_dir = tempfile::tempdir().expect("tempdir");
    let json = out_dir.path().join("result.json");
    let url = format!("http://127.0.0.1:{port}/");
    let json_arg = json.to_str().expect("utf-8 path");
    let started = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(["run", &url, "-c", "8", "-z", "8s", "--no-tui", "--quiet"])
        .args(["--container", &name, "--idle", "2s", "--json", json_arg])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start throng");
    // 2 s idle, about 1 s for the first reading, then 2.5 s into the 8 s load: take docker's own
    // reading (it spans about two seconds) well inside the load.
    std::thread::sleep(Duration::from_millis(5500));
    let docker_stats = text(&docker(&[
        "stats",
        "--no-stream",
        "--format",
        "{{json .}}",
        &name,
    ]));
    let docker_taken = started.elapsed();
    let out = child.wait_with_output().expect("throng ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "throng failed: {stderr}");
    assert!(
        docker_taken < Duration::from_secs(10),
        "docker stats took until {docker_taken:?}, after the load"
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains(&format!("Container {name} (")),
        "no container table in the summary:\n{summary}"
    );

    let result = common::json(&json);
    let containers = result["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert_eq!(c["name"], name.as_str());
    assert_eq!(c["image"], image.as_str());
    let image_size: u64 = text(&docker(&["image", "inspect", "-f", "{{.Size}}", &image]))
        .parse()
        .expect("size");
    assert_eq!(c["image_size"].as_u64(), Some(image_size));
    // The summary gives the size as `docker images` prints it (decimal MB), not in MiB.
    let listed = text(&docker(&["images", "--format", "{{.Size}}", &image]));
    assert!(
        summary.contains(&format!("image {image} ({listed})")),
        "`docker images` says {listed}:\n{summary}"
    );
    assert!(c["gone"].is_null(), "{}", c["gone"]);

    let (idle, load) = (&c["idle"], &c["load"]);
    // --idle 2s after the first reading: readings at about 0, 1 (and maybe 2) s.
    assert!(idle["samples"].as_u64() >= Some(2), "idle: {idle}");
    assert!(load["samples"].as_u64() >= Some(6), "load: {load}");
    let (idle_cpu, load_cpu) = (f(&idle["cpu_mean"]), f(&load["cpu_mean"]));
    // The testbed target does nothing when idle and serves thousands of requests a second
    // under load: CPU under load must be well above idle.
    assert!(idle_cpu < 5.0, "idle CPU {idle_cpu} %");
    assert!(
        load_cpu >= 20.0 && load_cpu > 5.0 * idle_cpu,
        "under-load CPU {load_cpu} % is not well above idle {idle_cpu} %"
    );
    let limit = c["mem_limit"].as_u64().expect("limit");
    let mem_max = load["mem_max"].as_u64().expect("mem max");
    assert!(load["mem_mean"].as_u64() > Some(0), "{load}");
    assert!(
        mem_max < limit,
        "memory {mem_max} not below the limit {limit}"
    );
    // The container received the requests and sent the responses (plus TCP/IP overhead).
    let (sent, received) = (
        result["total"]["bytes_sent"].as_u64().expect("sent"),
        result["total"]["bytes_received"]
            .as_u64()
            .expect("received"),
    );
    let (rx, tx) = (
        c["net_rx"].as_u64().expect("rx"),
        c["net_tx"].as_u64().expect("tx"),
    );
    assert!(
        rx >= sent && rx < 10 * sent.max(1),
        "net rx {rx} against {sent} sent"
    );
    assert!(
        tx >= received && tx < 10 * received.max(1),
        "net tx {tx} against {received} received"
    );

    // Against `docker stats --no-stream` taken during the load.
    let d: Value = serde_json::from_str(&docker_stats).expect("docker stats json");
    let samples = c["samples"].as_array().expect("samples");
    let under: Vec<&Value> = samples.iter().filter(|s| f(&s["t"]) > 1.5).collect();
    let cpus: Vec<f64> = under.iter().map(|s| f(&s["cpu_percent"])).collect();
    let mems: Vec<f64> = under.iter().map(|s| f(&s["mem_used"])).collect();
    let (cmin, cmax) = cpus
        .iter()
        .fold((f64::MAX, 0.0f64), |(a, b), v| (a.min(*v), b.max(*v)));
    let (mmin, mmax) = mems
        .iter()
        .fold((f64::MAX, 0.0f64), |(a, b), v| (a.min(*v), b.max(*v)));
    let docker_cpu: f64 = d["CPUPerc"]
        .as_str()
        .and_then(|s| s.trim_end_matches('%').parse().ok())
        .expect("CPUPerc");
    let mem_usage = d["MemUsage"].as_str().expect("MemUsage");
    let (docker_mem, docker_limit) = mem_usage.split_once('/').expect("used / limit");
    let (docker_mem, docker_limit) = (size(docker_mem), size(docker_limit));
    let net = d["NetIO"].as_str().expect("NetIO");
    let docker_rx = size(net.split_once('/').expect("rx / tx").0);
    let report = format!(
        "docker stats {docker_stats}\nours: cpu {cmin:.1}..{cmax:.1} %, mem {mmin}..{mmax}, limit {limit}"
    );
    // Tolerances: docker's CPU reading spans its own second, so it must fall within the range
    // of ours under load widened by 40 % (the machine is shared); memory within the range of
    // ours widened by 10 %; the limit within docker's rounding (4 significant figures).
    assert!(
        docker_cpu >= 0.6 * cmin && docker_cpu <= 1.4 * cmax,
        "CPU disagrees: {report}"
    );
    assert!(
        docker_mem >= 0.9 * mmin && docker_mem <= 1.1 * mmax,
        "memory disagrees: {report}"
    );
    assert!(
        (docker_limit - limit as f64).abs() <= 0.005 * limit as f64,
        "limit disagrees: {report}"
    );
    // Cumulative received bytes: docker's reading lies between our first and last (3 s.f.).
    let first_rx = f(&samples[0]["net_rx"]);
    let last_rx = f(&samples[samples.len() - 1]["net_rx"]);
    assert!(
        docker_rx >= 0.99 * first_rx && docker_rx <= 1.01 * last_rx,
        "network disagrees ({first_rx}..{last_rx}): {report}"
    );
    eprintln!("{report}\nidle cpu {idle_cpu:.2} %, load cpu mean {load_cpu:.1} %");
}

#[test]
fn a_container_stopping_mid_run_does_not_stop_the_run() {
    let it = scratch("stop", &["target"]);
    let (name, image) = (it.names[0].clone(), it.image.clone());
    run_container(&name, &image);
    let out_dir = tempfile::tempdir().expect("tempdir");
    let json = out_dir.path().join("result.json");
    // The load goes to a target of its own; only the watched container stops.
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let target = rt
        .block_on(throng::testbed::HttpTarget::default().start())
        .expect("target");
    let url = format!("{}/", target.url());
    let started = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(["run", &url, "-q", "200", "-z", "5s", "--no-tui", "--quiet"])
        .args(["--container-label", &format!("throng-it={name}")])
        .args(["--json", json.to_str().expect("utf-8")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start throng");
    std::thread::sleep(Duration::from_millis(3000));
    docker(&["stop", "-t", "1", &name]);
    let out = child.wait_with_output().expect("throng ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed() < Duration::from_secs(15));
    let result = common::json(&json);
    assert_eq!(result["containers"].as_array().map(Vec::len), Some(1));
    let c = &result["containers"][0];
    assert_eq!(c["name"], name.as_str(), "found by its label");
    let gone = c["gone"].as_str().expect("the container is reported gone");
    assert!(gone.starts_with("exited"), "{gone}");
    // The load went on to its end.
    assert!(f(&result["duration"]) >= 4.9, "{}", result["duration"]);
    assert!(
        result["total"]["samples"].as_u64() > Some(900),
        "{}",
        result["total"]
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("sampling stopped during the run: exited"),
        "{summary}"
    );
}

#[test]
fn an_unknown_container_is_a_usage_error_before_any_load() {
    require_engine();
    let name = format!("throng-no-such-container-{}", std::process::id());
    let out = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args([
            "run",
            "http://127.0.0.1:9/",
            "-n",
            "1",
            "--no-tui",
            "--container",
            &name,
        ])
        .output()
        .expect("run throng");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("no container is named \"{name}\"")),
        "{stderr}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("requests in"),
        "a run happened"
    );
}

#[test]
fn a_scenario_file_names_containers_too() {
    require_engine();
    let name = format!("throng-no-such-scenario-container-{}", std::process::id());
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("s.yaml");
    std::fs::write(
        &file,
        format!(
            "targets:\n  web: http://127.0.0.1:9\nload:\n  users: 1\n  requests: 1\n\
             containers:\n  - {name}\nsteps:\n  - label: get\n    request:\n      path: /\n"
        ),
    )
    .expect("write the scenario");
    let out = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(["run", file.to_str().expect("utf-8"), "--no-tui"])
        .output()
        .expect("run throng");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("no container is named \"{name}\"")),
        "{stderr}"
    );
}

#[test]
fn an_ab_run_of_two_containers_compares_them_with_their_docker_stats() {
    let it = scratch("ab", &["fast", "slow"]);
    let (fast, slow, image) = (it.names[0].clone(), it.names[1].clone(), it.image.clone());
    let pf = run_delayed(&fast, &image, "1ms");
    let ps = run_delayed(&slow, &image, "6ms");
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("ab.json");
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/web-compare.yaml");
    let out = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args([
            "run", scenario, "-c", "4", "-z", "3s", "--idle", "1s", "--no-tui", "--quiet",
        ])
        .args(["--target", &format!("fast=http://127.0.0.1:{pf}")])
        .args(["--target", &format!("slow=http://127.0.0.1:{ps}")])
        .args(["--container", &format!("fast={fast}")])
        .args(["--container", &format!("slow={slow}")])
        .args(["--json", json.to_str().expect("utf-8")])
        .output()
        .expect("throng runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = common::json(&json);
    // Each side watched its own container, idle and under load.
    for (side, name) in [(0, &fast), (1, &slow)] {
        let run = &doc["runs"][side]["result"];
        let containers = run["containers"].as_array().expect("containers");
        assert_eq!(containers.len(), 1, "{side}: {containers:?}");
        assert_eq!(containers[0]["name"], name.as_str());
        assert!(containers[0]["idle"].is_object() && containers[0]["load"].is_object());
        assert!(
            f(&containers[0]["load"]["cpu_mean"]) > 0.0,
            "it worked under load"
        );
        assert!(containers[0]["image_size"].as_u64() > Some(1_000_000));
        // The level table's row of the side has its container under load.
        let row = &doc["rows"][side];
        assert_eq!(row["side"], ["fast", "slow"][side]);
        assert_eq!(row["containers"][0]["name"], name.as_str());
        assert!(f(&row["containers"][0]["cpu_percent"]) > 0.0);
    }
    // The slower container is slower, beyond the noise, in the printed table.
    let p50 = stdout
        .lines()
        .find(|l| l.starts_with("p50 ms"))
        .expect("a p50 line");
    assert!(p50.ends_with('*'), "{stdout}");
    assert!(stdout.contains("CPU load"), "{stdout}");
}

#[test]
fn a_sweep_reads_its_container_idle_once_before_the_first_load_and_once_after_the_last() {
    let it = scratch("ladder", &["target"]);
    let (name, image) = (it.names[0].clone(), it.image.clone());
    let port = run_container(&name, &image);
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("ladder.json");
    let out = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(["run", &format!("http://127.0.0.1:{port}/")])
        .args(["--sweep", "users=1,2,3", "-n", "100", "--idle", "2s"])
        .args(["--container", &name, "--no-tui"])
        .args(["--json", json.to_str().expect("utf-8")])
        .output()
        .expect("throng runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = common::json(&json);
    let container = |i: usize| doc["runs"][i]["result"]["containers"][0].clone();
    let idle_readings = |i: usize| {
        container(i)["samples"]
            .as_array()
            .expect("samples")
            .iter()
            .filter(|s| f(&s["t"]) < 0.0)
            .count()
    };
    // 2 s before the first level; before the later ones only the first complete reading
    // (the totals' start), which follows a load and is no idle figure.
    assert!(idle_readings(0) >= 2, "{}", container(0));
    assert!(container(0)["idle"].is_object());
    for i in [1, 2] {
        assert!(idle_readings(i) < idle_readings(0), "{}", container(i));
        assert!(container(i)["idle"].is_null(), "{}", container(i));
    }
    // Once after the last load, kept in the last run.
    assert!(container(0).get("idle_after").is_none());
    assert!(container(1).get("idle_after").is_none());
    assert!(
        container(2)["idle_after"]["samples"].as_u64() >= Some(1),
        "{}",
        container(2)
    );
    let compared = Command::new(env!("CARGO_BIN_EXE_throng"))
        .args(["compare", json.to_str().expect("utf-8")])
        .output()
        .expect("throng compare runs");
    let table = String::from_utf8_lossy(&compared.stdout);
    assert!(compared.status.success(), "{table}");
    // Side, Container, Image (2 cells), CPU idle, CPU load, Memory idle (2 cells), Memory idle
    // after load (2 cells), Memory load (2 cells).
    let memory = |level: &str| -> (String, String) {
        let line = table
            .lines()
            .find(|l| l.starts_with(level) && l.contains(&name))
            .unwrap_or_else(|| panic!("no container row for {level}: {table}"));
        let cells: Vec<&str> = line[level.len()..].split_whitespace().collect();
        let cells = &cells[3..];
        let (idle, rest) = match cells[2] {
            "-" => ("-".to_string(), &cells[3..]),
            v => (format!("{v} {}", cells[3]), &cells[4..]),
        };
        let after = match rest[0] {
            "-" => "-".to_string(),
            v => format!("{v} {}", rest[1]),
        };
        (idle, after)
    };
    let (first, middle, last) = (memory("1 user "), memory("2 users "), memory("3 users "));
    assert!(
        first.0.ends_with("MiB") && first.1 == "-",
        "{first:?}: {table}"
    );
    assert_eq!(middle, ("-".to_string(), "-".to_string()), "{table}");
    assert!(
        last.0 == "-" && last.1.ends_with("MiB"),
        "{last:?}: {table}"
    );
}
