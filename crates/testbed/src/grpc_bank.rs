//! The demo's bank over gRPC: `bank.Bank` (`proto/bank.proto`) on the same store as the JSON
//! API and on the same port (a request with `content-type: application/grpc` comes here), with
//! reflection, so that one service can be compared over both transports.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use http::header::CONTENT_TYPE;
use hyper::body::Incoming;
use tonic::body::Body;
use tonic::codegen::Service;
use tonic::server::{Grpc, UnaryService};
use tonic::{Request, Response, Status};
use tonic_prost::ProstCodec;

use crate::bank::store::{Refusal, Store};

/// The bank's `.proto`, as shipped in the repository and served by reflection.
pub const BANK_PROTO: &str = include_str!("../proto/bank.proto");

/// `bank.NewClient`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NewClient {
    /// The opening balance.
    #[prost(int64, tag = "1")]
    pub balance: i64,
}

/// `bank.ClientId`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClientId {
    /// The client.
    #[prost(int64, tag = "1")]
    pub id: i64,
}

/// `bank.ClientBalance`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClientBalance {
    /// The client.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// Its balance.
    #[prost(int64, tag = "2")]
    pub balance: i64,
}

/// `bank.TransferRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TransferRequest {
    /// From this client.
    #[prost(int64, tag = "1")]
    pub from: i64,
    /// To this one.
    #[prost(int64, tag = "2")]
    pub to: i64,
    /// This much.
    #[prost(int64, tag = "3")]
    pub amount: i64,
}

/// `bank.TransferReply`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TransferReply {
    /// Always true: a refusal is a status.
    #[prost(bool, tag = "1")]
    pub ok: bool,
}

/// `bank.TotalRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TotalRequest {}

/// `bank.TotalReply`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TotalReply {
    /// The sum of all balances.
    #[prost(int64, tag = "1")]
    pub total: i64,
}

/// Whether a request is gRPC's.
pub(crate) fn is_grpc<B>(req: &http::Request<B>) -> bool {
    req.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("application/grpc"))
}

fn refused(r: Refusal) -> Status {
    match r {
        Refusal::Invalid(m) => Status::invalid_argument(m),
        Refusal::NotFound(m) => Status::not_found(m),
        Refusal::Conflict(m) => Status::failed_precondition(m),
        Refusal::Db(e) => Status::internal(format!("database: {e}")),
    }
}

type Reply<T> = Pin<Box<dyn Future<Output = Result<Response<T>, Status>> + Send>>;

/// A unary method as a function of its request.
struct Unary<F>(F);

impl<Req, Resp, F, Fut> UnaryService<Req> for Unary<F>
where
    F: FnMut(Req) -> Fut,
    Fut: Future<Output = Result<Resp, Status>> + Send + 'static,
    Resp: Send + 'static,
{
    type Response = Resp;
    type Future = Reply<Resp>;

    fn call(&mut self, req: Request<Req>) -> Reply<Resp> {
        let fut = (self.0)(req.into_inner());
        Box::pin(async move { fut.await.map(Response::new) })
    }
}

/// A tonic service with its types erased, called by path.
type Handler = Arc<
    dyn Fn(http::Request<Incoming>) -> Pin<Box<dyn Future<Output = http::Response<Body>> + Send>>
        + Send
        + Sync,
>;

fn erase<S>(svc: S) -> Handler
where
    S: Service<http::Request<Incoming>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    Arc::new(move |req| {
        let mut s = svc.clone();
        Box::pin(async move {
            match s.call(req).await {
                Ok(r) => r,
                Err(never) => match never {},
            }
        })
    })
}

/// Reflection v1 and v1alpha for `bank.Bank`, made once per process.
fn reflection() -> &'static Result<(Handler, Handler), String> {
    static REFLECTION: OnceLock<Result<(Handler, Handler), String>> = OnceLock::new();
    REFLECTION.get_or_init(|| {
        let set = crate::grpc_target::shipped_descriptors("bank.proto", BANK_PROTO)?;
        let v1 = tonic_reflection::server::Builder::configure()
            .register_file_descriptor_set(set.clone())
            .build_v1()
            .map_err(|e| e.to_string())?;
        let v1alpha = tonic_reflection::server::Builder::configure()
            .register_file_descriptor_set(set)
            .build_v1alpha()
            .map_err(|e| e.to_string())?;
        Ok((erase(v1), erase(v1alpha)))
    })
}

/// Answers one gRPC request to the bank.
pub(crate) async fn handle(req: http::Request<Incoming>, store: &Store) -> http::Response<Body> {
    let path = req.uri().path().to_string();
    let s = store.clone();
    match path.as_str() {
        "/bank.Bank/CreateClient" => {
            let m = Unary(move |r: NewClient| {
                let s = s.clone();
                async move {
                    let id = s.new_client(r.balance).await.map_err(refused)?;
                    Ok(ClientId { id })
                }
            });
            Grpc::new(ProstCodec::<ClientId, NewClient>::default())
                .unary(m, req)
                .await
        }
        "/bank.Bank/Balance" => {
            let m = Unary(move |r: ClientId| {
                let s = s.clone();
                async move {
                    let balance = s.balance(r.id).await.map_err(refused)?;
                    Ok(ClientBalance { id: r.id, balance })
                }
            });
            Grpc::new(ProstCodec::<ClientBalance, ClientId>::default())
                .unary(m, req)
                .await
        }
        "/bank.Bank/Transfer" => {
            let m = Unary(move |r: TransferRequest| {
                let s = s.clone();
                async move {
                    s.transfer(r.from, r.to, r.amount).await.map_err(refused)?;
                    Ok(TransferReply { ok: true })
                }
            });
            Grpc::new(ProstCodec::<TransferReply, TransferRequest>::default())
                .unary(m, req)
                .await
        }
        "/bank.Bank/Total" => {
            let m = Unary(move |_: TotalRequest| {
                let s = s.clone();
                async move {
                    let total = s.total().await.map_err(refused)?;
                    Ok(TotalReply { total })
                }
            });
            Grpc::new(ProstCodec::<TotalReply, TotalRequest>::default())
                .unary(m, req)
                .await
        }
        p if p.starts_with("/grpc.reflection.v1.ServerReflection/") => match reflection() {
            Ok((v1, _)) => v1(req).await,
            Err(e) => Status::internal(e.clone()).into_http(),
        },
        p if p.starts_with("/grpc.reflection.v1alpha.ServerReflection/") => match reflection() {
            Ok((_, v1alpha)) => v1alpha(req).await,
            Err(e) => Status::internal(e.clone()).into_http(),
        },
        _ => Status::unimplemented(format!("no method {path}")).into_http(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_derived_messages_match_the_shipped_proto() {
        let set = crate::grpc_target::shipped_descriptors("bank.proto", BANK_PROTO).unwrap();
        let file = &set.file[0];
        let fields = |name: &str| -> Vec<(String, i32)> {
            let m = file.message_type.iter().find(|m| m.name() == name).unwrap();
            m.field
                .iter()
                .map(|f| (f.name().to_string(), f.number()))
                .collect()
        };
        let pairs = |v: &[(&str, i32)]| -> Vec<(String, i32)> {
            v.iter().map(|(n, i)| (n.to_string(), *i)).collect()
        };
        assert_eq!(fields("NewClient"), pairs(&[("balance", 1)]));
        assert_eq!(fields("ClientId"), pairs(&[("id", 1)]));
        assert_eq!(fields("ClientBalance"), pairs(&[("id", 1), ("balance", 2)]));
        assert_eq!(
            fields("TransferRequest"),
            pairs(&[("from", 1), ("to", 2), ("amount", 3)])
        );
        assert_eq!(fields("TransferReply"), pairs(&[("ok", 1)]));
        assert_eq!(fields("TotalReply"), pairs(&[("total", 1)]));
        assert!(reflection().is_ok());
    }
}
