//! Goodput objectives: `--goodput 'ttft<200ms,tpot<50ms'`, each request passing or not.

use std::time::Duration;

use crate::Figures;

/// A figure an objective bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Time to first token.
    Ttft,
    /// Time per output token after the first.
    Tpot,
    /// End to end (`e2e`, or vLLM's name `e2el`).
    E2e,
}

impl Metric {
    /// `ttft`, `tpot` or `e2e`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft",
            Metric::Tpot => "tpot",
            Metric::E2e => "e2e",
        }
    }
}

/// One objective: a figure below (or at most) a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Objective {
    /// The figure.
    pub metric: Metric,
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
        write!(
            f,
            "{}{op}{}",
            self.metric.name(),
            humantime::format_duration(self.bound)
        )
    }
}

/// Goodput's objectives: a request is good when it meets every one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Goodput {
    /// The objectives, as given.
    pub objectives: Vec<Objective>,
}

/// A `--goodput` value that does not read, naming the objective at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--goodput: `{objective}`: {reason}")]
pub struct GoodputError {
    /// The objective as written.
    pub objective: String,
    /// What is wrong.
    pub reason: String,
}

impl Goodput {
    /// Whether a request with these figures is good: it sent content (a request with no
    /// token is never good) and meets every objective. A TPOT objective counts a request of
    /// fewer than two tokens as 0, as vLLM does.
    pub fn passes(&self, figures: &Figures) -> bool {
        let Some(ttft) = figures.ttft else {
            return false;
        };
        self.objectives.iter().all(|o| {
            let value = match o.metric {
                Metric::Ttft => ttft,
                Metric::Tpot => figures.tpot.unwrap_or(Duration::ZERO),
                Metric::E2e => figures.e2e,
            };
            o.meets(value)
        })
    }
}

/// Objectives separated by commas, each `METRIC<DURATION` or `METRIC<=DURATION` (`ttft`,
/// `tpot`, `e2e`; `200ms`, `1.5s`, `800us`), or vLLM's `METRIC:MILLISECONDS` (at most, as
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
                    Some(b) => (&written[..i], true, parse_duration(b).map_err(err)?),
                    None => (&written[..i], false, parse_duration(rest).map_err(err)?),
                }
            } else if let Some((name, ms)) = written.split_once(':') {
                let bound = ms
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .and_then(|v| nanos(v * 1e6))
                    .ok_or_else(|| {
                        err(format!(
                            "`{ms}` is not milliseconds (vLLM's form, METRIC:MS)"
                        ))
                    })?;
                (name, true, bound)
            } else {
                return Err(err(
                    "expected METRIC<DURATION (ttft<200ms), METRIC<=DURATION or METRIC:MS".into(),
                ));
            };
            let metric = match name.trim() {
                "ttft" => Metric::Ttft,
                "tpot" => Metric::Tpot,
                "e2e" | "e2el" => Metric::E2e,
                other => {
                    return Err(err(format!(
                        "`{other}` is not a figure goodput bounds: expected ttft, tpot or e2e"
                    )))
                }
            };
            if objectives.iter().any(|o| o.metric == metric) {
                return Err(err(format!("{} is bounded twice", metric.name())));
            }
            objectives.push(Objective {
                metric,
                bound,
                inclusive,
            });
        }
        Ok(Goodput { objectives })
    }
}

fn parse_duration(s: &str) -> Result<Duration, String> {
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
