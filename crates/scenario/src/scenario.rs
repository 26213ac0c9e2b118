//! The compiled scenario and its driver.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use rand::Rng;
use serde_json_path::JsonPath;
use throng_core::{Driver, ErrorClass, GroupInfo, Outcome, StepInfo};
use throng_http::{HttpConfig, HttpConfigError, HttpDriver, Response, Session};
use tokio::time::Instant;

use crate::data::{draw_all, Feed};
use crate::file::Load;
use crate::template::{context, Templates, Text};

/// A user's variables.
pub type Vars = BTreeMap<String, serde_json::Value>;

/// A custom step: an async function of the user's variables, timed by the engine like any
/// other step. It returns the variables (changed as it likes) and the step's outcome.
pub type CustomFn =
    Arc<dyn Fn(Vars) -> Pin<Box<dyn Future<Output = (Vars, Outcome)>>> + Send + Sync>;

/// A key in a JSON body template.
#[derive(Debug, Clone)]
pub enum JsonKey {
    /// An object member.
    Key(String),
    /// An array element.
    Index(usize),
}

/// A request body.
#[derive(Debug, Clone)]
pub enum Body {
    /// None.
    None,
    /// Text.
    Text(Text),
    /// JSON: the document, and the string leaves that are templates.
    Json(Vec<(Vec<JsonKey>, Text)>, String),
}

/// Where a variable is taken from.
#[derive(Debug, Clone)]
pub enum Extract {
    /// The first match of a JSONPath.
    Json(JsonPath),
    /// A header.
    Header(HeaderName),
    /// A regex's first group (or whole match) on the body.
    Regex(regex::Regex),
}

/// A condition on a response.
#[derive(Debug, Clone)]
pub enum Check {
    /// The status equals this.
    Status(u16),
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

/// An HTTP step.
#[derive(Debug, Clone)]
pub struct HttpStep {
    /// Index into the scenario's targets.
    pub target: usize,
    /// The method.
    pub method: Method,
    /// The path and query.
    pub path: Text,
    /// Headers.
    pub headers: Vec<(HeaderName, Text)>,
    /// The body.
    pub body: Body,
    /// Variables to take from the response.
    pub extract: Vec<(String, Extract)>,
    /// Conditions on the response.
    pub checks: Vec<Check>,
    /// Whether the body must be read into memory (for extraction or checks).
    pub keep_body: bool,
}

/// What a step does.
#[derive(Clone)]
pub enum StepKind {
    /// An HTTP request.
    Http(HttpStep),
    /// A custom async function.
    Custom(CustomFn),
}

impl std::fmt::Debug for StepKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StepKind::Http(h) => h.fmt(f),
            StepKind::Custom(_) => f.write_str("Custom"),
        }
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
    /// Named base URLs.
    pub targets: Vec<(String, String)>,
    /// Initial variables.
    pub variables: Vars,
    /// Data feeds.
    pub feeds: Vec<Feed>,
    /// The steps of one iteration.
    pub steps: Vec<Step>,
    /// Groups of steps.
    pub groups: Vec<GroupInfo>,
    /// The load section, as written.
    pub load: Load,
    /// Thresholds with the place each was written.
    pub thresholds: Vec<(String, String)>,
    /// Containers to watch.
    pub containers: Vec<String>,
    /// The compiled templates.
    pub templates: Arc<Templates>,
}

/// Runs a scenario: one HTTP driver per target, one session per user with its variables.
pub struct ScenarioDriver {
    scenario: Arc<Scenario>,
    http: Vec<HttpDriver>,
    prefixes: Vec<String>,
}

/// A user's state in a scenario.
pub struct ScenarioSession {
    http: Vec<Session>,
    vars: Vars,
    user: u64,
    iteration: u64,
}

impl ScenarioDriver {
    /// Prepares the drivers of every target; `configure` sets shared options (timeouts, TLS,
    /// HTTP/2) on each target's configuration.
    pub fn new(
        scenario: Scenario,
        configure: impl Fn(&mut HttpConfig),
    ) -> Result<Self, HttpConfigError> {
        let mut http = Vec::new();
        let mut prefixes = Vec::new();
        for (_, url) in &scenario.targets {
            let mut cfg = HttpConfig::new(url)?;
            configure(&mut cfg);
            prefixes.push(cfg.url.path().trim_end_matches('/').to_string());
            http.push(HttpDriver::new(cfg)?);
        }
        Ok(ScenarioDriver {
            scenario: Arc::new(scenario),
            http,
            prefixes,
        })
    }

    /// The scenario.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    async fn http_step(&self, s: &mut ScenarioSession, h: &HttpStep) -> Outcome {
        let t = &self.scenario.templates;
        let mut ctx = None;
        let mut render = |text: &Text| -> Result<String, String> {
            match text {
                Text::Static(v) => Ok(v.clone()),
                Text::Template(_) => {
                    let c = ctx.get_or_insert_with(|| context(&s.vars, s.user, s.iteration));
                    t.render(text, c)
                }
            }
        };
        let prepared = (|| -> Result<_, String> {
            let path = format!("{}{}", self.prefixes[h.target], render(&h.path)?);
            let mut headers = HeaderMap::new();
            for (name, v) in &h.headers {
                let value = render(v)?;
                let value = HeaderValue::from_str(&value)
                    .map_err(|_| format!("header {name}: bad value {value:?}"))?;
                headers.insert(name.clone(), value);
            }
            let body = match &h.body {
                Body::None => Bytes::new(),
                Body::Text(text) => Bytes::from(render(text)?),
                Body::Json(leaves, source) => {
                    let mut doc: serde_json::Value =
                        serde_json::from_str(source).unwrap_or_default();
                    for (path, text) in leaves {
                        let rendered = render(text)?;
                        let value = serde_json::from_str(&rendered)
                            .unwrap_or(serde_json::Value::String(rendered));
                        set(&mut doc, path, value);
                    }
                    Bytes::from(doc.to_string())
                }
            };
            Ok((path, headers, body))
        })();
        let (path, headers, body) = match prepared {
            Ok(p) => p,
            Err(e) => return Outcome::failed(ErrorClass::Check, format!("template: {e}")),
        };
        let driver = &self.http[h.target];
        let req = match driver.build_request(h.method.clone(), &path, &headers, body) {
            Ok(r) => r,
            Err(e) => return Outcome::failed(ErrorClass::Check, e),
        };
        let started = Instant::now();
        let (mut outcome, resp) = driver.send(&mut s.http[h.target], req, h.keep_body).await;
        let took = started.elapsed();
        if outcome.error.is_some_and(|c| c != ErrorClass::HttpStatus) {
            return outcome;
        }
        let Some(resp) = resp.or_else(|| {
            (!h.keep_body).then(|| Response {
                status: match outcome.status {
                    throng_core::Status::Http(code) => code,
                    _ => 0,
                },
                headers: HeaderMap::new(),
                body: Bytes::new(),
            })
        }) else {
            return outcome;
        };
        let mut json: Option<Option<serde_json::Value>> = None;
        let mut parsed = |body: &Bytes| -> Option<serde_json::Value> {
            json.get_or_insert_with(|| serde_json::from_slice(body).ok())
                .clone()
        };
        let status_checked = h.checks.iter().any(|c| matches!(c, Check::Status(_)));
        if status_checked {
            outcome.error = None;
            outcome.message = None;
        } else if outcome.error.is_some() {
            return outcome;
        }
        for c in &h.checks {
            let want = match c {
                Check::JsonEquals(_, _, Expected::Template(t)) => {
                    let ctx = context(&s.vars, s.user, s.iteration);
                    match t.render_with(&self.scenario.templates, &ctx) {
                        Ok(v) => {
                            Some(serde_json::from_str(&v).unwrap_or(serde_json::Value::String(v)))
                        }
                        Err(e) => {
                            return Outcome::failed(ErrorClass::Check, format!("template: {e}"))
                        }
                    }
                }
                Check::JsonEquals(_, _, Expected::Value(v)) => Some(v.clone()),
                _ => None,
            };
            if let Err(m) = run_check(c, want.as_ref(), &resp, took, &mut parsed) {
                return Outcome {
                    error: Some(ErrorClass::Check),
                    message: Some(m),
                    ..outcome
                };
            }
        }
        for (name, how) in &h.extract {
            let value = match how {
                Extract::Json(p) => {
                    parsed(&resp.body).and_then(|doc| p.query(&doc).first().cloned())
                }
                Extract::Header(hn) => resp
                    .headers
                    .get(hn)
                    .and_then(|v| v.to_str().ok())
                    .map(|v| v.into()),
                Extract::Regex(r) => std::str::from_utf8(&resp.body).ok().and_then(|b| {
                    r.captures(b)
                        .and_then(|c| c.get(1).or_else(|| c.get(0)))
                        .map(|m| m.as_str().into())
                }),
            };
            match value {
                Some(v) => {
                    s.vars.insert(name.clone(), v);
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

fn set(doc: &mut serde_json::Value, path: &[JsonKey], value: serde_json::Value) {
    let mut cur = doc;
    for k in path {
        cur = match (k, cur) {
            (JsonKey::Key(k), serde_json::Value::Object(m)) => match m.get_mut(k) {
                Some(v) => v,
                None => return,
            },
            (JsonKey::Index(i), serde_json::Value::Array(a)) => match a.get_mut(*i) {
                Some(v) => v,
                None => return,
            },
            _ => return,
        };
    }
    *cur = value;
}

fn run_check(
    c: &Check,
    want: Option<&serde_json::Value>,
    resp: &Response,
    took: Duration,
    parsed: &mut impl FnMut(&Bytes) -> Option<serde_json::Value>,
) -> Result<(), String> {
    match c {
        Check::Status(s) if resp.status == *s => Ok(()),
        Check::Status(s) => Err(format!("status: expected {s}, got {}", resp.status)),
        Check::JsonEquals(p, path, _) => {
            let want = want.unwrap_or(&serde_json::Value::Null);
            let doc = parsed(&resp.body).ok_or_else(|| format!("{p}: the body is not JSON"))?;
            match path.query(&doc).first() {
                Some(got) if json_eq(got, want) => Ok(()),
                Some(got) => Err(format!("{p}: expected {want}, got {got}")),
                None => Err(format!("{p}: expected {want}, matched nothing")),
            }
        }
        Check::JsonExists(p, path, want) => {
            let found = parsed(&resp.body).is_some_and(|doc| !path.query(&doc).is_empty());
            if found == *want {
                Ok(())
            } else if *want {
                Err(format!("{p}: matched nothing"))
            } else {
                Err(format!("{p}: matched, expected nothing"))
            }
        }
        Check::BodyContains(t) => {
            if resp.body.windows(t.len().max(1)).any(|w| w == t.as_bytes()) || t.is_empty() {
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
    /// One HTTP/2 pool per target.
    type Worker = Vec<throng_http::H2Pool>;
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

    fn worker(&self) -> Vec<throng_http::H2Pool> {
        self.http
            .iter()
            .map(|_| throng_http::H2Pool::default())
            .collect()
    }

    fn session(&self, pools: &Vec<throng_http::H2Pool>, user: u64) -> ScenarioSession {
        ScenarioSession {
            http: self
                .http
                .iter()
                .zip(pools)
                .map(|(d, pool)| d.new_session(pool))
                .collect(),
            vars: self.scenario.variables.clone(),
            user,
            iteration: 0,
        }
    }

    async fn connect(&self, s: &mut ScenarioSession) -> Result<(), Outcome> {
        for (driver, session) in self.http.iter().zip(s.http.iter_mut()) {
            driver.connect_session(session).await?;
        }
        Ok(())
    }

    fn begin_iteration(&self, s: &mut ScenarioSession) -> bool {
        s.iteration += 1;
        draw_all(&self.scenario.feeds, s.user, &mut s.vars)
    }

    async fn execute(&self, s: &mut ScenarioSession, step: usize) -> Outcome {
        let Some(st) = self.scenario.steps.get(step) else {
            return Outcome::failed(ErrorClass::Other, "no such step");
        };
        let mut outcome = match &st.kind {
            StepKind::Http(h) => self.http_step(s, h).await,
            StepKind::Custom(f) => {
                let vars = std::mem::take(&mut s.vars);
                let (vars, o) = f(vars).await;
                s.vars = vars;
                o
            }
        };
        outcome.proceed = st.proceed;
        if let Some((lo, hi)) = st.think {
            outcome.pause = Some(if hi > lo {
                rand::rng().random_range(lo..=hi)
            } else {
                lo
            });
        }
        outcome
    }
}
