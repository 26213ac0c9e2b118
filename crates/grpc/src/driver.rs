//! The driver: a target (how to reach the server), methods (what to call) and the call itself,
//! for the four call kinds.

use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use http::uri::PathAndQuery;
use prost_reflect::{DescriptorPool, MethodDescriptor};
use rustls::pki_types::ServerName;
use throng_core::step::Reply;
use throng_core::{Driver, ErrorClass, Outcome, Status, StepInfo};
use tokio_stream::{Stream, StreamExt};
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tonic::{Code, Streaming};

use crate::classify::{classify, transport_error};
use crate::codec::RawCodec;
use crate::config::{Descriptors, GrpcConfig, GrpcError};
use crate::conn::{Connector, Pool, Slot};
use crate::descriptors::{compile_protos, find_method, read_protoset};
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
    path: PathAndQuery,
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
        let full = format!("/{}/{}", desc.parent_service().full_name(), desc.name());
        let path = full.parse().map_err(|_| GrpcError::Call(full.clone()))?;
        Ok(Method { desc, kind, path })
    }

    /// Whether it takes a stream of requests.
    pub fn client_streams(&self) -> bool {
        matches!(self.kind, CallKind::ClientStreaming | CallKind::Bidi)
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
    connector: Connector,
    timeout: Duration,
    streams: usize,
    interval: Option<Duration>,
}

/// A user's session: its seat on one of its worker's connections.
pub struct Session {
    slot: Rc<Slot>,
    _seat: Rc<()>,
}

/// What a call got back.
struct Answer {
    metadata: MetadataMap,
    replies: Vec<Bytes>,
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
            let host = cfg
                .url
                .host()
                .unwrap_or_default()
                .trim_matches(|c| c == '[' || c == ']')
                .to_string();
            let name = ServerName::try_from(host).map_err(|e| GrpcError::Tls(e.to_string()))?;
            let opts = throng_net::TlsOptions {
                insecure: cfg.insecure,
                cacert: cfg.cacert.clone(),
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
        Ok(Target {
            connector: Connector {
                addrs,
                authority: auth,
                origin,
                tls,
                connect_timeout: cfg.connect_timeout,
            },
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
                .map_err(|reason| GrpcError::Reflection {
                    url: cfg.authority(),
                    reason,
                }),
        }
    }

    /// Asks the server's reflection for `service` (every service it lists when `None`): the
    /// descriptors, and which version of reflection answered.
    pub async fn reflect(
        &self,
        service: Option<&str>,
    ) -> Result<(DescriptorPool, crate::ReflectionVersion), String> {
        crate::reflection::fetch(&self.connector, service).await
    }

    /// Every service the server's reflection lists, with the files they need.
    pub async fn all_descriptors(&self, cfg: &GrpcConfig) -> Result<DescriptorPool, GrpcError> {
        crate::reflection::fetch(&self.connector, None)
            .await
            .map(|(pool, _)| pool)
            .map_err(|reason| GrpcError::Reflection {
                url: cfg.url.to_string(),
                reason,
            })
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
        let slot = pool.join(self.streams);
        let seat = slot.seats.clone();
        Session { slot, _seat: seat }
    }

    /// Opens the session's connection if it has none.
    pub async fn connect(&self, session: &mut Session) -> Result<(), Outcome> {
        session.slot.client(&self.connector).await.map(drop)
    }

    /// Sends one call and waits for its end; with `want_reply`, the reply's metadata and
    /// messages as JSON.
    pub async fn call(
        &self,
        session: &mut Session,
        method: &Method,
        requests: &[Bytes],
        metadata: &MetadataMap,
        want_reply: bool,
    ) -> (Outcome, Option<Reply>) {
        let client = match session.slot.client(&self.connector).await {
            Ok(c) => c,
            Err(o) => return (o, None),
        };
        let t = self.timeout;
        let result = tokio::time::timeout(
            t,
            self.exchange(client.grpc, method, requests, metadata, want_reply),
        )
        .await;
        let (sent, received) = session.slot.take_bytes(&client.counters);
        let (mut outcome, reply) = match result {
            Err(_) => (
                Outcome::failed(ErrorClass::Timeout, format!("no end of call within {t:?}")),
                None,
            ),
            Ok(Ok(answer)) => {
                let reply = want_reply
                    .then(|| reply(method, Status::Grpc(0), &answer.metadata, &answer.replies));
                (
                    Outcome {
                        status: Status::Grpc(0),
                        ..Outcome::default()
                    },
                    reply,
                )
            }
            Ok(Err(status)) => failure(method, &status, want_reply),
        };
        outcome.bytes_sent = sent;
        outcome.bytes_received = received;
        (outcome, reply)
    }

    async fn exchange(
        &self,
        mut grpc: tonic::client::Grpc<crate::conn::H2>,
        method: &Method,
        requests: &[Bytes],
        metadata: &MetadataMap,
        keep: bool,
    ) -> Result<Answer, tonic::Status> {
        grpc.ready()
            .await
            .map_err(|e| tonic::Status::from_error(Box::new(e)))?;
        let path = method.path.clone();
        let first = requests.first().cloned().unwrap_or_default();
        // The metadata carries `grpc-timeout` already (see `Target::with_deadline`): tonic's
        // `set_timeout` would format and parse it again for every call.
        fn request<T>(body: T, metadata: &MetadataMap) -> tonic::Request<T> {
            let mut r = tonic::Request::new(body);
            *r.metadata_mut() = metadata.clone();
            r
        }
        match method.kind {
            CallKind::Unary => {
                let resp = grpc.unary(request(first, metadata), path, RawCodec).await?;
                let (md, reply, _) = resp.into_parts();
                Ok(Answer {
                    metadata: md,
                    replies: if keep { vec![reply] } else { Vec::new() },
                })
            }
            CallKind::ClientStreaming => {
                let resp = grpc
                    .client_streaming(request(self.outgoing(requests), metadata), path, RawCodec)
                    .await?;
                let (md, reply, _) = resp.into_parts();
                Ok(Answer {
                    metadata: md,
                    replies: if keep { vec![reply] } else { Vec::new() },
                })
            }
            CallKind::ServerStreaming => {
                let resp = grpc
                    .server_streaming(request(first, metadata), path, RawCodec)
                    .await?;
                drain(resp, keep).await
            }
            CallKind::Bidi => {
                let resp = grpc
                    .streaming(request(self.outgoing(requests), metadata), path, RawCodec)
                    .await?;
                drain(resp, keep).await
            }
        }
    }

    /// A client stream's messages: all at once (as fast as the stream takes them), or one per
    /// `--message-interval`.
    fn outgoing(&self, requests: &[Bytes]) -> Pin<Box<dyn Stream<Item = Bytes> + Send>> {
        let items = requests.to_vec();
        match self.interval {
            None => Box::pin(tokio_stream::iter(items)),
            Some(d) => Box::pin(tokio_stream::iter(items.into_iter().enumerate()).then(
                move |(i, b)| async move {
                    if i > 0 {
                        tokio::time::sleep(d).await;
                    }
                    b
                },
            )),
        }
    }
}

/// Reads a reply stream to its end (its status comes in the trailers).
async fn drain(
    resp: tonic::Response<Streaming<Bytes>>,
    keep: bool,
) -> Result<Answer, tonic::Status> {
    let (mut md, mut stream, _) = resp.into_parts();
    let mut replies = Vec::new();
    while let Some(m) = stream.message().await? {
        if keep {
            replies.push(m);
        }
    }
    if let Some(trailers) = stream.trailers().await? {
        let mut all = md.into_headers();
        all.extend(trailers.into_headers());
        md = MetadataMap::from_headers(all);
    }
    Ok(Answer {
        metadata: md,
        replies,
    })
}

/// A failed call's outcome: a status the server sent (`grpc_status`, or `timeout` for
/// DEADLINE_EXCEEDED), or the transport error tonic wrapped.
fn failure(method: &Method, status: &tonic::Status, want_reply: bool) -> (Outcome, Option<Reply>) {
    if let Some(e) = transport_error(status) {
        return (Outcome::failed(classify(e), throng_net::message(e)), None);
    }
    let code = status.code() as i32;
    let code = u8::try_from(code).unwrap_or(u8::MAX);
    let class = match status.code() {
        Code::DeadlineExceeded => ErrorClass::Timeout,
        _ => ErrorClass::GrpcStatus,
    };
    let text = match status.message() {
        "" => throng_core::grpc_name(code).to_string(),
        m => format!("{}: {m}", throng_core::grpc_name(code)),
    };
    let outcome = Outcome {
        status: Status::Grpc(code),
        error: Some(class),
        message: Some(text),
        ..Outcome::default()
    };
    let reply = want_reply.then(|| reply(method, Status::Grpc(code), status.metadata(), &[]));
    (outcome, reply)
}

/// The reply as checks and extraction read it: one message's JSON (unary and client
/// streaming), or an array of the messages' JSON (server streaming and bidi).
fn reply(method: &Method, status: Status, md: &MetadataMap, replies: &[Bytes]) -> Reply {
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
    let metadata = md
        .clone()
        .into_headers()
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
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

/// `throng run grpc://...`: one method, its requests encoded once.
pub struct GrpcDriver {
    cfg: GrpcConfig,
    target: Target,
    method: Method,
    requests: Vec<Bytes>,
    metadata: MetadataMap,
}

impl GrpcDriver {
    /// Prepares a driver: resolves the host, loads the descriptors (reflection asks the server
    /// now), finds the method and encodes the request. Every error here is bad input, found
    /// before any load.
    pub async fn new(cfg: GrpcConfig) -> Result<Self, GrpcError> {
        let (service, method) = cfg.service_method()?;
        let target = Target::new(&cfg)?;
        let md = target.with_deadline(metadata(&cfg.metadata)?);
        let pool = target.descriptors(&cfg, &service).await?;
        let desc = find_method(&pool, &service, &method, &cfg.descriptors)?;
        let method = Method::new(desc)?;
        let requests = method
            .requests(cfg.data.as_deref())
            .map_err(GrpcError::Message)?;
        Ok(GrpcDriver {
            cfg,
            target,
            method,
            requests,
            metadata: md,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &GrpcConfig {
        &self.cfg
    }

    /// The method called.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// Sends one call on a session (for tests and library callers that want the reply).
    pub async fn send(&self, session: &mut Session, want_reply: bool) -> (Outcome, Option<Reply>) {
        self.target
            .call(
                session,
                &self.method,
                &self.requests,
                &self.metadata,
                want_reply,
            )
            .await
    }
}

impl Driver for GrpcDriver {
    type Worker = Pool;
    type Session = Session;

    fn steps(&self) -> Vec<StepInfo> {
        vec![StepInfo {
            label: self.cfg.label(),
        }]
    }

    fn worker(&self) -> Pool {
        Pool::default()
    }

    fn session(&self, pool: &Pool, _user: u64) -> Session {
        self.target.session(pool)
    }

    async fn connect(&self, session: &mut Session) -> Result<(), Outcome> {
        self.target.connect(session).await
    }

    async fn execute(&self, session: &mut Session, _step: usize) -> Outcome {
        self.send(session, false).await.0
    }
}
