//! LLM serving as a workload: OpenAI-compatible streaming requests, the figures their users
//! publish (TTFT, ITL, TPOT, end to end, output tokens, goodput), and a testbed that streams
//! with programmed timing.
//!
//! The parts that need no HTTP client:
//!
//! - [`RequestSpec`] and [`Prompt`]: request bodies for `/v1/chat/completions` ([`Api::Chat`])
//!   and the legacy `/v1/completions` ([`Api::Completions`]), with `stream: true`,
//!   `stream_options: {include_usage: true}`, `max_tokens` and `model`, from a prompts file
//!   ([`read_prompts`], JSON Lines) or generated prompts of N tokens
//!   ([`generated_prompts`]); every body encoded once, before the load.
//! - [`Tracker`]: a streamed answer's events (from throng-stream's readers), as they arrive,
//!   into one request's [`Figures`], defined as `vllm bench serve` defines them
//!   (`vllm/benchmarks/serve.py`, `lib/endpoint_request_func.py`) but for two choices: TTFT
//!   runs from the start the caller gives, in a run the request's *intended* start (vLLM's
//!   client times from its actual send, so a load generator that falls behind hides its
//!   delay there; here it counts, as in throng's latency), to the first event with non-empty
//!   content (vLLM's, to the first chunk with a choice, which can be a chat stream's
//!   role-only first chunk); ITL, each gap between consecutive events with content; end to
//!   end, to the last event with content; TPOT, `(e2e − TTFT) / (output tokens − 1)` for two
//!   tokens or more; output tokens from the stream's last `usage` when the server sends it,
//!   else counted one per event with content, and [`TokenSource`] says which.
//! - [`Answer`]: throng-stream's reader and the tracker together, fed a body's slices with
//!   their arrival times: what a driver holds per request, handing over the content events'
//!   times as a parts row takes them (TTFT, then each ITL).
//! - [`Goodput`]: objectives (`ttft<200ms,tpot<50ms`, or vLLM's `ttft:200`), core's (every
//!   stream of tokens is judged by them as the engine records it), and whether an answer's
//!   [`Figures`] meet them all ([`Figures::meets`]).
//! - `serve` (feature `serve`, on by default): `throng serve llm`, an OpenAI-compatible
//!   streaming server on hyper whose TTFT, token gaps and output lengths follow given values
//!   or ranges, seeded, with faults (a stream cut, an error status, a stall) and a limit on
//!   the answers generated at once, so that every figure is checked against a known truth;
//!   with feature `clap` (on by default), `serve::ServeArgs`, its flags (`--ttft D|A..B
//!   --prefill D --itl D|A..B --output-tokens N|A..B --seed --model --fault --fault-every
//!   --max-streams --host --port`). A client of the workload (the HTTP driver) leaves both out and gets
//!   none of their dependencies.
//!
//! The main decision: a request's figures are computed as its events arrive and handed back
//! one by one ([`Token`]), never from a kept list of timestamps, so memory stays bounded
//! however long an answer is, and the gaps can go straight into a histogram.
#![deny(missing_docs)]

mod answer;
mod figures;
mod goodput;
mod request;
#[cfg(feature = "serve")]
pub mod serve;

pub use answer::Answer;
pub use figures::{ChunkError, Figures, Token, TokenSource, Tracker};
pub use goodput::{Figure, Goodput, GoodputError, Objective};
pub use request::{
    generated_prompts, read_prompts, read_prompts_file, Api, Prompt, PromptError, PromptText,
    RequestSpec,
};
