//! A request step's `llm:` key: the step sends OpenAI-compatible streaming requests, as
//! `--llm` makes a URL run do, and reads each answer as tokens.
//!
//! ```yaml
//! request:
//!   path: /v1/chat/completions
//!   llm:
//!     api: chat               # or completions; chat by default
//!     model: llama-3-8b       # required
//!     prompts: prompts.jsonl  # relative to the scenario's folder; or prompt_tokens: 128
//!     max_tokens: 64
//! ```
//!
//! Each value is read where it is written, and a bad one is refused at its place.

use bytes::Bytes;
use throng_core::step::{Node, NodeValue, Place, StepError};
use throng_llm::{generated_prompts, read_prompts_file, Api, RequestSpec};

const FIELDS: &[&str] = &["api", "model", "prompts", "prompt_tokens", "max_tokens"];

/// A step's `llm:` key read: its API and its bodies, encoded once, taken in turn by the calls.
#[derive(Debug)]
pub(crate) struct LlmKey {
    pub api: Api,
    pub bodies: Vec<Bytes>,
}

/// A whole number of at least 1, at its place.
fn count(n: &Node, what: &str) -> Result<u64, StepError> {
    let v = match &n.value {
        NodeValue::Number(x) => x.as_u64(),
        NodeValue::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    match v {
        Some(v) if v >= 1 => Ok(v),
        _ => Err(StepError::at(
            n.at,
            format!(
                "llm: {what} is a whole number of at least 1, not {}",
                match &n.value {
                    NodeValue::String(s) => format!("`{s}`"),
                    NodeValue::Number(x) => x.to_string(),
                    _ => n.kind().to_string(),
                }
            ),
        )),
    }
}

/// Reads `llm:`; relative prompts files are read from `dir`. `body_at` is where the step
/// gives a body of its own, `stream_at` a `stream:`, `method` its method if not POST or GET:
/// each is refused, as the bodies are the prompts' and the answer is read as tokens.
pub(crate) fn read(
    node: &Node,
    dir: &std::path::Path,
    body_at: Option<Place>,
    stream_at: Option<Place>,
    method: &http::Method,
) -> Result<LlmKey, StepError> {
    let f = node.fields("llm", FIELDS)?;
    if let Some(at) = body_at {
        return Err(StepError::at(
            at,
            "a step with `llm` sends its prompts as bodies: give `llm: {prompts: FILE.jsonl}`, \
             not `body` or `json`",
        ));
    }
    if let Some(at) = stream_at {
        return Err(StepError::at(
            at,
            "a step with `llm` reads its answers as server-sent events already: drop `stream`",
        ));
    }
    if !matches!(*method, http::Method::GET | http::Method::POST) {
        return Err(StepError::at(
            f.at,
            format!("a step with `llm` sends POSTs, not {method}: drop `method`"),
        ));
    }
    let api = match f.get("api") {
        None => Api::Chat,
        Some(n) => n
            .text("llm: api")?
            .parse()
            .map_err(|e: String| StepError::at(n.at, format!("llm: api: {e}")))?,
    };
    let model = f.require("model", "llm")?;
    let model = model.text("llm: model")?;
    let prompts = match (f.get("prompts"), f.get("prompt_tokens")) {
        (Some(_), Some(n)) => {
            return Err(StepError::at(
                n.at,
                "llm: give `prompts` or `prompt_tokens`, not both",
            ))
        }
        (Some(n), None) => {
            let path = dir.join(n.text("llm: prompts")?);
            read_prompts_file(&path, api)
                .map_err(|e| StepError::at(n.at, format!("llm: prompts: {e}")))?
        }
        (None, Some(n)) => {
            let tokens = count(n, "prompt_tokens")?;
            generated_prompts(100, usize::try_from(tokens).unwrap_or(usize::MAX), 0)
        }
        (None, None) => generated_prompts(100, 128, 0),
    };
    let mut spec = RequestSpec::new(api, model);
    if let Some(n) = f.get("max_tokens") {
        spec.max_tokens =
            Some(u32::try_from(count(n, "max_tokens")?).map_err(|_| {
                StepError::at(n.at, "llm: max_tokens is past what a request can ask")
            })?);
    }
    Ok(LlmKey {
        api,
        bodies: spec.bodies(&prompts),
    })
}
