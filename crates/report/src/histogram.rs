//! The latency histogram of the summary, as oha prints one, drawn from the HdrHistogram.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use throng_core::row::ms;

/// Bars between the fastest answer and the p99; the slowest 1% gets one bar of its own, so that
/// one slow outlier does not squeeze everything else into the first bar (oha's bars span min to
/// max, and a single 2 s answer among 1 ms ones leaves one bar).
const BARS: usize = 10;
/// The longest bar, in characters.
const WIDTH: u64 = 40;

/// Ten bars of equal width from the fastest answer to the p99, then one from the p99 to the max,
/// each line the bar's upper bound in ms, its count and a bar sized to the largest; empty for an
/// empty histogram.
pub(crate) fn render_histogram(h: &Histogram<u64>) -> String {
    if h.is_empty() {
        return String::new();
    }
    let (lo, hi, max) = (h.min(), h.value_at_quantile(0.99), h.max());
    let step = (hi.saturating_sub(lo) as f64 / BARS as f64).max(1.0);
    let bars = if hi > lo { BARS } else { 1 };
    // Counts of the bars up to the p99, then of the tail above it.
    let mut counts = vec![0u64; bars + 1];
    for v in h.iter_recorded() {
        let value = v.value_iterated_to();
        let bar = match value > hi {
            true => bars,
            false => (((value.saturating_sub(lo)) as f64 / step).ceil() as usize)
                .saturating_sub(1)
                .min(bars - 1),
        };
        counts[bar] += v.count_at_value();
    }
    let mut bounds: Vec<f64> = (1..=bars)
        .map(|i| match bars {
            1 => hi as f64,
            _ => lo as f64 + step * i as f64,
        })
        .collect();
    bounds.push(max as f64);
    if counts[bars] == 0 {
        counts.pop();
        bounds.pop();
    }
    let most = counts.iter().copied().max().unwrap_or(1).max(1);
    let labels = labels(&bounds);
    let lw = labels.iter().map(String::len).max().unwrap_or(0);
    let cw = counts
        .iter()
        .map(|c| c.to_string().len())
        .max()
        .unwrap_or(0);
    let mut out =
        String::from("Latency histogram (ms, each bar up to its bound; the last the slowest 1%)\n");
    for (i, (label, count)) in labels.iter().zip(&counts).enumerate() {
        let len = match count {
            0 => 0,
            c => (c * WIDTH / most).max(1),
        };
        let bar = "■".repeat(len as usize);
        let tail = if i == bars { "  p99 to max" } else { "" };
        let _ = writeln!(out, "  {label:>lw$} [{count:>cw$}] {bar}{tail}");
    }
    out
}

/// The bounds (µs) as labels in ms, as the summary writes latencies where that tells them all
/// apart; else all with the fewest decimals that do (100 to 113 ms in bars of 1.3 ms read `101`,
/// `101`, `102`, `102` with none). A bound is a microsecond or more above the one before, so
/// three decimals always do.
fn labels(bounds: &[f64]) -> Vec<String> {
    let distinct = |l: &[String]| l.windows(2).all(|w| w[0] != w[1]);
    let plain: Vec<String> = bounds.iter().map(|b| ms(b / 1000.0)).collect();
    if distinct(&plain) {
        return plain;
    }
    let fixed = |d: usize| -> Vec<String> {
        bounds
            .iter()
            .map(|b| format!("{:.d$}", b / 1000.0))
            .collect()
    };
    (1..=3)
        .map(fixed)
        .find(|l| distinct(l))
        .unwrap_or_else(|| fixed(3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_core::histogram::{new, record};

    #[test]
    fn bars_count_every_value_once_and_the_tail_apart() {
        let mut h = new();
        // 1 ms to 10 ms, 100 of each, and one answer of 2 s.
        for ms in 1..=10u64 {
            for _ in 0..100 {
                record(&mut h, ms * 1000);
            }
        }
        record(&mut h, 2_000_000);
        let text = render_histogram(&h);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + BARS + 1, "{text}");
        let counts: Vec<u64> = lines[1..]
            .iter()
            .map(|l| {
                let c = l.split_once('[').unwrap().1.split_once(']').unwrap().0;
                c.trim().parse().unwrap()
            })
            .collect();
        assert_eq!(counts.iter().sum::<u64>(), 1001, "{text}");
        // The p99 is 10 ms: ten bars of 0.9 ms from 1 ms, the 1 ms answers in the first.
        assert_eq!(counts[0], 100, "{text}");
        assert_eq!(counts[BARS], 1, "{text}");
        assert!(lines[BARS + 1].ends_with("[  1] ■  p99 to max"), "{text}");
        assert!(lines[BARS + 1].trim_start().starts_with("200"), "{text}");
        assert!(lines[1].contains(&"■".repeat(40)), "{text}");
        assert!(render_histogram(&new()).is_empty());
    }

    #[test]
    fn every_bound_of_a_narrow_range_reads_differently() {
        let mut h = new();
        // 100 ms to 104 ms and one of 113 ms: bars of 0.4 ms to the p99, which whole
        // milliseconds print twice over (`101`, `101`, `102`, `102`).
        for ms in 100..=104u64 {
            for _ in 0..100 {
                record(&mut h, ms * 1000);
            }
        }
        record(&mut h, 113_000);
        let text = render_histogram(&h);
        let labels: Vec<&str> = text
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(labels.len(), BARS + 1, "{text}");
        for w in labels.windows(2) {
            assert_ne!(w[0], w[1], "{text}");
        }
        assert_eq!(labels[..2], ["100.4", "100.8"], "{text}");
        // Bounds far apart keep the summary's own way of writing them.
        let mut wide = new();
        for ms in [1u64, 50, 150] {
            record(&mut wide, ms * 1000);
        }
        assert!(
            render_histogram(&wide).contains("\n   150 ["),
            "{}",
            render_histogram(&wide)
        );
    }

    #[test]
    fn one_value_is_one_bar() {
        let mut h = new();
        for _ in 0..5 {
            record(&mut h, 1500);
        }
        let text = render_histogram(&h);
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.contains("1.50 [5] ■■■■"), "{text}");
    }
}
