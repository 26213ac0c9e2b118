//! A reply streamed in tokens: what one request's stream said beyond its parts' times (its
//! first and last token, how many tokens), the figures a row keeps of them ([`StreamStats`]:
//! TTFT, ITL, TPOT and end to end as histograms, output tokens, goodput), and goodput's
//! objectives ([`Goodput`], `ttft<200ms,tpot<50ms`).
//!
//! The figures are those LLM serving publishes (`vllm bench serve`'s definitions), named as it
//! names them, but nothing here knows a protocol: a driver that reads a reply as tokens (HTTP's
//! OpenAI-compatible answers today, any other stream tomorrow) fills a [`StreamRecord`] in
//! [`crate::Outcome::stream`], and the engine adds it to the step's row as it adds the
//! phases ([`crate::phase`]): a [`StreamStats`] made on the row's first record, so a row
//! without streams pays one comparison a request.
//!
//! Times run from the request's *intended* start, as latency does: the driver times from its
//! call's start and the recorder adds the lag. A request that failed is left out of every
//! figure but TTFT (failures are timed apart, as latency's are), except one left waiting (a
//! stall that timed out): its TTFT is its first token's, or, if none came, the age it reached,
//! a lower bound, so a stalled server can never show a low TTFT.

use std::time::Duration;

use hdrhistogram::Histogram;

/// What one reply's stream of tokens said, as its driver read it. Its parts
/// ([`crate::Outcome::parts`]) are the tokens' times: the first from the call's start, then
/// each gap (the inter-token latencies).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamRecord {
    /// From the call's start to the first token; `None` when none came.
    pub first: Option<Duration>,
    /// From the call's start to the last token (zero when none came).
    pub last: Duration,
    /// Output tokens.
    pub tokens: u64,
    /// Whether [`StreamRecord::tokens`] were counted one a part (the stream did not say its
    /// own count), rather than the server's own count.
    pub counted: bool,
}

impl StreamRecord {
    /// Time per output token after the first: `(last − first) / (tokens − 1)`, for two tokens
    /// or more.
    pub fn tpot(&self) -> Option<Duration> {
        let first = self.first?;
        if self.tokens < 2 {
            return None;
        }
        let per = self.last.saturating_sub(first).as_nanos() / u128::from(self.tokens - 1);
        Some(Duration::from_nanos(u64::try_from(per).unwrap_or(u64::MAX)))
    }
}

/// A figure goodput bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Figure {
    /// Time to first token.
    Ttft,
    /// Time per output token after the first.
    Tpot,
    /// End to end, to the last token (`e2e`, or vLLM's `e2el`).
    E2e,
}

impl Figure {
    /// `ttft`, `tpot` or `e2e`.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Ttft => "ttft",
            Figure::Tpot => "tpot",
            Figure::E2e => "e2e",
        }
    }
}

/// One objective: a figure below (or at most) a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Objective {
    /// The figure.
    pub figure: Figure,
    /// The bound.
    pub bound: Duration,
    /// Whether the bound itself passes (`<=`, and vLLM's `ttft:200`) or not (`<`).
    pub inclusive: bool,
}

impl Objective {
    /// Whether `value` meets it.
    pub fn meets(&self, value: Duration) -> bool {
        value < self.bound || (self.inclusive && value == self.bound)
    }
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = if self.inclusive { "<=" } else { "<" };
        let (name, ns) = (self.figure.name(), self.bound.as_nanos());
        // In a unit that reads back exactly (the plan in a result is parsed again).
        match (ns % 1_000_000, ns % 1_000) {
            (0, _) => write!(f, "{name}{op}{}ms", ns / 1_000_000),
            (_, 0) => write!(f, "{name}{op}{}us", ns / 1_000),
            _ => write!(f, "{name}{op}{}ms", ns as f64 / 1e6),
        }
    }
}

/// Goodput's objectives (`--goodput 'ttft<200ms,tpot<50ms'`): a request is good when its
/// stream meets every one. Empty: no goodput is counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Goodput {
    /// The objectives, as given.
    pub objectives: Vec<Objective>,
}

/// A `--goodput` value that does not read, naming the objective at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{objective}`: {reason}")]
pub struct GoodputError {
    /// The objective as written.
    pub objective: String,
    /// What is wrong.
    pub reason: String,
}

impl Goodput {
    /// Whether there are no objectives.
    pub fn is_empty(&self) -> bool {
        self.objectives.is_empty()
    }

    /// Whether a request with these figures (TTFT and end to end from its intended start) is
    /// good: it sent a token (a request with none never is) and meets every objective. A TPOT
    /// objective counts a request of fewer than two tokens as 0, as vLLM does.
    pub fn passes(&self, ttft: Option<Duration>, tpot: Option<Duration>, e2e: Duration) -> bool {
        let Some(ttft) = ttft else {
            return false;
        };
        self.objectives.iter().all(|o| {
            o.meets(match o.figure {
                Figure::Ttft => ttft,
                Figure::Tpot => tpot.unwrap_or(Duration::ZERO),
                Figure::E2e => e2e,
            })
        })
    }
}

impl std::fmt::Display for Goodput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, o) in self.objectives.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{o}")?;
        }
        Ok(())
    }
}

/// Objectives separated by commas, each `FIGURE<DURATION` or `FIGURE<=DURATION` (`ttft`,
/// `tpot`, `e2e`; `200ms`, `1.5s`, `800us`), or vLLM's `FIGURE:MILLISECONDS` (at most, as
/// `vllm bench serve --goodput ttft:200` means). A figure named twice is an error.
impl std::str::FromStr for Goodput {
    type Err = GoodputError;

    fn from_str(s: &str) -> Result<Self, GoodputError> {
        let mut objectives: Vec<Objective> = Vec::new();
        for written in s.split(',').map(str::trim) {
            let err = |reason: String| GoodputError {
                objective: written.to_string(),
                reason,
            };
            if written.is_empty() {
                return Err(err(
                    "an empty objective: expected e.g. ttft<200ms,tpot<50ms".into(),
                ));
            }
            let (name, inclusive, bound) = if let Some(i) = written.find('<') {
                let rest = &written[i + 1..];
                match rest.strip_prefix('=') {
                    Some(b) => (&written[..i], true, duration(b).map_err(err)?),
                    None => (&written[..i], false, duration(rest).map_err(err)?),
                }
            } else if let Some((name, ms)) = written.split_once(':') {
                let bound = ms
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .and_then(|v| nanos(v * 1e6))
                    .ok_or_else(|| {
                        err(format!(
                            "`{ms}` is not milliseconds (vLLM's form, FIGURE:MS)"
                        ))
                    })?;
                (name, true, bound)
            } else {
                return Err(err(
                    "expected FIGURE<DURATION (ttft<200ms), FIGURE<=DURATION or FIGURE:MS".into(),
                ));
            };
            let figure = match name.trim() {
                "ttft" => Figure::Ttft,
                "tpot" => Figure::Tpot,
                "e2e" | "e2el" => Figure::E2e,
                other => {
                    return Err(err(format!(
                        "`{other}` is not a figure goodput bounds: expected ttft, tpot or e2e"
                    )))
                }
            };
            if objectives.iter().any(|o| o.figure == figure) {
                return Err(err(format!("{} is bounded twice", figure.name())));
            }
            objectives.push(Objective {
                figure,
                bound,
                inclusive,
            });
        }
        Ok(Goodput { objectives })
    }
}

impl serde::Serialize for Goodput {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Goodput {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        if text.trim().is_empty() {
            return Ok(Goodput::default());
        }
        text.parse().map_err(serde::de::Error::custom)
    }
}

fn duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let digits = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(digits);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{s}` is not a duration: expected e.g. 200ms"))?;
    let nanos_per = match unit.trim() {
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" => return Err(format!("`{s}` needs a unit: us, ms or s")),
        other => return Err(format!("`{other}` is not a unit: us, ms or s")),
    };
    nanos(value * nanos_per).ok_or_else(|| format!("`{s}` is out of range"))
}

/// A whole number of nanoseconds, rounded (0.05 s is 50 ms exactly, not a nanosecond less).
fn nanos(n: f64) -> Option<Duration> {
    // 2^64 ns is 584 years: anything above is no objective.
    (n.is_finite() && (0.0..1.8e19).contains(&n)).then(|| Duration::from_nanos(n.round() as u64))
}

/// A row's streams: TTFT, ITL, TPOT and end to end (µs) as histograms, output tokens, and
/// goodput, added exactly across workers, shards and machines.
#[derive(Debug, Clone)]
pub struct StreamStats {
    /// Time to first token, from the intended start: of the requests that succeeded, and of
    /// those left waiting (their first token's, or their age if none came).
    pub ttft: Histogram<u64>,
    /// Each gap between two tokens of a request that succeeded.
    pub itl: Histogram<u64>,
    /// Time per output token after the first, of the requests that succeeded with two tokens
    /// or more.
    pub tpot: Histogram<u64>,
    /// End to end, from the intended start to the last token, of the requests that succeeded
    /// with a token.
    pub e2e: Histogram<u64>,
    /// Output tokens a request (not µs), of the requests that succeeded with a token.
    pub tokens: Histogram<u64>,
    /// Requests that succeeded with a stream (a token or not).
    pub requests: u64,
    /// Their output tokens, all together.
    pub output_tokens: u64,
    /// Of them, requests whose tokens the stream counted itself (the server's count).
    pub told: u64,
    /// Of them, requests whose tokens were counted one a part.
    pub counted: u64,
    /// Requests that met every goodput objective (0 without objectives).
    pub good: u64,
}

impl Default for StreamStats {
    fn default() -> Self {
        StreamStats {
            ttft: crate::histogram::new(),
            itl: crate::histogram::new(),
            tpot: crate::histogram::new(),
            e2e: crate::histogram::new(),
            tokens: crate::histogram::new(),
            requests: 0,
            output_tokens: 0,
            told: 0,
            counted: 0,
            good: 0,
        }
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl StreamStats {
    /// Adds a request that succeeded: its record, its parts (the first from the call's start,
    /// then the gaps), `lag` (its actual start less its intended start), judged by `goodput`.
    pub fn record(
        &mut self,
        r: &StreamRecord,
        parts: &[Duration],
        lag: Duration,
        goodput: &Goodput,
    ) {
        self.requests += 1;
        self.output_tokens += r.tokens;
        if r.counted {
            self.counted += 1;
        } else {
            self.told += 1;
        }
        let ttft = r.first.map(|f| f + lag);
        let e2e = r.last + lag;
        let tpot = r.tpot();
        if let Some(ttft) = ttft {
            crate::histogram::record(&mut self.ttft, micros(ttft));
            crate::histogram::record(&mut self.e2e, micros(e2e));
            crate::histogram::record(&mut self.tokens, r.tokens);
        }
        if let Some(tpot) = tpot {
            crate::histogram::record(&mut self.tpot, micros(tpot));
        }
        for gap in parts.iter().skip(1) {
            crate::histogram::record(&mut self.itl, micros(*gap));
        }
        if !goodput.is_empty() && goodput.passes(ttft, tpot, e2e) {
            self.good += 1;
        }
    }

    /// Adds a request left waiting (timed out) at `age` from its intended start: its TTFT is
    /// its first token's, or `age` (a lower bound) if none came.
    pub fn record_waited(&mut self, r: Option<&StreamRecord>, lag: Duration, age: Duration) {
        let ttft = r.and_then(|r| r.first).map_or(age, |f| f + lag);
        crate::histogram::record(&mut self.ttft, micros(ttft));
    }

    /// Adds another row's (exact: histograms add bucket by bucket).
    pub fn add(&mut self, other: &StreamStats) {
        // Same bounds everywhere (histogram::new), so adding cannot fail.
        for (mine, theirs) in [
            (&mut self.ttft, &other.ttft),
            (&mut self.itl, &other.itl),
            (&mut self.tpot, &other.tpot),
            (&mut self.e2e, &other.e2e),
            (&mut self.tokens, &other.tokens),
        ] {
            let _ = mine.add(theirs);
        }
        self.requests += other.requests;
        self.output_tokens += other.output_tokens;
        self.told += other.told;
        self.counted += other.counted;
        self.good += other.good;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn goodput_reads_every_form_and_names_the_objective_at_fault() {
        let g: Goodput = "ttft<200ms, tpot<=50ms".parse().unwrap();
        assert_eq!(g.to_string(), "ttft<200ms,tpot<=50ms");
        assert!(g.passes(Some(ms(199)), Some(ms(50)), ms(900)));
        assert!(!g.passes(Some(ms(200)), Some(ms(10)), ms(900)));
        assert!(!g.passes(None, None, ms(0)), "no token is never good");
        let v: Goodput = "ttft:200,e2el:1500".parse().unwrap();
        assert_eq!(v.to_string(), "ttft<=200ms,e2e<=1500ms");
        assert!(v.passes(Some(ms(200)), None, ms(1500)));
        for (bad, says) in [
            ("", "empty objective"),
            ("ttft<200", "needs a unit"),
            ("ttft<2h", "not a unit"),
            ("itl<5ms", "not a figure goodput bounds"),
            ("ttft<1ms,ttft<2ms", "bounded twice"),
            ("ttft=200ms", "expected FIGURE<DURATION"),
            ("ttft:fast", "not milliseconds"),
        ] {
            let e = bad.parse::<Goodput>().unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        for g in [g, v, "e2e<1.5s,ttft<800us".parse().unwrap()] {
            let json = serde_json::to_string(&g).unwrap();
            assert_eq!(serde_json::from_str::<Goodput>(&json).unwrap(), g);
        }
    }

    #[test]
    fn a_rows_figures_run_from_the_intended_start_and_add_exactly() {
        let g: Goodput = "ttft<30ms,tpot<15ms".parse().unwrap();
        let r = StreamRecord {
            first: Some(ms(20)),
            last: ms(50),
            tokens: 4,
            counted: false,
        };
        assert_eq!(r.tpot(), Some(ms(10)));
        let mut s = StreamStats::default();
        // 5 ms late: TTFT 25 ms (good), e2e 55 ms, gaps of 10 ms.
        s.record(&r, &[ms(20), ms(10), ms(10), ms(10)], ms(5), &g);
        // 15 ms late: TTFT 35 ms, not good.
        s.record(&r, &[ms(20), ms(10), ms(10), ms(10)], ms(15), &g);
        s.record_waited(None, ms(0), ms(900));
        assert_eq!((s.requests, s.output_tokens, s.good, s.told), (2, 8, 1, 2));
        assert_eq!(s.itl.len(), 6);
        assert_eq!(s.ttft.len(), 3);
        assert_eq!(s.ttft.min(), s.ttft.lowest_equivalent(25_000));
        assert_eq!(s.ttft.max(), s.ttft.highest_equivalent(900_000));
        assert_eq!(s.e2e.max(), s.e2e.highest_equivalent(65_000));
        let mut t = StreamStats::default();
        t.add(&s);
        t.add(&s);
        assert_eq!((t.requests, t.good, t.itl.len()), (4, 2, 12));
    }
}
