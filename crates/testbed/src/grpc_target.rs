//! The gRPC target: a greeter with the four call kinds, reflection (v1 and v1alpha) and health,
//! on hyper's HTTP/2 server.
//!
//! The services are tonic's, but no `.proto` is compiled at build time (there is no `protoc`
//! here): the greeter's two messages are written with prost's derive, its routes by hand as
//! tonic's code generator would write them, and `proto/greeter.proto` is compiled by protox when
//! the target starts, for reflection. A test checks the derive against the file.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rand::Rng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::{sleep, sleep_until, Instant};
use tokio_stream::{Stream, StreamExt};
use tonic::body::Body;
use tonic::codegen::Service;
use tonic::server::{
    ClientStreamingService, Grpc, ServerStreamingService, StreamingService, UnaryService,
};
use tonic::{Code, Request, Response, Status, Streaming};
use tonic_prost::ProstCodec;

use crate::{Delay, Fault};

/// The greeter's `.proto`, as shipped in the repository and served by reflection.
pub const GREETER_PROTO: &str = include_str!("../proto/greeter.proto");

/// `helloworld.HelloRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HelloRequest {
    /// Who to greet.
    #[prost(string, tag = "1")]
    pub name: String,
    /// `SayHellos`: how many replies (3 when 0).
    #[prost(int32, tag = "2")]
    pub count: i32,
}

/// `helloworld.HelloReply`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HelloReply {
    /// The greeting.
    #[prost(string, tag = "1")]
    pub message: String,
    /// Position in a stream, or how many requests were collected.
    #[prost(int32, tag = "2")]
    pub index: i32,
}

/// A gRPC target. Fields are public; [`GrpcTarget::default`] answers OK at once.
#[derive(Debug, Clone)]
pub struct GrpcTarget {
    /// The delay before each reply (each message of a server stream).
    pub delay: Delay,
    /// The gRPC status of each call (0 is OK): any other code fails every greeter call with it.
    pub status: u8,
    /// From `.0` to `.1` after start, calls are held until `.1`.
    pub stall: Option<(Duration, Duration)>,
    /// A connection-level fault.
    pub fault: Option<Fault>,
    /// Serve reflection (v1 and v1alpha); without it, a client needs the `.proto`.
    pub reflection: bool,
    /// Serve only reflection v1alpha, as grpc-go before 1.45 and many deployed servers do.
    pub v1alpha_only: bool,
    /// Serve TLS (ALPN h2) with a fresh self-signed certificate for `localhost` and `127.0.0.1`.
    pub tls: bool,
    /// With `tls`, require every client to present a certificate this CA (PEM) signed (mutual
    /// TLS).
    pub client_ca: Option<String>,
}

impl Default for GrpcTarget {
    fn default() -> Self {
        GrpcTarget {
            delay: Delay::None,
            status: 0,
            stall: None,
            fault: None,
            reflection: true,
            v1alpha_only: false,
            tls: false,
            client_ca: None,
        }
    }
}

/// Why the gRPC target could not start.
#[derive(Debug, thiserror::Error)]
pub enum GrpcTargetError {
    /// Binding or accepting failed.
    #[error("cannot listen: {0}")]
    Io(#[from] std::io::Error),
    /// The shipped `.proto` did not compile, or reflection refused it.
    #[error("the greeter's descriptors: {0}")]
    Descriptors(String),
    /// The certificate could not be made.
    #[error("cannot make a certificate: {0}")]
    Cert(String),
}

/// A gRPC target that is serving. Dropping it stops the server.
pub struct RunningGrpc {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The certificate in PEM, when serving TLS (give it to `--cacert`).
    pub cert_pem: Option<String>,
    calls: Arc<AtomicU64>,
    connections: Arc<AtomicU64>,
    shutdown: watch::Sender<bool>,
}

impl RunningGrpc {
    /// `grpc://addr`, or `grpcs://addr` when serving TLS.
    pub fn url(&self) -> String {
        match self.cert_pem {
            Some(_) => format!("grpcs://{}", self.addr),
            None => format!("grpc://{}", self.addr),
        }
    }

    /// Greeter calls answered (or failed with the configured status) so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Stops accepting and closes connections.
    pub fn stop(&self) {
        let _ = self.shutdown.send(true);
    }
}

impl Drop for RunningGrpc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The greeter's file descriptor set, compiled from [`GREETER_PROTO`] by protox.
pub fn greeter_descriptors() -> Result<prost_types::FileDescriptorSet, String> {
    shipped_descriptors("greeter.proto", GREETER_PROTO)
}

/// A shipped `.proto` (no imports) compiled by protox from its text.
pub(crate) fn shipped_descriptors(
    name: &'static str,
    source: &'static str,
) -> Result<prost_types::FileDescriptorSet, String> {
    struct Shipped(&'static str, &'static str);
    impl protox::file::FileResolver for Shipped {
        fn open_file(&self, name: &str) -> Result<protox::file::File, protox::Error> {
            match name == self.0 {
                true => protox::file::File::from_source(name, self.1),
                false => Err(protox::Error::file_not_found(name)),
            }
        }
    }
    let mut c = protox::Compiler::with_file_resolver(Shipped(name, source));
    c.open_file(name).map_err(|e| e.to_string())?;
    Ok(c.file_descriptor_set())
}

struct State {
    cfg: GrpcTarget,
    start: Instant,
    calls: Arc<AtomicU64>,
}

impl State {
    /// What every greeter reply waits for: the stall window, then the delay; then the status.
    async fn gate(&self) -> Result<(), Status> {
        if let Some((from, to)) = self.cfg.stall {
            let now = self.start.elapsed();
            if now >= from && now < to {
                sleep_until(self.start + to).await;
            }
        }
        match self.cfg.delay {
            Delay::None => {}
            Delay::Fixed(d) => sleep(d).await,
            Delay::Uniform(a, b) => {
                let d = if b > a {
                    rand::rng().random_range(a..b)
                } else {
                    a
                };
                sleep(d).await
            }
        }
        match self.cfg.status {
            0 => Ok(()),
            c => Err(Status::new(
                Code::from(i32::from(c)),
                format!("the testbed answers status {c}"),
            )),
        }
    }

    fn count(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }
}

type Reply<T> = Pin<Box<dyn std::future::Future<Output = Result<Response<T>, Status>> + Send>>;
type Replies = Pin<Box<dyn Stream<Item = Result<HelloReply, Status>> + Send>>;

fn hello(name: &str, index: i32) -> HelloReply {
    HelloReply {
        message: format!("Hello {name}"),
        index,
    }
}

struct SayHello(Arc<State>);
impl UnaryService<HelloRequest> for SayHello {
    type Response = HelloReply;
    type Future = Reply<HelloReply>;
    fn call(&mut self, req: Request<HelloRequest>) -> Self::Future {
        let state = self.0.clone();
        Box::pin(async move {
            let r = state.gate().await;
            state.count();
            r?;
            let mut resp = Response::new(hello(&req.get_ref().name, 0));
            // Metadata `x-echo` comes back as it went, so a client can see what it sent.
            if let Some(v) = req.metadata().get("x-echo") {
                resp.metadata_mut().insert("x-echo", v.clone());
            }
            // And the deadline the client sent, as `x-deadline`.
            if let Some(v) = req.metadata().get("grpc-timeout") {
                resp.metadata_mut().insert("x-deadline", v.clone());
            }
            Ok(resp)
        })
    }
}

struct SayHellos(Arc<State>);
impl ServerStreamingService<HelloRequest> for SayHellos {
    type Response = HelloReply;
    type ResponseStream = Replies;
    type Future = Reply<Replies>;
    fn call(&mut self, req: Request<HelloRequest>) -> Self::Future {
        let state = self.0.clone();
        Box::pin(async move {
            let req = req.into_inner();
            let n = if req.count > 0 { req.count } else { 3 };
            state.count();
            let replies = tokio_stream::iter(0..n).then(move |i| {
                let state = state.clone();
                let name = req.name.clone();
                async move {
                    state.gate().await?;
                    Ok(hello(&name, i))
                }
            });
            Ok(Response::new(Box::pin(replies) as Replies))
        })
    }
}

struct CollectHellos(Arc<State>);
impl ClientStreamingService<HelloRequest> for CollectHellos {
    type Response = HelloReply;
    type Future = Reply<HelloReply>;
    fn call(&mut self, req: Request<Streaming<HelloRequest>>) -> Self::Future {
        let state = self.0.clone();
        Box::pin(async move {
            let mut stream = req.into_inner();
            let mut names = Vec::new();
            while let Some(m) = stream.next().await {
                names.push(m?.name);
            }
            let r = state.gate().await;
            state.count();
            r?;
            Ok(Response::new(hello(&names.join(", "), names.len() as i32)))
        })
    }
}

struct Chat(Arc<State>);
impl StreamingService<HelloRequest> for Chat {
    type Response = HelloReply;
    type ResponseStream = Replies;
    type Future = Reply<Replies>;
    fn call(&mut self, req: Request<Streaming<HelloRequest>>) -> Self::Future {
        let state = self.0.clone();
        Box::pin(async move {
            state.count();
            let mut i = 0;
            let replies = req.into_inner().then(move |m| {
                let state = state.clone();
                i += 1;
                let index = i - 1;
                async move {
                    let m = m?;
                    state.gate().await?;
                    Ok(hello(&m.name, index))
                }
            });
            Ok(Response::new(Box::pin(replies) as Replies))
        })
    }
}

type Codec = ProstCodec<HelloReply, HelloRequest>;

async fn greeter(req: http::Request<Incoming>, state: Arc<State>) -> http::Response<Body> {
    let path = req.uri().path().to_string();
    match path.as_str() {
        "/helloworld.Greeter/SayHello" => {
            Grpc::new(Codec::default())
                .unary(SayHello(state), req)
                .await
        }
        "/helloworld.Greeter/SayHellos" => {
            Grpc::new(Codec::default())
                .server_streaming(SayHellos(state), req)
                .await
        }
        "/helloworld.Greeter/CollectHellos" => {
            Grpc::new(Codec::default())
                .client_streaming(CollectHellos(state), req)
                .await
        }
        "/helloworld.Greeter/Chat" => {
            Grpc::new(Codec::default())
                .streaming(Chat(state), req)
                .await
        }
        _ => Status::unimplemented(format!("no method {path}")).into_http(),
    }
}

/// The services other than the greeter, each a tonic server answering its own path prefix.
#[derive(Clone)]
struct Services<R1, R2, H> {
    reflection_v1: R1,
    reflection_v1alpha: R2,
    health: H,
}

impl GrpcTarget {
    /// Serves on `127.0.0.1` at a free port.
    pub async fn start(self) -> Result<RunningGrpc, GrpcTargetError> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        self.serve(listener).await
    }

    /// Serves on a bound listener, in a background task of the current runtime.
    pub async fn serve(self, listener: TcpListener) -> Result<RunningGrpc, GrpcTargetError> {
        let addr = listener.local_addr()?;
        let (acceptor, cert_pem) = match self.tls {
            true => {
                let (a, pem) = crate::http_target::tls_acceptor(self.client_ca.as_deref())
                    .map_err(|e| GrpcTargetError::Cert(e.to_string()))?;
                (Some(a), Some(pem))
            }
            false => (None, None),
        };
        let set = greeter_descriptors().map_err(GrpcTargetError::Descriptors)?;
        let bad = |e: tonic_reflection::server::Error| GrpcTargetError::Descriptors(e.to_string());
        let services = Services {
            reflection_v1: tonic_reflection::server::Builder::configure()
                .register_file_descriptor_set(set.clone())
                .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
                .build_v1()
                .map_err(bad)?,
            reflection_v1alpha: tonic_reflection::server::Builder::configure()
                .register_file_descriptor_set(set)
                .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
                .build_v1alpha()
                .map_err(bad)?,
            health: {
                let (reporter, server) = tonic_health::server::health_reporter();
                reporter
                    .set_service_status("helloworld.Greeter", tonic_health::ServingStatus::Serving)
                    .await;
                server
            },
        };
        let calls = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let (shutdown, mut stop_rx) = watch::channel(false);
        let state = Arc::new(State {
            cfg: self,
            start: Instant::now(),
            calls: calls.clone(),
        });
        let conns = connections.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = stop_rx.changed() => break,
                };
                let Ok((tcp, _)) = accepted else { continue };
                conns.fetch_add(1, Ordering::Relaxed);
                let _ = tcp.set_nodelay(true);
                let state = state.clone();
                let services = services.clone();
                let acceptor = acceptor.clone();
                let mut stop = stop_rx.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = connection(tcp, state, services, acceptor) => {}
                        _ = stop.changed() => {}
                    }
                });
            }
        });
        Ok(RunningGrpc {
            addr,
            cert_pem,
            calls,
            connections,
            shutdown,
        })
    }
}

async fn connection<R1, R2, H>(
    mut tcp: TcpStream,
    state: Arc<State>,
    services: Services<R1, R2, H>,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
) where
    R1: Service<http::Request<Incoming>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    R1::Future: Send,
    R2: Service<http::Request<Incoming>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    R2::Future: Send,
    H: Service<http::Request<Incoming>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    H::Future: Send,
{
    if let Some(fault) = state.cfg.fault {
        let mut buf = [0u8; 4096];
        if fault == Fault::Hang {
            while matches!(tcp.read(&mut buf).await, Ok(n) if n > 0) {}
            return;
        }
        let _ = tcp.read(&mut buf).await;
        match fault {
            Fault::Reset => {
                // Zero linger makes close send RST instead of FIN.
                #[allow(deprecated)]
                let _ = tcp.set_linger(Some(Duration::ZERO));
            }
            Fault::Garbage => {
                // Then hold the connection until the client leaves: closing at once would race
                // the client's next write (a reset) against its reading of the garbage.
                let _ = tcp.write_all(b"THIS IS NOT HTTP/2\r\n\r\n").await;
                while matches!(tcp.read(&mut buf).await, Ok(n) if n > 0) {}
            }
            Fault::Hang => {}
        }
        return;
    }
    let service = service_fn(move |req: http::Request<Incoming>| {
        let state = state.clone();
        let mut s = services.clone();
        async move {
            let path = req.uri().path();
            let resp = if path.starts_with("/helloworld.Greeter/") {
                greeter(req, state).await
            } else if !state.cfg.reflection
                || state.cfg.v1alpha_only && path.starts_with("/grpc.reflection.v1.")
            {
                Status::unimplemented(format!("no service at {path}")).into_http()
            } else if path.starts_with("/grpc.reflection.v1.ServerReflection/") {
                s.reflection_v1.call(req).await?
            } else if path.starts_with("/grpc.reflection.v1alpha.ServerReflection/") {
                s.reflection_v1alpha.call(req).await?
            } else if path.starts_with("/grpc.health.v1.Health/") {
                s.health.call(req).await?
            } else {
                Status::unimplemented(format!("no service at {path}")).into_http()
            };
            Ok::<_, Infallible>(resp)
        }
    });
    let h2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    match acceptor {
        Some(acceptor) => {
            if let Ok(tls) = acceptor.accept(tcp).await {
                let _ = h2.serve_connection(TokioIo::new(tls), service).await;
            }
        }
        None => {
            let _ = h2.serve_connection(TokioIo::new(tcp), service).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn the_derived_messages_match_the_shipped_proto() {
        let set = greeter_descriptors().unwrap();
        let file = &set.file[0];
        let fields = |name: &str| -> Vec<(String, i32)> {
            let m = file.message_type.iter().find(|m| m.name() == name).unwrap();
            m.field
                .iter()
                .map(|f| (f.name().to_string(), f.number()))
                .collect()
        };
        assert_eq!(
            fields("HelloRequest"),
            [("name".to_string(), 1), ("count".to_string(), 2)]
        );
        assert_eq!(
            fields("HelloReply"),
            [("message".to_string(), 1), ("index".to_string(), 2)]
        );
        let methods: Vec<_> = file.service[0]
            .method
            .iter()
            .map(|m| m.name().to_string())
            .collect();
        assert_eq!(methods, ["SayHello", "SayHellos", "CollectHellos", "Chat"]);
        let bytes = HelloRequest {
            name: "x".into(),
            count: 2,
        }
        .encode_to_vec();
        assert_eq!(bytes, [10, 1, b'x', 16, 2]);
    }
}
