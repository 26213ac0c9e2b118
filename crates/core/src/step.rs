//! Scenario steps from any protocol: the contract between the scenario crate (files, variables,
//! templates, checks, extraction) and the protocol crates (what a step sends, and how).
//!
//! A protocol implements [`Protocol`] and [`Client`], once, and is registered in [`Protocols`]
//! under its URL schemes and its step key (`request` for HTTP, `grpc`, `sql`). When a scenario
//! loads, the protocol compiles each of its steps from the [`Node`] written under that key into
//! its own step type, compiling its templates through [`TemplateCompiler`] and blaming bad
//! values on their [`Place`]. When the run starts it makes one [`Client`] per target. Each call
//! renders its templates through [`Render`] and answers with an [`Outcome`] and, when asked, a
//! [`Reply`]: the status, metadata and body that the scenario's checks and extraction read,
//! whatever the protocol.
//!
//! A scenario mixing protocols holds one client of each per target, so core erases their
//! types, once, for every protocol: [`StepProtocol`], [`StepClient`] and [`StepCall`] are
//! derived from the typed traits (workers and sessions as `Box<dyn Any>`, one boxed future per
//! step). The single-URL paths (`throng run URL`) are typed: [`crate::steps::Steps`], a
//! client's steps as a whole plan (HTTP's and gRPC's one step, SQL's statements and
//! transaction), so no protocol writes a [`crate::Driver`] of its own.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::{Outcome, Status};

/// A boxed future that need not be `Send` (sessions live on one worker thread).
pub type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Where a value was written: 1-based line and column; line 0 is no place (a step built in
/// Rust).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Place {
    /// 1-based line, 0 for none.
    pub line: u64,
    /// 1-based column.
    pub column: u64,
}

/// A value of a scenario file, with the place of every part of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: NodeValue,
    /// Where it was written.
    pub at: Place,
}

/// The shapes a [`Node`] takes: YAML's, as JSON sees them.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeValue {
    /// `null` or nothing.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(serde_json::Number),
    /// A string.
    String(String),
    /// A list.
    List(Vec<Node>),
    /// A map, keys in the order written.
    Map(Vec<(String, Node)>),
}

/// A problem with a step, at a place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepError {
    /// Where.
    pub at: Place,
    /// What is wrong.
    pub message: String,
}

impl StepError {
    /// A problem at `at`.
    pub fn at(at: Place, message: impl Into<String>) -> Self {
        StepError {
            at,
            message: message.into(),
        }
    }
}

impl Node {
    /// A node with no place (built in Rust).
    pub fn new(value: NodeValue) -> Self {
        Node {
            value,
            at: Place::default(),
        }
    }

    /// A string node with no place.
    pub fn string(s: impl Into<String>) -> Self {
        Node::new(NodeValue::String(s.into()))
    }

    /// The node as JSON (places dropped).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match &self.value {
            NodeValue::Null => Value::Null,
            NodeValue::Bool(b) => Value::Bool(*b),
            NodeValue::Number(n) => Value::Number(n.clone()),
            NodeValue::String(s) => Value::String(s.clone()),
            NodeValue::List(l) => Value::Array(l.iter().map(Node::to_json).collect()),
            NodeValue::Map(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
        }
    }

    /// A node from JSON, every part at `at`.
    pub fn from_json(v: &serde_json::Value, at: Place) -> Self {
        use serde_json::Value;
        let value = match v {
            Value::Null => NodeValue::Null,
            Value::Bool(b) => NodeValue::Bool(*b),
            Value::Number(n) => NodeValue::Number(n.clone()),
            Value::String(s) => NodeValue::String(s.clone()),
            Value::Array(a) => NodeValue::List(a.iter().map(|x| Node::from_json(x, at)).collect()),
            Value::Object(m) => NodeValue::Map(
                m.iter()
                    .map(|(k, x)| (k.clone(), Node::from_json(x, at)))
                    .collect(),
            ),
        };
        Node { value, at }
    }

    /// What kind of value this is, for messages.
    pub fn kind(&self) -> &'static str {
        match self.value {
            NodeValue::Null => "null",
            NodeValue::Bool(_) => "a boolean",
            NodeValue::Number(_) => "a number",
            NodeValue::String(_) => "a string",
            NodeValue::List(_) => "a list",
            NodeValue::Map(_) => "a map",
        }
    }

    /// The text of a string node; a number or boolean is read as its text too (YAML writes
    /// `method: 1` and `body: true` without quotes); anything else is an error naming `what`.
    pub fn text(&self, what: &str) -> Result<String, StepError> {
        match &self.value {
            NodeValue::String(s) => Ok(s.clone()),
            NodeValue::Number(n) => Ok(n.to_string()),
            NodeValue::Bool(b) => Ok(b.to_string()),
            _ => Err(StepError::at(
                self.at,
                format!("{what}: expected a string, found {}", self.kind()),
            )),
        }
    }

    /// The members of a map node; anything else is an error naming `what`.
    pub fn map(&self, what: &str) -> Result<&[(String, Node)], StepError> {
        match &self.value {
            NodeValue::Map(m) => Ok(m),
            _ => Err(StepError::at(
                self.at,
                format!("{what}: expected a map, found {}", self.kind()),
            )),
        }
    }

    /// The members of a map node, refusing keys not in `known` (named in the message, as a
    /// misspelt field should be).
    pub fn fields(&self, what: &str, known: &[&str]) -> Result<Fields<'_>, StepError> {
        let members = self.map(what)?;
        for (k, v) in members {
            if !known.contains(&k.as_str()) {
                return Err(StepError::at(
                    v.at,
                    format!(
                        "{what}: unknown field `{k}`, expected one of {}",
                        known
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
        Ok(Fields {
            members,
            at: self.at,
        })
    }
}

/// A map's members, checked against the known field names.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    members: &'a [(String, Node)],
    /// Where the map was written.
    pub at: Place,
}

impl<'a> Fields<'a> {
    /// The member named `key`.
    pub fn get(&self, key: &str) -> Option<&'a Node> {
        self.members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The member named `key`, which must be there.
    pub fn require(&self, key: &str, what: &str) -> Result<&'a Node, StepError> {
        self.get(key)
            .ok_or_else(|| StepError::at(self.at, format!("{what} needs `{key}`")))
    }
}

/// A piece of text of a step, static or a compiled template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Text {
    /// Used as written.
    Static(String),
    /// The name of a compiled template, rendered per request.
    Template(String),
}

impl Text {
    /// The text if it is static.
    pub fn as_static(&self) -> Option<&str> {
        match self {
            Text::Static(s) => Some(s),
            Text::Template(_) => None,
        }
    }
}

/// Compiles a step's templates when the scenario loads (and checks their variables).
pub trait TemplateCompiler {
    /// Compiles `source`; text without `{{` or `{%` stays static.
    fn text(&mut self, source: &str, at: Place) -> Result<Text, StepError>;

    /// The folder a step's relative file paths (a `.proto`, say) are read from: the scenario
    /// file's own, as for its CSV data; empty (the working directory) when there is no file.
    fn dir(&self) -> &std::path::Path {
        std::path::Path::new("")
    }
}

/// Renders a step's templates with the user's variables when it runs.
pub trait Render {
    /// The text, rendered.
    fn render(&self, text: &Text) -> Result<String, String>;
}

impl<R: Render + ?Sized> Render for Arc<R> {
    fn render(&self, text: &Text) -> Result<String, String> {
        (**self).render(text)
    }
}

/// Renders static text only: for steps that hold no templates.
#[derive(Debug, Clone, Copy, Default)]
pub struct StaticOnly;

impl Render for StaticOnly {
    fn render(&self, text: &Text) -> Result<String, String> {
        match text {
            Text::Static(s) => Ok(s.clone()),
            Text::Template(name) => Err(format!("template {name} has no variables to render")),
        }
    }
}

/// A JSON document written in a step (an HTTP `json:` body, a gRPC `message:`) whose string
/// leaves may be templates: compiled once, rendered per request. A leaf that renders as JSON (a
/// number, an object) goes in as that value, anything else as a string.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonTemplate {
    doc: serde_json::Value,
    leaves: Vec<(Vec<JsonKey>, Text)>,
}

/// A step into a JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
enum JsonKey {
    Key(String),
    Index(usize),
}

impl JsonTemplate {
    /// The document of `node`, its template leaves compiled through `t`.
    pub fn compile(t: &mut dyn TemplateCompiler, node: &Node) -> Result<Self, StepError> {
        let mut leaves = Vec::new();
        Self::walk(t, node, &mut Vec::new(), &mut leaves)?;
        Ok(JsonTemplate {
            doc: node.to_json(),
            leaves,
        })
    }

    fn walk(
        t: &mut dyn TemplateCompiler,
        node: &Node,
        path: &mut Vec<JsonKey>,
        out: &mut Vec<(Vec<JsonKey>, Text)>,
    ) -> Result<(), StepError> {
        match &node.value {
            NodeValue::String(s) if s.contains("{{") || s.contains("{%") => {
                out.push((path.clone(), t.text(s, node.at)?));
            }
            NodeValue::List(items) => {
                for (i, x) in items.iter().enumerate() {
                    path.push(JsonKey::Index(i));
                    Self::walk(t, x, path, out)?;
                    path.pop();
                }
            }
            NodeValue::Map(members) => {
                for (k, x) in members {
                    path.push(JsonKey::Key(k.clone()));
                    Self::walk(t, x, path, out)?;
                    path.pop();
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The document as written (templates unrendered).
    pub fn document(&self) -> &serde_json::Value {
        &self.doc
    }

    /// How many of its leaves are templates (none: the document is the same every time).
    pub fn templates(&self) -> usize {
        self.leaves.len()
    }

    /// The document with its templates rendered.
    pub fn render(&self, r: &dyn Render) -> Result<serde_json::Value, String> {
        let mut doc = self.doc.clone();
        for (path, text) in &self.leaves {
            let rendered = r.render(text)?;
            let value =
                serde_json::from_str(&rendered).unwrap_or(serde_json::Value::String(rendered));
            let slot = path.iter().try_fold(&mut doc, |cur, k| match (k, cur) {
                (JsonKey::Key(k), serde_json::Value::Object(m)) => m.get_mut(k),
                (JsonKey::Index(i), serde_json::Value::Array(a)) => a.get_mut(*i),
                _ => None,
            });
            if let Some(slot) = slot {
                *slot = value;
            }
        }
        Ok(doc)
    }
}

/// What came back from a step, as checks and extraction see it whatever the protocol.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    /// The status: HTTP code, gRPC code, SQLSTATE.
    pub status: Status,
    /// Headers, gRPC metadata (and trailers), or column names: names in lower case.
    pub metadata: Vec<(String, String)>,
    /// The body as bytes (HTTP's body; for protocols whose reply is structured, its JSON text).
    pub body: bytes::Bytes,
    /// The reply as JSON when the protocol has it already (a gRPC message in its JSON mapping,
    /// SQL rows); otherwise checks parse [`Reply::body`].
    pub json: Option<serde_json::Value>,
}

impl Reply {
    /// The first metadata value named `name` (case-insensitive).
    pub fn meta(&self, name: &str) -> Option<&str> {
        self.metadata
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Options shared by every target of a run, from the command line or the library. Each
/// protocol takes what applies to it, and finds its own options (HTTP/2 for HTTP, `.proto` files
/// for gRPC) under its own type ([`ClientOptions::of`]).
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// A request (a call, a transaction) must finish within this.
    pub timeout: Duration,
    /// A connection (TCP and TLS) must be made within this.
    pub connect_timeout: Duration,
    /// Accept any server certificate.
    pub insecure: bool,
    /// Trust these PEM certificates instead of the built-in web roots.
    pub cacert: Option<PathBuf>,
    /// Sessions sharing one connection, where connections are shared (HTTP/2, gRPC).
    pub streams: usize,
    /// Headers (gRPC: metadata) added to every request, `name: value` parsed.
    pub headers: Vec<(String, String)>,
    /// Each protocol's own options (see [`ClientOptions::with`] and [`ClientOptions::of`]).
    pub own: OwnOptions,
}

/// Each protocol's own options, one value per type.
#[derive(Debug, Clone, Default)]
pub struct OwnOptions(Vec<Arc<dyn Any + Send + Sync>>);

impl ClientOptions {
    /// Sets a protocol's own options (replacing any of the same type).
    pub fn with<T: Any + Send + Sync>(mut self, options: T) -> Self {
        self.own.0.retain(|o| !o.is::<T>());
        self.own.0.push(Arc::new(options));
        self
    }

    /// A protocol's own options, if they were set.
    pub fn of<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.own.0.iter().find_map(|o| o.downcast_ref::<T>())
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            insecure: false,
            cacert: None,
            streams: 100,
            headers: Vec::new(),
            own: OwnOptions::default(),
        }
    }
}

/// A protocol: which targets and steps are its, how a step compiles, and a client per target.
/// A protocol crate implements this and [`Client`], once; scenarios (and anything else that
/// mixes protocols) see it through its type-erased form, [`StepProtocol`], which core derives
/// for every protocol.
pub trait Protocol: Send + Sync + 'static {
    /// A target's client.
    type Client: Client;

    /// Its name in messages: `http`, `grpc`, `sql`.
    fn name(&self) -> &'static str;

    /// The URL schemes of its targets (`http`, `https`).
    fn schemes(&self) -> &'static [&'static str];

    /// The key a step of this protocol is written under (`request`, `grpc`, `sql`).
    fn key(&self) -> &'static str;

    /// What a step written under [`Protocol::key`] holds, for messages (`path`, `method`, ...).
    fn step_help(&self) -> &'static str {
        ""
    }

    /// Checks a target URL of this protocol (before any load), saying what is wrong.
    fn check_target(&self, url: &str) -> Result<(), String>;

    /// Compiles a step written under [`Protocol::key`] (its `target` already taken out).
    fn compile(
        &self,
        request: &Node,
        templates: &mut dyn TemplateCompiler,
    ) -> Result<<Self::Client as Client>::Step, StepError>;

    /// Reads a status check's expected value (`status: 200`, `status: UNAVAILABLE`).
    fn status(&self, expected: &Node) -> Result<Status, StepError>;

    /// A client for the target at `url`.
    fn client(&self, url: &str, options: &ClientOptions) -> Result<Self::Client, String>;
}

/// One target's client: per-worker state, per-user sessions, and the calls. Workers' state and
/// sessions live on one worker thread, so neither they nor the futures need to be `Send`.
pub trait Client: Send + Sync + 'static {
    /// A compiled step of this protocol.
    type Step: fmt::Debug + Send + Sync + 'static;
    /// The state a worker thread shares among its users' sessions (HTTP/2's connections).
    type Worker: 'static;
    /// Per-user state: a connection.
    type Session: 'static;

    /// The state of worker `index` of the run's `workers` threads: the same for every worker
    /// unless the client splits something fixed among them (gRPC's `--connections`).
    fn worker_of(&self, index: usize, workers: usize) -> Self::Worker;

    /// A fresh session for user `user` (0-based, unique across the run) on a worker.
    fn session(&self, worker: &Self::Worker, user: u64) -> Self::Session;

    /// Opens what the session needs and has not got (see [`crate::Driver::connect`]): its
    /// time is not the request's; a failure is the outcome of the step that needed it.
    fn connect(&self, _session: &mut Self::Session) -> impl Future<Output = Result<(), Outcome>> {
        std::future::ready(Ok(()))
    }

    /// Sends a compiled step; `want_reply` asks for the [`Reply`] (checks or extraction need
    /// it). A reply comes whenever the target answered, also with a failing status; `None`
    /// means no answer (or none wanted).
    fn call(
        &self,
        session: &mut Self::Session,
        step: &Self::Step,
        render: &dyn Render,
        want_reply: bool,
    ) -> impl Future<Output = (Outcome, Option<Reply>)>;

    /// After each iteration, with the class of its first failure (roll back a transaction
    /// left open; see [`crate::Driver::end_iteration`]). Nothing by default.
    fn end_iteration(
        &self,
        _session: &mut Self::Session,
        _failed: Option<crate::ErrorClass>,
    ) -> impl Future<Output = ()> {
        std::future::ready(())
    }

    /// Connections a user of this client holds at most (for the open-file check).
    fn connections_per_user(&self) -> f64 {
        1.0
    }

    /// Checks a compiled step against what the client learnt when it was made (a gRPC method
    /// in the target's descriptors), before any load: an error, at the step's place, stops the
    /// run. Nothing by default.
    fn check(&self, _step: &Self::Step) -> Result<(), StepError> {
        Ok(())
    }

    /// The label of a row timing the parts of a step's replies (a gRPC server stream's
    /// messages, see [`crate::PartsInfo`]), given the step's own label. None by default.
    fn parts(&self, _step: &Self::Step, _label: &str) -> Option<String> {
        None
    }

    /// Before any load, once: checks this target's compiled steps against the target itself
    /// (SQL: each statement prepared on a connection of its own), so that a step that can
    /// never succeed (a syntax error) is an error at its place before the load rather than a
    /// failure of every call. A target that cannot be reached is not an error here: its steps'
    /// connects fail, and are counted, when they run. Nothing by default.
    fn prepare(&self, _steps: &[&Self::Step]) -> impl Future<Output = Result<(), StepError>> {
        std::future::ready(Ok(()))
    }

    /// Once after the load: how its connections went and its own counts (SQL's transactions
    /// rolled back, retried, its reconnects), for the result. Nothing by default.
    fn report(&self) -> crate::DriverReport {
        crate::DriverReport::default()
    }
}

/// A compiled step of some protocol, type-erased; its client downcasts it.
pub trait StepCall: fmt::Debug + Send + Sync + 'static {
    /// For the client's downcast.
    fn as_any(&self) -> &dyn Any;
}

impl<T: fmt::Debug + Send + Sync + 'static> StepCall for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A [`Client`], type-erased: what a scenario of several protocols holds per target. Core
/// implements it for every client; its workers and sessions are `Box<dyn Any>`, and each call
/// costs one boxed future.
pub trait StepClient: Send + Sync + 'static {
    /// The state of worker `index` of `workers` (see [`Client::worker_of`]).
    fn worker_of(&self, index: usize, workers: usize) -> Box<dyn Any>;

    /// A fresh session for user `user` on a worker made by this client.
    fn session(&self, worker: &dyn Any, user: u64) -> Box<dyn Any>;

    /// Opens what the session needs (see [`Client::connect`]).
    fn connect<'a>(&'a self, session: &'a mut dyn Any) -> LocalFuture<'a, Result<(), Outcome>>;

    /// Sends a compiled step (see [`Client::call`]).
    fn call<'a>(
        &'a self,
        session: &'a mut dyn Any,
        call: &'a dyn StepCall,
        render: &'a dyn Render,
        want_reply: bool,
    ) -> LocalFuture<'a, (Outcome, Option<Reply>)>;

    /// After each iteration (see [`Client::end_iteration`]).
    fn end_iteration<'a>(
        &'a self,
        session: &'a mut dyn Any,
        failed: Option<crate::ErrorClass>,
    ) -> LocalFuture<'a, ()>;

    /// See [`Client::connections_per_user`].
    fn connections_per_user(&self) -> f64;

    /// See [`Client::check`].
    fn check(&self, step: &dyn StepCall) -> Result<(), StepError>;

    /// See [`Client::parts`].
    fn parts(&self, step: &dyn StepCall, label: &str) -> Option<String>;

    /// See [`Client::prepare`].
    fn prepare<'a>(
        &'a self,
        steps: &'a [&'a (dyn StepCall + 'static)],
    ) -> LocalFuture<'a, Result<(), StepError>>;
}

/// A step or session handed to a client that did not make it: a scenario gives each client
/// only its own, so this is a bug, reported as the request's failure rather than a panic.
fn foreign(what: &str) -> Outcome {
    Outcome::failed(
        crate::ErrorClass::Other,
        format!("a {what} of another protocol's client"),
    )
}

impl<C: Client> StepClient for C {
    fn worker_of(&self, index: usize, workers: usize) -> Box<dyn Any> {
        Box::new(Client::worker_of(self, index, workers))
    }

    fn session(&self, worker: &dyn Any, user: u64) -> Box<dyn Any> {
        match worker.downcast_ref::<C::Worker>() {
            Some(w) => Box::new(Client::session(self, w, user)),
            // A worker of another client has no session of this one: its calls fail.
            None => Box::new(()),
        }
    }

    fn connect<'a>(&'a self, session: &'a mut dyn Any) -> LocalFuture<'a, Result<(), Outcome>> {
        match session.downcast_mut::<C::Session>() {
            Some(s) => Box::pin(Client::connect(self, s)),
            None => Box::pin(std::future::ready(Err(foreign("session")))),
        }
    }

    fn call<'a>(
        &'a self,
        session: &'a mut dyn Any,
        call: &'a dyn StepCall,
        render: &'a dyn Render,
        want_reply: bool,
    ) -> LocalFuture<'a, (Outcome, Option<Reply>)> {
        match (
            session.downcast_mut::<C::Session>(),
            call.as_any().downcast_ref::<C::Step>(),
        ) {
            (Some(s), Some(step)) => Box::pin(Client::call(self, s, step, render, want_reply)),
            (None, _) => Box::pin(std::future::ready((foreign("session"), None))),
            (_, None) => Box::pin(std::future::ready((foreign("step"), None))),
        }
    }

    fn end_iteration<'a>(
        &'a self,
        session: &'a mut dyn Any,
        failed: Option<crate::ErrorClass>,
    ) -> LocalFuture<'a, ()> {
        match session.downcast_mut::<C::Session>() {
            Some(s) => Box::pin(Client::end_iteration(self, s, failed)),
            None => Box::pin(std::future::ready(())),
        }
    }

    fn connections_per_user(&self) -> f64 {
        Client::connections_per_user(self)
    }

    fn check(&self, step: &dyn StepCall) -> Result<(), StepError> {
        match step.as_any().downcast_ref::<C::Step>() {
            Some(s) => Client::check(self, s),
            None => Err(StepError::at(
                Place::default(),
                "a step of another protocol",
            )),
        }
    }

    fn parts(&self, step: &dyn StepCall, label: &str) -> Option<String> {
        Client::parts(self, step.as_any().downcast_ref::<C::Step>()?, label)
    }

    fn prepare<'a>(
        &'a self,
        steps: &'a [&'a (dyn StepCall + 'static)],
    ) -> LocalFuture<'a, Result<(), StepError>> {
        Box::pin(async move {
            let typed: Vec<&C::Step> = steps
                .iter()
                .filter_map(|s| (**s).as_any().downcast_ref::<C::Step>())
                .collect();
            Client::prepare(self, &typed).await
        })
    }
}

/// A [`Protocol`], type-erased: how scenarios find and use it. Core implements it for every
/// protocol.
pub trait StepProtocol: Send + Sync + 'static {
    /// See [`Protocol::name`].
    fn name(&self) -> &'static str;
    /// See [`Protocol::schemes`].
    fn schemes(&self) -> &'static [&'static str];
    /// See [`Protocol::key`].
    fn key(&self) -> &'static str;
    /// See [`Protocol::step_help`].
    fn step_help(&self) -> &'static str;
    /// See [`Protocol::check_target`].
    fn check_target(&self, url: &str) -> Result<(), String>;
    /// See [`Protocol::compile`].
    fn compile(
        &self,
        request: &Node,
        templates: &mut dyn TemplateCompiler,
    ) -> Result<Arc<dyn StepCall>, StepError>;
    /// See [`Protocol::status`].
    fn status(&self, expected: &Node) -> Result<Status, StepError>;
    /// See [`Protocol::client`].
    fn client(&self, url: &str, options: &ClientOptions) -> Result<Arc<dyn StepClient>, String>;
}

impl<P: Protocol> StepProtocol for P {
    fn name(&self) -> &'static str {
        Protocol::name(self)
    }

    fn schemes(&self) -> &'static [&'static str] {
        Protocol::schemes(self)
    }

    fn key(&self) -> &'static str {
        Protocol::key(self)
    }

    fn step_help(&self) -> &'static str {
        Protocol::step_help(self)
    }

    fn check_target(&self, url: &str) -> Result<(), String> {
        Protocol::check_target(self, url)
    }

    fn compile(
        &self,
        request: &Node,
        templates: &mut dyn TemplateCompiler,
    ) -> Result<Arc<dyn StepCall>, StepError> {
        Ok(Arc::new(Protocol::compile(self, request, templates)?))
    }

    fn status(&self, expected: &Node) -> Result<Status, StepError> {
        Protocol::status(self, expected)
    }

    fn client(&self, url: &str, options: &ClientOptions) -> Result<Arc<dyn StepClient>, String> {
        Ok(Arc::new(Protocol::client(self, url, options)?))
    }
}

/// The protocols a scenario may use, found by URL scheme or step key.
#[derive(Clone, Default)]
pub struct Protocols(Vec<Arc<dyn StepProtocol>>);

impl fmt::Debug for Protocols {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|p| p.name()))
            .finish()
    }
}

impl Protocols {
    /// No protocols.
    pub fn new() -> Self {
        Protocols::default()
    }

    /// Adds a protocol.
    pub fn with(self, p: impl Protocol) -> Self {
        self.with_declared(Arc::new(p))
    }

    /// Adds a protocol already type-erased (a registry's).
    pub fn with_declared(mut self, p: Arc<dyn StepProtocol>) -> Self {
        self.0.push(p);
        self
    }

    /// Every protocol, in the order added.
    pub fn all(&self) -> &[Arc<dyn StepProtocol>] {
        &self.0
    }

    /// The protocol of a URL, by its scheme (case-insensitive).
    pub fn for_url(&self, url: &str) -> Option<&Arc<dyn StepProtocol>> {
        let scheme = url.split_once("://")?.0;
        self.0
            .iter()
            .find(|p| p.schemes().iter().any(|s| s.eq_ignore_ascii_case(scheme)))
    }

    /// The protocol whose steps are written under `key`.
    pub fn for_key(&self, key: &str) -> Option<&Arc<dyn StepProtocol>> {
        self.0.iter().find(|p| p.key() == key)
    }

    /// Every scheme, as `http://, https://`, for messages.
    pub fn schemes(&self) -> String {
        self.0
            .iter()
            .flat_map(|p| p.schemes().iter().map(|s| format!("{s}://")))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_refuse_unknown_keys_at_their_place() {
        let at = Place { line: 3, column: 5 };
        let node = Node {
            value: NodeValue::Map(vec![
                ("path".into(), Node::string("/")),
                (
                    "methd".into(),
                    Node {
                        value: NodeValue::String("GET".into()),
                        at,
                    },
                ),
            ]),
            at: Place::default(),
        };
        let e = node.fields("request", &["path", "method"]).unwrap_err();
        assert_eq!(e.at, at);
        assert!(e.message.contains("unknown field `methd`"), "{}", e.message);
        let ok = node.fields("request", &["path", "methd"]).unwrap();
        assert_eq!(ok.get("path").unwrap().text("path").unwrap(), "/");
        assert!(ok.require("body", "request").is_err());
    }

    #[test]
    fn a_json_template_renders_its_leaves_in_place() {
        struct Plain;
        impl TemplateCompiler for Plain {
            fn text(&mut self, source: &str, _at: Place) -> Result<Text, StepError> {
                Ok(Text::Template(source.into()))
            }
        }
        struct Vars;
        impl Render for Vars {
            fn render(&self, text: &Text) -> Result<String, String> {
                match text {
                    Text::Template(t) if t == "{{ n }}" => Ok("3".into()),
                    Text::Template(_) => Ok("abc".into()),
                    Text::Static(s) => Ok(s.clone()),
                }
            }
        }
        let doc = serde_json::json!({"a": [1, {"b": "{{ n }}"}], "c": "{{ s }}", "d": "x"});
        let node = Node::from_json(&doc, Place { line: 1, column: 1 });
        let t = JsonTemplate::compile(&mut Plain, &node).unwrap();
        assert_eq!(t.templates(), 2);
        assert_eq!(t.document(), &doc);
        // A number goes in as a number, other text as a string; the rest is untouched.
        assert_eq!(
            t.render(&Vars).unwrap(),
            serde_json::json!({"a": [1, {"b": 3}], "c": "abc", "d": "x"})
        );
    }

    #[test]
    fn each_protocol_finds_its_own_options_by_type() {
        #[derive(Debug, PartialEq)]
        struct Mine(u8);
        #[derive(Debug, PartialEq)]
        struct Theirs(&'static str);
        let o = ClientOptions::default()
            .with(Mine(1))
            .with(Theirs("x"))
            .with(Mine(2));
        assert_eq!(
            o.of::<Mine>(),
            Some(&Mine(2)),
            "a second value replaces the first"
        );
        assert_eq!(o.of::<Theirs>(), Some(&Theirs("x")));
        assert_eq!(ClientOptions::default().of::<Mine>(), None);
    }

    #[test]
    fn json_round_trip() {
        let v = serde_json::json!({"a": [1, "x", null, true], "b": {"c": 2.5}});
        assert_eq!(Node::from_json(&v, Place::default()).to_json(), v);
    }
}
