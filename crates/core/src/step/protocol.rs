//! The contract a protocol crate implements, typed: [`Protocol`] (its targets, its steps, a
//! client per target) and [`Client`] (workers, sessions, calls), and the [`Reply`] a call
//! answers with for checks and extraction.

use std::fmt;
use std::future::Future;

use super::{ClientOptions, Node, Render, StepError, TemplateCompiler};
use crate::{Outcome, Status};

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

/// A protocol: which targets and steps are its, how a step compiles, and a client per target.
/// A protocol crate implements this and [`Client`], once; scenarios (and anything else that
/// mixes protocols) see it through its type-erased form, [`StepProtocol`](super::StepProtocol), which core derives
/// for every protocol.
pub trait Protocol: Send + Sync + 'static {
    /// A target's client.
    type Client: Client;

    /// Its name in messages: `http`, `grpc`, `sql`.
    fn name(&self) -> &'static str;

    /// The URL schemes of its targets (`http`, `https`).
    fn schemes(&self) -> &'static [&'static str];

    /// Those of [`Protocol::schemes`] whose connections are TLS (`https`): a target of one
    /// trusts the certificates a CA file names (a scenario's `--cacert` applies to it). None
    /// by default. A constant, so a protocol declares it in one line beside its schemes:
    /// `const TLS_SCHEMES: &'static [&'static str] = &["https"];`.
    const TLS_SCHEMES: &'static [&'static str] = &[];

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

    /// When a user's session ends (see [`crate::Driver::close`]): says goodbye on its
    /// connections (a WebSocket's close frame). The engine bounds it in time and counts it as
    /// no request. Nothing by default (the session is dropped).
    fn close(&self, _session: &mut Self::Session) -> impl Future<Output = ()> {
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
    /// connects fail, and are counted, when they run. A scenario's driver and
    /// [`crate::steps::Steps`] call it as their [`crate::Driver::prepare`]. Nothing by default.
    fn prepare(&self, _steps: &[&Self::Step]) -> impl Future<Output = Result<(), StepError>> {
        std::future::ready(Ok(()))
    }

    /// Once after the load: how its connections went and its own counts (SQL's transactions
    /// rolled back, retried, its reconnects), for the result. Nothing by default.
    fn report(&self) -> crate::DriverReport {
        crate::DriverReport::default()
    }
}
