//! `throng serve llm`: an OpenAI-compatible streaming server whose timing and lengths are
//! programmed, so that every figure a client measures has a known truth.
//!
//! It answers `POST /v1/chat/completions` and `POST /v1/completions` (and `GET /v1/models`)
//! over HTTP/1.1 and HTTP/2 without TLS (h2c, prior knowledge), on hyper. A streaming request
//! (`stream: true`) is answered with server-sent events in OpenAI's shape: for chat, a first
//! chunk with the assistant's role and empty content, sent with the first token; a chunk per
//! token; a chunk with the finish reason; with `stream_options: {include_usage: true}`, a
//! `usage: null` on every chunk and a last chunk of usage with no choices; then
//! `data: [DONE]`. Token `k` is due at the request's arrival (or its place's, with
//! [`ServeConfig::max_streams`]), plus the TTFT drawn for the request and the prefill's time
//! for its prompt, plus the gaps drawn for tokens `1..=k`; each is written as soon as it is
//! due, never early, some tens of microseconds late on an idle machine (one timer for all the
//! server's streams, on the engine's pacer, see `clock.rs`), and lateness never accumulates.
//! On HTTP/1.1's streamed path the arrival is the kernel's stamp of the request's last bytes,
//! not the instant the testbed read them (`h1.rs`).
//! A request without `stream` gets the whole answer at once, when its last token would have
//! been due (on tokio's timer: up to a millisecond late).
//!
//! Each answer carries its truth in headers: `x-throng-request` (its index in arrival
//! order), `x-throng-ttft-us` (the prefill's part included), `x-throng-output-tokens` and
//! `x-throng-queued-us` (its wait for a place; TTFT runs after it).

mod body;
mod clock;
mod config;
#[cfg(feature = "clap")]
mod flags;
mod h1;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rand::SeedableRng;
use serde::Deserialize;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::time::Instant;

pub use clock::Lateness;
pub use config::{Fault, ServeConfig, Spread};
#[cfg(feature = "clap")]
pub use flags::ServeArgs;

use crate::Api;
use body::{Frames, Shape, TokenBody, Wait};
use clock::Clock;

/// The largest request body read.
const MAX_REQUEST: usize = 4 * 1024 * 1024;

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// A server that is serving; dropping it stops it.
#[derive(Debug)]
pub struct RunningLlm {
    /// Where it listens.
    pub addr: SocketAddr,
    requests: Arc<AtomicU64>,
    shutdown: watch::Sender<bool>,
    clock: Clock,
}

impl RunningLlm {
    /// `http://addr`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Completion requests received so far (streamed, whole, or faulted).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// How late the testbed wrote its HTTP/1.1 streams' tokens so far (its own error).
    pub fn lateness(&self) -> Lateness {
        self.clock.lateness()
    }

    /// How long its HTTP/1.1 streams' requests waited, from their arrival, to be read. Their
    /// TTFT runs from the arrival, so a wait is not the client's to see, unless it is longer
    /// than the TTFT: then the first token is late, in [`RunningLlm::lateness`].
    pub fn read_waits(&self) -> Lateness {
        self.clock.read_waits()
    }

    /// Stops accepting and closes every connection.
    pub fn stop(&self) {
        let _ = self.shutdown.send(true);
    }
}

impl Drop for RunningLlm {
    fn drop(&mut self) {
        self.stop();
    }
}

struct State {
    cfg: ServeConfig,
    /// The model as a JSON string.
    model: String,
    requests: Arc<AtomicU64>,
    created: u64,
    /// The streams' precise timer.
    clock: Clock,
    /// The places of answers generated at once, if limited.
    slots: Option<Arc<tokio::sync::Semaphore>>,
}

/// Serves `config` on its address until `stop` completes (`throng serve llm`: Ctrl-C).
///
/// # Errors
/// The address cannot be bound.
pub async fn serve(config: ServeConfig, stop: impl Future<Output = ()>) -> std::io::Result<()> {
    let listener = TcpListener::bind(config.listen).await?;
    let running = start_on(config, listener)?;
    stop.await;
    running.stop();
    Ok(())
}

/// Serves `config` on its address (port 0: a free one) in a background task of the current
/// runtime.
///
/// # Errors
/// The address cannot be bound.
pub async fn start(config: ServeConfig) -> std::io::Result<RunningLlm> {
    let listener = TcpListener::bind(config.listen).await?;
    start_on(config, listener)
}

/// Serves `config` on a bound listener (its `listen` unused), in a background task.
///
/// # Errors
/// The listener has no local address.
pub fn start_on(config: ServeConfig, listener: TcpListener) -> std::io::Result<RunningLlm> {
    let addr = listener.local_addr()?;
    let (shutdown, watch) = watch::channel(false);
    let requests = Arc::new(AtomicU64::new(0));
    let created = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let clock = Clock::start(watch.clone());
    let state = Arc::new(State {
        model: Value::String(config.model.clone()).to_string(),
        requests: requests.clone(),
        created,
        clock: clock.clone(),
        slots: config
            .max_streams
            .map(|n| Arc::new(tokio::sync::Semaphore::new(n))),
        cfg: config,
    });
    tokio::spawn(async move {
        let mut stop = watch.clone();
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = stop.wait_for(|s| *s) => return,
            };
            let Ok((tcp, _)) = accepted else {
                // Out of descriptors, say: the listener stays, as a server's would.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            let (state, mut stop) = (state.clone(), watch.clone());
            tokio::spawn(async move {
                tokio::select! {
                    _ = h1::connection(tcp, state) => {}
                    _ = stop.wait_for(|s| *s) => {}
                }
            });
        }
    });
    Ok(RunningLlm {
        addr,
        requests,
        shutdown,
        clock,
    })
}

/// Serves a connection on hyper (HTTP/2, and whatever HTTP/1.1 `h1.rs` leaves to it).
async fn on_hyper<I>(io: I, state: Arc<State>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| {
        let state = state.clone();
        async move { Ok::<_, std::convert::Infallible>(handle(req, &state).await) }
    });
    let _ = auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(io), service)
        .await;
}

#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    max_completion_tokens: Option<u32>,
    #[serde(default)]
    prompt: Option<Value>,
    #[serde(default)]
    messages: Option<Value>,
}

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: Option<bool>,
}

fn full(status: StatusCode, content_type: &str, body: String) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|e| match e {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        response.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    response
}

/// An OpenAI-style error answer.
fn error(status: StatusCode, message: &str) -> Response<Body> {
    full(status, "application/json", error_body(status, message))
}

/// An OpenAI-style error's JSON.
fn error_body(status: StatusCode, message: &str) -> String {
    let kind = if status.is_server_error() {
        "server_error"
    } else {
        "invalid_request_error"
    };
    serde_json::json!({
        "error": {"message": message, "type": kind, "param": null, "code": null}
    })
    .to_string()
}

/// Words of a prompt: a string's, or the strings' of messages' contents (a rough count of
/// tokens: the testbed has no tokenizer).
fn words(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.split_whitespace().count() as u64,
        Value::Array(a) => a.iter().map(words).sum(),
        Value::Object(o) => o.get("content").or_else(|| o.get("text")).map_or(0, words),
        _ => 0,
    }
}

/// Request `i`'s generator: the seed and the index mixed (SplitMix64's finaliser), so
/// neighbouring requests draw unrelated values.
fn rng_for(seed: u64, i: u64) -> rand::rngs::SmallRng {
    let mut z = seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    rand::rngs::SmallRng::seed_from_u64(z ^ (z >> 31))
}

async fn handle(req: Request<Incoming>, state: &State) -> Response<Body> {
    let arrived = Instant::now();
    let api = match req.uri().path() {
        "/v1/chat/completions" => Api::Chat,
        "/v1/completions" => Api::Completions,
        "/v1/models" if req.method() == Method::GET => {
            let body = serde_json::json!({"object": "list", "data": [
                {"id": state.cfg.model, "object": "model", "created": state.created, "owned_by": "throng"}
            ]});
            return full(StatusCode::OK, "application/json", body.to_string());
        }
        path => return error(StatusCode::NOT_FOUND, &format!("no route for {path}")),
    };
    if req.method() != Method::POST {
        return error(StatusCode::METHOD_NOT_ALLOWED, "completions take POST");
    }
    let bytes = match Limited::new(req.into_body(), MAX_REQUEST).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("the request's body: {e}")),
    };
    let (ask, prompt_tokens) = match read_completion(api, &bytes) {
        Ok(read) => read,
        Err(message) => return error(StatusCode::BAD_REQUEST, &message),
    };
    let drawn = match draw(state, api, &ask, prompt_tokens) {
        Ok(drawn) => drawn,
        Err(status) => return error(status, FAULT_STATUS),
    };
    let Drawn {
        i,
        shape,
        mut rng,
        ttft,
        tokens,
        fault,
    } = drawn;
    let cfg = &state.cfg;
    // A place among the answers generated at once: the wait for it is the request's, before
    // its TTFT starts. The semaphore is never closed, so the acquisition cannot fail.
    let slot = match &state.slots {
        Some(slots) => slots.clone().acquire_owned().await.ok(),
        None => None,
    };
    let began = Instant::now();
    let queued = began - arrived;
    let mut response = if ask.stream == Some(true) {
        let first = began + ttft;
        let body = TokenBody {
            frames: Frames::new(&shape, tokens),
            wait: Wait {
                clock: state.clock.clone(),
                given: None,
            },
            due: first,
            rng,
            itl: cfg.itl,
            tokens,
            sent: 0,
            fault,
            ended: false,
            slot,
        };
        let mut r = Response::new(body.boxed_unsync());
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/event-stream"),
        );
        h.insert(
            header::CACHE_CONTROL,
            header::HeaderValue::from_static("no-cache"),
        );
        r
    } else {
        let mut last = began + ttft;
        for _ in 1..tokens {
            last += cfg.itl.draw(&mut rng);
        }
        tokio::time::sleep_until(last).await;
        drop(slot);
        full(StatusCode::OK, "application/json", whole(&shape, tokens))
    };
    let h = response.headers_mut();
    for (name, value) in truth(i, ttft, tokens, queued) {
        h.insert(name, value.into());
    }
    response
}

/// The message of the status fault's answer.
const FAULT_STATUS: &str = "the testbed's fault: an error status";

/// An answer's truth, as its headers tell it.
fn truth(i: u64, ttft: Duration, tokens: u32, queued: Duration) -> [(&'static str, u64); 4] {
    [
        ("x-throng-request", i),
        ("x-throng-ttft-us", ttft.as_micros() as u64),
        ("x-throng-output-tokens", u64::from(tokens)),
        ("x-throng-queued-us", queued.as_micros() as u64),
    ]
}

/// A completion request's body read: what it asks, and its prompt's words; or why it is bad.
fn read_completion(api: Api, bytes: &[u8]) -> Result<(Completion, u64), String> {
    let ask: Completion =
        serde_json::from_slice(bytes).map_err(|e| format!("the request is not JSON: {e}"))?;
    let prompt = match api {
        Api::Chat => ask.messages.as_ref().filter(|m| m.is_array()),
        Api::Completions => ask.prompt.as_ref(),
    };
    let Some(prompt) = prompt else {
        let what = match api {
            Api::Chat => "`messages` (an array)",
            Api::Completions => "`prompt`",
        };
        return Err(format!("the request has no {what}"));
    };
    let words = words(prompt);
    Ok((ask, words))
}

/// What request `i`'s answer was drawn to be.
struct Drawn {
    i: u64,
    shape: Shape,
    rng: rand::rngs::SmallRng,
    /// The prefill's part included.
    ttft: Duration,
    tokens: u32,
    fault: Option<Fault>,
}

/// Draws the next request's answer (its index taken in arrival order), or the status its
/// fault answers instead.
fn draw(
    state: &State,
    api: Api,
    ask: &Completion,
    prompt_tokens: u64,
) -> Result<Drawn, StatusCode> {
    let i = state.requests.fetch_add(1, Ordering::Relaxed);
    let cfg = &state.cfg;
    let mut rng = rng_for(cfg.seed, i);
    let prefill = cfg
        .prefill
        .saturating_mul(u32::try_from(prompt_tokens).unwrap_or(u32::MAX));
    let ttft = cfg.ttft.draw(&mut rng) + prefill;
    let drawn = cfg.output_tokens.draw(&mut rng);
    let cap = ask
        .max_completion_tokens
        .or(ask.max_tokens)
        .map(|n| n.max(1));
    let tokens = cap.map_or(drawn, |c| drawn.min(c));
    let fault = cfg
        .fault
        .filter(|_| i.is_multiple_of(cfg.fault_every.max(1)));
    if let Some(Fault::Status(code)) = fault {
        return Err(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR));
    }
    let shape = Shape {
        api,
        id: match api {
            Api::Chat => format!("chatcmpl-{i}"),
            Api::Completions => format!("cmpl-{i}"),
        },
        created: state.created,
        model: ask.model.as_ref().map_or_else(
            || state.model.clone(),
            |m| Value::String(m.clone()).to_string(),
        ),
        include_usage: ask
            .stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false),
        prompt_tokens,
        finish: if tokens < drawn { "length" } else { "stop" },
    };
    Ok(Drawn {
        i,
        shape,
        rng,
        ttft,
        tokens,
        fault,
    })
}

/// A whole answer, for a request without `stream`.
fn whole(shape: &Shape, tokens: u32) -> String {
    let text: String = (0..tokens)
        .map(|k| {
            if k == 0 {
                body::token(k).to_string()
            } else {
                format!(" {}", body::token(k))
            }
        })
        .collect();
    let usage = serde_json::json!({
        "prompt_tokens": shape.prompt_tokens,
        "completion_tokens": tokens,
        "total_tokens": shape.prompt_tokens + u64::from(tokens),
    });
    let model: Value = serde_json::from_str(&shape.model).unwrap_or(Value::Null);
    let (object, choice) = match shape.api {
        Api::Chat => (
            "chat.completion",
            serde_json::json!({"index": 0, "message": {"role": "assistant", "content": text},
                "logprobs": null, "finish_reason": shape.finish}),
        ),
        Api::Completions => (
            "text_completion",
            serde_json::json!({"text": text, "index": 0, "logprobs": null,
                "finish_reason": shape.finish}),
        ),
    };
    serde_json::json!({
        "id": shape.id, "object": object, "created": shape.created, "model": model,
        "system_fingerprint": "fp_throng", "choices": [choice], "usage": usage,
    })
    .to_string()
}
