//! A small HTTP/1.1 GET for the endpoints servers publish their figures on (nats-server's
//! `/varz`, RabbitMQ's management API), read once a second beside a run by
//! [`throng_core::watch`]: a connection a reading (`Connection: close`), basic authentication
//! from the URL's user info, the status line parsed (httparse), the body by `Content-Length`,
//! chunked or to the close, bounded in size, the whole exchange within a timeout. Every failure
//! is a [`ReadError`] with its class: `connect` (refused), `timeout`, `reset`, `status` (an
//! answer other than 2xx), `protocol` (not HTTP).
//!
//! Why not an HTTP client crate: one small request a second is no load, and throng-http's
//! codec sits above this crate; what matters is that a reading can neither hang nor be
//! mistaken for a success, which is this file.

use std::time::Duration;

use base64::Engine as _;
use throng_core::watch::ReadError;
use throng_core::ErrorClass;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The most a body may hold: monitoring pages are a few KiB.
const LIMIT: usize = 4 << 20;

/// An `http://` endpoint to GET.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `host:port`.
    addr: String,
    /// The path and query, `/` at least.
    path: String,
    /// `Basic ...`, from the URL's `USER:PASS@`.
    auth: Option<String>,
}

impl Endpoint {
    /// `http://[USER:PASS@]HOST[:PORT][/PATH]`, `port` where the URL gives none and `path`
    /// where it gives none (a URL's own path is kept). User and password may be
    /// percent-encoded. The error says what is wrong with `url`, to follow the flag's name.
    pub fn parse(url: &str, port: u16, path: &str) -> Result<Endpoint, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url}: not an http:// URL"))?;
        let (authority, own_path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let (user, host) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        if host.is_empty() || host.starts_with(':') {
            return Err(format!("{url}: no host"));
        }
        let addr = match host.rsplit_once(':') {
            Some((_, p)) if !host.ends_with(']') => {
                p.parse::<u16>()
                    .map_err(|_| format!("{url}: {p} is not a port"))?;
                host.to_string()
            }
            _ => format!("{host}:{port}"),
        };
        let auth = user.map(|u| {
            let u = percent_encoding::percent_decode_str(u).decode_utf8_lossy();
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(u.as_bytes())
            )
        });
        let path = match own_path {
            "" | "/" => path.to_string(),
            p => p.to_string(),
        };
        Ok(Endpoint { addr, path, auth })
    }

    /// With basic authentication as `user:password` where the URL names no user.
    pub fn or_login(mut self, user_password: &str) -> Endpoint {
        if self.auth.is_none() {
            let b64 = base64::engine::general_purpose::STANDARD.encode(user_password.as_bytes());
            self.auth = Some(format!("Basic {b64}"));
        }
        self
    }

    /// The endpoint as messages show it: `http://HOST:PORT/PATH`, no password.
    pub fn shown(&self) -> String {
        format!("http://{}{}", self.addr, self.path)
    }

    /// GETs it within `timeout` (connecting included): the body of a 2xx answer.
    pub async fn get(&self, timeout: Duration) -> Result<Vec<u8>, ReadError> {
        match tokio::time::timeout(timeout, self.exchange()).await {
            Ok(r) => r,
            Err(_) => Err(self.fail(
                ErrorClass::Timeout,
                format!("no answer within {} ms", timeout.as_millis()),
            )),
        }
    }

    /// GETs it within `timeout` and reads the body as JSON (what monitoring endpoints
    /// answer); a body that is not JSON is a `protocol` failure.
    pub async fn get_json(&self, timeout: Duration) -> Result<serde_json::Value, ReadError> {
        let body = self.get(timeout).await?;
        serde_json::from_slice(&body)
            .map_err(|e| self.fail(ErrorClass::Protocol, format!("not JSON ({e})")))
    }

    fn fail(&self, class: ErrorClass, what: impl std::fmt::Display) -> ReadError {
        ReadError::new(class, format!("{}: {what}", self.shown()))
    }

    fn io(&self, e: std::io::Error) -> ReadError {
        let class = crate::classify_io(&e).unwrap_or(ErrorClass::Other);
        self.fail(class, e)
    }

    async fn exchange(&self) -> Result<Vec<u8>, ReadError> {
        let mut s = tokio::net::TcpStream::connect(&self.addr)
            .await
            .map_err(|e| match e.kind() {
                // Unreachable, unknown host: a connection that could not be made.
                std::io::ErrorKind::TimedOut => self.io(e),
                _ => self.fail(ErrorClass::Connect, e),
            })?;
        let mut req = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: throng\r\nAccept: */*\r\nConnection: close\r\n",
            self.path, self.addr
        );
        if let Some(a) = &self.auth {
            req.push_str("Authorization: ");
            req.push_str(a);
            req.push_str("\r\n");
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).await.map_err(|e| self.io(e))?;
        let mut buf = Vec::with_capacity(16 << 10);
        // `Connection: close`: the answer ends where the server closes.
        (&mut s)
            .take(LIMIT as u64 + 1)
            .read_to_end(&mut buf)
            .await
            .map_err(|e| self.io(e))?;
        if buf.len() > LIMIT {
            return Err(self.fail(
                ErrorClass::Protocol,
                format!("an answer over {} MiB", LIMIT >> 20),
            ));
        }
        self.answer(&buf)
    }

    /// The body of `buf`, a whole answer read to the close.
    fn answer(&self, buf: &[u8]) -> Result<Vec<u8>, ReadError> {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut res = httparse::Response::new(&mut headers);
        let head = match res.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) if buf.is_empty() => {
                return Err(self.fail(ErrorClass::Reset, "closed without an answer"))
            }
            Ok(httparse::Status::Partial) => {
                return Err(self.fail(ErrorClass::Cut, "the answer's head was cut short"))
            }
            Err(e) => {
                return Err(self.fail(ErrorClass::Protocol, format!("not an HTTP answer ({e})")))
            }
        };
        let code = res.code.unwrap_or_default();
        if !(200..300).contains(&code) {
            return Err(self.fail(
                ErrorClass::Status,
                format!("answered {code} {}", res.reason.unwrap_or_default()),
            ));
        }
        let header = |name: &str| {
            res.headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
        };
        let body = &buf[head..];
        if header("transfer-encoding").is_some_and(|v| v.ends_with("chunked")) {
            return self.unchunk(body);
        }
        match header("content-length") {
            Some(v) => {
                let n: usize = v
                    .parse()
                    .map_err(|_| self.fail(ErrorClass::Protocol, format!("Content-Length {v}")))?;
                match body.get(..n) {
                    Some(b) => Ok(b.to_vec()),
                    None => Err(self.fail(
                        ErrorClass::Cut,
                        format!("{} of a body of {n} bytes", body.len()),
                    )),
                }
            }
            None => Ok(body.to_vec()),
        }
    }

    fn unchunk(&self, mut rest: &[u8]) -> Result<Vec<u8>, ReadError> {
        let mut out = Vec::with_capacity(rest.len());
        loop {
            let (at, size) = match httparse::parse_chunk_size(rest) {
                Ok(httparse::Status::Complete(c)) => c,
                Ok(httparse::Status::Partial) => {
                    return Err(self.fail(ErrorClass::Cut, "a chunked body cut short"))
                }
                Err(_) => return Err(self.fail(ErrorClass::Protocol, "a bad chunk size")),
            };
            if size == 0 {
                return Ok(out);
            }
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            let chunk = rest
                .get(at..at.saturating_add(size))
                .ok_or_else(|| self.fail(ErrorClass::Cut, "a chunked body cut short"))?;
            out.extend_from_slice(chunk);
            rest = rest.get(at + size..).unwrap_or_default();
            rest = rest
                .strip_prefix(b"\r\n")
                .ok_or_else(|| self.fail(ErrorClass::Protocol, "a chunk not followed by CRLF"))?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep() -> Endpoint {
        Endpoint::parse("http://127.0.0.1:1", 80, "/varz").expect("a URL")
    }

    #[test]
    fn urls_ports_paths_and_basic_auth() {
        let e =
            Endpoint::parse("http://u%40x:p@h:15673/api/x", 15672, "/api/overview").expect("a URL");
        assert_eq!(e.addr, "h:15673");
        assert_eq!(e.path, "/api/x");
        // base64("u@x:p")
        assert_eq!(e.auth.as_deref(), Some("Basic dUB4OnA="));
        assert_eq!(e.shown(), "http://h:15673/api/x");
        let e = Endpoint::parse("http://h", 8222, "/varz").expect("a URL");
        assert_eq!(
            (e.addr.as_str(), e.path.as_str(), &e.auth),
            ("h:8222", "/varz", &None)
        );
        // base64("guest:guest")
        let e = e.or_login("guest:guest");
        assert_eq!(e.auth.as_deref(), Some("Basic Z3Vlc3Q6Z3Vlc3Q="));
        let e = Endpoint::parse("http://a:b@h", 1, "/")
            .unwrap()
            .or_login("guest:guest");
        assert_eq!(e.auth.as_deref(), Some("Basic YTpi"));
        for bad in ["https://h", "h:1", "http://:1", "http://", "http://h:x"] {
            assert!(Endpoint::parse(bad, 1, "/").is_err(), "{bad}");
        }
    }

    #[test]
    fn bodies_by_length_chunks_or_close_and_statuses_classified() {
        let e = ep();
        let ok = |a: &str| {
            e.answer(a.as_bytes())
                .map(|b| String::from_utf8_lossy(&b).to_string())
        };
        assert_eq!(
            ok("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}junk").unwrap(),
            "{}"
        );
        assert_eq!(
            ok("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{\"\r\n3;x=y\r\na\":\r\n1\r\n1\r\n0\r\n\r\n")
                .unwrap(),
            "{\"a\":1"
        );
        assert_eq!(
            ok("HTTP/1.0 200 OK\r\n\r\nto the end").unwrap(),
            "to the end"
        );
        let class = |a: &str| e.answer(a.as_bytes()).unwrap_err().class;
        // A 500 whose reason says 200 is still a 500.
        let err = e
            .answer(b"HTTP/1.1 500 Not 200 OK\r\nContent-Length: 0\r\n\r\n")
            .unwrap_err();
        assert_eq!(err.class, ErrorClass::Status);
        assert!(err.message.ends_with("answered 500 Not 200 OK"), "{err}");
        assert_eq!(class("HTTP/1.1 404 Not Found\r\n\r\n"), ErrorClass::Status);
        assert_eq!(class("SSH-2.0-OpenSSH\r\n\r\n"), ErrorClass::Protocol);
        assert_eq!(class(""), ErrorClass::Reset);
        assert_eq!(class("HTTP/1.1 200 OK\r\nContent-"), ErrorClass::Cut);
        assert_eq!(
            class("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}"),
            ErrorClass::Cut
        );
        assert_eq!(
            class("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"),
            ErrorClass::Cut
        );
    }

    /// A server on 127.0.0.1 that answers each connection with `answer` (or nothing: it holds
    /// the connection), returning its URL.
    async fn server(answer: Option<&'static [u8]>) -> (String, tokio::task::JoinHandle<Vec<u8>>) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://u:p@{}", l.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut req = vec![0u8; 4096];
            let n = s.read(&mut req).await.unwrap();
            req.truncate(n);
            match answer {
                Some(a) => s.write_all(a).await.unwrap(),
                None => tokio::time::sleep(Duration::from_secs(60)).await,
            }
            req
        });
        (url, task)
    }

    #[tokio::test]
    async fn real_sockets_refused_stalled_500_and_ok() {
        let t = Duration::from_millis(300);
        let (url, req) = server(Some(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody")).await;
        let e = Endpoint::parse(&url, 80, "/varz").unwrap();
        assert_eq!(e.get(t).await.unwrap(), b"body");
        let req = String::from_utf8(req.await.unwrap()).unwrap();
        assert!(req.starts_with("GET /varz HTTP/1.1\r\n"), "{req}");
        assert!(req.contains("\r\nAuthorization: Basic dTpw\r\n"), "{req}");

        let (url, _req) = server(Some(b"HTTP/1.1 200 OK\r\n\r\n<html>")).await;
        let e = Endpoint::parse(&url, 80, "/").unwrap();
        let err = e.get_json(t).await.unwrap_err();
        assert_eq!(err.class, ErrorClass::Protocol, "{err}");
        assert!(err.message.contains("not JSON"), "{err}");

        let (url, _req) = server(Some(b"HTTP/1.1 500 Internal Server Error\r\n\r\n")).await;
        let e = Endpoint::parse(&url, 80, "/").unwrap();
        assert_eq!(e.get(t).await.unwrap_err().class, ErrorClass::Status);

        let (url, _held) = server(None).await;
        let e = Endpoint::parse(&url, 80, "/").unwrap();
        let started = std::time::Instant::now();
        assert_eq!(e.get(t).await.unwrap_err().class, ErrorClass::Timeout);
        assert!(started.elapsed() < Duration::from_secs(5));

        let free = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", free.local_addr().unwrap());
        drop(free);
        let e = Endpoint::parse(&url, 80, "/").unwrap();
        assert_eq!(e.get(t).await.unwrap_err().class, ErrorClass::Connect);
    }
}
