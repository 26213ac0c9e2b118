//! A streamed answer's events read into one request's figures: TTFT, ITL, TPOT, end to end,
//! output tokens.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::Api;

/// Where a request's count of output tokens came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenSource {
    /// The server's own count: `usage.completion_tokens` of the stream's last usage (sent
    /// when the request asks `stream_options: {include_usage: true}`).
    Usage,
    /// Counted here, one a content-bearing event: a server that sends several tokens in one
    /// event is undercounted.
    Counted,
}

impl TokenSource {
    /// `usage` or `counted`.
    pub fn name(self) -> &'static str {
        match self {
            TokenSource::Usage => "usage",
            TokenSource::Counted => "counted",
        }
    }
}

/// What one event of the stream was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    /// The first content: the time to first token, from the request's intended start.
    First(Duration),
    /// A later content event: its gap from the content event before it (one ITL sample).
    Next(Duration),
    /// No content: the role-only first chunk of a chat stream, a usage chunk, `[DONE]`.
    None,
}

/// Why an event is not an OpenAI-compatible chunk.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    /// The event's data is not a JSON chunk.
    #[error("a stream event that is not an OpenAI-compatible JSON chunk: {0}")]
    NotJson(String),
    /// The server sent an error in the stream (`{"error": …}`).
    #[error("the server's error in the stream: {0}")]
    Server(String),
}

/// One request's figures, as `vllm bench serve` computes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Figures {
    /// Time to first token: from the request's intended start to the first event with
    /// content. None when no content came.
    pub ttft: Option<Duration>,
    /// End to end: from the intended start to the last event with content (vLLM's E2EL;
    /// the usage chunk and `[DONE]` after it do not count). Zero when no content came.
    pub e2e: Duration,
    /// Time per output token after the first: `(e2e − ttft) / (output_tokens − 1)`; None
    /// for fewer than two tokens (vLLM leaves those out of TPOT and counts them as 0 against
    /// a TPOT objective).
    pub tpot: Option<Duration>,
    /// Output tokens.
    pub output_tokens: u64,
    /// Where [`Figures::output_tokens`] came from.
    pub source: TokenSource,
    /// `usage.prompt_tokens`, when the server sent it.
    pub prompt_tokens: Option<u64>,
    /// Events that carried content.
    pub content_events: u64,
    /// Whether the stream's end marker, `data: [DONE]`, came.
    pub done: bool,
}

/// Reads one streamed answer's events, as they arrive, into its [`Figures`]; bounded memory
/// however long the answer (the gaps are handed back one by one, for a histogram, never kept).
///
/// An event has content when its first choice carries a non-empty `delta.content` (chat; or
/// `delta.reasoning_content` or `delta.reasoning`, which reasoning models stream first) or
/// `text` (completions). vLLM's client counts any chunk with a choice, so a chat stream's
/// first chunk (`delta: {role: "assistant", content: ""}`), when a server sends it before its
/// first token, is its TTFT but not this one.
#[derive(Debug, Clone)]
pub struct Tracker {
    api: Api,
    start: Instant,
    first: Option<Instant>,
    last: Option<Instant>,
    events: u64,
    completion_tokens: Option<u64>,
    prompt_tokens: Option<u64>,
    done: bool,
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens: Option<u64>,
}

fn filled(s: &Option<Cow<'_, str>>) -> bool {
    s.as_deref().is_some_and(|s| !s.is_empty())
}

impl Tracker {
    /// A tracker for an answer of `api` to a request whose intended start was `start`.
    pub fn new(api: Api, start: Instant) -> Self {
        Tracker {
            api,
            start,
            first: None,
            last: None,
            events: 0,
            completion_tokens: None,
            prompt_tokens: None,
            done: false,
        }
    }

    /// Reads one event's data (an SSE event's, or an NDJSON line), arrived at `at`.
    ///
    /// # Errors
    /// Data that is not a JSON chunk, or a chunk with the server's `error`.
    pub fn event(&mut self, at: Instant, data: &[u8]) -> Result<Token, ChunkError> {
        if data == b"[DONE]" {
            self.done = true;
            return Ok(Token::None);
        }
        let chunk: Chunk<'_> = serde_json::from_slice(data).map_err(|e| {
            let shown = String::from_utf8_lossy(&data[..data.len().min(120)]).into_owned();
            ChunkError::NotJson(format!("{e}: {shown}"))
        })?;
        if let Some(error) = chunk.error {
            let message = error
                .get("message")
                .and_then(|m| m.as_str())
                .map_or_else(|| error.to_string(), str::to_string);
            return Err(ChunkError::Server(message));
        }
        if let Some(usage) = chunk.usage {
            if usage.completion_tokens.is_some() {
                self.completion_tokens = usage.completion_tokens;
            }
            if usage.prompt_tokens.is_some() {
                self.prompt_tokens = usage.prompt_tokens;
            }
        }
        let content = chunk.choices.first().is_some_and(|c| match self.api {
            Api::Chat => c.delta.as_ref().is_some_and(|d| {
                filled(&d.content) || filled(&d.reasoning_content) || filled(&d.reasoning)
            }),
            Api::Completions => filled(&c.text),
        });
        if !content {
            return Ok(Token::None);
        }
        self.events += 1;
        let token = match self.last {
            None => {
                self.first = Some(at);
                Token::First(at.saturating_duration_since(self.start))
            }
            Some(last) => Token::Next(at.saturating_duration_since(last)),
        };
        self.last = Some(at);
        Ok(token)
    }

    /// The figures so far (all of them once the stream has ended).
    pub fn figures(&self) -> Figures {
        let (output_tokens, source) = match self.completion_tokens {
            Some(n) => (n, TokenSource::Usage),
            None => (self.events, TokenSource::Counted),
        };
        let ttft = self.first.map(|f| f.saturating_duration_since(self.start));
        let e2e = self
            .last
            .map_or(Duration::ZERO, |l| l.saturating_duration_since(self.start));
        let tpot = match ttft {
            Some(ttft) if output_tokens > 1 => {
                let per = e2e.saturating_sub(ttft).as_nanos() / u128::from(output_tokens - 1);
                Some(Duration::from_nanos(u64::try_from(per).unwrap_or(u64::MAX)))
            }
            _ => None,
        };
        Figures {
            ttft,
            e2e,
            tpot,
            output_tokens,
            source,
            prompt_tokens: self.prompt_tokens,
            content_events: self.events,
            done: self.done,
        }
    }
}
