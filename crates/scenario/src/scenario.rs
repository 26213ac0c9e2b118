//! The compiled scenario and its driver.

use std::any::Any;
use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json_path::JsonPath;
use throng_core::step::{ClientOptions, Render, Reply, StepCall, StepClient, StepProtocol, Text};
use throng_core::{Driver, ErrorClass, GroupInfo, Outcome, PartsInfo, StepInfo};
use tokio::time::Instant;

use crate::compile::ScenarioError;
use crate::control::{Position, Reader};
use crate::data::{draw_all, Feed};
use crate::file::Load;
use crate::template::{context, Templates};

/// A user's variables.
pub type Vars = BTreeMap<String, serde_json::Value>;

/// A custom step: an async function of the user's variables, timed by the engine like any
/// other step. It returns the variables (changed as it likes) and the step's outcome.
pub type CustomFn =
    Arc<dyn Fn(Vars) -> Pin<Box<dyn Future<Output = (Vars, Outcome)>>> + Send + Sync>;

/// Where a variable is taken from.
#[derive(Debug, Clone)]
pub enum Extract {
    /// The first match of a JSONPath.
    Json(JsonPath),
    /// A header or metadata value (name in lower case).
    Header(String),
    /// A regex's first group (or whole match) on the body.
    Regex(regex::Regex),
}

/// A condition on a response.
#[derive(Debug, Clone)]
pub enum Check {
    /// The status equals this.
    Status(throng_core::Status),
    /// The JSONPath's first match equals the value (a string with `{{` is a template, rendered
    /// and read as JSON when it parses, so `"{{ before - amount }}"` compares as a number).
    JsonEquals(String, JsonPath, Expected),
    /// The JSONPath matches (true) or does not (false).
    JsonExists(String, JsonPath, bool),
    /// The body contains the text.
    BodyContains(String),
    /// The step took less than this.
    LatencyUnder(Duration),
}

/// What a JSONPath check expects.
#[derive(Debug, Clone)]
pub enum Expected {
    /// A fixed value.
    Value(serde_json::Value),
    /// A template, rendered per request.
    Template(Text),
}

/// A step of some protocol: its compiled request, and what the scenario reads of the reply.
#[derive(Debug, Clone)]
pub struct ProtocolStep {
    /// Index into the scenario's targets.
    pub target: usize,
    /// The request, compiled by the target's protocol.
    pub call: Arc<dyn StepCall>,
    /// Variables to take from the reply.
    pub extract: Vec<(String, Extract)>,
    /// Conditions on the reply.
    pub checks: Vec<Check>,
}

impl ProtocolStep {
    /// Whether the reply must be kept (for extraction or checks).
    pub fn wants_reply(&self) -> bool {
        !self.extract.is_empty() || !self.checks.is_empty()
    }
}

/// What a step does.
#[derive(Clone)]
pub enum StepKind {
    /// A request of the target's protocol.
    Request(ProtocolStep),
    /// A custom async function.
    Custom(CustomFn),
}

impl std::fmt::Debug for StepKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StepKind::Request(r) => r.fmt(f),
            StepKind::Custom(_) => f.write_str("Custom"),
        }
    }
}

/// A named target and the protocol its URL's scheme names.
#[derive(Clone)]
pub struct Target {
    /// Its name in the file.
    pub name: String,
    /// Its base URL.
    pub url: String,
    /// The protocol of its scheme.
    pub protocol: Arc<dyn StepProtocol>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {} ({})", self.name, self.url, self.protocol.name())
    }
}

/// One step.
#[derive(Debug, Clone)]
pub struct Step {
    /// The row label.
    pub label: String,
    /// What it does.
    pub kind: StepKind,
    /// A pause after it, uniform between the two.
    pub think: Option<(Duration, Duration)>,
    /// Whether a failure lets the iteration go on.
    pub proceed: bool,
}

/// A runnable scenario.
#[derive(Debug)]
pub struct Scenario {
    /// The file it came from (or a name).
    pub name: String,
    /// Named targets.
    pub targets: Vec<Target>,
    /// Initial variables.
    pub variables: Vars,
    /// Data feeds.
    pub feeds: Vec<Feed>,
    /// The steps of one iteration.
    pub steps: Vec<Step>,
    /// Groups of steps (each flow's among them).
    pub groups: Vec<GroupInfo>,
    /// Flows, each a span of steps and its weight: an iteration runs one, picked by weight.
    /// None: an iteration runs every step.
    pub flows: Vec<(GroupInfo, u32)>,
    /// Conditions and loops of steps and groups (`when`, `repeat`, `until`).
    pub blocks: Vec<crate::control::Block>,
    /// Seeds each user's picks of flows (with its user number), so a run can be repeated.
    pub seed: Option<u64>,
    /// The load section, as written.
    pub load: Load,
    /// The levels of the load section's `sweep:`, run as a grid (as `--sweep`).
    pub sweep: Option<crate::Sweep>,
    /// Thresholds with the place each was written.
    pub thresholds: Vec<(String, String)>,
    /// Goodput's objectives (`goodput:`; none when not given).
    pub goodput: throng_core::stream::Goodput,
    /// Containers to watch.
    pub containers: Vec<String>,
    /// The compiled templates.
    pub templates: Arc<Templates>,
}

impl Scenario {
    /// Points target `name` at `url`, which must be of the same protocol; says what is wrong.
    pub fn retarget(&mut self, name: &str, url: &str) -> Result<(), String> {
        let names: Vec<&str> = self.targets.iter().map(|t| t.name.as_str()).collect();
        let names = format!("{names:?}");
        let t = self
            .targets
            .iter_mut()
            .find(|t| t.name == name)
            .ok_or_else(|| {
                format!("there is no target named {name:?} (the targets are {names})")
            })?;
        let scheme = url.split_once("://").map(|(s, _)| s).unwrap_or_default();
        if !t
            .protocol
            .schemes()
            .iter()
            .any(|s| s.eq_ignore_ascii_case(scheme))
        {
            return Err(format!(
                "target `{name}` is {} ({}), and its steps are written for it: {url:?} is not",
                t.protocol.name(),
                t.protocol
                    .schemes()
                    .iter()
                    .map(|s| format!("{s}://"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ));
        }
        t.protocol.check_target(url)?;
        t.url = url.trim_end_matches('/').to_string();
        Ok(())
    }
}

/// Runs a scenario: one client per target (of its protocol), one session per user with its
/// variables.
pub struct ScenarioDriver {
    scenario: Arc<Scenario>,
    clients: Vec<Arc<dyn StepClient>>,
    /// The scenario's flows, and the sum of their weights.
    flows: Vec<(GroupInfo, u32)>,
    total_weight: u64,
    /// Every step, the one flow of a file without `flows`.
    all: GroupInfo,
    /// Per group row, what begins a new pass of it ([`Driver::starts_over`]).
    passes: Vec<PassOf>,
}

/// What begins a new pass of a group's row.
#[derive(Debug, Clone, Copy)]
enum PassOf {
    /// A flow: the flow started over (a redo outside any group).
    Flow,
    /// A group with its block: the block entered, looped or redone.
    Block(usize),
    /// A group without a block (a hand-built scenario): a return to its first step.
    First,
}

/// Each group row's [`PassOf`]: a flow by its entry in `flows`, a group by its block, matched
/// in order, since the compiler writes both lists in the same order (an inner group before the
/// enclosing one, a flow before its groups) and two may span the same steps.
fn passes_of(s: &Scenario) -> Vec<PassOf> {
    let mut flows_taken = vec![false; s.flows.len()];
    let mut blocks_taken = vec![false; s.blocks.len()];
    s.groups
        .iter()
        .map(|g| {
            let flow = (s.flows.iter().enumerate()).find(|(i, (f, _))| !flows_taken[*i] && f == g);
            if let Some((i, _)) = flow {
                flows_taken[i] = true;
                return PassOf::Flow;
            }
            let block = s.blocks.iter().enumerate().find(|(i, b)| {
                !blocks_taken[*i] && b.group && b.first == g.first && b.last == g.last
            });
            match block {
                Some((i, _)) => {
                    blocks_taken[i] = true;
                    PassOf::Block(i)
                }
                None => PassOf::First,
            }
        })
        .collect()
}

/// A user's state in a scenario.
pub struct ScenarioSession {
    sessions: Vec<Box<dyn Any>>,
    vars: Vars,
    user: u64,
    iteration: u64,
    /// Picks the flows of this user's iterations.
    rng: SmallRng,
    /// Where its iteration is (its flow, its loops).
    pos: Position,
}

/// Renders a step's templates with a user's variables, building their context once, when a
/// template first needs it.
struct Renderer<'a> {
    templates: &'a Templates,
    vars: &'a Vars,
    user: u64,
    iteration: u64,
    context: OnceCell<minijinja::Value>,
}

impl Render for Renderer<'_> {
    fn render(&self, text: &Text) -> Result<String, String> {
        match text {
            Text::Static(s) => Ok(s.clone()),
            Text::Template(_) => {
                let c = self
                    .context
                    .get_or_init(|| context(self.vars, self.user, self.iteration));
                self.templates.render(text, c)
            }
        }
    }
}

impl ScenarioDriver {
    /// Makes a client for every target with the shared `options` (timeouts, TLS, HTTP/2,
    /// headers), after checking that the scenario holds together (a hand-built one may not).
    pub fn new(scenario: Scenario, options: &ClientOptions) -> Result<Self, ScenarioError> {
        let built = |message: String| ScenarioError::Built {
            name: scenario.name.clone(),
            message,
        };
        let n = scenario.steps.len();
        for s in &scenario.steps {
            if let StepKind::Request(r) = &s.kind {
                if r.target >= scenario.targets.len() {
                    return Err(built(format!(
                        "step `{}` names target {} of {}",
                        s.label,
                        r.target,
                        scenario.targets.len()
                    )));
                }
            }
        }
        for g in &scenario.groups {
            if g.first > g.last || g.last >= n {
                return Err(built(format!(
                    "group `{}` spans steps {}..={} of {n}",
                    g.label, g.first, g.last
                )));
            }
        }
        for (f, weight) in &scenario.flows {
            if f.first > f.last || f.last >= n || *weight == 0 {
                return Err(built(format!(
                    "flow `{}` spans steps {}..={} of {n} with weight {weight}",
                    f.label, f.first, f.last
                )));
            }
        }
        let mut clients = Vec::new();
        for t in &scenario.targets {
            let client = t
                .protocol
                .client(&t.url, options)
                .map_err(|e| built(format!("target `{}`: {e}", t.name)))?;
            clients.push(client);
        }
        for s in &scenario.steps {
            if let StepKind::Request(r) = &s.kind {
                clients[r.target].check(r.call.as_ref()).map_err(|e| {
                    let message = format!("step `{}`: {}", s.label, e.message);
                    crate::compile::place_error(&scenario.name, e.at, message)
                })?;
            }
        }
        Ok(ScenarioDriver {
            passes: passes_of(&scenario),
            flows: scenario.flows.clone(),
            total_weight: scenario.flows.iter().map(|(_, w)| u64::from(*w)).sum(),
            all: GroupInfo {
                label: String::new(),
                first: 0,
                last: n.saturating_sub(1),
            },
            scenario: Arc::new(scenario),
            clients,
        })
    }

    /// Checks every step against its target itself before any load (see
    /// [`throng_core::step::Client::prepare`]: SQL statements prepared once, so a syntax error
    /// is an error at its place rather than a failure of every call). throng-run's `Run` calls
    /// it before any load (as [`Driver::prepare`]); call it yourself only when you drive the
    /// engine directly. A target that cannot be reached is left to fail, and be counted, when
    /// it runs.
    pub async fn prepare(&self) -> Result<(), ScenarioError> {
        for (i, client) in self.clients.iter().enumerate() {
            let steps: Vec<&dyn StepCall> = self
                .scenario
                .steps
                .iter()
                .filter_map(|s| match &s.kind {
                    StepKind::Request(r) if r.target == i => Some(&*r.call),
                    _ => None,
                })
                .collect();
            if steps.is_empty() {
                continue;
            }
            client.prepare(&steps).await.map_err(|e| {
                let target = &self.scenario.targets[i].name;
                let message = format!("target `{target}`: {}", e.message);
                crate::compile::place_error(&self.scenario.name, e.at, message)
            })?;
        }
        Ok(())
    }

    /// The scenario.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Connections one user holds at most, over all targets (for the open-file check).
    pub fn connections_per_user(&self) -> f64 {
        self.clients.iter().map(|c| c.connections_per_user()).sum()
    }

    async fn request(&self, s: &mut ScenarioSession, r: &ProtocolStep) -> Outcome {
        let templates = &self.scenario.templates;
        let ScenarioSession {
            sessions,
            vars,
            user,
            iteration,
            ..
        } = s;
        let render = Renderer {
            templates,
            vars: &*vars,
            user: *user,
            iteration: *iteration,
            context: OnceCell::new(),
        };
        let started = Instant::now();
        let (mut outcome, reply) = self.clients[r.target]
            .call(&mut *sessions[r.target], &*r.call, &render, r.wants_reply())
            .await;
        let took = started.elapsed();
        // No answer (or none wanted): nothing to check or extract.
        let Some(reply) = reply else {
            return outcome;
        };
        let status_checked = r.checks.iter().any(|c| matches!(c, Check::Status(_)));
        if status_checked && outcome.error == Some(ErrorClass::Status) {
            // The check says which statuses are right.
            outcome.error = None;
            outcome.message = None;
        }
        if outcome.error.is_some() {
            return outcome;
        }
        let json: OnceCell<Option<serde_json::Value>> = OnceCell::new();
        let parsed = || {
            json.get_or_init(|| {
                reply
                    .json
                    .clone()
                    .or_else(|| serde_json::from_slice(&reply.body).ok())
            })
            .as_ref()
        };
        for c in &r.checks {
            let want = match c {
                Check::JsonEquals(_, _, Expected::Template(t)) => match render.render(t) {
                    Ok(v) => Some(serde_json::from_str(&v).unwrap_or(serde_json::Value::String(v))),
                    Err(e) => return Outcome::failed(ErrorClass::Check, format!("template: {e}")),
                },
                Check::JsonEquals(_, _, Expected::Value(v)) => Some(v.clone()),
                _ => None,
            };
            if let Err(m) = run_check(c, want.as_ref(), &reply, took, &parsed) {
                return Outcome {
                    error: Some(ErrorClass::Check),
                    message: Some(m),
                    ..outcome
                };
            }
        }
        for (name, how) in &r.extract {
            let value = match how {
                Extract::Json(p) => parsed().and_then(|doc| p.query(doc).first().cloned()),
                Extract::Header(h) => reply.meta(h).map(|v| v.into()),
                Extract::Regex(re) => std::str::from_utf8(&reply.body).ok().and_then(|b| {
                    re.captures(b)
                        .and_then(|c| c.get(1).or_else(|| c.get(0)))
                        .map(|m| m.as_str().into())
                }),
            };
            match value {
                Some(v) => {
                    vars.insert(name.clone(), v);
                }
                None => {
                    let m = format!("extract `{name}`: nothing matched");
                    return Outcome {
                        error: Some(ErrorClass::Check),
                        message: Some(m),
                        ..outcome
                    };
                }
            }
        }
        outcome
    }
}

fn run_check<'a>(
    c: &Check,
    want: Option<&serde_json::Value>,
    reply: &Reply,
    took: Duration,
    parsed: &impl Fn() -> Option<&'a serde_json::Value>,
) -> Result<(), String> {
    match c {
        Check::Status(s) if reply.status == *s => Ok(()),
        Check::Status(s) => Err(format!("status: expected {s}, got {}", reply.status)),
        Check::JsonEquals(p, path, _) => {
            let want = want.unwrap_or(&serde_json::Value::Null);
            let doc = parsed().ok_or_else(|| format!("{p}: the body is not JSON"))?;
            match path.query(doc).first() {
                Some(got) if json_eq(got, want) => Ok(()),
                Some(got) => Err(format!("{p}: expected {want}, got {got}")),
                None => Err(format!("{p}: expected {want}, matched nothing")),
            }
        }
        Check::JsonExists(p, path, want) => {
            let found = parsed().is_some_and(|doc| !path.query(doc).is_empty());
            if found == *want {
                Ok(())
            } else if *want {
                Err(format!("{p}: matched nothing"))
            } else {
                Err(format!("{p}: matched, expected nothing"))
            }
        }
        Check::BodyContains(t) => {
            if t.is_empty() || reply.body.windows(t.len()).any(|w| w == t.as_bytes()) {
                Ok(())
            } else {
                Err(format!("body does not contain {t:?}"))
            }
        }
        Check::LatencyUnder(d) if took < *d => Ok(()),
        Check::LatencyUnder(d) => Err(format!("latency {took:?} is not under {d:?}")),
    }
}

/// Equal as JSON, with numbers compared by value (1 equals 1.0).
fn json_eq(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

impl Driver for ScenarioDriver {
    /// Each target's worker state (HTTP/2's shared connections, gRPC's channels).
    type Worker = Vec<Box<dyn Any>>;
    type Session = ScenarioSession;

    fn steps(&self) -> Vec<StepInfo> {
        self.scenario
            .steps
            .iter()
            .map(|s| StepInfo {
                label: s.label.clone(),
            })
            .collect()
    }

    fn groups(&self) -> Vec<GroupInfo> {
        self.scenario.groups.clone()
    }

    /// Every step checked against its target before any load ([`ScenarioDriver::prepare`]).
    async fn prepare(&self) -> Result<(), throng_core::SetupError> {
        ScenarioDriver::prepare(self)
            .await
            .map_err(|e| throng_core::SetupError(e.to_string()))
    }

    fn step_urls(&self) -> Vec<String> {
        let s = &self.scenario;
        s.steps
            .iter()
            .map(|step| match &step.kind {
                StepKind::Request(r) => s
                    .targets
                    .get(r.target)
                    .map_or(String::new(), |t| t.url.clone()),
                StepKind::Custom(_) => String::new(),
            })
            .collect()
    }

    fn parts(&self) -> Vec<PartsInfo> {
        let steps = self.scenario.steps.iter().enumerate();
        steps
            .filter_map(|(i, s)| match &s.kind {
                StepKind::Request(r) => {
                    let label = self.clients[r.target].parts(r.call.as_ref(), &s.label)?;
                    Some(PartsInfo { label, step: i })
                }
                _ => None,
            })
            .collect()
    }

    fn worker(&self) -> Vec<Box<dyn Any>> {
        self.clients.iter().map(|c| c.worker_of(0, 1)).collect()
    }

    fn worker_of(&self, index: usize, workers: usize) -> Vec<Box<dyn Any>> {
        let clients = self.clients.iter();
        clients.map(|c| c.worker_of(index, workers)).collect()
    }

    fn session(&self, workers: &Vec<Box<dyn Any>>, user: u64) -> ScenarioSession {
        ScenarioSession {
            sessions: self
                .clients
                .iter()
                .zip(workers)
                .map(|(c, w)| c.session(&**w, user))
                .collect(),
            vars: self.scenario.variables.clone(),
            user,
            iteration: 0,
            rng: match self.scenario.seed {
                // Each user a sequence of its own, the same in every run with this seed.
                Some(seed) => SmallRng::seed_from_u64(
                    seed ^ user.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                ),
                None => SmallRng::from_rng(&mut rand::rng()),
            },
            pos: Position::default(),
        }
    }

    /// Picks the iteration's flow by weight (its first step), then each step of the flow in
    /// order.
    fn next_step(&self, s: &mut ScenarioSession, after: Option<usize>) -> Option<usize> {
        let blocks = &self.scenario.blocks;
        let first = match after {
            Some(_) => 0,
            None if self.flows.is_empty() => s.pos.start(blocks.len(), &self.all),
            None => {
                let mut pick = s.rng.random_range(0..self.total_weight);
                let (flow, _) =
                    self.flows
                        .iter()
                        .find(|(_, w)| match pick.checked_sub(u64::from(*w)) {
                            Some(rest) => {
                                pick = rest;
                                false
                            }
                            None => true,
                        })?;
                s.pos.start(blocks.len(), flow)
            }
        };
        let reader = Reader {
            templates: &self.scenario.templates,
            vars: &s.vars,
            user: s.user,
            iteration: s.iteration,
        };
        s.pos.next(blocks, after, first, &reader)
    }

    /// A new pass of a group begins where the walk entered it, looped it or redid it, not
    /// where it merely came back to its first step (a repeated first step or inner group).
    fn starts_over(
        &self,
        s: &ScenarioSession,
        group: usize,
        info: &GroupInfo,
        next: usize,
    ) -> bool {
        match self.passes.get(group) {
            Some(PassOf::Flow) => s.pos.flow_began(),
            Some(PassOf::Block(b)) => s.pos.began(*b),
            Some(PassOf::First) | None => next == info.first,
        }
    }

    /// Connects the step's target only: a target's connection is opened by the first step that
    /// needs it, so a target that refuses shows on its own steps' rows (a client's session that
    /// is connected already returns at once). The step's `on_failure` holds for its connection
    /// as for its request: with `continue`, a refused target's step fails and the next runs.
    async fn connect(&self, s: &mut ScenarioSession, step: usize) -> Result<(), Outcome> {
        let Some(st) = self.scenario.steps.get(step) else {
            return Ok(());
        };
        match &st.kind {
            StepKind::Request(r) => self.clients[r.target]
                .connect(&mut *s.sessions[r.target])
                .await
                .map_err(|mut failed| {
                    failed.proceed = st.proceed;
                    failed
                }),
            _ => Ok(()),
        }
    }

    fn begin_iteration(&self, s: &mut ScenarioSession) -> bool {
        s.iteration += 1;
        draw_all(&self.scenario.feeds, s.user, &mut s.vars)
    }

    async fn execute(&self, s: &mut ScenarioSession, step: usize) -> Outcome {
        let Some(st) = self.scenario.steps.get(step) else {
            return Outcome::failed(ErrorClass::Other, "no such step");
        };
        // A condition that could not be decided fails the step it would have let run.
        let undecided = s.pos.failure.take();
        let mut outcome = match &st.kind {
            _ if undecided.is_some() => {
                let message = undecided.unwrap_or_default();
                Outcome::failed(ErrorClass::Check, message)
            }
            StepKind::Request(r) => self.request(s, r).await,
            StepKind::Custom(f) => {
                let vars = std::mem::take(&mut s.vars);
                let (vars, o) = f(vars).await;
                s.vars = vars;
                o
            }
        };
        outcome.proceed = st.proceed || outcome.again;
        s.pos.redo = outcome.again;
        if let Some((lo, hi)) = st.think {
            outcome.pause = Some(if hi > lo {
                rand::rng().random_range(lo..=hi)
            } else {
                lo
            });
        }
        outcome
    }

    async fn end_iteration(&self, s: &mut ScenarioSession, failed: Option<ErrorClass>) {
        for (client, session) in self.clients.iter().zip(s.sessions.iter_mut()) {
            client.end_iteration(&mut **session, failed).await;
        }
    }

    async fn close(&self, s: &mut ScenarioSession) {
        for (client, session) in self.clients.iter().zip(s.sessions.iter_mut()) {
            client.close(&mut **session).await;
        }
    }
}
