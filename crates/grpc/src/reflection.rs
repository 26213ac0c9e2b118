//! Descriptors from the server's reflection service: `grpc.reflection.v1` first, then
//! `v1alpha` (grpc-go before 1.45, among many deployed servers, serves only v1alpha).
//!
//! The two versions' messages are the same on the wire, so one set of types (v1's, generated in
//! tonic-reflection) serves both paths. Each question is its own short bidi call.

use std::collections::HashSet;

use prost_reflect::DescriptorPool;
use prost_types::FileDescriptorProto;
use tonic::Code;
use tonic_prost::ProstCodec;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
use tonic_reflection::pb::v1::{ServerReflectionRequest, ServerReflectionResponse};

use crate::conn::{Client, Connector};
use crate::descriptors::{decode_file, pool_from_files};

const V1: &str = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
const V1ALPHA: &str = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

/// Which reflection the server answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `grpc.reflection.v1`.
    V1,
    /// `grpc.reflection.v1alpha`.
    V1Alpha,
}

/// Why the server's reflection gave no descriptors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The server could not be reached, or did not answer within the connect timeout: the
    /// run's failure, not its input's.
    Unanswered(String),
    /// It answered, but not with what the run needs (no reflection, no such service).
    Said(String),
}

impl Failure {
    pub(crate) fn reason(self) -> String {
        match self {
            Failure::Unanswered(r) | Failure::Said(r) => r,
        }
    }
}

impl From<String> for Failure {
    fn from(said: String) -> Self {
        Failure::Said(said)
    }
}

/// Asks the server for the file defining `service` (every service it lists when `None`) and
/// every file those import, all within the connect timeout: reflection is part of reaching the
/// server, and a server that accepts and never answers held the run before its load forever,
/// past `-z`, `--connect-timeout` and the first Ctrl-C.
pub(crate) async fn fetch(
    connector: &Connector,
    service: Option<&str>,
) -> Result<(DescriptorPool, Version), Failure> {
    let ct = connector.connect_timeout;
    match tokio::time::timeout(ct, ask_all(connector, service)).await {
        Ok(r) => r,
        Err(_) => Err(Failure::Unanswered(format!(
            "no answer within {ct:?} (--connect-timeout)"
        ))),
    }
}

async fn ask_all(
    connector: &Connector,
    service: Option<&str>,
) -> Result<(DescriptorPool, Version), Failure> {
    let client = connector
        .connect()
        .await
        .map_err(|o| Failure::Unanswered(o.message.unwrap_or_default()))?;
    let first = match service {
        Some(s) => MessageRequest::FileContainingSymbol(s.to_string()),
        None => MessageRequest::ListServices(String::new()),
    };
    let not_found = |s: &tonic::Status| match (service, s.code()) {
        (Some(svc), Code::NotFound) => Failure::Said(format!(
            "the server has no service `{svc}` (its reflection does not know it)"
        )),
        _ => failed(s),
    };
    let (version, answer) = match ask(&client, V1, first.clone()).await {
        Ok(a) => (Version::V1, a),
        Err(s) if s.code() == Code::Unimplemented => match ask(&client, V1ALPHA, first).await {
            Ok(a) => (Version::V1Alpha, a),
            Err(s) if s.code() == Code::Unimplemented => {
                return Err(Failure::Said(
                    "the server serves no reflection (neither grpc.reflection.v1 nor \
                            v1alpha): describe the method with .proto files or a protoset \
                            (--proto, --protoset, a step's `proto`)"
                        .into(),
                ))
            }
            Err(s) => return Err(not_found(&s)),
        },
        Err(s) => return Err(not_found(&s)),
    };
    let path = match version {
        Version::V1 => V1,
        Version::V1Alpha => V1ALPHA,
    };
    let mut pending = Vec::new();
    match answer {
        MessageResponse::ListServicesResponse(list) => {
            for svc in list.service {
                if svc.name.starts_with("grpc.reflection.") {
                    continue;
                }
                let q = MessageRequest::FileContainingSymbol(svc.name.clone());
                let got = ask(&client, path, q)
                    .await
                    .map_err(|s| asking(&svc.name, &s))?;
                pending.extend(files(got)?);
            }
        }
        other => pending = files(other)?,
    }
    let mut all: Vec<FileDescriptorProto> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    // Imports the server did not send with the file are asked for by name, until none is missing.
    while !pending.is_empty() {
        let mut wanted = Vec::new();
        for f in pending.drain(..) {
            if seen.insert(f.name().to_string()) {
                wanted.extend(f.dependency.iter().cloned());
                all.push(f);
            }
        }
        for name in wanted {
            if seen.contains(&name) || pending.iter().any(|f| f.name() == name) {
                continue;
            }
            let got = ask(&client, path, MessageRequest::FileByFilename(name.clone()))
                .await
                .map_err(|s| asking(&name, &s))?;
            pending.extend(files(got)?);
        }
    }
    let pool = pool_from_files(all)?;
    Ok((pool, version))
}

/// The files of a file-descriptor answer.
fn files(answer: MessageResponse) -> Result<Vec<FileDescriptorProto>, String> {
    match answer {
        MessageResponse::FileDescriptorResponse(f) => f
            .file_descriptor_proto
            .iter()
            .map(|b| decode_file(b))
            .collect(),
        _ => Err("the reflection service answered something else than files".into()),
    }
}

/// A failed question: the transport's failure (the server unreachable), or the server's answer.
fn failed(s: &tonic::Status) -> Failure {
    match crate::classify::transport_error(s) {
        Some(e) => Failure::Unanswered(throng_net::message(e)),
        None => Failure::Said(format!("{:?}: {}", s.code(), s.message())),
    }
}

/// A failed question for `what`.
fn asking(what: &str, s: &tonic::Status) -> Failure {
    match failed(s) {
        Failure::Unanswered(r) => Failure::Unanswered(format!("asking for {what}: {r}")),
        Failure::Said(r) => Failure::Said(format!("asking for {what}: {r}")),
    }
}

/// One question, one answer; the server's error answer as a status (NOT_FOUND for an unknown
/// symbol).
async fn ask(
    client: &Client,
    path: &str,
    question: MessageRequest,
) -> Result<MessageResponse, tonic::Status> {
    let mut grpc = client.grpc.clone();
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::from_error(Box::new(e)))?;
    let req = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(question),
    };
    let path = path
        .parse()
        .map_err(|_| tonic::Status::internal("bad path"))?;
    let codec = ProstCodec::<ServerReflectionRequest, ServerReflectionResponse>::default();
    let resp = grpc
        .streaming(tonic::Request::new(tokio_stream::iter([req])), path, codec)
        .await?;
    let mut stream = resp.into_inner();
    let answer = stream.message().await?.ok_or_else(|| {
        tonic::Status::unavailable("the reflection stream ended without an answer")
    })?;
    match answer.message_response {
        Some(MessageResponse::ErrorResponse(e)) => Err(tonic::Status::new(
            Code::from(e.error_code),
            e.error_message,
        )),
        Some(other) => Ok(other),
        None => Err(tonic::Status::internal(
            "the reflection service answered nothing",
        )),
    }
}
