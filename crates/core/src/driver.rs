use std::future::Future;

use crate::ErrorClass;

/// One step of an iteration as the report names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepInfo {
    /// The row label in the results.
    pub label: String,
}

/// A named span of steps measured as one transaction (a flow): its row counts the iterations
/// that ran through it, timed from the start of its first step to the end of its last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInfo {
    /// The row label in the results.
    pub label: String,
    /// Index of its first step.
    pub first: usize,
    /// Index of its last step (inclusive).
    pub last: usize,
}

/// A row that times the parts of one step's reply (a server stream's messages): each part a
/// sample, timed from the part before it (the first from the request's start), so its
/// throughput is parts per second. Its samples are not requests: TOTAL leaves them out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartsInfo {
    /// The row label in the results.
    pub label: String,
    /// Index of the step whose replies it times.
    pub step: usize,
}

/// What a driver tells of the run beside its rows, read once after the load
/// ([`Driver::report`]): how its connections reached the target, and counts of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriverReport {
    /// How the connections reach the target (SQL: `postgres-protocol, TLSv1.3,
    /// SCRAM-SHA-256-PLUS`).
    pub connection: Option<String>,
    /// Counts by name (SQL: `transactions_rolled_back`), each of something the rows do not
    /// show.
    pub counts: Vec<(&'static str, u64)>,
    /// What the run met that the user should hear of at its end, in words (SQL:
    /// `transactions rolled back after a failed statement: 5`); a run with messages on says
    /// them after its summary.
    pub notes: Vec<String>,
}

/// What one request did. Drivers fill it in; the engine times it and records it.
///
/// Only a failure carries a message: a success allocates nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The protocol's status (an HTTP code, a gRPC code, a SQLSTATE), if an answer came.
    pub status: crate::Status,
    /// Operations the request performed, when it is more than one (the statements of a SQL
    /// transaction: queries per second beside transactions per second); 0 counts as 1.
    pub operations: u32,
    /// The failure's class, if the request failed.
    pub error: Option<ErrorClass>,
    /// A human-readable message for a failure, kept as a sample.
    pub message: Option<String>,
    /// Bytes written to the wire for this request, headers and framing included.
    pub bytes_sent: u64,
    /// Bytes read from the wire for this request, headers and framing included.
    pub bytes_received: u64,
    /// Go on with the rest of the iteration even though this step failed (by default a failure
    /// skips the rest of the iteration).
    pub proceed: bool,
    /// The step's failure undid the unit of work it was in, to be run again from its first
    /// step (a SQL transaction rolled back by a deadlock under `retry_on`): the iteration goes
    /// on there (a scenario goes back to the first step of the step's group, or of its flow).
    pub again: bool,
    /// Think time: pause this long after the step, outside its timing.
    pub pause: Option<std::time::Duration>,
    /// The parts of the reply, each timed from the one before (the first from the request's
    /// start), recorded in the step's [`PartsInfo`] row if it has one. Empty (no allocation)
    /// for a driver that declares none.
    pub parts: Vec<std::time::Duration>,
    /// Where the request's time went (connecting, TLS, sending, waiting, receiving), for a
    /// protocol that times them: the engine adds them to the step's row. Empty by default.
    pub phases: crate::Phases,
    /// What a reply streamed in tokens said beyond its parts (its first and last token, how
    /// many), for a protocol that reads one (see [`crate::stream`]): the engine adds it to the
    /// step's row. Boxed (one allocation an answer, beside its parts): with it `Outcome` is 128
    /// bytes, clippy's bound for an error in a `Result`, so a `Result<_, Outcome>` boxes its
    /// error. `None` (no allocation) otherwise.
    pub stream: Option<Box<crate::stream::StreamRecord>>,
}

impl Outcome {
    /// A failed outcome of the given class with a sample message.
    pub fn failed(class: ErrorClass, message: impl Into<String>) -> Self {
        Outcome {
            error: Some(class),
            message: Some(message.into()),
            ..Outcome::default()
        }
    }
}

/// Why a run could not be set up: the driver's run-level preparation failed (a descriptor that
/// does not load, tables that cannot be made). The run does not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);

/// How a protocol sends a step. The engine owns *when*; a driver owns *how*.
///
/// A driver is shared by every worker thread. Each worker thread makes its own
/// [`Driver::Worker`] state (connections its users share, such as HTTP/2's); each virtual user
/// (or each in-flight slot of the open loop) owns one [`Driver::Session`], typically its
/// connection. Workers' state and sessions live on one thread, so neither they nor the futures
/// of [`Driver::execute`] need to be `Send`.
///
/// The engine calls, in order: [`Driver::setup`] once (after the runner's
/// [`Driver::prepare`]); per worker, [`Driver::worker_of`]; per user, [`Driver::session`]; per
/// iteration, [`Driver::begin_iteration`], [`Driver::execute`] for each step (in a user's first
/// iteration, and in one after a connection could not be made, [`Driver::connect`] before each
/// step: its time is not the request's), and [`Driver::end_iteration`]; after the run,
/// [`Driver::teardown`] once.
pub trait Driver: Send + Sync + 'static {
    /// State one worker thread shares among its sessions: pooled connections, a cache.
    type Worker: 'static;
    /// Per-user state: a connection, variables, a data-file cursor.
    type Session: 'static;

    /// The steps of one iteration, in order. Each becomes a labelled row of the report.
    fn steps(&self) -> Vec<StepInfo>;

    /// Groups of steps reported as transactions (none by default).
    fn groups(&self) -> Vec<GroupInfo> {
        Vec::new()
    }

    /// Rows timing the parts of steps' replies (none by default), each named for one step.
    fn parts(&self) -> Vec<PartsInfo> {
        Vec::new()
    }

    /// Where each step goes, for the samples file's URL column (a scenario's steps each have
    /// their target's); none by default, and the run's target stands for every step.
    fn step_urls(&self) -> Vec<String> {
        Vec::new()
    }

    /// Once before any load, on the caller's runtime: what the whole run needs (load a
    /// descriptor, prepare tables). An error stops the run before it starts. Nothing by default.
    fn setup(&self) -> impl Future<Output = Result<(), SetupError>> + Send {
        std::future::ready(Ok(()))
    }

    /// Once before any load and before [`Driver::setup`]: checks the steps against their
    /// targets themselves (a scenario's SQL statements each prepared once), so that a step that
    /// can never succeed (a syntax error) stops the run as bad input at its place, rather than
    /// failing every call. A target that cannot be reached is not an error here: its connects
    /// fail, and are counted, when the load runs. The runner calls it (throng-run's `Run`, when
    /// it executes or checks a run), not the bare engine; on a thread of its own with a
    /// single-threaded runtime and a `LocalSet`, as a worker's, so its future need not be
    /// `Send` (a protocol client's is not). Nothing by default.
    fn prepare(&self) -> impl Future<Output = Result<(), SetupError>> {
        std::future::ready(Ok(()))
    }

    /// Once after the last request, on the caller's runtime (drop the tables). Nothing by
    /// default.
    fn teardown(&self) -> impl Future<Output = ()> + Send {
        std::future::ready(())
    }

    /// The state of one worker thread, made on that thread before its first session.
    fn worker(&self) -> Self::Worker;

    /// The state of worker `index` of the run's `workers` threads, which the engine calls:
    /// [`Driver::worker`] unless a driver splits something fixed among the workers (gRPC's
    /// `--connections`) and takes this worker's share here.
    fn worker_of(&self, _index: usize, _workers: usize) -> Self::Worker {
        self.worker()
    }

    /// A fresh session for user number `user` (0-based, unique across the run) on a worker.
    fn session(&self, worker: &Self::Worker, user: u64) -> Self::Session;

    /// Called before each iteration of a session; `false` ends the user (its data ran out).
    fn begin_iteration(&self, _session: &mut Self::Session) -> bool {
        true
    }

    /// Opens what step `step` needs and the session has not got (its connection to the step's
    /// target): before each step of a user's first iteration and of one after a connection
    /// could not be made, and (step 0) for the open loop's warm slots, so a connection belongs
    /// to the first step that needs it, and so does its failure. Its time is not counted in the
    /// request's service time; a failure is that step's outcome (class `connect`, `tls`,
    /// `timeout`). A session already connected returns at once. Reconnecting later (a
    /// connection per request) is `execute`'s own business, and counts in its request. Nothing
    /// by default.
    fn connect(
        &self,
        _session: &mut Self::Session,
        _step: usize,
    ) -> impl Future<Output = Result<(), Outcome>> {
        std::future::ready(Ok(()))
    }

    /// The step to run after `after` (`None`: the iteration's first), or `None` to end the
    /// iteration. By default every step in order; a scenario picks a flow by weight here (at the
    /// first step), skips a step whose condition is false, or repeats one. The engine calls it
    /// after each step that lets the iteration go on, before the step's pause.
    fn next_step(&self, _session: &mut Self::Session, after: Option<usize>) -> Option<usize> {
        Some(after.map_or(0, |s| s + 1))
    }

    /// Whether `next`, the step [`Driver::next_step`] just gave, begins a new pass of group
    /// `group` (its index in [`Driver::groups`], `info` its span, which holds `next`): the
    /// engine then ends the pass under way. A pass also ends where the iteration leaves the
    /// group's span or ends. By default a return to the group's first step begins a new pass; a
    /// driver that may also come back to it within one pass (a repeated first step, or a
    /// repeated group first inside it) says which returns start the group over.
    fn starts_over(
        &self,
        _session: &Self::Session,
        _group: usize,
        info: &GroupInfo,
        next: usize,
    ) -> bool {
        next == info.first
    }

    /// Sends step `step` of an iteration and waits for its whole response.
    fn execute(&self, session: &mut Self::Session, step: usize) -> impl Future<Output = Outcome>;

    /// Once after the load: how the connections went and the driver's own counts, for the
    /// result. Nothing by default.
    fn report(&self) -> DriverReport {
        DriverReport::default()
    }

    /// Called after each iteration that ran, with the class of its first failure if one failed
    /// (roll back a transaction left open). Not called for an iteration cut off by the end of
    /// the run. Nothing by default.
    fn end_iteration(
        &self,
        _session: &mut Self::Session,
        _failed: Option<ErrorClass>,
    ) -> impl Future<Output = ()> {
        std::future::ready(())
    }

    /// When a user's session ends (its iterations done, the run stopping, an open-loop slot
    /// retired): closes its connections politely (a WebSocket's close frame). The engine waits
    /// for it at most 100 ms and counts it as no request; a user waiting out a think time, a
    /// pause or a backoff when the run stops is woken to close; a session cut off at the end
    /// of the grace period is dropped without it. Nothing by default.
    fn close(&self, _session: &mut Self::Session) -> impl Future<Output = ()> {
        std::future::ready(())
    }
}
