//! throng's gRPC driver, with messages built at run time from `.proto` files (compiled by
//! protox, no `protoc`), a protoset, or the server's reflection (v1, falling back to v1alpha). No
//! generated code: a user load-tests a service they did not write.
//!
//! The decision: requests are encoded and framed once from their JSON (prost-reflect's protobuf
//! JSON mapping), their header blocks HPACK-encoded once per step, and sent on throng-h2,
//! throng's own HTTP/2 client (no lock, channel or task per call; a worker's connections shared
//! by its sessions in `throng_h2::pool::Pool`, which sends a call the server did not process
//! once more on a new connection), from the user's own task; replies are decoded only when a
//! check or an extraction reads them. tonic's client over hyper spawned a task and allocated
//! buffers per call, and cost 60% more CPU a call than the `h2` crate, which took about 35,000
//! instructions a call to throng-h2's 5,000 (`docs/ARCHITECTURE.md`): tonic stays for
//! reflection's few calls. Connections are opened on throng-net's
//! counting TCP stream, as the HTTP driver's are, so bytes include HTTP/2 framing, and failures
//! are classified the same way; a status the server sent is class `status`, in gRPC's own
//! status space ([`status::SPACE`]), with the code by name in the report.
//!
//! throng-h2's connections run as local tasks: outside throng's engine (whose workers each run
//! in a `tokio::task::LocalSet`), calls go from within a `LocalSet`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use throng_grpc::{Descriptors, GrpcClient, GrpcConfig};
//!
//! let mut cfg = GrpcConfig::new("grpc://127.0.0.1:50051", "helloworld.Greeter/SayHello")?;
//! cfg.descriptors = Descriptors::Protos {
//!     files: vec!["greeter.proto".into()],
//!     includes: vec![],
//! };
//! cfg.data = Some(r#"{"name": "x"}"#.into());
//! // Descriptors loaded, method found, request encoded: a one-step plan, a
//! // `throng_core::Driver` for `throng::Run::new(plan, Arc::new(driver))`.
//! let driver = GrpcClient::one_step(cfg).await?;
//! # let _ = driver;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod call;
mod classify;
mod config;
mod conn;
mod descriptors;
#[cfg(feature = "clap")]
pub mod flags;
pub mod message;
mod reflection;
pub mod status;
mod step;
mod target;

pub use classify::classify;
pub use config::{parse_url, split_call as parse_call, Descriptors, GrpcConfig, GrpcError};
pub use conn::{Pool, Session};
pub use descriptors::{compile_protos, find_method, read_protoset};
pub use reflection::Version as ReflectionVersion;
pub use step::{GrpcClient, GrpcOptions, GrpcProtocol, GrpcStep};
pub use target::{metadata, CallKind, Method, Target};
