//! Message brokers and their clients for the tests, as the SQL tests have their databases
//! (`db.rs`): Debian's nats-server on free ports with its monitoring endpoint, and a Go program
//! (a responder on nats.go or amqp091-go) built offline from Debian's Go packages, started and
//! ready when it says so. The NATS crate's tests and the command line's share them.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free port on the loopback (bound and let go).
pub fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// Waits until something listens on `port` of the loopback, 30 s at most (the tests start many
/// servers at once on two cores).
pub fn wait_for_port(port: u16) -> Result<(), String> {
    listening(port, None)
}

/// Waits until `port` listens, or `child` (the program meant to listen on it) has exited.
fn listening(port: u16, mut child: Option<&mut Child>) -> Result<(), String> {
    let until = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(c) = child.as_deref_mut() {
            if let Ok(Some(status)) = c.try_wait() {
                return Err(format!("exited ({status}) before listening on {port}"));
            }
        }
        if Instant::now() > until {
            return Err(format!("nothing listens on {port} after 30 s"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Debian's nats-server on free ports (clients and monitoring), killed when dropped.
#[derive(Debug)]
pub struct NatsServer {
    child: Option<Child>,
    /// Its client port.
    pub port: u16,
    /// Its monitoring port (`-m`).
    pub monitor: u16,
    /// JetStream's store, removed with the server.
    store: Option<PathBuf>,
}

impl NatsServer {
    /// Starts one and waits until both ports accept connections.
    pub fn start() -> Result<NatsServer, String> {
        Self::with_args(&[])
    }

    /// One with JetStream on, its store in a directory of its own.
    pub fn jetstream() -> Result<NatsServer, String> {
        let dir = std::env::temp_dir().join(format!(
            "throng-nats-js-{}-{}",
            std::process::id(),
            free_port()?
        ));
        let mut server = Self::with_args(&["-js", "-sd", &dir.to_string_lossy()])?;
        server.store = Some(dir);
        Ok(server)
    }

    /// One started with `extra` arguments too. A free port can be taken by another test
    /// between `free_port` and the server's bind, and the server then exits: it is started
    /// again on other ports, three times at most.
    pub fn with_args(extra: &[&str]) -> Result<NatsServer, String> {
        let bin = ["/usr/sbin/nats-server", "/usr/bin/nats-server"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .ok_or(
                "nats-server is not installed (apt-get install nats-server; scripts/test does)",
            )?;
        let mut tried = Vec::new();
        for _ in 0..3 {
            let (port, monitor) = (free_port()?, free_port()?);
            let child = Command::new(bin)
                .args(["-a", "127.0.0.1", "-p", &port.to_string()])
                .args(["-m", &monitor.to_string()])
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("nats-server does not start: {e}"))?;
            let mut server = NatsServer {
                child: Some(child),
                port,
                monitor,
                store: None,
            };
            let ready = [port, monitor]
                .into_iter()
                .try_for_each(|p| listening(p, server.child.as_mut()));
            match ready {
                Ok(()) => return Ok(server),
                Err(e) => {
                    server.kill();
                    tried.push(e);
                }
            }
        }
        Err(format!("nats-server did not start: {}", tried.join("; ")))
    }

    /// `nats://127.0.0.1:PORT/SUBJECT`.
    pub fn url(&self, subject: &str) -> String {
        format!("nats://127.0.0.1:{}/{subject}", self.port)
    }

    /// The monitoring endpoint, `http://127.0.0.1:PORT`.
    pub fn monitor_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.monitor)
    }

    /// Kills the server (SIGKILL: no goodbye to its clients).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
        if let Some(dir) = &self.store {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Builds the Go program `src` into `out`, offline, against Debian's Go packages
/// (`GOPATH=/usr/share/gocode`); `packages` names what to install when it does not build.
pub fn go_build(src: &Path, out: &Path, packages: &str) -> Result<(), String> {
    let dir = out.parent().unwrap_or(Path::new("."));
    let status = Command::new("go")
        .args(["build", "-o"])
        .arg(out)
        .arg(src)
        .env("GO111MODULE", "off")
        .env("GOPATH", "/usr/share/gocode")
        .env("GOFLAGS", "")
        .current_dir(dir)
        .status()
        .map_err(|e| format!("Go is not installed (apt-get install golang-go {packages}): {e}"))?;
    match status.success() {
        true => Ok(()),
        false => Err(format!(
            "{} does not build (apt-get install golang-go {packages}; scripts/test does)",
            src.display()
        )),
    }
}

/// A Go responder (the NATS and RabbitMQ tests' `responder.go`): started with its arguments,
/// ready once it prints `ready`; told to stop by closing its standard input, when it prints
/// `served N`.
#[derive(Debug)]
pub struct Responder {
    child: Child,
}

impl Responder {
    /// Starts `bin` with `args` and waits for its `ready`.
    pub fn start(bin: &Path, args: &[&str]) -> Result<Responder, String> {
        let mut child = Command::new(bin)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("{}: {e}", bin.display()))?;
        let mut line = String::new();
        if let Some(out) = child.stdout.as_mut() {
            let _ = BufReader::new(out).read_line(&mut line);
        }
        let responder = Responder { child };
        match line.trim() {
            "ready" => Ok(responder),
            other => Err(format!("the responder did not start: it said {other:?}")),
        }
    }

    /// Stops it: the requests it served, as it counts them.
    pub fn stop(mut self) -> Result<u64, String> {
        drop(self.child.stdin.take());
        let mut out = String::new();
        if let Some(o) = self.child.stdout.as_mut() {
            o.read_to_string(&mut out).map_err(|e| e.to_string())?;
        }
        let _ = self.child.wait();
        out.trim()
            .strip_prefix("served ")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("the responder said {out:?}"))
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if let Some(mut i) = self.child.stdin.take() {
            let _ = i.write_all(b"");
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
