//! Thresholds: `p99<250ms`, `error_rate<1%`, `rps>=1000`, `dropped<1`, or per label
//! `p95{GET /}<10ms`; a phase's time as a latency (`wait_p99<50ms`, `tls_mean{GET /}<5ms`), and
//! so a stream's figures (`ttft_p99<300ms`, `itl_p99{chat}<80ms`, `tpot_mean<50ms`, `e2e_max<5s`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{LabelResult, RunResult};

/// The statistic a threshold tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A latency percentile in thousandths of a percent (`p99.9` is 99 900), in ms. Three
    /// decimals are the most a threshold may write: finer quantiles are noise at any sample count
    /// a run reaches, and the unit keeps the value exact (no float rounds `p99.99` up to p100).
    Quantile(u32),
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
    /// Open-loop arrivals dropped, never sent (k6's `dropped_iterations`): a count.
    Dropped,
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
    /// The limit, in the metric's unit (ms, fraction, per second, or a count).
    pub limit: f64,
    /// The phase whose time a latency statistic tests (`wait_p99`: `wait`; see
    /// `throng_core::phase`), or the stream's figure (`ttft_p99`: `ttft`; see
    /// `throng_core::stream`), or `None` for the requests' latency.
    pub phase: Option<&'static str>,
}

/// The phases a threshold may name before a latency statistic, as the result names them.
const PHASES: [&str; 6] = ["blocked", "connect", "tls", "send", "wait", "receive"];

/// The figures of a stream of tokens a threshold may name the same way, as the result names them.
const STREAM: [&str; 4] = ["ttft", "itl", "tpot", "e2e"];

/// The forms, for messages that cannot point at one part.
const FORMS: &str = "write e.g. `p99<250ms`, `error_rate<1%`, `rps>=500`, `p95{GET /}<10ms`";

/// Why a threshold did not parse. The message starts at the threshold as written: its place
/// goes before it (`--threshold`, `--until`, `x.yaml:4:5: threshold`), so the word is not said
/// twice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}`: {reason}")]
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
        let err = |reason: String| ThresholdError {
            text: text.to_string(),
            reason,
        };
        let t = text.trim();
        let (lhs, rest) = split_comparison(t).ok_or_else(|| {
            err(format!(
                "no comparison (<, <=, > or >=) after the statistic; {FORMS}"
            ))
        })?;
        let op_len = rest
            .find(|c| !matches!(c, '<' | '>' | '=' | '!'))
            .unwrap_or(rest.len());
        let (op_text, value) = rest.split_at(op_len);
        let op = match op_text {
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            other => {
                return Err(err(format!(
                    "`{other}` is not a comparison: write <, <=, > or >="
                )))
            }
        };
        let (name, label) = match lhs.trim().split_once('{') {
            Some((n, l)) => {
                let l = l
                    .strip_suffix('}')
                    .ok_or_else(|| err("a label must be closed with `}`".into()))?;
                if l.trim().is_empty() {
                    return Err(err(
                        "the label between `{` and `}` is empty: name a step or group, or leave out the braces"
                            .into(),
                    ));
                }
                (n.trim(), Some(l.to_string()))
            }
            None => (lhs.trim(), None),
        };
        // `wait_p99`: a phase's time, tested as a latency.
        let (phase, name) = match name.split_once('_') {
            Some((p, stat)) => match PHASES.iter().chain(&STREAM).find(|x| **x == p) {
                Some(p) => (Some(*p), stat),
                None => (None, name),
            },
            None => (None, name),
        };
        let metric = match name {
            "mean" | "avg" => Metric::Mean,
            "min" => Metric::Min,
            "max" => Metric::Max,
            "error_rate" => Metric::ErrorRate,
            "rps" => Metric::Rps,
            "dropped" => Metric::Dropped,
            p => Metric::Quantile(percentile(p).map_err(err)?),
        };
        if phase.is_some() && matches!(metric, Metric::ErrorRate | Metric::Rps | Metric::Dropped) {
            return Err(err(format!(
                "a phase or a stream's figure has a time, not `{name}`: write e.g. wait_p99<50ms, \
                 ttft_p99<300ms"
            )));
        }
        let value = value.trim();
        if value.is_empty() {
            return Err(err(format!("no limit after `{op_text}`")));
        }
        let limit = match metric {
            Metric::ErrorRate => error_rate(value),
            Metric::Rps => match number(value) {
                Some(x) if x >= 0.0 => Ok(x),
                Some(_) => Err("a rate is zero or more requests per second".into()),
                None => Err(format!("`{value}` is not a number of requests per second")),
            },
            Metric::Dropped => match number(value) {
                Some(x) if x >= 0.0 => Ok(x),
                Some(_) => Err("a count of dropped arrivals is zero or more".into()),
                None => Err(format!(
                    "`{value}` is not a count of arrivals: write e.g. dropped<1"
                )),
            },
            _ => latency_ms(value),
        }
        .map_err(err)?;
        Ok(Threshold {
            text: text.to_string(),
            metric,
            label,
            op,
            limit,
            phase,
        })
    }
}

/// Splits `p95{GET /a?x=1} <= 10ms` before its comparison. A label may hold `<`, `>` or `=`
/// (paths with queries do), so with braces the comparison is looked for after the `}` that is
/// followed by one.
fn split_comparison(t: &str) -> Option<(&str, &str)> {
    let is_op = |c: char| matches!(c, '<' | '>' | '=' | '!');
    let search_from = match t.find('{') {
        Some(open) => t[open..]
            .match_indices('}')
            .map(|(i, _)| open + i + 1)
            .find(|&end| t[end..].trim_start().starts_with(is_op))
            .unwrap_or(open),
        None => 0,
    };
    let pos = search_from + t[search_from..].find(is_op)?;
    Some((&t[..pos], &t[pos..]))
}

/// `p99.9` in thousandths of a percent.
fn percentile(name: &str) -> Result<u32, String> {
    let unknown = || {
        format!(
            "unknown statistic `{name}` (use p50, p99.9 or any percentile, mean, avg, min, max, \
             error_rate, rps, dropped)"
        )
    };
    let q = name.strip_prefix('p').ok_or_else(unknown)?;
    let (int, frac) = q.split_once('.').unwrap_or((q, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) || (q.ends_with('.')) {
        return Err(unknown());
    }
    if frac.len() > 3 {
        return Err(format!(
            "`{name}` is finer than a threshold can use: at most three decimals, e.g. p99.999"
        ));
    }
    let int: u32 = match int.parse() {
        Ok(i) if i <= 100 => i,
        _ => return Err(format!("`{name}`: a percentile is between 0 and 100")),
    };
    let frac: u32 = format!("{frac:0<3}").parse().map_err(|_| unknown())?;
    match int * 1000 + frac {
        0 => Err(format!("`{name}` is the minimum: write `min`")),
        100_000 => Err(format!("`{name}` is the maximum: write `max`")),
        q if q > 100_000 => Err(format!("`{name}`: a percentile is between 0 and 100")),
        q => Ok(q),
    }
}

/// A finite number (Rust's parser alone would take `inf` and `NaN`).
fn number(v: &str) -> Option<f64> {
    v.trim().parse::<f64>().ok().filter(|x| x.is_finite())
}

/// `1%` or `0.01`, as a fraction from 0 to 1.
fn error_rate(v: &str) -> Result<f64, String> {
    match v.strip_suffix('%') {
        Some(p) => match number(p) {
            Some(x) if (0.0..=100.0).contains(&x) => Ok(x / 100.0),
            Some(_) => Err(format!("`{v}`: an error rate is from 0% to 100%")),
            None => Err(format!("`{v}` is not a percentage")),
        },
        None => match number(v) {
            Some(x) if (0.0..=1.0).contains(&x) => Ok(x),
            Some(x) if x > 1.0 && x <= 100.0 => Err(format!(
                "`{v}`: a rate without % is a fraction from 0 to 1; write {v}% or {}",
                x / 100.0
            )),
            Some(_) => Err(format!(
                "`{v}`: an error rate is from 0% to 100% (or a fraction from 0 to 1)"
            )),
            None => Err(format!("`{v}` is not a rate: write e.g. 1% or 0.01")),
        },
    }
}

/// A latency with its unit (`us`, `µs`, `ms`, `s`, `m`), in ms.
fn latency_ms(v: &str) -> Result<f64, String> {
    let units = [
        ("us", 0.001),
        ("µs", 0.001),
        ("ms", 1.0),
        ("s", 1000.0),
        ("m", 60_000.0),
    ];
    let Some((num, scale)) = units
        .iter()
        .find_map(|(u, scale)| v.strip_suffix(u).map(|n| (n, *scale)))
    else {
        return Err(match number(v) {
            Some(x) => format!("`{v}` has no unit: write {x}ms (or us, s, m)"),
            None => format!("`{v}` is not a latency: write e.g. 250ms, 500us, 1.5s"),
        });
    };
    match number(num) {
        Some(x) if x >= 0.0 => Ok(x * scale),
        Some(_) => Err(format!("`{v}`: a latency cannot be negative")),
        None => Err(format!(
            "`{v}` is not a latency: write e.g. 250ms, 500us, 1.5s"
        )),
    }
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
        let (l, hdr) = match self.phase {
            None => (&row.latency, &row.latency_hdr),
            Some(figure) if STREAM.contains(&figure) => {
                let Some(s) = &row.stream else {
                    return Err("this row's replies are not streams of tokens");
                };
                let r = s.named().into_iter().find(|(n, _)| *n == figure);
                let Some((_, r)) = r else {
                    return Err("no such figure");
                };
                if r.stats.count == 0 {
                    return Err("no request of this row had this figure");
                }
                (&r.stats, &r.hdr)
            }
            Some(phase) => {
                let Some(p) = &row.phases else {
                    return Err("this row's requests time no phases (their protocol does not)");
                };
                let r = p
                    .named()
                    .into_iter()
                    .find(|(n, _)| *n == phase)
                    .map(|(_, r)| r);
                let Some(r) = r else {
                    return Err("no such phase");
                };
                if r.stats.count == 0 {
                    return Err("no request of this row had this phase");
                }
                (&r.stats, &r.hdr)
            }
        };
        let latency = |v: f64| {
            if l.count == 0 {
                Err("no request succeeded or waited for an answer: there is no latency to test")
            } else {
                Ok(v)
            }
        };
        match self.metric {
            Metric::Quantile(50_000) => latency(l.p50),
            Metric::Quantile(90_000) => latency(l.p90),
            Metric::Quantile(95_000) => latency(l.p95),
            Metric::Quantile(99_000) => latency(l.p99),
            Metric::Quantile(99_900) => latency(l.p999),
            Metric::Quantile(q) => match throng_core::histogram::decode(hdr) {
                Ok(h) => latency(h.value_at_quantile(f64::from(q) / 100_000.0) as f64 / 1000.0),
                Err(_) => Err("the latency histogram does not decode"),
            },
            Metric::Mean => latency(l.mean),
            Metric::Min => latency(l.min),
            Metric::Max => latency(l.max),
            Metric::ErrorRate => Ok(row.error_rate),
            Metric::Rps => Ok(row.ok_per_s),
            Metric::Dropped => Ok(row.dropped as f64),
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
    fn a_phase_is_tested_as_a_latency_of_the_rows_that_time_it() {
        let t: Threshold = "wait_p99{GET /}<50ms".parse().unwrap();
        assert_eq!(
            (t.phase, t.metric, t.label.as_deref(), t.limit),
            (Some("wait"), Metric::Quantile(99_000), Some("GET /"), 50.0)
        );
        let t: Threshold = "tls_mean<5ms".parse().unwrap();
        assert_eq!((t.phase, t.metric), (Some("tls"), Metric::Mean));
        let t: Threshold = "error_rate<1%".parse().unwrap();
        assert_eq!(t.phase, None, "error is no phase");
        let e = "wait_error_rate<1%"
            .parse::<Threshold>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("has a time, not `error_rate`"), "{e}");
        // Observed from the row's phases: 100 waits of 1..=100 ms, no TLS.
        let mut s = throng_core::LabelStats::new("GET /");
        let mut p = throng_core::PhaseStats::default();
        for ms in 1..=100u64 {
            let mut one = throng_core::Phases::on(throng_core::Connection::Reused);
            one.set(
                throng_core::Phase::Wait,
                std::time::Duration::from_millis(ms),
            );
            p.record(&one, None);
        }
        s.phases = Some(Box::new(p));
        s.samples = 100;
        let row = LabelResult::from_stats(&s, 1.0);
        let got = |t: &str| t.parse::<Threshold>().unwrap().observe(&row);
        assert_eq!(got("wait_p50<1s"), Ok(50.015));
        assert_eq!(got("wait_max<1s"), Ok(100.031));
        assert!(got("wait_p99.99<1s").unwrap() >= 100.0);
        assert_eq!(
            got("tls_p99<1s"),
            Err("no request of this row had this phase")
        );
        let mut plain = row.clone();
        plain.phases = None;
        let e = "wait_p99<1s".parse::<Threshold>().unwrap().observe(&plain);
        assert!(e.unwrap_err().contains("time no phases"));
    }

    #[test]
    fn a_streams_figures_are_tested_as_latencies_of_the_rows_that_stream() {
        use std::time::Duration;
        use throng_core::stream::{Goodput, StreamRecord, StreamStats};
        let t: Threshold = "itl_p99{chat}<80ms".parse().unwrap();
        assert_eq!(
            (t.phase, t.metric, t.label.as_deref(), t.limit),
            (Some("itl"), Metric::Quantile(99_000), Some("chat"), 80.0)
        );
        let e = "ttft_rps>1".parse::<Threshold>().unwrap_err().to_string();
        assert!(e.contains("ttft_p99<300ms"), "{e}");
        // 100 requests: TTFT 1..=100 ms, three tokens 10 ms apart.
        let mut st = StreamStats::default();
        let ms = Duration::from_millis;
        for i in 1..=100u64 {
            let r = StreamRecord {
                first: Some(ms(i)),
                last: ms(i + 20),
                tokens: 3,
                counted: true,
            };
            st.record(
                &r,
                &[ms(i), ms(10), ms(10)],
                Duration::ZERO,
                &Goodput::default(),
            );
        }
        let mut s = throng_core::LabelStats::new("chat");
        s.stream = Some(Box::new(st));
        s.samples = 100;
        let row = LabelResult::from_stats(&s, 1.0);
        let got = |t: &str| t.parse::<Threshold>().unwrap().observe(&row);
        assert_eq!(got("ttft_p50<1s"), Ok(50.015));
        assert_eq!(got("itl_p99<1s"), Ok(10.007));
        assert_eq!(got("tpot_max<1s"), Ok(10.007));
        assert_eq!(got("e2e_min<1s"), Ok(20.992));
        let mut plain = row.clone();
        plain.stream = None;
        let e = "ttft_p99<1s".parse::<Threshold>().unwrap().observe(&plain);
        assert_eq!(e, Err("this row's replies are not streams of tokens"));
    }

    #[test]
    fn parses_the_forms() {
        let t: Threshold = "p99<250ms".parse().unwrap();
        assert_eq!(
            (t.metric, t.op, t.limit, t.label),
            (Metric::Quantile(99_000), Op::Lt, 250.0, None)
        );
        let t: Threshold = "p99.9 <= 1s".parse().unwrap();
        assert_eq!(
            (t.metric, t.op, t.limit),
            (Metric::Quantile(99_900), Op::Le, 1000.0)
        );
        let t: Threshold = "error_rate<1%".parse().unwrap();
        assert_eq!((t.metric, t.limit), (Metric::ErrorRate, 0.01));
        let t: Threshold = "rps>=500".parse().unwrap();
        assert_eq!((t.metric, t.op, t.limit), (Metric::Rps, Op::Ge, 500.0));
        let t: Threshold = "p95{GET /}<500us".parse().unwrap();
        assert_eq!((t.label.as_deref(), t.limit), (Some("GET /"), 0.5));
        let t: Threshold = "error_rate<0.01".parse().unwrap();
        assert_eq!((t.metric, t.limit), (Metric::ErrorRate, 0.01));
        let t: Threshold = "dropped<1".parse().unwrap();
        assert_eq!((t.metric, t.op, t.limit), (Metric::Dropped, Op::Lt, 1.0));
        let e = "dropped<-1".parse::<Threshold>().unwrap_err().to_string();
        assert!(e.contains("zero or more"), "{e}");
        for (text, metric) in [
            ("mean<1ms", Metric::Mean),
            ("avg<1ms", Metric::Mean),
            ("min<1ms", Metric::Min),
            ("max<1ms", Metric::Max),
            ("p50<1ms", Metric::Quantile(50_000)),
            ("p0.1<1ms", Metric::Quantile(100)),
            ("p99.99<1ms", Metric::Quantile(99_990)),
            ("p99.999<1ms", Metric::Quantile(99_999)),
        ] {
            assert_eq!(text.parse::<Threshold>().unwrap().metric, metric, "{text}");
        }
        let t: Threshold = " p95{GET /a?x=1&y<2} >= 2m ".parse().unwrap();
        assert_eq!(
            (t.label.as_deref(), t.op, t.limit),
            (Some("GET /a?x=1&y<2"), Op::Ge, 120_000.0)
        );
    }

    fn reason(text: &str) -> String {
        match text.parse::<Threshold>() {
            Ok(t) => panic!("{text}: accepted as {t:?}"),
            Err(e) => e.reason,
        }
    }

    #[test]
    fn refuses_limits_out_of_range_with_the_reason() {
        for (text, want) in [
            (
                "error_rate<200%",
                "`200%`: an error rate is from 0% to 100%",
            ),
            ("error_rate<-1%", "`-1%`: an error rate is from 0% to 100%"),
            (
                "error_rate<-0.5",
                "`-0.5`: an error rate is from 0% to 100% (or a fraction from 0 to 1)",
            ),
            (
                "error_rate<5",
                "`5`: a rate without % is a fraction from 0 to 1; write 5% or 0.05",
            ),
            ("error_rate<NaN%", "`NaN%` is not a percentage"),
            ("rps>=-5", "a rate is zero or more requests per second"),
            ("rps>=inf", "`inf` is not a number of requests per second"),
            ("p99<250", "`250` has no unit: write 250ms (or us, s, m)"),
            ("p99<-1ms", "`-1ms`: a latency cannot be negative"),
            (
                "p99<infms",
                "`infms` is not a latency: write e.g. 250ms, 500us, 1.5s",
            ),
            (
                "p99<1e400ms",
                "`1e400ms` is not a latency: write e.g. 250ms, 500us, 1.5s",
            ),
        ] {
            assert_eq!(reason(text), want, "{text}");
        }
    }

    #[test]
    fn refuses_percentiles_outside_the_open_range() {
        for (text, want) in [
            ("p0<1ms", "`p0` is the minimum: write `min`"),
            ("p0.000<1ms", "`p0.000` is the minimum: write `min`"),
            ("p100<1ms", "`p100` is the maximum: write `max`"),
            ("p100.5<1ms", "`p100.5`: a percentile is between 0 and 100"),
            ("p1000<1ms", "`p1000`: a percentile is between 0 and 100"),
            (
                "p99.99999<1ms",
                "`p99.99999` is finer than a threshold can use: at most three decimals, e.g. p99.999",
            ),
        ] {
            assert_eq!(reason(text), want, "{text}");
        }
        for unknown in [
            "p<1ms", "p.5<1ms", "p99.<1ms", "p-5<1ms", "p9e1<1ms", "P99<1ms",
        ] {
            assert!(
                reason(unknown).starts_with("unknown statistic"),
                "{unknown}"
            );
        }
    }

    #[test]
    fn refuses_malformed_comparisons_and_labels() {
        for (text, want) in [
            ("p99<<1ms", "`<<` is not a comparison: write <, <=, > or >="),
            ("p99=<1ms", "`=<` is not a comparison: write <, <=, > or >="),
            ("p99==1ms", "`==` is not a comparison: write <, <=, > or >="),
            ("p99!=1ms", "`!=` is not a comparison: write <, <=, > or >="),
            ("p99=1ms", "`=` is not a comparison: write <, <=, > or >="),
            (
                "p95{}<1ms",
                "the label between `{` and `}` is empty: name a step or group, or leave out the braces",
            ),
            ("p95{ }<1ms", "the label between `{` and `}` is empty: name a step or group, or leave out the braces"),
            ("p99<", "no limit after `<`"),
        ] {
            assert_eq!(reason(text), want, "{text}");
        }
        assert!(reason("p99").starts_with("no comparison"));
        assert!(reason("").starts_with("no comparison"));
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
