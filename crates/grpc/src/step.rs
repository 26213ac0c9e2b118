//! gRPC as a scenario protocol: `grpc:` steps on `grpc://` and `grpcs://` targets.
//!
//! ```yaml
//! grpc:
//!   target: greeter
//!   call: helloworld.Greeter/SayHello
//!   message: { name: "{{ user }}" }       # the protobuf JSON mapping; a list streams
//!   metadata: { x-trace: "{{ uuid() }}" }
//!   proto: protos/greeter.proto           # optional (a list too), with import_paths;
//!                                         # relative to the scenario file
//! ```
//!
//! A step with `proto` compiles it when the scenario loads: its method is found and its static
//! message encoded then, so each mistake is reported at its place before any load. Otherwise the
//! target's descriptors come from the server's reflection, asked once when the run is assembled;
//! a step's method is found in them at its first call, and a message without templates is
//! encoded once. A target whose reflection cannot be asked (none served, nothing listening)
//! fails the steps that need it, with the reason as the sample.
//!
//! `throng run grpc://…` is one such step on the same path ([`GrpcClient::one_step`]): its
//! descriptors are loaded, its method found and its message encoded before the load, and a
//! message holding templates (`-d '{"id": {{ seq() }}}'`) is rendered and encoded per call.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bytes::Bytes;
use http::HeaderMap;
use prost_reflect::DescriptorPool;
use throng_core::step::{
    Client, ClientOptions, JsonTemplate, Node, NodeValue, Place, Protocol, Render, Reply,
    StepError, TemplateCompiler, Text,
};
use throng_core::steps::Steps;
use throng_core::{ErrorClass, Outcome, Status};
use throng_h2::hpack::Block;

use crate::config::{split_call, Descriptors, GrpcConfig, GrpcError};
use crate::conn::Pool;
use crate::conn::Session;
use crate::descriptors::find_method;
use crate::target::{metadata, Method, Target};

/// The gRPC protocol of scenarios.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrpcProtocol;

/// gRPC's own options for a scenario's targets ([`ClientOptions::with`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrpcOptions {
    /// `.proto` files with the methods of steps that name no `proto` of their own (instead of
    /// the server's reflection).
    pub protos: Vec<PathBuf>,
    /// Where the imports of `protos` are looked for.
    pub import_paths: Vec<PathBuf>,
    /// A FileDescriptorSet with those methods (instead of `protos` or reflection).
    pub protoset: Option<PathBuf>,
    /// The HTTP/2 connections that carry each target's calls, in all, shared out among the
    /// worker threads; `None`: one per `streams` sessions on each worker.
    pub connections: Option<usize>,
}

/// A step's method and, when nothing in its message is a template, its encoded requests.
type Resolved = (Method, Option<Vec<Bytes>>);

/// A compiled `grpc:` step.
#[derive(Debug)]
pub struct GrpcStep {
    /// Where its `call` is written.
    at: Place,
    service: String,
    method: String,
    message: Message,
    metadata: Vec<(String, Text)>,
    /// The method and (when nothing in the message is a template) its encoded requests, found
    /// at the first call: a step's target is fixed, so the answer never changes.
    resolved: OnceLock<Result<Resolved, String>>,
    /// Its calls' header block, encoded at the first call (a step's target is fixed), with a
    /// slot for each metadata value that is a template.
    block: OnceLock<Block>,
}

/// What a step sends.
#[derive(Debug)]
enum Message {
    /// An empty message.
    Empty,
    /// A scenario's `message`: a document whose string leaves may be templates.
    Document(JsonTemplate),
    /// A URL run's message: JSON text (one object; an array, or an object a line, for a
    /// stream) that may be a template as a whole, rendered and then read.
    Text(Text),
}

const FIELDS: &[&str] = &["call", "message", "metadata", "proto", "import_paths"];

impl GrpcStep {
    /// The method it calls, once known (at once for a URL run's step or a step with its own
    /// `proto`; else at its first call).
    pub fn method(&self) -> Option<&Method> {
        self.resolved.get()?.as_ref().ok().map(|(m, _)| m)
    }
}

/// A `proto` or `import_paths` value (one path or a list), relative paths read from `dir`.
fn paths(node: &Node, what: &str, dir: &Path) -> Result<Vec<PathBuf>, StepError> {
    let one = |n: &Node| n.text(what).map(|p| dir.join(p));
    match &node.value {
        NodeValue::List(items) => items.iter().map(one).collect(),
        _ => Ok(vec![one(node)?]),
    }
}

/// gRPC status names, by code.
fn code_of(name: &str) -> Option<u8> {
    (0u8..=16).find(|c| crate::status::name(*c).eq_ignore_ascii_case(name))
}

impl Protocol for GrpcProtocol {
    type Client = GrpcClient;

    fn name(&self) -> &'static str {
        "grpc"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["grpc", "grpcs"]
    }

    const TLS_SCHEMES: &'static [&'static str] = &["grpcs"];

    fn key(&self) -> &'static str {
        "grpc"
    }

    fn step_help(&self) -> &'static str {
        "call, message, metadata, proto and import_paths"
    }

    fn check_target(&self, url: &str) -> Result<(), String> {
        crate::parse_url(url).map(drop).map_err(|e| e.to_string())
    }

    fn compile(&self, step: &Node, t: &mut dyn TemplateCompiler) -> Result<GrpcStep, StepError> {
        let f = step.fields("grpc", FIELDS)?;
        let call = f.require("call", "a grpc step")?;
        let text = call.text("call")?;
        let (service, method) =
            split_call(&text).map_err(|e| StepError::at(call.at, e.to_string()))?;
        let message = match f.get("message") {
            None => Message::Empty,
            Some(m) => {
                if !matches!(m.value, NodeValue::Map(_) | NodeValue::List(_)) {
                    return Err(StepError::at(
                        m.at,
                        format!(
                            "message: expected a map (or a list of maps for a stream), found {}",
                            m.kind()
                        ),
                    ));
                }
                Message::Document(JsonTemplate::compile(t, m)?)
            }
        };
        let mut md = Vec::new();
        if let Some(m) = f.get("metadata") {
            for (name, value) in m.map("metadata")? {
                let v = value.text(&format!("metadata `{name}`"))?;
                metadata(&[(name.to_ascii_lowercase(), "x".into())]).map_err(|_| {
                    StepError::at(value.at, format!("`{name}` is not a metadata name"))
                })?;
                md.push((name.to_ascii_lowercase(), t.text(&v, value.at)?));
            }
        }
        let step = GrpcStep {
            at: call.at,
            service,
            method,
            message,
            metadata: md,
            resolved: OnceLock::new(),
            block: OnceLock::new(),
        };
        if let Some(p) = f.get("proto") {
            let files = paths(p, "proto", t.dir())?;
            let includes = match f.get("import_paths") {
                Some(i) => paths(i, "import_paths", t.dir())?,
                None => Vec::new(),
            };
            let pool = crate::compile_protos(&files, &includes)
                .map_err(|e| StepError::at(p.at, e.to_string()))?;
            let source = Descriptors::Protos { files, includes };
            let resolved = resolve(&pool, &step, &source).map_err(|e| {
                let at = match e.starts_with("message") {
                    true => f.get("message").map_or(call.at, |m| m.at),
                    false => call.at,
                };
                StepError::at(at, e)
            })?;
            let _ = step.resolved.set(Ok(resolved));
        } else if let Some(i) = f.get("import_paths") {
            return Err(StepError::at(
                i.at,
                "import_paths is for `proto` files; give one",
            ));
        }
        Ok(step)
    }

    fn status(&self, expected: &Node) -> Result<Status, StepError> {
        let code = match &expected.value {
            NodeValue::Number(n) => n.as_u64().filter(|c| *c <= 16).map(|c| c as u8),
            NodeValue::String(s) => s
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|c| *c <= 16)
                .or_else(|| code_of(s.trim())),
            _ => None,
        };
        code.map(crate::status::status).ok_or_else(|| {
            StepError::at(
                expected.at,
                "status must be a gRPC code, by name (OK, NOT_FOUND, UNAVAILABLE, ...) or \
                 number (0 to 16)",
            )
        })
    }

    fn client(&self, url: &str, options: &ClientOptions) -> Result<GrpcClient, String> {
        let mut cfg = GrpcConfig::new(url, "").map_err(|e| e.to_string())?;
        let own = options.of::<GrpcOptions>().cloned().unwrap_or_default();
        cfg.timeout = options.timeout;
        cfg.connect_timeout = options.connect_timeout;
        cfg.insecure = options.insecure;
        cfg.cacert = options.cacert.clone();
        cfg.identity = options.identity.clone();
        cfg.streams = options.streams.max(1);
        cfg.connections = own.connections;
        cfg.metadata = options
            .headers
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
            .collect();
        let target = Target::new(&cfg).map_err(|e| e.to_string())?;
        let base = target.headers(metadata(&cfg.metadata).map_err(|e| e.to_string())?);
        let source = match (&own.protoset, own.protos.is_empty()) {
            (Some(p), _) => Descriptors::Protoset(p.clone()),
            (None, false) => Descriptors::Protos {
                files: own.protos.clone(),
                includes: own.import_paths.clone(),
            },
            (None, true) => Descriptors::Reflection,
        };
        let pool = match &source {
            // Steps with their own `proto` need no reflection, so a failure here is theirs to
            // report only for the steps that need it.
            Descriptors::Reflection => reflect(&target, &cfg)
                .map_err(|e| format!("reflection at {}: {e}", cfg.authority())),
            Descriptors::Protos { files, includes } => {
                Ok(crate::compile_protos(files, includes).map_err(|e| e.to_string())?)
            }
            Descriptors::Protoset(p) => Ok(crate::read_protoset(p).map_err(|e| e.to_string())?),
        };
        Ok(GrpcClient {
            target,
            pool,
            source,
            base,
            per_user: 1.0 / cfg.streams as f64,
            connections: cfg.connections,
        })
    }
}

/// Asks the server's reflection for everything it serves, on a thread of its own: clients are
/// made while the scenario is assembled (synchronously, before any load), possibly on the
/// caller's runtime, which must not be blocked from inside.
fn reflect(target: &Target, cfg: &GrpcConfig) -> Result<DescriptorPool, String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(target.all_descriptors(cfg))
                .map_err(|e| e.to_string())
        })
        .join()
        .unwrap_or_else(|_| Err("reflection failed".into()))
    })
}

/// A step's method in `pool`, and its requests when its message has no templates.
fn resolve(
    pool: &DescriptorPool,
    step: &GrpcStep,
    source: &Descriptors,
) -> Result<Resolved, String> {
    let desc = find_method(pool, &step.service, &step.method, source).map_err(|e| e.to_string())?;
    let method = Method::new(desc).map_err(|e| e.to_string())?;
    let fixed = match &step.message {
        Message::Empty => Some(method.frames(None)),
        Message::Document(m) if m.templates() == 0 => {
            Some(method.frames(Some(&m.document().to_string())))
        }
        Message::Text(Text::Static(t)) => Some(method.frames(Some(t))),
        Message::Document(_) | Message::Text(Text::Template(_)) => None,
    };
    let fixed = fixed.transpose().map_err(|e| format!("message: {e}"))?;
    Ok((method, fixed))
}

/// One gRPC target of a scenario.
pub struct GrpcClient {
    target: Target,
    /// Its descriptors (from the command line's `.proto` files or protoset, or the server's
    /// reflection), or why there are none.
    pool: Result<DescriptorPool, String>,
    /// Where they came from.
    source: Descriptors,
    /// Headers of every call (gRPC's, the deadline, `-H`).
    base: HeaderMap,
    per_user: f64,
    /// HTTP/2 connections in all (`--connections`), shared out among the workers.
    connections: Option<usize>,
}

impl GrpcClient {
    /// A client of `cfg`'s server: the host resolved, TLS configured, and the descriptors
    /// loaded (the server's reflection asked now, for `cfg`'s service only). Each error is the
    /// input's but [`GrpcError::Unanswered`].
    pub async fn new(cfg: &GrpcConfig) -> Result<GrpcClient, GrpcError> {
        let (service, _) = cfg.service_method()?;
        let target = Target::new(cfg)?;
        let base = target.headers(metadata(&cfg.metadata)?);
        let pool = target.descriptors(cfg, &service).await?;
        Ok(GrpcClient {
            target,
            pool: Ok(pool),
            source: cfg.descriptors.clone(),
            base,
            per_user: 1.0 / cfg.streams.max(1) as f64,
            connections: cfg.connections,
        })
    }

    /// `throng run grpc://…`: `cfg`'s call as a one-step plan, its message (`cfg.data`)
    /// encoded once, before the load.
    pub async fn one_step(cfg: GrpcConfig) -> Result<Steps<GrpcClient>, GrpcError> {
        let (client, step, label) = Self::url_step(&cfg, None).await?;
        Steps::new(client, step, label).map_err(|e| GrpcError::Message(e.message))
    }

    /// `throng run grpc://…` whose message is a template (`{"id": {{ seq() }}}`): `data` is
    /// rendered by `render` and encoded on every call. `cfg.data` should be one rendering of it,
    /// so that a message that does not fit the method is refused before the load; a call whose
    /// rendering does not fit fails (class `check`).
    pub async fn one_step_per_call<R: Render>(
        cfg: GrpcConfig,
        data: Text,
        render: R,
    ) -> Result<Steps<GrpcClient, R>, GrpcError> {
        let (client, step, label) = Self::url_step(&cfg, Some(data)).await?;
        let one = Steps::new(client, step, label).map_err(|e| GrpcError::Message(e.message))?;
        Ok(one.rendered_by(render))
    }

    /// The client, step and label of a URL run: the method found and `cfg.data` encoded now,
    /// so that each mistake is said before the load.
    async fn url_step(
        cfg: &GrpcConfig,
        per_call: Option<Text>,
    ) -> Result<(GrpcClient, GrpcStep, String), GrpcError> {
        let client = GrpcClient::new(cfg).await?;
        let (service, method) = cfg.service_method()?;
        let pool = match &client.pool {
            Ok(pool) => pool,
            Err(e) => return Err(GrpcError::Message(e.clone())),
        };
        let desc = find_method(pool, &service, &method, &cfg.descriptors)?;
        let found = Method::new(desc)?;
        let frames = found
            .frames(cfg.data.as_deref())
            .map_err(GrpcError::Message)?;
        let (message, fixed) = match (per_call, &cfg.data) {
            (Some(t), _) => (Message::Text(t), None),
            (None, Some(d)) => (Message::Text(Text::Static(d.clone())), Some(frames)),
            (None, None) => (Message::Empty, Some(frames)),
        };
        let step = GrpcStep {
            at: Place::default(),
            service,
            method,
            message,
            metadata: Vec::new(),
            resolved: OnceLock::from(Ok((found, fixed))),
            block: OnceLock::new(),
        };
        Ok((client, step, cfg.label()))
    }

    fn resolve(&self, step: &GrpcStep) -> Result<Resolved, String> {
        match &self.pool {
            Ok(pool) => resolve(pool, step, &self.source),
            Err(e) => Err(format!("{e} (a step with `proto` needs no reflection)")),
        }
    }

    fn requests(
        &self,
        step: &GrpcStep,
        method: &Method,
        r: &dyn Render,
    ) -> Result<Vec<Bytes>, String> {
        match &step.message {
            Message::Empty => method.frames(None),
            Message::Text(t) => method.frames(Some(&r.render(t)?)),
            Message::Document(message) => {
                // The JSON mapping reads int64 and enums from strings too.
                let doc = message.render(r)?;
                let messages =
                    crate::message::from_value(&method.desc.input(), doc, method.client_streams())?;
                Ok(messages.iter().map(|m| crate::call::frame(m)).collect())
            }
        }
    }

    /// The step's header block (see [`Target::block`]).
    fn block<'s>(&self, step: &'s GrpcStep, method: &Method) -> &'s Block {
        step.block.get_or_init(|| {
            let extra: Vec<(&str, Option<&str>)> = step
                .metadata
                .iter()
                .map(|(k, v)| match v {
                    Text::Static(v) => (k.as_str(), Some(v.as_str())),
                    Text::Template(_) => (k.as_str(), None),
                })
                .collect();
            self.target.block(method, &self.base, &extra)
        })
    }

    /// The step's metadata values for this call, each checked (a value that is not metadata
    /// fails the call): the templates' renderings, in the order of the block's slots.
    fn slots(&self, step: &GrpcStep, r: &dyn Render) -> Result<Vec<String>, String> {
        let mut pairs = Vec::with_capacity(step.metadata.len());
        let mut slots = Vec::new();
        for (k, v) in &step.metadata {
            let value = r.render(v)?;
            if let Text::Template(_) = v {
                slots.push(value.clone());
            }
            pairs.push((k.clone(), value));
        }
        metadata(&pairs).map_err(|e| e.to_string())?;
        Ok(slots)
    }
}

impl Client for GrpcClient {
    type Step = GrpcStep;
    type Worker = Pool;
    type Session = Session;

    /// With `--connections`, this worker's share of them (see [`Pool::share`]).
    fn worker_of(&self, index: usize, workers: usize) -> Pool {
        Pool::share(self.connections, index, workers)
    }

    fn session(&self, pool: &Pool, _user: u64) -> Session {
        self.target.session(pool)
    }

    async fn connect(&self, s: &mut Session) -> Result<(), Outcome> {
        self.target.connect(s).await
    }

    async fn call(
        &self,
        s: &mut Session,
        step: &GrpcStep,
        render: &dyn Render,
        want_reply: bool,
    ) -> (Outcome, Option<Reply>) {
        let (method, fixed) = match step.resolved.get_or_init(|| self.resolve(step)) {
            Ok(r) => r,
            Err(e) => return (Outcome::failed(ErrorClass::Other, e.clone()), None),
        };
        let rendered;
        let requests = match fixed {
            Some(f) => f,
            None => match self.requests(step, method, render) {
                Ok(r) => {
                    rendered = r;
                    &rendered
                }
                Err(e) => {
                    return (
                        Outcome::failed(ErrorClass::Check, format!("message: {e}")),
                        None,
                    )
                }
            },
        };
        let block = self.block(step, method);
        // A step's metadata values are checked at every call, templates or not.
        let values = match step.metadata.is_empty() {
            true => Vec::new(),
            false => match self.slots(step, render) {
                Ok(v) => v,
                Err(e) => {
                    return (
                        Outcome::failed(ErrorClass::Check, format!("metadata: {e}")),
                        None,
                    )
                }
            },
        };
        let written;
        let headers = match block.fixed() {
            Some(fixed) => fixed,
            None => {
                let values: Vec<&[u8]> = values.iter().map(|v| v.as_bytes()).collect();
                let mut out = Vec::with_capacity(128);
                block.write(&mut out, &values);
                written = out;
                &written[..]
            }
        };
        self.target
            .call(s, method, headers, requests, want_reply)
            .await
    }

    fn connections_per_user(&self) -> f64 {
        self.per_user
    }

    /// The messages of a server-streaming or bidi step's replies: `LABEL (messages)` (known
    /// once its method is; a step whose target's reflection could not be asked has none).
    fn parts(&self, step: &GrpcStep, label: &str) -> Option<String> {
        match step.resolved.get()? {
            Ok((method, _)) if method.server_streams() => Some(messages_label(label)),
            _ => None,
        }
    }

    /// A step's method must be in the descriptors the client has (a target whose reflection
    /// could not be asked leaves its steps to fail when they run, with the reason).
    fn check(&self, step: &GrpcStep) -> Result<(), StepError> {
        let resolved = match step.resolved.get() {
            // A step with its own `proto` knows its method already.
            Some(r) => r,
            None if self.pool.is_err() => return Ok(()),
            None => step.resolved.get_or_init(|| self.resolve(step)),
        };
        let (method, _) = resolved
            .as_ref()
            .map_err(|e| StepError::at(step.at, e.clone()))?;
        // A message with templates is encoded per call; its field names are checked now.
        match &step.message {
            Message::Document(m) if m.templates() > 0 => crate::message::check_fields(
                &method.desc.input(),
                m.document(),
                method.client_streams(),
            )
            .map_err(|e| StepError::at(step.at, format!("message: {e}"))),
            _ => Ok(()),
        }
    }
}

/// The row of a streaming step's reply messages: `LABEL (messages)`.
pub(crate) fn messages_label(label: &str) -> String {
    format!("{label} (messages)")
}

#[cfg(test)]
mod tests {
    use super::*;

    use throng_core::step::Uncompiled as Plain;

    fn node(v: serde_json::Value) -> Node {
        Node::from_json(&v, Place { line: 4, column: 2 })
    }

    #[test]
    fn compiles_steps_and_statuses_and_refuses_bad_ones() {
        let p = GrpcProtocol;
        let ok = p
            .compile(
                &node(serde_json::json!({"call": "helloworld.Greeter/SayHello",
                    "message": {"name": "{{ who }}", "count": 2}, "metadata": {"X-Id": "1"}})),
                &mut Plain,
            )
            .unwrap();
        let step = ok;
        assert_eq!(step.service, "helloworld.Greeter");
        assert_eq!(step.metadata[0].0, "x-id");
        assert!(matches!(&step.message, Message::Document(m) if m.templates() == 1));
        for (bad, says) in [
            (
                serde_json::json!({"call": "Greeter"}),
                "package.Service/Method",
            ),
            (serde_json::json!({"message": {}}), "needs `call`"),
            (
                serde_json::json!({"call": "a.B/C", "mesage": {}}),
                "unknown field `mesage`",
            ),
            (
                serde_json::json!({"call": "a.B/C", "message": "x"}),
                "expected a map",
            ),
        ] {
            let e = p.compile(&node(bad), &mut Plain).unwrap_err();
            assert!(e.message.contains(says), "{}", e.message);
        }
        assert_eq!(
            p.status(&node(serde_json::json!("OK"))).unwrap(),
            crate::status::status(0)
        );
        assert_eq!(
            p.status(&node(serde_json::json!("not_found"))).unwrap(),
            crate::status::status(5)
        );
        assert_eq!(
            p.status(&node(serde_json::json!(14))).unwrap(),
            crate::status::status(14)
        );
        assert!(p.status(&node(serde_json::json!(200))).is_err());
        assert!(p.status(&node(serde_json::json!("FINE"))).is_err());
    }
}
