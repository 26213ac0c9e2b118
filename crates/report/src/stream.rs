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

/// Drops goodput from every row of a result whose plan has no objectives (nothing was judged);
/// warns when it has some but no reply was a stream of tokens (they judged nothing).
pub(crate) fn without_unjudged_goodput(r: &mut RunResult) {
    if !r.plan.goodput.is_empty() {
        if r.total.stream.is_none() && !r.warnings.iter().any(|w| w.starts_with("goodput")) {
            r.warnings.push(format!(
                "goodput's objectives ({}) judged no request: no reply of the run was a stream \
                 of tokens (--llm reads them)",
                r.plan.goodput
            ));
        }
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use throng_core::stream::{Goodput, StreamRecord};
    use throng_core::{ClosedLoop, LoadModel, RunPlan, Snapshot, Users};

    use crate::{compare, Figure, Side};

    use super::*;

    /// A one-label result of 100 requests of 1 ms, the first `streams` of them streams whose
    /// first token came after `ttft` ms, then 9 more 10 ms apart.
    fn result(streams: u64, ttft: u64, goodput: &str) -> RunResult {
        let mut plan = RunPlan::new(
            "http://127.0.0.1:8080/",
            LoadModel::Closed(ClosedLoop {
                users: Users::Fixed(1),
                requests: Some(100),
                iterations: None,
                duration: None,
                think_time: None,
            }),
        );
        plan.goodput = goodput.parse().unwrap_or_default();
        let g: Goodput = plan.goodput.clone();
        let mut s = Snapshot::empty(Arc::new(plan), &["chat".to_string()], 0);
        s.elapsed = Duration::from_secs(2);
        let ms = Duration::from_millis;
        let row = &mut s.labels[0];
        for i in 0..100 {
            histogram::record(&mut row.latency, 1_000);
            row.samples += 1;
            if i < streams {
                let parts: Vec<Duration> = std::iter::once(ms(ttft))
                    .chain((0..9).map(|_| ms(10)))
                    .collect();
                let r = StreamRecord {
                    first: Some(ms(ttft)),
                    last: ms(ttft + 90),
                    tokens: 10,
                    counted: i % 2 == 0,
                };
                row.stream
                    .get_or_insert_default()
                    .record(&r, &parts, Duration::ZERO, &g);
            }
        }
        let r = row.clone();
        s.total.add(&r);
        RunResult::from_snapshot(&s)
    }

    #[test]
    fn a_rows_streams_read_in_the_result_and_its_reports() {
        let r = result(100, 40, "ttft<50ms");
        let s = r.labels[0].stream.as_ref().unwrap();
        assert_eq!((s.requests, s.output_tokens), (100, 1_000));
        assert_eq!(
            (s.tokens_from.as_str(), s.tokens_told, s.tokens_counted),
            ("both", 50, 50)
        );
        assert_eq!(s.tokens_per_s, 500.0);
        assert_eq!(s.tokens.p50, 10);
        let g = s.goodput.as_ref().unwrap();
        assert_eq!((g.good, g.per_s, g.share), (100, 50.0, 1.0));
        let rows = stream_rows(&r);
        assert_eq!(rows[0][0..3], ["Label", "TTFT p50/p99", "ITL p50/p99"]);
        assert_eq!(rows[1][0..3], ["chat", "40.0/40.0", "10.0/10.0"]);
        assert_eq!(rows[1][rows[1].len() - 1], "100.0%");
        let line = stream_line(r.total.stream.as_ref().unwrap());
        assert!(line.contains("ttft 40.0/40.0"), "{line}");
        assert!(line.contains("tokens 1000 (both, 500.0/s)"), "{line}");
        // Without objectives, no goodput anywhere.
        let r = result(100, 40, "");
        assert!(r.labels[0].stream.as_ref().unwrap().goodput.is_none());
        assert!(!stream_rows(&r)[0].contains(&"Goodput/s".to_string()));
        // Objectives with no stream to judge: said.
        let r = result(0, 40, "ttft<50ms");
        assert!(
            r.warnings.iter().any(|w| w.contains("judged no request")),
            "{:?}",
            r.warnings
        );
        // The JSON reads back the same.
        let back: RunResult = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.labels[0].stream, r.labels[0].stream);
    }

    #[test]
    fn a_level_tables_stream_columns_are_its_rows_figures() {
        let row = |r: &RunResult| {
            crate::LevelRow::of_hold(&crate::HoldResult {
                level: crate::Level::Users(1),
                from: 0.0,
                to: 2.0,
                total: r.total.clone(),
            })
        };
        let (judged, plain) = (result(100, 40, "ttft<50ms"), result(100, 40, ""));
        let header = |t: &[Vec<String>]| t[0].clone();
        let narrow = crate::grid::level_table(&[row(&judged)], false, false);
        let at = |name: &str| header(&narrow).iter().position(|h| h == name);
        let cells = [
            "TTFT p50",
            "TTFT p99",
            "ITL p50",
            "ITL p99",
            "Tokens /s",
            "Goodput /s",
        ]
        .map(|c| at(c).map(|i| narrow[1][i].clone()));
        assert_eq!(
            cells.map(Option::unwrap_or_default),
            ["40.03", "40.03", "10.01", "10.01", "500.0", "50.0"].map(String::from)
        );
        assert_eq!(
            at("TPOT p99"),
            None,
            "TPOT and end to end in the full table only"
        );
        let full = crate::grid::level_table(&[row(&judged)], false, true);
        assert!(header(&full).contains(&"E2E p99".to_string()));
        // Without objectives no goodput column; without streams none of them.
        let t = crate::grid::level_table(&[row(&plain)], false, false);
        assert!(!header(&t).contains(&"Goodput /s".to_string()));
        let mut none = plain.clone();
        none.total.stream = None;
        let t = crate::grid::level_table(&[row(&none)], false, true);
        assert!(!header(&t).iter().any(|h| h.starts_with("TTFT")), "{t:?}");
    }

    #[test]
    fn compare_shows_the_streams_figures_when_every_side_has_them() {
        let side = |name: &str, r: RunResult| Side {
            name: name.into(),
            runs: vec![r],
        };
        let c = compare(
            &[
                side("a", result(100, 40, "ttft<50ms")),
                side("b", result(100, 60, "ttft<50ms")),
            ],
            false,
        )
        .unwrap();
        let rows = &c.labels[0].rows;
        let ttft = rows.iter().find(|r| r.figure == Figure::TtftP99).unwrap();
        let (a, b) = (ttft.cells[0].value.unwrap(), ttft.cells[1].value.unwrap());
        assert!(
            (a - 40.0).abs() < 0.05 && (b - 60.0).abs() < 0.05,
            "{a} {b}"
        );
        assert!((ttft.cells[1].change.unwrap() - 50.0).abs() < 0.2);
        let good = rows.iter().find(|r| r.figure == Figure::Goodput).unwrap();
        assert_eq!(
            (good.cells[0].value, good.cells[1].value),
            (Some(50.0), Some(0.0))
        );
        // One side without streams: none of their rows.
        let c = compare(
            &[side("a", result(100, 40, "")), side("b", result(0, 40, ""))],
            false,
        )
        .unwrap();
        assert!(c.labels[0]
            .rows
            .iter()
            .all(|r| !Figure::STREAM.contains(&r.figure)));
        assert_eq!(c.labels[0].rows.len(), Figure::ALL.len());
    }
}
