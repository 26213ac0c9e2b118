//! The client against nginx (Debian's nginx-light, which `scripts/test` installs), a server no
//! one here wrote: HTTP/2 over TLS with ALPN and by prior knowledge (h2c), more concurrent
//! streams than nginx allows at once (128), a body larger than the windows, a 404, and nginx's
//! access log counting every request exactly once.

use std::net::{SocketAddr, TcpListener as StdListener, TcpStream as StdStream};
use std::path::PathBuf;
use std::process::Command;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use throng_h2::client::{connect, Target};
use throng_h2::conn::Config;
use throng_h2::hpack::Block;
use tokio::task::LocalSet;

mod common;
use common::send;

/// nginx on two free ports (TLS with `h2`, and h2c) in a temporary prefix; stopped on drop.
struct Nginx {
    dir: PathBuf,
    tls: u16,
    h2c: u16,
    cert_pem: String,
}

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

impl Nginx {
    fn start() -> Nginx {
        let dir = std::env::temp_dir().join(format!("throng-h2-nginx-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("logs")).expect("dir");
        // nginx's workers run as another user and must read the pages.
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("mode");
        std::fs::write(dir.join("index.html"), "hello, world").expect("page");
        std::fs::write(dir.join("big.txt"), "all work and no play\n".repeat(20_000)).expect("page");
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
        std::fs::write(dir.join("cert.pem"), cert.cert.pem()).expect("cert");
        std::fs::write(dir.join("key.pem"), cert.key_pair.serialize_pem()).expect("key");
        let (tls, h2c) = (free_port(), free_port());
        let p = dir.display();
        let conf = format!(
            "daemon on;
worker_processes 1;
pid {p}/nginx.pid;
error_log {p}/logs/error.log;
events {{ worker_connections 1024; }}
http {{
  log_format counted '$connection $status $request_length';
  access_log {p}/logs/access.log counted;
  client_body_temp_path {p}/body;
  proxy_temp_path {p}/proxy;
  fastcgi_temp_path {p}/fastcgi;
  uwsgi_temp_path {p}/uwsgi;
  scgi_temp_path {p}/scgi;
  server {{ listen 127.0.0.1:{tls} ssl http2; root {p};
    ssl_certificate {p}/cert.pem; ssl_certificate_key {p}/key.pem;
    location = /echo {{ client_max_body_size 10m; return 200 'posted'; }} }}
  server {{ listen 127.0.0.1:{h2c} http2; root {p}; }}
}}
"
        );
        std::fs::write(dir.join("nginx.conf"), conf).expect("conf");
        let out = Command::new("nginx")
            .args(["-p", &p.to_string(), "-c", &format!("{p}/nginx.conf")])
            .output()
            .expect("nginx is installed (scripts/test installs nginx-light)");
        assert!(out.status.success(), "nginx: {out:?}");
        for _ in 0..100 {
            if StdStream::connect(("127.0.0.1", tls)).is_ok()
                && StdStream::connect(("127.0.0.1", h2c)).is_ok()
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Nginx {
            cert_pem: cert.cert.pem(),
            dir,
            tls,
            h2c,
        }
    }

    /// The access log's (connection, status) lines, waiting up to 5 s for `expected` of them
    /// (nginx writes a line as a request ends, which may be after the client has its answer).
    fn log(&self, expected: usize) -> Vec<(u64, u16)> {
        let path = self.dir.join("logs/access.log");
        let mut text = String::new();
        for _ in 0..250 {
            text = std::fs::read_to_string(&path).unwrap_or_default();
            if text.lines().count() >= expected {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        text.lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (
                    f[0].parse().expect("connection"),
                    f[1].parse().expect("status"),
                )
            })
            .collect()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let p = self.dir.display().to_string();
        let _ = Command::new("nginx")
            .args(["-p", &p, "-c", &format!("{p}/nginx.conf"), "-s", "stop"])
            .output();
        std::thread::sleep(Duration::from_millis(100));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn target(port: u16, tls: Option<&str>, dir: &std::path::Path) -> Target {
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let tls = tls.map(|pem| {
        let ca = dir.join("ca.pem");
        std::fs::write(&ca, pem).expect("ca");
        let opts = throng_net::TlsOptions {
            insecure: false,
            cacert: Some(ca),
            alpn: vec![b"h2".to_vec()],
            ..Default::default()
        };
        (
            throng_net::client_config(&opts).expect("config"),
            throng_net::server_name("localhost").expect("name"),
        )
    });
    Target {
        addrs: vec![addr],
        authority: format!("localhost:{port}"),
        tls,
        connect_timeout: Duration::from_secs(5),
        config: Config::default(),
    }
}

fn block(method: &str, scheme: &str, path: &str, port: u16) -> Vec<u8> {
    Block::builder()
        .field(":method", method.as_bytes())
        .field(":scheme", scheme.as_bytes())
        .field(":path", path.as_bytes())
        .field(":authority", format!("localhost:{port}").as_bytes())
        .build()
        .fixed()
        .expect("fixed")
        .to_vec()
}

#[test]
fn nginx_over_tls_and_h2c() {
    let nginx = Nginx::start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(LocalSet::new().run_until(async {
        // TLS, ALPN h2.
        let t = target(nginx.tls, Some(&nginx.cert_pem), &nginx.dir);
        let c = connect(&t).await.expect("connect over TLS");
        let r = send(
            &c,
            &block("GET", "https", "/index.html", nginx.tls),
            Bytes::new(),
        )
        .await;
        let r = r.expect("index");
        assert_eq!((r.status, &r.body[..]), (200, &b"hello, world"[..]));
        assert!(r
            .headers
            .iter()
            .any(|(n, v)| n == b"server" && v.starts_with(b"nginx")));
        // 420 KB down, over the windows' 65,535 of nginx's own and crossing ours at half.
        let r = send(
            &c,
            &block("GET", "https", "/big.txt", nginx.tls),
            Bytes::new(),
        )
        .await;
        assert_eq!(r.expect("big").body_len, 420_000);
        let r = send(&c, &block("GET", "https", "/nope", nginx.tls), Bytes::new()).await;
        assert_eq!(r.expect("404").status, 404);
        // 1 MB up, to a location that answers without reading it.
        let up = Bytes::from(vec![b'u'; 1_000_000]);
        let r = send(&c, &block("POST", "https", "/echo", nginx.tls), up).await;
        let r = r.expect("posted");
        assert_eq!((r.status, &r.body[..]), (200, &b"posted"[..]));
        // 300 at once on the one connection: nginx allows 128, the rest wait their turn.
        let h = Rc::new(block("GET", "https", "/index.html", nginx.tls));
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..300 {
            let (c, h) = (c.clone(), h.clone());
            set.spawn_local(async move { send(&c, &h, Bytes::new()).await });
        }
        while let Some(r) = set.join_next().await {
            assert_eq!(r.expect("task").expect("answered").status, 200);
        }
        // h2c by prior knowledge.
        let t = target(nginx.h2c, None, &nginx.dir);
        let c2 = connect(&t).await.expect("connect h2c");
        let r = send(
            &c2,
            &block("GET", "http", "/index.html", nginx.h2c),
            Bytes::new(),
        )
        .await;
        assert_eq!(r.expect("h2c").status, 200);
        c.ping().await.expect("nginx answers PING");
    }));
    // Every request in nginx's log once: 304 on the TLS connection, 1 on the h2c one.
    let log = nginx.log(305);
    assert_eq!(log.len(), 305, "{log:?}");
    let mut conns: Vec<u64> = log.iter().map(|l| l.0).collect();
    conns.sort_unstable();
    conns.dedup();
    assert_eq!(conns.len(), 2, "two connections");
    assert_eq!(log.iter().filter(|l| l.1 == 404).count(), 1);
}
