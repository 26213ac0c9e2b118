//! What the testbed is told: its timing, lengths and faults, as flags write them.

use std::net::SocketAddr;
use std::time::Duration;

use rand::Rng;

/// A value or a range to draw from uniformly: `D` or `A..B` (durations `200ms`, counts
/// `128`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread<T> {
    /// Always this.
    Fixed(T),
    /// Uniform over `[low, high]`.
    Uniform(T, T),
}

impl<T: Copy + PartialOrd + rand::distr::uniform::SampleUniform> Spread<T> {
    /// A value drawn with `rng`.
    pub fn draw(&self, rng: &mut impl Rng) -> T {
        match *self {
            Spread::Fixed(v) => v,
            Spread::Uniform(a, b) => rng.random_range(a..=b),
        }
    }

    /// The smallest and largest values it gives.
    pub fn bounds(&self) -> (T, T) {
        match *self {
            Spread::Fixed(v) => (v, v),
            Spread::Uniform(a, b) => (a, b),
        }
    }

    fn parse(s: &str, one: impl Fn(&str) -> Result<T, String>) -> Result<Self, String> {
        match s.split_once("..") {
            None => Ok(Spread::Fixed(one(s)?)),
            Some((a, b)) => {
                let (a, b) = (one(a)?, one(b)?);
                if a > b {
                    return Err(format!("`{s}`: the range's start is above its end"));
                }
                Ok(Spread::Uniform(a, b))
            }
        }
    }
}

/// `200ms` or `100ms..300ms` (humantime's units: `us`, `ms`, `s`).
impl std::str::FromStr for Spread<Duration> {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Spread::parse(s, |d| {
            humantime::parse_duration(d.trim()).map_err(|e| {
                format!("`{d}` is not a duration ({e}): expected e.g. 20ms or 10ms..30ms")
            })
        })
    }
}

/// `128` or `64..256`, at least 1.
impl std::str::FromStr for Spread<u32> {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Spread::parse(s, |n| {
            n.trim()
                .parse::<u32>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    format!("`{n}` is not a count of tokens: expected e.g. 128 or 64..256")
                })
        })
    }
}

/// What the testbed does to a request instead of answering it well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Sends this many tokens, then cuts the stream: the connection is closed (HTTP/1.1,
    /// without the last chunk) or the stream reset (HTTP/2), with no usage and no `[DONE]`.
    Cut(u32),
    /// Answers this status with an OpenAI-style error body, at once.
    Status(u16),
    /// Sends this many tokens, then nothing more, holding the stream open until the client
    /// or the server gives up.
    Stall(u32),
}

/// `cut:N`, `status:CODE` or `stall:N`.
impl std::str::FromStr for Fault {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad =
            || format!("`{s}` is not a fault: expected cut:TOKENS, status:CODE or stall:TOKENS");
        let (kind, n) = s.split_once(':').ok_or_else(bad)?;
        match kind {
            "cut" => n.parse().map(Fault::Cut).map_err(|_| bad()),
            "stall" => n.parse().map(Fault::Stall).map_err(|_| bad()),
            "status" => n
                .parse::<u16>()
                .ok()
                .filter(|c| (400..600).contains(c))
                .map(Fault::Status)
                .ok_or_else(|| format!("`{s}`: a fault's status is 400 to 599")),
            _ => Err(bad()),
        }
    }
}

/// The testbed's settings. [`ServeConfig::default`]: on `127.0.0.1:0`, TTFT 50 ms, token gaps
/// 10 ms, 64 tokens, seed 0, no fault, no limit on streams.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeConfig {
    /// Where it listens.
    pub listen: SocketAddr,
    /// Time to first token, from the request's arrival, drawn per request.
    pub ttft: Spread<Duration>,
    /// Time per prompt token (a word of the prompt: the testbed has no tokenizer) added to
    /// the TTFT, as a server's prefill grows with the prompt; zero by default.
    pub prefill: Duration,
    /// The gap between tokens, drawn per token.
    pub itl: Spread<Duration>,
    /// Output tokens, drawn per request (a request's `max_tokens` caps it, and the answer
    /// then finishes with `length`).
    pub output_tokens: Spread<u32>,
    /// The seed: request `i` (in arrival order) draws from a generator seeded by it and `i`,
    /// so a run against a fresh server draws the same values whatever the timing.
    pub seed: u64,
    /// The model named in answers when a request names none.
    pub model: String,
    /// A fault, on one request in every [`ServeConfig::fault_every`].
    pub fault: Option<Fault>,
    /// The fault hits requests `0, k, 2k, …` in arrival order (1: every one).
    pub fault_every: u64,
    /// At most this many answers generated at once (a server's batch, as vLLM's
    /// `max_num_seqs`): a request beyond waits for one to end, and the wait is part of its
    /// TTFT (`x-throng-queued-us` says how long). None: no limit.
    pub max_streams: Option<usize>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            ttft: Spread::Fixed(Duration::from_millis(50)),
            prefill: Duration::ZERO,
            itl: Spread::Fixed(Duration::from_millis(10)),
            output_tokens: Spread::Fixed(64),
            seed: 0,
            model: "throng-testbed".into(),
            fault: None,
            fault_every: 1,
            max_streams: None,
        }
    }
}
