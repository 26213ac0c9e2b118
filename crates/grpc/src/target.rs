//! A target (how to reach the server), methods (what to call) and the call itself, for the four
//! call kinds: what [`crate::GrpcClient`] sends its steps with.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, TE};
use http::{HeaderMap, HeaderValue};
use prost_reflect::{DescriptorPool, MethodDescriptor};
use throng_core::step::Reply;
use throng_core::{ErrorClass, Outcome, Status};
use throng_h2::conn::Field;
use throng_h2::hpack::Block;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};

use crate::call::{self, Call, CallError};
use crate::config::{Descriptors, GrpcConfig, GrpcError};
use crate::conn::{Connector, Pool, Session};
use crate::descriptors::{compile_protos, read_protoset};
use crate::message;

/// The four kinds of gRPC call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// One request, one reply.
    Unary,
    /// One request, a stream of replies.
    ServerStreaming,
    /// A stream of requests, one reply.
    ClientStreaming,
    /// Streams both ways.
    Bidi,
}

/// A method to call, with its descriptor.
#[derive(Debug, Clone)]
pub struct Method {
    /// Its descriptor: input and output types.
    pub desc: MethodDescriptor,
    /// How it streams.
    pub kind: CallKind,
    /// `/package.Service/Method`.
    path: String,
}

impl Method {
    /// A method from its descriptor.
    pub fn new(desc: MethodDescriptor) -> Result<Self, GrpcError> {
        let kind = match (desc.is_client_streaming(), desc.is_server_streaming()) {
            (false, false) => CallKind::Unary,
            (false, true) => CallKind::ServerStreaming,
            (true, false) => CallKind::ClientStreaming,
            (true, true) => CallKind::Bidi,
        };
        let path = format!("/{}/{}", desc.parent_service().full_name(), desc.name());
        if path.parse::<http::uri::PathAndQuery>().is_err() {
            return Err(GrpcError::Call(path));
        }
        Ok(Method { desc, kind, path })
    }

    /// Whether it takes a stream of requests.
    pub fn client_streams(&self) -> bool {
        matches!(self.kind, CallKind::ClientStreaming | CallKind::Bidi)
    }

    /// Whether it answers with a stream of replies, whose messages have a `LABEL (messages)`
    /// row.
    pub fn server_streams(&self) -> bool {
        matches!(self.kind, CallKind::ServerStreaming | CallKind::Bidi)
    }

    /// Encodes `-d` text (JSON) into its requests, framed for the wire (see
    /// [`message::messages`]).
    pub fn frames(&self, data: Option<&str>) -> Result<Vec<Bytes>, String> {
        Ok(self
            .requests(data)?
            .iter()
            .map(|m| call::frame(m))
            .collect())
    }

    /// Encodes `-d` text (JSON) into its requests (see [`message::messages`]).
    pub fn requests(&self, data: Option<&str>) -> Result<Vec<Bytes>, String> {
        message::messages(&self.desc.input(), data, self.client_streams())
    }
}

/// Metadata from `name: value` pairs.
pub fn metadata(pairs: &[(String, String)]) -> Result<MetadataMap, GrpcError> {
    let mut map = MetadataMap::new();
    for (name, value) in pairs {
        let bad = || GrpcError::Metadata(format!("{name}: {value}"));
        let key: MetadataKey<tonic::metadata::Ascii> =
            MetadataKey::from_bytes(name.as_bytes()).map_err(|_| bad())?;
        let value: MetadataValue<tonic::metadata::Ascii> =
            MetadataValue::try_from(value.as_str()).map_err(|_| bad())?;
        map.append(key, value);
    }
    Ok(map)
}

/// A server and how calls reach it: the part of a driver every method on it shares.
pub struct Target {
    /// Reflection's connections.
    connector: Connector,
    /// The load's connections (throng-h2's).
    h2: throng_h2::client::Target,
    scheme: &'static str,
    timeout: Duration,
    streams: usize,
    interval: Option<Duration>,
}

impl Target {
    /// Resolves the host and builds the TLS configuration.
    pub fn new(cfg: &GrpcConfig) -> Result<Self, GrpcError> {
        let auth = cfg.authority();
        let addrs: Vec<SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(auth.as_str())
            .map_err(|e| GrpcError::Resolve {
                host: auth.clone(),
                reason: e.to_string(),
            })?
            .collect();
        if addrs.is_empty() {
            return Err(GrpcError::Resolve {
                host: auth,
                reason: "no address".into(),
            });
        }
        let tls = if cfg.is_tls() {
            let name = throng_net::server_name(cfg.url.host().unwrap_or_default())
                .map_err(GrpcError::Tls)?;
            let opts = throng_net::TlsOptions {
                insecure: cfg.insecure,
                cacert: cfg.cacert.clone(),
                identity: cfg.identity.clone(),
                alpn: vec![b"h2".to_vec()],
            };
            let config =
                throng_net::client_config(&opts).map_err(|e| GrpcError::Tls(e.to_string()))?;
            Some((config, name))
        } else {
            None
        };
        let scheme = if cfg.is_tls() { "https" } else { "http" };
        let origin = format!("{scheme}://{auth}")
            .parse()
            .map_err(|_| GrpcError::Url {
                url: cfg.url.to_string(),
                problem: "no authority".into(),
            })?;
        let h2 = throng_h2::client::Target {
            addrs: addrs.clone(),
            authority: auth.clone(),
            tls: tls.clone(),
            connect_timeout: cfg.connect_timeout,
            config: throng_h2::conn::Config::default(),
        };
        Ok(Target {
            connector: Connector {
                addrs,
                authority: auth,
                origin,
                tls,
                connect_timeout: cfg.connect_timeout,
            },
            h2,
            scheme,
            timeout: cfg.timeout,
            streams: cfg.streams.max(1),
            interval: cfg.message_interval,
        })
    }

    /// The descriptors of `cfg`: its `.proto` files or protoset, or the server's reflection
    /// for `service`.
    pub async fn descriptors(
        &self,
        cfg: &GrpcConfig,
        service: &str,
    ) -> Result<DescriptorPool, GrpcError> {
        match &cfg.descriptors {
            Descriptors::Protos { files, includes } => compile_protos(files, includes),
            Descriptors::Protoset(path) => read_protoset(path),
            Descriptors::Reflection => crate::reflection::fetch(&self.connector, Some(service))
                .await
                .map(|(pool, _)| pool)
                .map_err(|f| GrpcError::reflection(cfg.authority(), f)),
        }
    }

    /// Asks the server's reflection for `service` (every service it lists when `None`): the
    /// descriptors, and which version of reflection answered.
    pub async fn reflect(
        &self,
        service: Option<&str>,
    ) -> Result<(DescriptorPool, crate::ReflectionVersion), String> {
        crate::reflection::fetch(&self.connector, service)
            .await
            .map_err(crate::reflection::Failure::reason)
    }

    /// Every service the server's reflection lists, with the files they need.
    pub async fn all_descriptors(&self, cfg: &GrpcConfig) -> Result<DescriptorPool, GrpcError> {
        crate::reflection::fetch(&self.connector, None)
            .await
            .map(|(pool, _)| pool)
            .map_err(|f| GrpcError::reflection(cfg.url.to_string(), f))
    }

    /// `metadata` with this target's deadline as `grpc-timeout` (the server's copy of `-t`),
    /// written once rather than for every call.
    pub fn with_deadline(&self, metadata: MetadataMap) -> MetadataMap {
        let mut r = tonic::Request::new(());
        *r.metadata_mut() = metadata;
        r.set_timeout(self.timeout);
        r.into_parts().0
    }

    /// A session on a worker's pool.
    pub fn session(&self, pool: &Pool) -> Session {
        pool.join(&self.h2, self.streams)
    }

    /// The session's connection, opened if it has none (or its connection can take no more
    /// calls). A connect that timed out says so as throng-net's own timeouts do.
    async fn client(&self, session: &Session) -> Result<throng_h2::client::Client, Outcome> {
        session.pool.client(&session.seat).await.map_err(|mut o| {
            if o.error == Some(ErrorClass::Timeout) {
                o.message = Some(format!(
                    "connect to {} timed out after {:?}",
                    self.h2.authority, self.h2.connect_timeout
                ));
            }
            o
        })
    }

    /// Opens the session's connection if it has none (or its connection closed).
    pub async fn connect(&self, session: &mut Session) -> Result<(), Outcome> {
        self.client(session).await.map(drop)
    }

    /// The headers of every call with `metadata`: gRPC's own, and the deadline as
    /// `grpc-timeout` (the server's copy of `-t`), written once rather than for every call.
    pub fn headers(&self, metadata: MetadataMap) -> HeaderMap {
        let mut h = self.with_deadline(metadata).into_headers();
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        h.insert(TE, HeaderValue::from_static("trailers"));
        h
    }

    /// The header block of `method`'s calls, encoded once: `POST`, the scheme, the method's
    /// path and the authority, then `base` (see [`Target::headers`]) and `extra` (a step's own
    /// metadata, each a fixed value or, `None`, a slot for each call's value; `base`'s fields of
    /// the same names left out).
    pub fn block(
        &self,
        method: &Method,
        base: &HeaderMap,
        extra: &[(&str, Option<&str>)],
    ) -> Block {
        let mut b = Block::builder();
        b.field(":method", b"POST")
            .field(":scheme", self.scheme.as_bytes())
            .field(":path", method.path.as_bytes())
            .field(":authority", self.h2.authority.as_bytes());
        for (name, value) in base {
            if !extra.iter().any(|(n, _)| *n == name.as_str()) {
                b.field(name.as_str(), value.as_bytes());
            }
        }
        for (name, value) in extra {
            match value {
                Some(v) => b.field(name, v.as_bytes()),
                None => b.slot(name),
            };
        }
        b.build()
    }

    /// Sends one call of `method` (`headers`: its header block, see [`Target::block`];
    /// `frames`: its messages, framed) and waits for its end; with `want_reply`, the reply's
    /// metadata and messages as JSON.
    pub async fn call(
        &self,
        session: &mut Session,
        method: &Method,
        headers: &[u8],
        frames: &[Bytes],
        want_reply: bool,
    ) -> (Outcome, Option<Reply>) {
        let mut client = match self.client(session).await {
            Ok(c) => c,
            Err(o) => return (o, None),
        };
        let t = self.timeout;
        let streams_in = method.client_streams();
        let call = Call {
            headers,
            frames,
            body: Call::whole(frames, streams_in, self.interval.is_some()),
            interval: self.interval,
            // A stream of replies has its messages timed for the `(messages)` row.
            timed: method.server_streams(),
            keep: want_reply,
        };
        let mut gaps = Vec::new();
        // The call's deadline, watched by its connection's task (see `call::call`).
        let deadline = tokio::time::Instant::now() + t;
        let pool = &session.pool;
        let result = call::call(pool, &session.seat, &mut client, &call, &mut gaps, deadline).await;
        // The server saw the same deadline (grpc-timeout) and may end the call first: grpc-go
        // answers CANCELLED at it. A call that ends so at its deadline is a timeout too.
        let at_deadline = || tokio::time::Instant::now() + t.mul_f64(0.05) >= deadline;
        let (sent, received) = session.pool.take_bytes(&session.seat, &client);
        let (mut outcome, reply) = match result {
            Err(CallError::TimedOut) => (
                Outcome::failed(ErrorClass::Timeout, format!("no end of call within {t:?}")),
                None,
            ),
            Ok(answer) => {
                let reply = want_reply.then(|| {
                    reply(
                        method,
                        crate::status::status(0),
                        &answer.metadata,
                        &answer.replies,
                    )
                });
                (
                    Outcome {
                        status: crate::status::status(0),
                        ..Outcome::default()
                    },
                    reply,
                )
            }
            Err(CallError::Connect(o)) => (*o, None),
            Err(CallError::Transport(class, message)) => (Outcome::failed(class, message), None),
            Err(CallError::Status(code, text, md)) => {
                let mut failed = failure(method, code, &text, &md, want_reply);
                if code == 1 && at_deadline() {
                    failed.0.error = Some(ErrorClass::Timeout);
                }
                failed
            }
        };
        outcome.bytes_sent = sent;
        outcome.bytes_received = received;
        outcome.parts = gaps;
        (outcome, reply)
    }
}

/// A failed call's outcome: the server's status, as class `status` (DEADLINE_EXCEEDED is a
/// `timeout`), with its message as the sample.
fn failure(
    method: &Method,
    code: u8,
    message: &str,
    md: &[Field],
    want_reply: bool,
) -> (Outcome, Option<Reply>) {
    let class = match code {
        4 => ErrorClass::Timeout,
        _ => ErrorClass::Status,
    };
    let text = match message {
        "" => crate::status::name(code).to_string(),
        m => format!("{}: {m}", crate::status::name(code)),
    };
    let outcome = Outcome {
        status: crate::status::status(code),
        error: Some(class),
        message: Some(text),
        ..Outcome::default()
    };
    let reply = want_reply.then(|| reply(method, crate::status::status(code), md, &[]));
    (outcome, reply)
}

/// The reply as checks and extraction read it: one message's JSON (unary and client
/// streaming), or an array of the messages' JSON (server streaming and bidi).
fn reply(method: &Method, status: Status, md: &[Field], replies: &[Bytes]) -> Reply {
    let output = method.desc.output();
    let decoded: Vec<serde_json::Value> = replies
        .iter()
        .map(|b| {
            message::decode_json(&output, b)
                .unwrap_or_else(|e| serde_json::json!({ "undecodable": e }))
        })
        .collect();
    let json = match method.kind {
        CallKind::Unary | CallKind::ClientStreaming => decoded.into_iter().next(),
        CallKind::ServerStreaming | CallKind::Bidi => Some(serde_json::Value::Array(decoded)),
    };
    // Values as `HeaderValue::to_str` reads them: visible ASCII (and tabs) only.
    let visible = |v: &[u8]| v.iter().all(|&b| b == b'\t' || (32..127).contains(&b));
    let metadata = md
        .iter()
        .filter(|(_, v)| visible(v))
        .map(|(k, v)| {
            (
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect();
    Reply {
        status,
        metadata,
        body: json
            .as_ref()
            .map(|j| Bytes::from(j.to_string()))
            .unwrap_or_default(),
        json,
    }
}
