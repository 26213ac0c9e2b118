//! Regression thresholds: a comparison's figures judged against its baseline, for CI
//! (`p99<+10%`: the p99 of every other side at most 10% above the baseline's).

use std::str::FromStr;

use serde::Serialize;

use crate::{Comparison, Figure};

/// A regression threshold against the baseline: `p99<+10%`, `mean{GET /}<+2ms`,
/// `rps>-5%`, `error_rate<+1%` (percentage points for the error rate).
#[derive(Debug, Clone, PartialEq)]
pub struct Regression {
    /// As written.
    pub text: String,
    figure: Figure,
    label: Option<String>,
    less: bool,
    limit: f64,
    /// Absolute milliseconds (or points) rather than percent of the baseline.
    absolute: bool,
}

/// One regression threshold's outcome for one side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegressionResult {
    /// As written.
    pub threshold: String,
    /// The side judged.
    pub side: String,
    /// The change observed (percent, or ms/points when absolute), if there was one.
    pub observed: Option<f64>,
    /// Whether it held.
    pub passed: bool,
}

impl FromStr for Regression {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let text = s.trim();
        let bad = |why: &str| {
            format!(
                "`{text}`: {why}; write e.g. 'p99<+10%', 'mean{{GET /}}<+2ms', 'rps>-5%', 'error_rate<+1%'"
            )
        };
        let pos = text.find(['<', '>']).ok_or_else(|| bad("no < or >"))?;
        let (lhs, rhs) = (&text[..pos], &text[pos + 1..]);
        let less = text.as_bytes()[pos] == b'<';
        let rhs = rhs.trim_start_matches('=').trim();
        let (name, label) = match lhs.split_once('{') {
            Some((n, rest)) => {
                let l = rest
                    .strip_suffix('}')
                    .ok_or_else(|| bad("the label has no closing }"))?;
                (n.trim(), Some(l.to_string()))
            }
            None => (lhs.trim(), None),
        };
        let figure = Figure::named(name)
            .ok_or_else(|| bad(&format!("unknown figure `{name}` ({})", Figure::NAMES)))?;
        if !rhs.starts_with(['+', '-']) {
            return Err(bad("the limit is a change: give its sign (+10%, -5%)"));
        }
        let (num, absolute) = if let Some(n) = rhs.strip_suffix('%') {
            (n, figure == Figure::ErrorRate)
        } else if let Some(n) = rhs.strip_suffix("ms") {
            if !figure.is_latency() {
                return Err(bad("ms applies to latency figures"));
            }
            (n, true)
        } else {
            return Err(bad("give the limit in % (or ms for a latency)"));
        };
        let limit: f64 = num
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| bad(&format!("`{num}` is not a number")))?;
        Ok(Regression {
            text: text.to_string(),
            figure,
            label,
            less,
            limit,
            absolute,
        })
    }
}

impl Regression {
    /// The label it names, if any (TOTAL otherwise).
    pub fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    /// Judges every side but the baseline.
    pub fn evaluate(&self, c: &Comparison) -> Vec<RegressionResult> {
        let label = self.label.as_deref().unwrap_or(if c.labels.len() == 1 {
            c.labels[0].label.as_str()
        } else {
            "TOTAL"
        });
        let row = c
            .labels
            .iter()
            .find(|l| l.label == label)
            .and_then(|l| l.rows.iter().find(|r| r.figure == self.figure));
        (1..c.names.len())
            .map(|i| {
                let observed = row.and_then(|r| {
                    let (b, x) = (r.cells[0].value?, r.cells[i].value?);
                    if self.absolute {
                        Some(x - b)
                    } else {
                        r.cells[i].change
                    }
                });
                let passed = observed.is_some_and(|o| match self.less {
                    true => o < self.limit,
                    false => o > self.limit,
                });
                RegressionResult {
                    threshold: self.text.clone(),
                    side: c.names[i].clone(),
                    observed,
                    passed,
                }
            })
            .collect()
    }
}
