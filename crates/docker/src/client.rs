//! The Docker Engine API over its Unix socket: a handful of GETs, nothing that changes state.
//!
//! There is no pool: each request opens its own connection (the socket is local and requests
//! are rare: a few before the run, then one long stats stream per container).

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::{Buf, Bytes};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use tokio::net::UnixStream;
use tokio::task::JoinHandle;

use crate::api::{ContainerInspect, ContainerSummary, ImageInspect};
use crate::stats::StatsDoc;
use crate::DockerError;

/// Where the engine listens when `DOCKER_HOST` is unset.
pub const DEFAULT_SOCKET: &str = "/var/run/docker.sock";

/// The newest API version whose reference our requests and fields were checked against. The
/// client speaks `min(engine's version, this)`: Docker 20.10 speaks 1.41, and Docker 29 refuses
/// anything below 1.44. Everything we read has existed unchanged since 1.41.
pub const MAX_API_VERSION: ApiVersion = ApiVersion(1, 52);

/// How long a request before the run may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// An Engine API version, `major.minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ApiVersion(pub u32, pub u32);

impl ApiVersion {
    /// Parses `1.41`.
    pub fn parse(s: &str) -> Option<Self> {
        let (a, b) = s.trim().split_once('.')?;
        Some(ApiVersion(a.parse().ok()?, b.parse().ok()?))
    }
}

impl std::fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

/// The socket named by a `DOCKER_HOST` value (`None`: unset, the default socket).
pub fn socket_from(docker_host: Option<&str>) -> Result<PathBuf, DockerError> {
    match docker_host.map(str::trim).filter(|h| !h.is_empty()) {
        None => Ok(PathBuf::from(DEFAULT_SOCKET)),
        Some(h) => match h.strip_prefix("unix://") {
            Some(path) if !path.is_empty() => Ok(PathBuf::from(path)),
            _ => Err(DockerError::UnsupportedHost(h.to_string())),
        },
    }
}

/// A connection-less client of one engine, with its API version negotiated.
#[derive(Debug, Clone)]
pub struct Client {
    socket: PathBuf,
    version: ApiVersion,
}

/// Aborts the task driving a connection when the request using it is dropped.
struct ConnTask(JoinHandle<()>);

impl Drop for ConnTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Client {
    /// A client of the engine named by `DOCKER_HOST`, or the default socket.
    pub async fn from_env() -> Result<Client, DockerError> {
        let host = std::env::var("DOCKER_HOST").ok();
        Client::connect(&socket_from(host.as_deref())?).await
    }

    /// A client of the engine on `socket`: pings it and negotiates the API version.
    pub async fn connect(socket: &Path) -> Result<Client, DockerError> {
        let mut client = Client {
            socket: socket.to_path_buf(),
            version: MAX_API_VERSION,
        };
        let (resp, _conn) = client.send("/_ping").await?;
        let engine = resp
            .headers()
            .get("api-version")
            .and_then(|v| v.to_str().ok())
            .and_then(ApiVersion::parse);
        // An engine too old to say is older than anything we know; 1.41 has all we read.
        client.version = engine.unwrap_or(ApiVersion(1, 41)).min(MAX_API_VERSION);
        Ok(client)
    }

    /// The API version in use.
    pub fn version(&self) -> ApiVersion {
        self.version
    }

    /// The socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Sends `GET path` on a new connection; the response's status is not checked yet.
    async fn send(&self, path: &str) -> Result<(hyper::Response<Incoming>, ConnTask), DockerError> {
        let stream = UnixStream::connect(&self.socket)
            .await
            .map_err(|e| connect_error(&self.socket, e))?;
        let http = |source| DockerError::Http {
            request: path.to_string(),
            source,
        };
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(http)?;
        let conn = ConnTask(tokio::spawn(async move {
            let _ = conn.await;
        }));
        let req = hyper::Request::get(path)
            .header(hyper::header::HOST, "docker")
            .body(Empty::<Bytes>::new());
        // The path is built from percent-encoded parts and the method and header are constant,
        // so building the request cannot fail; map it anyway rather than panic.
        let req = req.map_err(|e| DockerError::Status {
            request: path.to_string(),
            status: 0,
            message: e.to_string(),
        })?;
        let resp = sender.send_request(req).await.map_err(http)?;
        Ok((resp, conn))
    }

    /// `GET /v{version}{path}`, checked for success, with the connection that carries the body.
    async fn get(&self, path: &str) -> Result<(hyper::Response<Incoming>, ConnTask), DockerError> {
        let full = format!("/v{}{}", self.version, path);
        let (resp, conn) = self.send(&full).await?;
        if !resp.status().is_success() {
            let status = resp.status().as_u16();
            let body = read_body(resp.into_body(), &full).await.unwrap_or_default();
            let message = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v.get("message")?.as_str().map(String::from))
                .unwrap_or_else(|| String::from_utf8_lossy(&body).trim().to_string());
            return Err(DockerError::Status {
                request: full,
                status,
                message,
            });
        }
        Ok((resp, conn))
    }

    /// `GET /v{version}{path}` decoded as JSON, within the request timeout.
    pub async fn get_json<T: DeserializeOwned>(&self, path: &str) -> Result<T, DockerError> {
        let request = path.to_string();
        let fetch = async {
            let (resp, _conn) = self.get(path).await?;
            let body = read_body(resp.into_body(), path).await?;
            serde_json::from_slice(&body).map_err(|source| DockerError::Decode {
                request: path.to_string(),
                source,
            })
        };
        tokio::time::timeout(REQUEST_TIMEOUT, fetch)
            .await
            .map_err(|_| DockerError::Timeout {
                request,
                secs: REQUEST_TIMEOUT.as_secs(),
            })?
    }

    /// Running containers matching the filters (`{"label":["k=v"]}`, as the API takes them).
    pub async fn list_containers(
        &self,
        filters: &serde_json::Value,
    ) -> Result<Vec<ContainerSummary>, DockerError> {
        let path = format!("/containers/json?filters={}", encode(&filters.to_string()));
        self.get_json(&path).await
    }

    /// A container by name, id or unique id prefix; `Ok(None)` when there is no such container.
    pub async fn inspect_container(
        &self,
        name_or_id: &str,
    ) -> Result<Option<ContainerInspect>, DockerError> {
        let path = format!("/containers/{}/json", encode(name_or_id));
        match self.get_json(&path).await {
            Err(DockerError::Status { status: 404, .. }) => Ok(None),
            other => other.map(Some),
        }
    }

    /// An image by name or id.
    pub async fn inspect_image(&self, name_or_id: &str) -> Result<ImageInspect, DockerError> {
        self.get_json(&format!("/images/{}/json", encode(name_or_id)))
            .await
    }

    /// Opens the container's stats stream: one document about every second until it is dropped.
    pub async fn stats(&self, id: &str) -> Result<StatsStream, DockerError> {
        let path = format!("/containers/{}/stats?stream=true", encode(id));
        let (resp, conn) = tokio::time::timeout(REQUEST_TIMEOUT, self.get(&path))
            .await
            .map_err(|_| DockerError::Timeout {
                request: path.clone(),
                secs: REQUEST_TIMEOUT.as_secs(),
            })??;
        Ok(StatsStream {
            body: resp.into_body(),
            buf: Vec::new(),
            path,
            _conn: conn,
        })
    }
}

/// A container's stats stream: newline-delimited JSON documents.
pub struct StatsStream {
    body: Incoming,
    buf: Vec<u8>,
    path: String,
    _conn: ConnTask,
}

impl StatsStream {
    /// The next document; `None` when the engine ends the stream.
    pub async fn next(&mut self) -> Option<Result<StatsDoc, DockerError>> {
        loop {
            if let Some(end) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Some(
                    serde_json::from_slice(&line).map_err(|source| DockerError::Decode {
                        request: self.path.clone(),
                        source,
                    }),
                );
            }
            match self.body.frame().await {
                None => return None,
                Some(Err(source)) => {
                    return Some(Err(DockerError::Http {
                        request: self.path.clone(),
                        source,
                    }))
                }
                Some(Ok(frame)) => {
                    if let Ok(mut data) = frame.into_data() {
                        while data.has_remaining() {
                            let chunk = data.chunk();
                            self.buf.extend_from_slice(chunk);
                            let n = chunk.len();
                            data.advance(n);
                        }
                    }
                }
            }
        }
    }
}

/// What a failure to connect to the socket means for the user.
fn connect_error(path: &Path, source: std::io::Error) -> DockerError {
    match source.kind() {
        std::io::ErrorKind::PermissionDenied => DockerError::PermissionDenied {
            path: path.to_path_buf(),
        },
        _ => DockerError::Unreachable {
            path: path.to_path_buf(),
            source,
        },
    }
}

async fn read_body(body: Incoming, request: &str) -> Result<Bytes, DockerError> {
    body.collect()
        .await
        .map(|c| c.to_bytes())
        .map_err(|source| DockerError::Http {
            request: request.to_string(),
            source,
        })
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_host_names_the_socket() {
        assert_eq!(socket_from(None).ok(), Some(PathBuf::from(DEFAULT_SOCKET)));
        assert_eq!(
            socket_from(Some("unix:///run/user/1000/docker.sock")).ok(),
            Some(PathBuf::from("/run/user/1000/docker.sock"))
        );
        assert!(matches!(
            socket_from(Some("tcp://10.0.0.1:2375")),
            Err(DockerError::UnsupportedHost(_))
        ));
    }

    #[test]
    fn permission_denied_says_how_to_get_permission() {
        let path = Path::new("/var/run/docker.sock");
        let e = connect_error(path, std::io::ErrorKind::PermissionDenied.into());
        assert!(matches!(e, DockerError::PermissionDenied { .. }), "{e}");
        assert!(e.to_string().contains("`docker` group"), "{e}");
        let e = connect_error(path, std::io::ErrorKind::ConnectionRefused.into());
        assert!(matches!(e, DockerError::Unreachable { .. }), "{e}");
        assert!(e.to_string().contains("DOCKER_HOST=unix://"), "{e}");
    }

    #[test]
    fn versions_compare_numerically() {
        assert_eq!(ApiVersion::parse("1.41"), Some(ApiVersion(1, 41)));
        assert!(ApiVersion(1, 9) < ApiVersion(1, 41));
        assert_eq!(ApiVersion(1, 53).min(MAX_API_VERSION), MAX_API_VERSION);
        assert_eq!(ApiVersion::parse("x"), None);
    }

    #[test]
    fn encoding_keeps_names_and_escapes_json() {
        assert_eq!(encode("web-go_1.2"), "web-go_1.2");
        assert_eq!(
            encode(r#"{"label":["a=b"]}"#),
            "%7B%22label%22%3A%5B%22a%3Db%22%5D%7D"
        );
    }
}
