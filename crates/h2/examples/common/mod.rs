//! What the `load` and `engine_load` examples share: their command line, the request's
//! header block and the target, and the `requests:` line in h2load's shape.

use std::net::ToSocketAddrs;
use std::time::Duration;

use bytes::Bytes;
use throng_h2::client::Target;
use throng_h2::conn::Config;
use throng_h2::hpack::Block;

/// A load example's command line.
pub(crate) struct Args {
    pub(crate) target: Target,
    /// The request's header block (GET, or a gRPC POST with `--grpc`), encoded once.
    pub(crate) block: Vec<u8>,
    /// The request's body: the gRPC frame read from `--grpc`'s file, or none.
    pub(crate) body: Bytes,
    pub(crate) grpc: bool,
    pub(crate) users: usize,
    pub(crate) secs: f64,
    pub(crate) count: Option<u64>,
    pub(crate) conns: usize,
}

fn usage(name: &str) -> ! {
    eprintln!(
        "usage: {name} http://HOST:PORT/PATH [-c USERS] [-z SECONDS | -n REQUESTS] [--connections N] [--grpc FRAME_FILE]"
    );
    std::process::exit(2)
}

fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("{what}: {e}");
    std::process::exit(2)
}

/// Reads the command line (exit code 2 and the usage on a mistake).
pub(crate) fn args(name: &str, agent: &str) -> Args {
    let mut it = std::env::args().skip(1);
    let (mut url, mut users, mut secs, mut count, mut conns, mut grpc) =
        (None, 50usize, 5f64, None, 1usize, None);
    while let Some(a) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage(name));
        match a.as_str() {
            "-c" => users = val().parse().unwrap_or_else(|_| usage(name)),
            "-n" => count = Some(val().parse().unwrap_or_else(|_| usage(name))),
            "-z" => {
                secs = val()
                    .trim_end_matches('s')
                    .parse()
                    .unwrap_or_else(|_| usage(name))
            }
            "--connections" => conns = val().parse().unwrap_or_else(|_| usage(name)),
            "--grpc" => grpc = Some(val()),
            _ if a.starts_with("http://") => url = Some(a),
            _ => usage(name),
        }
    }
    let url = url.unwrap_or_else(|| usage(name));
    let rest = &url["http://".len()..];
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addrs: Vec<_> = match authority.to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(e) => fail(authority, e),
    };
    let body = match &grpc {
        Some(f) => Bytes::from(std::fs::read(f).unwrap_or_else(|e| fail(f, e))),
        None => Bytes::new(),
    };
    let mut b = Block::builder();
    b.field(":method", if grpc.is_some() { b"POST" } else { b"GET" })
        .field(":scheme", b"http")
        .field(":path", path.as_bytes())
        .field(":authority", authority.as_bytes())
        .field("user-agent", agent.as_bytes());
    if grpc.is_some() {
        b.field("content-type", b"application/grpc")
            .field("te", b"trailers");
    }
    Args {
        target: Target {
            addrs,
            authority: authority.to_string(),
            tls: None,
            connect_timeout: Duration::from_secs(5),
            config: Config::default(),
        },
        block: b.build().fixed().expect("no slots").to_vec(),
        body,
        grpc: grpc.is_some(),
        users,
        secs,
        count,
        conns: conns.max(1),
    }
}

/// Prints the outcome in h2load's shape, which `benches/h2.sh` reads.
pub(crate) fn print_requests(ok: u64, failed: u64) {
    let total = ok + failed;
    println!(
        "requests: {total} total, {total} started, {total} done, {ok} succeeded, {failed} failed, 0 errored, 0 timeout"
    );
}
