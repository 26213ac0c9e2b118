//! HTTP as a scenario protocol: `request:` steps on `http://` and `https://` targets.
//!
//! ```yaml
//! request:
//!   method: POST            # default GET
//!   path: /client/{{ id }}  # appended to the target's base path
//!   headers: { x-trace: "{{ uuid() }}" }
//!   json: { amount: "{{ amount }}" }   # or body: text
//!   stream: sse             # or ndjson, chunks: the body read as events
//! ```

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use throng_core::step::{
    Client, ClientOptions, JsonTemplate, Node, NodeValue, Place, Protocol, Render, Reply,
    StaticOnly, StepError, TemplateCompiler, Text,
};
use throng_core::steps::Steps;
use throng_core::{ErrorClass, Outcome, Status};

use crate::driver::{not_a_field, Length, Prepared};
use crate::stream::{Reading, StreamMode};
use crate::{H2Pool, HttpConfig, HttpConfigError, HttpDriver, HttpRequest, Session};
use throng_h2::hpack::Block;

/// The HTTP protocol of scenarios.
#[derive(Debug, Clone, Copy, Default)]
pub struct HttpProtocol;

/// HTTP's own options for a scenario's targets ([`ClientOptions::with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpOptions {
    /// Speak HTTP/2.
    pub http2: bool,
    /// HTTP/1.1: keep connections open between requests.
    pub keepalive: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            http2: false,
            keepalive: true,
        }
    }
}

/// A request body.
#[derive(Debug, Clone)]
enum Body {
    None,
    Text(Text),
    /// Bytes as given (`-d @file`: not necessarily text).
    Bytes(Bytes),
    /// A JSON document whose string leaves may be templates.
    Json(JsonTemplate),
    /// Bodies encoded before the load, each call taking the next (`--llm`'s prompts).
    Rotate(Arc<Rotation>),
}

/// Bodies taken in turn by the calls of every worker.
#[derive(Debug)]
struct Rotation {
    bodies: Vec<Bytes>,
    next: AtomicUsize,
}

impl Rotation {
    fn next(&self) -> Bytes {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        self.bodies[i % self.bodies.len()].clone()
    }
}

/// A compiled `request:` step.
#[derive(Debug, Clone)]
pub struct HttpStep {
    method: Method,
    path: Text,
    headers: Vec<(HeaderName, Text)>,
    body: Body,
    /// The response read as a stream of events, each a part of the step's parts row, and
    /// where the step said so.
    stream: Option<(StreamMode, Place)>,
    /// A step with no template, prepared at its first call for the whole run (HTTP/1.1: its
    /// bytes on the wire), with its body; `None` when it has templates.
    fixed: OnceLock<Option<(Prepared, Bytes)>>,
    /// HTTP/2, a step with templates: its header block, encoded at its first call with a slot
    /// for each templated field (the path, a header, the body's length), or why it cannot be.
    h2: OnceLock<Result<Block, String>>,
}

impl HttpStep {
    /// Whether nothing in it is a template (it is the same request every time).
    fn is_static(&self) -> bool {
        let body = match &self.body {
            Body::None | Body::Bytes(_) => true,
            Body::Rotate(_) => false,
            Body::Text(t) => t.as_static().is_some(),
            Body::Json(j) => j.templates() == 0,
        };
        body && self.path.as_static().is_some()
            && self.headers.iter().all(|(_, v)| v.as_static().is_some())
    }
}

const FIELDS: &[&str] = &["method", "path", "headers", "body", "json", "stream", "llm"];

impl Protocol for HttpProtocol {
    type Client = HttpClient;

    fn name(&self) -> &'static str {
        "http"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["http", "https"]
    }

    const TLS_SCHEMES: &'static [&'static str] = &["https"];

    fn key(&self) -> &'static str {
        "request"
    }

    fn step_help(&self) -> &'static str {
        "method, path, headers, body or json, stream (sse, ndjson or chunks), and llm (api, \
         model, prompts or prompt_tokens, max_tokens)"
    }

    fn check_target(&self, url: &str) -> Result<(), String> {
        crate::parse_url(url).map_err(|e| e.to_string())?;
        // Steps append their path to the target's, so a query or fragment here would be lost.
        if url.contains(['?', '#']) {
            return Err("a target is a base URL without `?` or `#`; \
                        put the query in each step's path"
                .into());
        }
        Ok(())
    }

    fn compile(&self, request: &Node, t: &mut dyn TemplateCompiler) -> Result<HttpStep, StepError> {
        if !matches!(request.value, NodeValue::Map(_)) {
            return Err(StepError::at(
                request.at,
                format!(
                    "request must be a mapping with `path` (and method, headers, body or json), \
                     not {}",
                    shown(request)
                ),
            ));
        }
        let f = request.fields("request", FIELDS)?;
        let mut method = match f.get("method") {
            None => Method::GET,
            Some(m) => {
                let text = m.text("method")?;
                text.to_uppercase()
                    .parse()
                    .map_err(|_| StepError::at(m.at, format!("`{text}` is not an HTTP method")))?
            }
        };
        let path_node = f.get("path").ok_or_else(|| {
            StepError::at(
                f.at,
                "the required key `path` is missing: it takes a path such as /api/items",
            )
        })?;
        let path = path_node.text("path")?;
        if !path.starts_with('/') && !path.starts_with("{{") {
            return Err(StepError::at(path_node.at, "a path starts with `/`"));
        }
        let path = t.text(&path, path_node.at)?;
        let mut headers = Vec::new();
        if let Some(h) = f.get("headers") {
            for (name, value) in h.map("headers")? {
                let hn: HeaderName = name.parse().map_err(|_| {
                    StepError::at(value.at, format!("`{name}` is not a header name"))
                })?;
                let v = value.text(&format!("header `{name}`"))?;
                headers.push((hn, t.text(&v, value.at)?));
            }
        }
        let body = match (f.get("body"), f.get("json")) {
            (Some(_), Some(j)) => {
                return Err(StepError::at(j.at, "give `body` or `json`, not both"))
            }
            (Some(b), None) => Body::Text(t.text(&b.text("body")?, b.at)?),
            (None, Some(j)) => {
                headers.push((
                    http::header::CONTENT_TYPE,
                    Text::Static("application/json".into()),
                ));
                Body::Json(JsonTemplate::compile(t, j)?)
            }
            (None, None) => Body::None,
        };
        let stream = match f.get("stream") {
            None => None,
            Some(n) => {
                let framing = n
                    .text("stream")?
                    .parse()
                    .map_err(|e| StepError::at(n.at, e))?;
                Some((StreamMode::Events(framing), n.at))
            }
        };
        // `llm:`: the prompts' bodies in turn, POST, JSON, the answer read as tokens.
        let (body, stream) = match f.get("llm") {
            None => (body, stream),
            Some(n) => {
                let own_body = f.get("body").or(f.get("json")).map(|b| b.at);
                let key =
                    crate::llm::read(n, t.dir(), own_body, stream.map(|(_, at)| at), &method)?;
                method = Method::POST;
                headers.push((
                    http::header::CONTENT_TYPE,
                    Text::Static("application/json".into()),
                ));
                let bodies = Rotation {
                    bodies: key.bodies,
                    next: AtomicUsize::new(0),
                };
                let mode = StreamMode::Llm(key.api);
                (Body::Rotate(Arc::new(bodies)), Some((mode, n.at)))
            }
        };
        Ok(HttpStep {
            method,
            path,
            headers,
            body,
            stream,
            fixed: OnceLock::new(),
            h2: OnceLock::new(),
        })
    }

    fn status(&self, expected: &Node) -> Result<Status, StepError> {
        let code = match &expected.value {
            NodeValue::Number(n) => n.as_u64(),
            NodeValue::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        match code {
            Some(c @ 100..=599) => Ok(crate::status::status(c as u16)),
            _ => Err(StepError::at(
                expected.at,
                format!(
                    "status must be an HTTP status code from 100 to 599, not {}",
                    shown(expected)
                ),
            )),
        }
    }

    fn client(&self, url: &str, options: &ClientOptions) -> Result<HttpClient, String> {
        let mut cfg = HttpConfig::new(url).map_err(|e| e.to_string())?;
        let own = options.of::<HttpOptions>().copied().unwrap_or_default();
        cfg.http2 = own.http2;
        cfg.streams = options.streams.max(1);
        cfg.keepalive = own.keepalive;
        cfg.timeout = options.timeout;
        cfg.connect_timeout = options.connect_timeout;
        cfg.insecure = options.insecure;
        cfg.cacert = options.cacert.clone();
        cfg.identity = options.identity.clone();
        for (name, value) in &options.headers {
            cfg.header(&format!("{name}: {value}"))
                .map_err(|e| e.to_string())?;
        }
        let prefix = cfg.url.path().trim_end_matches('/').to_string();
        let per_user = match cfg.http2 {
            true => 1.0 / cfg.streams as f64,
            false => 1.0,
        };
        Ok(HttpClient {
            driver: HttpDriver::new(cfg).map_err(|e| e.to_string())?,
            prefix,
            per_user,
        })
    }
}

/// A step's body for this call.
fn body(h: &HttpStep, r: &dyn Render) -> Result<Bytes, String> {
    Ok(match &h.body {
        Body::None => Bytes::new(),
        Body::Bytes(b) => b.clone(),
        Body::Rotate(bodies) => bodies.next(),
        Body::Text(text) => Bytes::from(r.render(text)?),
        Body::Json(j) if j.templates() == 0 => Bytes::from(j.document().to_string()),
        Body::Json(j) => Bytes::from(j.render(r)?.to_string()),
    })
}

/// A value as messages show it: a scalar as written, in backticks unless it is a number.
fn shown(n: &Node) -> String {
    match &n.value {
        NodeValue::String(s) => format!("`{s}`"),
        NodeValue::Number(x) => x.to_string(),
        _ => n.kind().to_string(),
    }
}

/// One HTTP target of a scenario.
pub struct HttpClient {
    driver: HttpDriver,
    /// The target's base path, prefixed to each step's.
    prefix: String,
    per_user: f64,
}

impl HttpClient {
    fn prepare(&self, h: &HttpStep, r: &dyn Render) -> Result<(String, HeaderMap, Bytes), String> {
        let path = format!("{}{}", self.prefix, r.render(&h.path)?);
        let mut headers = HeaderMap::new();
        for (name, v) in &h.headers {
            let value = r.render(v)?;
            let value = HeaderValue::from_str(&value)
                .map_err(|_| format!("header {name}: bad value {value:?}"))?;
            headers.insert(name.clone(), value);
        }
        Ok((path, headers, body(h, r)?))
    }

    /// HTTP/2: a step's header block, with a slot for each templated field.
    fn h2_block(&self, h: &HttpStep) -> Result<Block, String> {
        let path = h.path.as_static().map(|p| format!("{}{}", self.prefix, p));
        let mut headers = Vec::with_capacity(h.headers.len());
        for (name, v) in &h.headers {
            let value = match v.as_static() {
                Some(s) => Some(
                    HeaderValue::from_str(s)
                        .map_err(|_| format!("header {name}: bad value {s:?}"))?,
                ),
                None => None,
            };
            headers.push((name.clone(), value));
        }
        let headers: Vec<_> = headers
            .iter()
            .map(|(n, v)| (n.clone(), v.as_ref()))
            .collect();
        let length = match &h.body {
            Body::None => Length::None,
            Body::Bytes(b) if b.is_empty() => Length::None,
            Body::Bytes(b) => Length::Fixed(b.len()),
            Body::Text(t) => match t.as_static() {
                Some("") => Length::None,
                Some(s) => Length::Fixed(s.len()),
                None => Length::Slot,
            },
            Body::Json(_) | Body::Rotate(_) => Length::Slot,
        };
        Ok(self
            .driver
            .h2_block(&h.method, path.as_deref(), &headers, length))
    }

    /// HTTP/2: a call of a step with templates, its header block written into `out` with the
    /// call's values in its slots (the path, the headers, the body's length: those that are
    /// templates); returns the body.
    fn h2_request(
        &self,
        h: &HttpStep,
        r: &dyn Render,
        block: &Block,
        out: &mut Vec<u8>,
    ) -> Result<Bytes, String> {
        let mut values: Vec<Vec<u8>> = Vec::with_capacity(block.slots());
        if h.path.as_static().is_none() {
            let path = format!("{}{}", self.prefix, r.render(&h.path)?);
            path.parse::<http::Uri>()
                .map_err(|e| format!("bad path {path:?}: {e}"))?;
            values.push(path.into_bytes());
        }
        // A templated `host` is `:authority`, the slot after the path's (`h2_block`).
        if let Some((_, v)) = h.headers.iter().find(|(n, _)| n == http::header::HOST) {
            if v.as_static().is_none() {
                let value = r.render(v)?;
                HeaderValue::from_str(&value)
                    .map_err(|_| format!("header host: bad value {value:?}"))?;
                values.push(value.into_bytes());
            }
        }
        for (name, v) in &h.headers {
            if v.as_static().is_none() && !not_a_field(name) {
                let value = r.render(v)?;
                HeaderValue::from_str(&value)
                    .map_err(|_| format!("header {name}: bad value {value:?}"))?;
                values.push(value.into_bytes());
            }
        }
        let body = body(h, r)?;
        if values.len() < block.slots() {
            values.push(itoa::Buffer::new().format(body.len()).as_bytes().to_vec());
        }
        let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        out.clear();
        block.write(out, &refs);
        Ok(body)
    }

    /// The request of a step, built for this call, or why it could not be (a `check` failure).
    fn built(&self, h: &HttpStep, r: &dyn Render) -> Result<HttpRequest, String> {
        let (path, headers, body) = self.prepare(h, r).map_err(|e| format!("template: {e}"))?;
        self.driver
            .build_request(h.method.clone(), &path, headers, body)
    }

    /// A step with no template, prepared once (`None`: it has templates, or it does not build,
    /// which each call then says).
    fn fixed(&self, h: &HttpStep) -> Option<(Prepared, Bytes)> {
        if !h.is_static() {
            return None;
        }
        let (path, headers, body) = self.prepare(h, &StaticOnly).ok()?;
        let prepared = self
            .driver
            .prepare(&h.method, &path, &headers, &body)
            .ok()?;
        Some((prepared, body))
    }

    /// `throng run URL`: the configured request (the URL's path and query, its method and body;
    /// its headers are the client's) as one step of a client of its own, a one-step plan on the
    /// same path as a scenario's steps.
    pub fn one_step(cfg: HttpConfig) -> Result<Steps<HttpClient>, HttpConfigError> {
        let (client, step, label) = Self::url_step(cfg, PerCall::default());
        Steps::new(client?, step, label).map_err(|e| HttpConfigError::Url(e.message))
    }

    /// `throng run URL` whose path, headers or body hold templates (`{{ seq() }}`): the parts
    /// in `per_call` replace the configuration's and are rendered by `render` on every call;
    /// the rest is as [`HttpClient::one_step`]'s.
    pub fn one_step_per_call<R: Render>(
        cfg: HttpConfig,
        per_call: PerCall,
        render: R,
    ) -> Result<Steps<HttpClient, R>, HttpConfigError> {
        let (client, step, label) = Self::url_step(cfg, per_call);
        let one = Steps::new(client?, step, label).map_err(|e| HttpConfigError::Url(e.message))?;
        Ok(one.rendered_by(render))
    }

    fn url_step(
        cfg: HttpConfig,
        per_call: PerCall,
    ) -> (Result<HttpClient, HttpConfigError>, HttpStep, String) {
        let label = cfg.label();
        let path = cfg.url.path_and_query().map_or("/", |p| p.as_str());
        let step = HttpStep {
            method: cfg.method.clone(),
            path: per_call
                .path
                .unwrap_or_else(|| Text::Static(path.to_string())),
            headers: per_call.headers,
            body: match (per_call.body, cfg.body.is_empty()) {
                _ if !per_call.bodies.is_empty() => Body::Rotate(Arc::new(Rotation {
                    bodies: per_call.bodies,
                    next: AtomicUsize::new(0),
                })),
                (Some(t), _) => Body::Text(t),
                (None, true) => Body::None,
                (None, false) => Body::Bytes(cfg.body.clone()),
            },
            stream: cfg.stream.map(|m| (m, Place::default())),
            fixed: OnceLock::new(),
            h2: OnceLock::new(),
        };
        let per_user = match cfg.http2 {
            true => 1.0 / cfg.streams.max(1) as f64,
            false => 1.0,
        };
        let client = HttpDriver::new(cfg).map(|driver| HttpClient {
            driver,
            prefix: String::new(),
            per_user,
        });
        (client, step, label)
    }
}

/// The parts of `throng run URL`'s request that are templates, rendered per call (see
/// [`HttpClient::one_step_per_call`]); `None` and no headers keep the configuration's.
#[derive(Debug, Clone, Default)]
pub struct PerCall {
    /// The path and query.
    pub path: Option<Text>,
    /// Headers sent besides the configuration's.
    pub headers: Vec<(HeaderName, Text)>,
    /// The body.
    pub body: Option<Text>,
    /// Bodies taken in turn, one a call, by every worker's calls (`--llm`'s, encoded before
    /// the load); over `body` when there are any.
    pub bodies: Vec<Bytes>,
}

impl Client for HttpClient {
    type Step = HttpStep;
    type Worker = H2Pool;
    type Session = Session;

    fn worker_of(&self, _index: usize, _workers: usize) -> H2Pool {
        H2Pool::default()
    }

    fn session(&self, pool: &H2Pool, _user: u64) -> Session {
        self.driver.new_session(pool)
    }

    async fn connect(&self, s: &mut Session) -> Result<(), Outcome> {
        self.driver.connect_session(s).await
    }

    async fn call(
        &self,
        s: &mut Session,
        h: &HttpStep,
        render: &dyn Render,
        want_reply: bool,
    ) -> (Outcome, Option<Reply>) {
        // Its parts are timed from here, the engine's start of the request (the recorder
        // adds the lag before it to the first).
        if let Some((mode, _)) = h.stream {
            let start = std::time::Instant::now();
            s.reading = Some(Box::new(Reading::new(mode, start, want_reply)));
        }
        let (mut outcome, mut resp) = match h.fixed.get_or_init(|| self.fixed(h)) {
            Some((prepared, body)) => {
                self.driver
                    .send_prepared(s, prepared, &h.method, body, want_reply)
                    .await
            }
            None if self.driver.config().http2 => {
                let mut wire = std::mem::take(&mut s.wire);
                let req = match h.h2.get_or_init(|| self.h2_block(h)) {
                    Ok(block) => self
                        .h2_request(h, render, block, &mut wire)
                        .map_err(|e| format!("template: {e}")),
                    Err(e) => Err(e.clone()),
                };
                let out = match req {
                    Ok(body) => self.driver.send_h2(s, &wire, &body, want_reply).await,
                    Err(e) => {
                        s.reading = None;
                        (Outcome::failed(ErrorClass::Check, e), None)
                    }
                };
                s.wire = wire;
                out
            }
            None => match self.built(h, render) {
                // Boxed: inline, its future sized every user's task, held for the whole run
                // (the call's future 1,160 bytes, 632 without it), though a plain URL sends
                // the prepared request; a template pays an allocation a call instead.
                Ok(req) => Box::pin(self.driver.send(s, req, want_reply)).await,
                Err(e) => {
                    s.reading = None;
                    return (Outcome::failed(ErrorClass::Check, e), None);
                }
            },
        };
        if let Some(reading) = s.reading.take() {
            // Checks and extraction see the last event, not the stream; an error's own body
            // (the drivers keep it, not being the stream).
            if let Some(r) = resp.as_mut().filter(|r| (200..300).contains(&r.status)) {
                r.body = reading
                    .last()
                    .map(Bytes::copy_from_slice)
                    .unwrap_or_default();
            }
            reading.into_outcome(&mut outcome);
        }
        let reply = resp.map(|r| Reply {
            status: crate::status::status(r.status),
            metadata: r
                .headers
                .iter()
                .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.into())))
                .collect(),
            body: r.body,
            json: None,
        });
        (outcome, reply)
    }

    fn connections_per_user(&self) -> f64 {
        self.per_user
    }

    /// A step read as a stream: `LABEL (events)`, or `LABEL (tokens)` for an LLM answer.
    fn parts(&self, step: &HttpStep, label: &str) -> Option<String> {
        let (mode, _) = step.stream?;
        Some(format!("{label} ({})", mode.parts_name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_core::step::Place;

    use throng_core::step::Uncompiled as Plain;

    fn node(v: serde_json::Value) -> Node {
        Node::from_json(&v, Place { line: 7, column: 3 })
    }

    /// A user's task is allocated at the size of its largest state, once a connection for the
    /// whole run: the call's future is sized for the plain `throng run URL`'s prepared request,
    /// the per-call template branch's (`HttpDriver::send`) being boxed. 1,160 bytes with it
    /// inline, 632 boxed (debug build).
    #[test]
    fn a_call_is_sized_for_the_prepared_request() {
        let cfg = HttpConfig::new("http://127.0.0.1:1/").unwrap();
        let (client, step, _) = HttpClient::url_step(cfg, PerCall::default());
        let client = client.unwrap();
        let mut session = client.session(&H2Pool::default(), 0);
        let call = std::mem::size_of_val(&client.call(&mut session, &step, &StaticOnly, false));
        eprintln!("a call's future: {call} B");
        assert!(call <= 700, "a call's future is {call} bytes");
    }

    #[test]
    fn compiles_a_request_and_refuses_bad_ones_at_their_place() {
        let p = HttpProtocol;
        let ok = p
            .compile(
                &node(
                    serde_json::json!({"method": "post", "path": "/x", "json": {"a": "{{ v }}"}}),
                ),
                &mut Plain,
            )
            .unwrap();
        let step = ok;
        assert_eq!(step.method, Method::POST);
        assert!(matches!(&step.body, Body::Json(j) if j.templates() == 1));
        for (bad, says) in [
            (serde_json::json!({"path": "x"}), "a path starts with `/`"),
            (
                serde_json::json!({"path": "/", "methd": "GET"}),
                "unknown field `methd`",
            ),
            (
                serde_json::json!({"method": "GE T", "path": "/"}),
                "not an HTTP method",
            ),
            (
                serde_json::json!({"path": "/", "body": "a", "json": {}}),
                "not both",
            ),
            (
                serde_json::json!({"method": "GET"}),
                "the required key `path` is missing",
            ),
            (
                serde_json::json!("/"),
                "request must be a mapping with `path`",
            ),
        ] {
            let e = p.compile(&node(bad), &mut Plain).unwrap_err();
            assert!(e.message.contains(says), "{}", e.message);
            assert_eq!(e.at.line, 7);
        }
        assert_eq!(
            p.status(&node(serde_json::json!(201))).unwrap(),
            crate::status::status(201)
        );
        assert!(p.status(&node(serde_json::json!(600))).is_err());
        assert!(p.status(&node(serde_json::json!("OK"))).is_err());
    }
}
