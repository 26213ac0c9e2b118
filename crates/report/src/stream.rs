//! A row's streams of tokens in the result (TTFT, ITL, TPOT, end to end, output tokens,
//! goodput; see `throng_core::stream`), and as the summary, the Markdown and the HTML reports
//! show them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use throng_core::histogram;
use throng_core::row::ms;
use throng_core::stream::StreamStats;
use throng_core::{per_second, Percentiles};

use crate::{LabelResult, PhaseResult, RunResult, Stats};

/// Goodput of a row: its requests that met every objective of the plan's `goodput`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GoodputResult {
    /// Requests that met every objective.
    pub good: u64,
    /// Of them, per second of the run.
    pub per_s: f64,
    /// `good / samples` of the row (0 to 1): a request that failed, or was dropped, is not good.
    pub share: f64,
}

/// Output tokens a request: its statistics (tokens, not ms) and histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TokensResult {
    /// How many requests (with a token) the figures are of.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Minimum.
    pub min: u64,
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Maximum.
    pub max: u64,
    /// Its histogram (tokens), HdrHistogram V2+DEFLATE, base64.
    pub hdr: String,
}

/// A row's replies streamed in tokens, as `vllm bench serve` defines the figures but from each
/// request's intended start: TTFT and end to end include the open loop's lag.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StreamResult {
    /// Requests that succeeded with a stream.
    pub requests: u64,
    /// Time to first token (ms), of the requests that succeeded and of those left waiting
    /// (their first token's, or the age they reached if none came).
    pub ttft: PhaseResult,
    /// Inter-token latency (ms): each gap between two tokens of a request that succeeded.
    pub itl: PhaseResult,
    /// Time per output token after the first (ms): `(e2e − ttft) / (tokens − 1)`, of the
    /// requests that succeeded with two tokens or more.
    pub tpot: PhaseResult,
    /// End to end (ms): to the last token.
    pub e2e: PhaseResult,
    /// Output tokens a request.
    pub tokens: TokensResult,
    /// Output tokens of every request that succeeded.
    pub output_tokens: u64,
    /// Output tokens per second of the run.
    pub tokens_per_s: f64,
    /// Where the counts came from: `server` (the stream said its own count: an
    /// OpenAI-compatible `usage`), `counted` (one a part), or `both` (some requests each way).
    pub tokens_from: String,
    /// Requests whose stream said its own count.
    pub tokens_told: u64,
    /// Requests whose tokens were counted one a part.
    pub tokens_counted: u64,
    /// Goodput, when the plan has objectives (`goodput`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<GoodputResult>,
}

impl StreamResult {
    /// Each time figure with its name: `ttft`, `itl`, `tpot`, `e2e`.
    pub fn named(&self) -> [(&'static str, &PhaseResult); 4] {
        [
            ("ttft", &self.ttft),
            ("itl", &self.itl),
            ("tpot", &self.tpot),
            ("e2e", &self.e2e),
        ]
    }

    /// A row's streams over `secs` seconds, of `samples` requests; `hdr` encodes a histogram.
    pub(crate) fn of(
        s: &StreamStats,
        samples: u64,
        secs: f64,
        hdr: &mut impl FnMut(&histogram::Histogram<u64>, &str) -> String,
    ) -> Self {
        let d = std::time::Duration::from_secs_f64(secs.max(0.0));
        let mut one = |h: &histogram::Histogram<u64>, what: &str| PhaseResult {
            stats: Stats::from_micros(&Percentiles::of(h)),
            hdr: hdr(h, what),
        };
        let t = Percentiles::of(&s.tokens);
        StreamResult {
            requests: s.requests,
            ttft: one(&s.ttft, "stream.ttft"),
            itl: one(&s.itl, "stream.itl"),
            tpot: one(&s.tpot, "stream.tpot"),
            e2e: one(&s.e2e, "stream.e2e"),
            tokens: TokensResult {
                count: t.count,
                mean: t.mean,
                min: t.min,
                p50: t.p50,
                p99: t.p99,
                max: t.max,
                hdr: hdr(&s.tokens, "stream.tokens"),
            },
            output_tokens: s.output_tokens,
            tokens_per_s: per_second(s.output_tokens, d),
            tokens_from: match (s.told, s.counted) {
                (_, 0) => "server",
                (0, _) => "counted",
                _ => "both",
            }
            .to_string(),
            tokens_told: s.told,
            tokens_counted: s.counted,
            goodput: Some(GoodputResult {
                good: s.good,
                per_s: per_second(s.good, d),
                share: if samples == 0 {
                    0.0
                } else {
                    s.good as f64 / samples as f64
                },
            }),
        }
    }

    /// The engine's statistics again, histograms decoded (for a merge); `h` decodes one.
    pub(crate) fn stats<E>(
        &self,
        h: impl Fn(&str) -> Result<histogram::Histogram<u64>, E>,
    ) -> Result<StreamStats, E> {
        Ok(StreamStats {
            ttft: h(&self.ttft.hdr)?,
            itl: h(&self.itl.hdr)?,
            tpot: h(&self.tpot.hdr)?,
            e2e: h(&self.e2e.hdr)?,
            tokens: h(&self.tokens.hdr)?,
            requests: self.requests,
            output_tokens: self.output_tokens,
            told: self.tokens_told,
            counted: self.tokens_counted,
            good: self.goodput.as_ref().map_or(0, |g| g.good),
        })
    }
}

fn p50_p99(r: &PhaseResult) -> String {
    match r.stats.count {
        0 => "-".to_string(),
        _ => format!("{}/{}", ms(r.stats.p50), ms(r.stats.p99)),
    }
}

/// A row's streams as one line of the summary: each figure's p50 and p99 (ms), tokens and
/// goodput.
pub(crate) fn stream_line(s: &StreamResult) -> String {
    let cells: Vec<String> = s
        .named()
        .iter()
        .map(|(name, r)| format!("{name} {}", p50_p99(r)))
        .collect();
    let mut line = format!(
        "Streams p50/p99 ms   {}   tokens {} ({}, {:.1}/s)",
        cells.join("  "),
        s.output_tokens,
        s.tokens_from,
        s.tokens_per_s
    );
    if let Some(g) = &s.goodput {
        line.push_str(&format!(
            "   goodput {:.1}/s ({:.1}%)",
            g.per_s,
            100.0 * g.share
        ));
    }
    line.push('\n');
    line
}

/// The streams of each row that has them (and TOTAL, when more than one has), header first;
/// empty when no row has any. Goodput's columns only when the plan has objectives.
pub(crate) fn stream_rows(r: &RunResult) -> Vec<Vec<String>> {
    let mut rows: Vec<&LabelResult> = r.labels.iter().filter(|l| l.stream.is_some()).collect();
    if rows.is_empty() {
        return Vec::new();
    }
    if rows.len() > 1 && r.total.stream.is_some() {
        rows.push(&r.total);
    }
    let goodput = rows
        .iter()
        .any(|l| l.stream.as_ref().is_some_and(|s| s.goodput.is_some()));
    let mut header: Vec<String> = vec!["Label".into()];
    header.extend(
        ["TTFT", "ITL", "TPOT", "E2E"]
            .iter()
            .map(|n| format!("{n} p50/p99")),
    );
    header.extend(["Tokens".into(), "Tokens/s".into(), "Counted by".into()]);
    if goodput {
        header.extend(["Goodput/s".into(), "Good".into()]);
    }
    let mut out = vec![header];
    for l in rows {
        let Some(s) = &l.stream else { continue };
        let mut row = vec![l.label.clone()];
        row.extend(s.named().iter().map(|(_, r)| p50_p99(r)));
        row.push(s.output_tokens.to_string());
        row.push(format!("{:.1}", s.tokens_per_s));
        row.push(s.tokens_from.clone());
        if goodput {
            match &s.goodput {
                Some(g) => {
                    row.push(format!("{:.1}", g.per_s));
                    row.push(format!("{:.1}%", 100.0 * g.share));
                }
                None => row.extend(["-".to_string(), "-".to_string()]),
            }
        }
        out.push(row);
    }
    out
}

/// Drops goodput from every row of a result whose plan has no objectives (nothing was judged).
pub(crate) fn without_unjudged_goodput(r: &mut RunResult) {
    if !r.plan.goodput.is_empty() {
        return;
    }
    let rows = r
        .labels
        .iter_mut()
        .chain(std::iter::once(&mut r.total))
        .chain(r.holds.iter_mut().map(|h| &mut h.total));
    for row in rows {
        if let Some(s) = &mut row.stream {
            s.goodput = None;
        }
    }
}
