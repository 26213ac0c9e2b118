//! Thresholds: `p99<250ms`, `error_rate<1%`, `rps>=1000`, or per label `p95{GET /}<10ms`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{LabelResult, RunResult};

/// The statistic a threshold tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A latency quantile (0.5, 0.9, ...), in ms.
    Quantile(u16),
    /// Mean latency, ms.
    Mean,
    /// Minimum latency, ms.
    Min,
    /// Maximum latency, ms.
    Max,
    /// Failed (aborted included) over ended requests.
    ErrorRate,
    /// Successful requests per second.
    Rps,
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A parsed threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// As written.
    pub text: String,
    /// The statistic.
    pub metric: Metric,
    /// A label, or `None` for the TOTAL row.
    pub label: Option<String>,
    /// The comparison.
    pub op: Op,
    /// The limit, in the metric's unit (ms, fraction, or per second).
    pub limit: f64,
}

/// Why a threshold did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("threshold `{text}`: {reason} (write e.g. `p99<250ms`, `error_rate<1%`, `rps>=500`, `p95{{GET /}}<10ms`)")]
pub struct ThresholdError {
    /// As written.
    pub text: String,
    /// What is wrong.
    pub reason: String,
}

/// A threshold's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThresholdResult {
    /// As written.
    pub threshold: String,
    /// The row it tested (`TOTAL` or a label).
    pub label: String,
    /// The observed value, in the threshold's unit; `null` when there was nothing to observe
    /// (no request ended, or none counts in latency), which fails the threshold.
    pub observed: Option<f64>,
    /// Whether it held.
    pub passed: bool,
    /// Why it failed without a value (`observed` is null).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl std::str::FromStr for Threshold {
    type Err = ThresholdError;

    fn from_str(text: &str) -> Result<Self, ThresholdError> {
        let err = |reason: &str| ThresholdError {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let t = text.trim();
        let pos = t
            .find(['<', '>'])
            .ok_or_else(|| err("no comparison (<, <=, >, >=)"))?;
        let (lhs, rest) = t.split_at(pos);
        let (op, value) = if let Some(v) = rest.strip_prefix("<=") {
            (Op::Le, v)
        } else if let Some(v) = rest.strip_prefix(">=") {
            (Op::Ge, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Op::Lt, v)
        } else if let Some(v) = rest.strip_prefix('>') {
            (Op::Gt, v)
        } else {
            return Err(err("no comparison"));
        };
        let lhs = lhs.trim();
        let (name, label) = match lhs.split_once('{') {
            Some((n, l)) => {
                let l = l
                    .strip_suffix('}')
                    .ok_or_else(|| err("a label must be closed with `}`"))?;
                (n.trim(), Some(l.to_string()))
            }
            None => (lhs, None),
        };
        let metric = match name {
            "mean" | "avg" => Metric::Mean,
            "min" => Metric::Min,
            "max" => Metric::Max,
            "error_rate" => Metric::ErrorRate,
            "rps" => Metric::Rps,
            p => {
                let q = p
                    .strip_prefix('p')
                    .ok_or_else(|| err("unknown statistic"))?;
                let q: f64 = q.parse().map_err(|_| err("unknown statistic"))?;
                if !(0.0..100.0).contains(&q) || q == 0.0 {
                    return Err(err("a percentile must be above 0 and below 100"));
                }
                Metric::Quantile((q * 10.0).round() as u16)
            }
        };
        let value = value.trim();
        let limit = match metric {
            Metric::ErrorRate => match value.strip_suffix('%') {
                Some(p) => p.trim().parse::<f64>().map_err(|_| err("bad percentage"))? / 100.0,
                None => value.parse().map_err(|_| err("bad rate"))?,
            },
            Metric::Rps => value.parse().map_err(|_| err("bad number"))?,
            _ => parse_ms(value).ok_or_else(|| err("bad duration (use us, ms, s)"))?,
        };
        Ok(Threshold {
            text: text.to_string(),
            metric,
            label,
            op,
            limit,
        })
    }
}

fn parse_ms(v: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = v.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = v.strip_suffix("µs") {
        (n, 0.001)
    } else if let Some(n) = v.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1000.0)
    } else if let Some(n) = v.strip_suffix('m') {
        (n, 60_000.0)
    } else {
        (v, 1.0)
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| *x >= 0.0)
        .map(|x| x * scale)
}

impl Threshold {
    /// The value this threshold tests in a row, or why there is none.
    ///
    /// Latency statistics are of the requests that succeeded and of those left waiting (timed
    /// out, or cut off at the end at the age they reached), so a hung target cannot pass them;
    /// with no such request there is no value. An error rate needs at least one request that
    /// ended. `rps` counts successful requests only, so fast failures cannot make it.
    pub fn observe(&self, row: &LabelResult) -> Result<f64, &'static str> {
        if row.samples == 0 {
            return Err("no request ended");
        }
        let l = &row.latency;
        let latency = |v: f64| {
            if l.count == 0 {
                Err("no request succeeded or waited for an answer: there is no latency to test")
            } else {
                Ok(v)
            }
        };
        match self.metric {
            Metric::Quantile(500) => latency(l.p50),
            Metric::Quantile(900) => latency(l.p90),
            Metric::Quantile(950) => latency(l.p95),
            Metric::Quantile(990) => latency(l.p99),
            Metric::Quantile(999) => latency(l.p999),
            Metric::Quantile(q) => match throng_core::histogram::decode(&row.latency_hdr) {
                Ok(h) => latency(h.value_at_quantile(f64::from(q) / 1000.0) as f64 / 1000.0),
                Err(_) => Err("the latency histogram does not decode"),
            },
            Metric::Mean => latency(l.mean),
            Metric::Min => latency(l.min),
            Metric::Max => latency(l.max),
            Metric::ErrorRate => Ok(row.error_rate),
            Metric::Rps => Ok(row.ok_per_s),
        }
    }

    /// Tests the threshold against a result; a missing label, or nothing to observe, fails.
    pub fn evaluate(&self, result: &RunResult) -> ThresholdResult {
        let row = match &self.label {
            None => Some(&result.total),
            Some(l) => result.labels.iter().find(|r| &r.label == l),
        };
        let label = self.label.clone().unwrap_or_else(|| "TOTAL".into());
        let observed = match row {
            None => Err("no such label in the result"),
            Some(row) => self.observe(row),
        };
        match observed {
            Ok(v) => ThresholdResult {
                threshold: self.text.clone(),
                label,
                observed: Some(v),
                passed: match self.op {
                    Op::Lt => v < self.limit,
                    Op::Le => v <= self.limit,
                    Op::Gt => v > self.limit,
                    Op::Ge => v >= self.limit,
                },
                reason: None,
            },
            Err(why) => ThresholdResult {
                threshold: self.text.clone(),
                label,
                observed: None,
                passed: false,
                reason: Some(why.to_string()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms() {
        let t: Threshold = "p99<250ms".parse().unwrap();
        assert_eq!(
            (t.metric, t.op, t.limit, t.label),
            (Metric::Quantile(990), Op::Lt, 250.0, None)
        );
        let t: Threshold = "p99.9 <= 1s".parse().unwrap();
        assert_eq!(
            (t.metric, t.op, t.limit),
            (Metric::Quantile(999), Op::Le, 1000.0)
        );
        let t: Threshold = "error_rate<1%".parse().unwrap();
        assert_eq!((t.metric, t.limit), (Metric::ErrorRate, 0.01));
        let t: Threshold = "rps>=500".parse().unwrap();
        assert_eq!((t.metric, t.op, t.limit), (Metric::Rps, Op::Ge, 500.0));
        let t: Threshold = "p95{GET /}<500us".parse().unwrap();
        assert_eq!((t.label.as_deref(), t.limit), (Some("GET /"), 0.5));
    }

    #[test]
    fn rejects_nonsense() {
        for bad in [
            "p99",
            "p99<",
            "q99<1ms",
            "p100<1ms",
            "p99<fast",
            "error_rate<x%",
            "p9{x<1ms",
        ] {
            assert!(bad.parse::<Threshold>().is_err(), "{bad}");
        }
    }
}
