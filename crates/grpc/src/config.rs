//! What to call and how: [`GrpcConfig`], and the errors that stop a run before any load.

use std::path::PathBuf;
use std::time::Duration;

use http::Uri;

/// Where the method's descriptors come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Descriptors {
    /// `.proto` files compiled at run time (protox: no `protoc`), with import paths.
    Protos {
        /// The files.
        files: Vec<PathBuf>,
        /// Where imports are looked for (the files' own directories are added).
        includes: Vec<PathBuf>,
    },
    /// A `FileDescriptorSet` (`protoc --descriptor_set_out --include_imports`).
    Protoset(PathBuf),
    /// The server's reflection service: `grpc.reflection.v1`, falling back to `v1alpha`.
    Reflection,
}

/// A gRPC call and how to send it. Build it with [`GrpcConfig::new`] and set the public fields.
#[derive(Debug, Clone)]
pub struct GrpcConfig {
    /// `grpc://host:port` or `grpcs://host:port`, with no path.
    pub url: Uri,
    /// The method, `package.Service/Method`.
    pub call: String,
    /// Where the descriptors come from.
    pub descriptors: Descriptors,
    /// The request in the protobuf JSON mapping: one object, or for client-streaming and bidi
    /// methods an array of objects (or one object per line). None sends an empty message.
    pub data: Option<String>,
    /// Metadata sent with every call, `name: value`.
    pub metadata: Vec<(String, String)>,
    /// The call's deadline: sent as `grpc-timeout`, and a call past it is a `timeout`.
    pub timeout: Duration,
    /// Establishing a connection (TCP, TLS and the HTTP/2 handshake) must finish within this.
    pub connect_timeout: Duration,
    /// Sessions (users, in-flight slots) sharing one HTTP/2 connection.
    pub streams: usize,
    /// HTTP/2 connections carrying the calls, in all, the sessions spread evenly over them;
    /// `None`: a connection per `streams` sessions on each worker thread. Each worker thread
    /// opens its share, at least one (the command line runs no more threads than connections,
    /// and refuses more sessions than `connections × streams`).
    pub connections: Option<usize>,
    /// Client streaming and bidi: the pause before each message after the first.
    pub message_interval: Option<Duration>,
    /// Accept any server certificate (`grpcs://`).
    pub insecure: bool,
    /// Trust these PEM certificates instead of the built-in web roots (`grpcs://`).
    pub cacert: Option<PathBuf>,
    /// The certificate and key to present when the server asks for one (`grpcs://`).
    pub identity: Option<throng_core::step::Identity>,
    /// The row label in results (default: the call, `package.Service/Method`).
    pub label: Option<String>,
}

/// Why a gRPC run cannot start: bad input, named. The command line exits with 2 on each.
#[derive(Debug, thiserror::Error)]
pub enum GrpcError {
    /// The URL is not `grpc://host:port` or `grpcs://host:port`.
    #[error("`{url}`: {problem}")]
    Url {
        /// The URL as written.
        url: String,
        /// What is wrong with it.
        problem: String,
    },
    /// `--call` is not `package.Service/Method`.
    #[error(
        "`{0}` is not a method: write package.Service/Method, e.g. helloworld.Greeter/SayHello"
    )]
    Call(String),
    /// A `.proto` file is missing or does not compile (the message names file:line:column).
    #[error("{0}")]
    Proto(String),
    /// A protoset could not be read or decoded.
    #[error("--protoset {path}: {reason}")]
    Protoset {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The server's reflection answered, but not with the descriptors the run needs (it serves
    /// no reflection, or not the service).
    #[error("reflection at {url}: {reason}")]
    Reflection {
        /// The server.
        url: String,
        /// Why.
        reason: String,
    },
    /// The server could not be asked for its descriptors: it could not be reached, or did not
    /// answer within the connect timeout. Unlike the other variants, not bad input: the run's
    /// own failure (see [`GrpcError::is_input`]).
    #[error("reflection at {url}: {reason}")]
    Unanswered {
        /// The server.
        url: String,
        /// Why.
        reason: String,
    },
    /// The service is in none of the descriptors.
    #[error("no service `{service}` in {source_name} (services: {known})")]
    UnknownService {
        /// The service asked for.
        service: String,
        /// Where it was looked for.
        source_name: String,
        /// The services there.
        known: String,
    },
    /// The service has no such method.
    #[error("service `{service}` has no method `{method}` (methods: {known})")]
    UnknownMethod {
        /// The service.
        service: String,
        /// The method asked for.
        method: String,
        /// Its methods.
        known: String,
    },
    /// The JSON message does not fit the method's input type.
    #[error("the message: {0}")]
    Message(String),
    /// A metadata entry is not `name: value` with a valid name and value.
    #[error("metadata `{0}` is not NAME: VALUE (names in lower case, ASCII values)")]
    Metadata(String),
    /// The host did not resolve.
    #[error("cannot resolve `{host}`: {reason}")]
    Resolve {
        /// The host and port.
        host: String,
        /// Why.
        reason: String,
    },
    /// The TLS configuration could not be made (a bad CA file).
    #[error("TLS: {0}")]
    Tls(String),
}

impl GrpcError {
    /// Whether the error is the input's (exit 2: a URL, a file, a flag to correct) rather than
    /// the run's (exit 1: the server could not be reached in time).
    pub fn is_input(&self) -> bool {
        !matches!(self, GrpcError::Unanswered { .. })
    }

    pub(crate) fn reflection(url: String, f: crate::reflection::Failure) -> Self {
        match f {
            crate::reflection::Failure::Unanswered(reason) => GrpcError::Unanswered { url, reason },
            crate::reflection::Failure::Said(reason) => GrpcError::Reflection { url, reason },
        }
    }
}

impl GrpcConfig {
    /// A call of `call` on `url`, descriptors by reflection, 20 s deadline, 10 s connect timeout,
    /// 100 streams a connection.
    pub fn new(url: &str, call: &str) -> Result<Self, GrpcError> {
        Ok(GrpcConfig {
            url: parse_url(url)?,
            call: call.to_string(),
            descriptors: Descriptors::Reflection,
            data: None,
            metadata: Vec::new(),
            timeout: Duration::from_secs(20),
            connect_timeout: Duration::from_secs(10),
            streams: 100,
            connections: None,
            message_interval: None,
            insecure: false,
            cacert: None,
            identity: None,
            label: None,
        })
    }

    /// Adds metadata written as `name: value`.
    pub fn metadata(&mut self, line: &str) -> Result<(), GrpcError> {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| GrpcError::Metadata(line.to_string()))?;
        self.metadata
            .push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        Ok(())
    }

    /// Whether the URL asks for TLS (`grpcs://`).
    pub fn is_tls(&self) -> bool {
        self.url.scheme_str() == Some("grpcs")
    }

    /// `host:port` of the URL (443 for `grpcs://` without a port, 80 for `grpc://`).
    pub fn authority(&self) -> String {
        throng_net::authority(
            self.url.host().unwrap_or_default(),
            self.url.port_u16(),
            self.is_tls(),
        )
    }

    /// The row label.
    pub fn label(&self) -> String {
        self.label.clone().unwrap_or_else(|| self.call.clone())
    }

    /// The service and method of [`GrpcConfig::call`] (`pkg.Svc/Method` or `pkg.Svc.Method`).
    pub fn service_method(&self) -> Result<(String, String), GrpcError> {
        split_call(&self.call)
    }
}

/// `pkg.Svc/Method` (or grpcurl's `pkg.Svc.Method`) into service and method.
pub fn split_call(call: &str) -> Result<(String, String), GrpcError> {
    let bad = || GrpcError::Call(call.to_string());
    let call = call.trim().trim_start_matches('/');
    let (svc, method) = call
        .split_once('/')
        .or_else(|| call.rsplit_once('.'))
        .ok_or_else(bad)?;
    let ident = |s: &str| {
        !s.is_empty()
            && s.split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    };
    if !ident(svc) || !ident(method) || method.contains('.') {
        return Err(bad());
    }
    Ok((svc.to_string(), method.to_string()))
}

/// Checks a `grpc://` or `grpcs://` URL: a host, a port or none, and no path.
pub fn parse_url(url: &str) -> Result<Uri, GrpcError> {
    let bad = |problem: &str| GrpcError::Url {
        url: url.to_string(),
        problem: problem.to_string(),
    };
    let uri: Uri = url.parse().map_err(|e| bad(&format!("not a URL ({e})")))?;
    match uri.scheme_str() {
        Some("grpc" | "grpcs") => {}
        _ => {
            return Err(bad(
                "a gRPC target is grpc://host:port or grpcs://host:port",
            ))
        }
    }
    if uri.host().unwrap_or_default().is_empty() {
        return Err(bad("no host"));
    }
    if uri.path() != "/" && !uri.path().is_empty() || uri.query().is_some() {
        return Err(bad(
            "a gRPC URL has no path: the method is named apart (package.Service/Method: the \
             command line's --call, a step's `call`)",
        ));
    }
    Ok(uri)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_calls() {
        assert!(parse_url("grpc://127.0.0.1:50051").is_ok());
        assert!(parse_url("grpcs://localhost").is_ok());
        let e = parse_url("grpc://127.0.0.1:50051/helloworld.Greeter/SayHello").unwrap_err();
        assert!(e.to_string().contains("has no path"), "{e}");
        assert!(parse_url("http://x:1").is_err());
        assert_eq!(
            split_call("helloworld.Greeter/SayHello").unwrap(),
            ("helloworld.Greeter".into(), "SayHello".into())
        );
        assert_eq!(
            split_call("grpc.health.v1.Health.Check").unwrap(),
            ("grpc.health.v1.Health".into(), "Check".into())
        );
        assert!(split_call("Greeter").is_err());
        assert!(split_call("a.B/C.D").is_err());
        assert!(split_call("a b/C").is_err());
    }
}
