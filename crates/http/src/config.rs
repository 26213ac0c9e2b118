use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};

use crate::url::{parse_url, UrlProblem};

/// What to send, and how. Build it with [`HttpConfig::new`] and the setters' public fields.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The target URL (`http://` or `https://`).
    pub url: Uri,
    /// The request method.
    pub method: Method,
    /// Extra request headers.
    pub headers: HeaderMap,
    /// The request body.
    pub body: Bytes,
    /// Speak HTTP/2 (prior knowledge over cleartext, ALPN `h2` over TLS).
    pub http2: bool,
    /// HTTP/2: how many sessions share one connection.
    pub streams: usize,
    /// Keep connections open between requests. Without it every request opens its own (and
    /// times its connect and TLS phases): HTTP/1.1 sends `Connection: close` and closes it after
    /// the response; HTTP/2 opens one for the request alone and drops it after.
    pub keepalive: bool,
    /// The whole request, from send to the last byte of the body, must finish within this.
    pub timeout: Duration,
    /// Establishing a connection (TCP and TLS) must finish within this.
    pub connect_timeout: Duration,
    /// Accept any server certificate.
    pub insecure: bool,
    /// Trust these PEM certificates instead of the built-in web roots.
    pub cacert: Option<PathBuf>,
    /// The certificate and key to present when the server asks for one (mutual TLS).
    pub identity: Option<throng_core::step::Identity>,
    /// The row label in results (default: `METHOD path`).
    pub label: Option<String>,
    /// Read the response as a stream of events, each timed in the step's parts row.
    pub stream: Option<crate::StreamMode>,
}

/// Why a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HttpConfigError {
    /// The URL is not an absolute http or https URL.
    #[error("`{0}` is not an http:// or https:// URL with a host")]
    Url(String),
    /// The URL names a target throng cannot reach as written.
    #[error("URL `{url}`: {problem}")]
    BadUrl {
        /// The URL as written (credentials hidden).
        url: String,
        /// What is wrong with it.
        problem: UrlProblem,
    },
    /// A header was not `name: value`, or had bad characters.
    #[error("header `{0}` is not NAME: VALUE")]
    Header(String),
    /// The host did not resolve.
    #[error("cannot resolve `{host}`: {reason}")]
    Resolve {
        /// The host and port.
        host: String,
        /// Why.
        reason: String,
    },
    /// The CA file could not be read or held no certificate.
    #[error("cannot use CA file {path}: {reason}")]
    CaCert {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The client certificate or key could not be read, held none, or do not match.
    #[error("cannot use client {what} {path}: {reason}")]
    Identity {
        /// `certificate` or `key`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// rustls refused the TLS configuration.
    #[error("TLS configuration: {0}")]
    Tls(String),
}

impl HttpConfig {
    /// A GET of `url` with defaults: HTTP/1.1 keep-alive, 30 s timeout, 10 s connect timeout.
    pub fn new(url: &str) -> Result<Self, HttpConfigError> {
        let uri = parse_url(url)?;
        Ok(HttpConfig {
            url: uri,
            method: Method::GET,
            headers: HeaderMap::new(),
            body: Bytes::new(),
            http2: false,
            streams: 100,
            keepalive: true,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            insecure: false,
            cacert: None,
            identity: None,
            label: None,
            stream: None,
        })
    }

    /// Adds a header written as `name: value`.
    pub fn header(&mut self, line: &str) -> Result<(), HttpConfigError> {
        let bad = || HttpConfigError::Header(line.to_string());
        let (name, value) = line.split_once(':').ok_or_else(bad)?;
        let name: HeaderName = name.trim().parse().map_err(|_| bad())?;
        let value: HeaderValue = value.trim().parse().map_err(|_| bad())?;
        self.headers.append(name, value);
        Ok(())
    }

    /// Whether the URL asks for TLS.
    pub fn is_tls(&self) -> bool {
        self.url.scheme_str() == Some("https")
    }

    /// `host:port` of the URL, with the scheme's default port.
    pub fn authority(&self) -> String {
        throng_net::authority(
            self.url.host().unwrap_or_default(),
            self.url.port_u16(),
            self.is_tls(),
        )
    }

    /// The label of the one step.
    pub fn label(&self) -> String {
        self.label
            .clone()
            .unwrap_or_else(|| format!("{} {}", self.method, self.url.path()))
    }

    pub(crate) fn resolve(&self) -> Result<Vec<SocketAddr>, HttpConfigError> {
        use std::net::ToSocketAddrs;
        let auth = self.authority();
        let addrs: Vec<SocketAddr> = auth
            .to_socket_addrs()
            .map_err(|e| HttpConfigError::Resolve {
                host: auth.clone(),
                reason: e.to_string(),
            })?
            .collect();
        if addrs.is_empty() {
            return Err(HttpConfigError::Resolve {
                host: auth,
                reason: "no address".into(),
            });
        }
        Ok(addrs)
    }
}
