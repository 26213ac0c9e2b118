//! One row of the aggregate table (JMeter's thirteen columns), computed and formatted in one
//! place, so the end-of-run summary and the live dashboard cannot disagree on a number.

use std::time::Duration;

use crate::{per_second, LabelStats, Percentiles};

/// JMeter's aggregate report columns, in its order.
pub const COLUMNS: [&str; 13] = [
    "Label",
    "Samples",
    "Average",
    "Median",
    "90%",
    "95%",
    "99%",
    "Min",
    "Max",
    "Error %",
    "Throughput",
    "Received KB/s",
    "Sent KB/s",
];

/// The numbers of one row: a label, a group of steps, or TOTAL.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The label.
    pub label: String,
    /// Whether it is a group of steps (a flow).
    pub group: bool,
    /// Requests that ended (succeeded, failed or aborted).
    pub samples: u64,
    /// Latency in ms: mean, median, p90, p95, p99, min, max; `None` when no request counts in
    /// latency (all failed fast: a 0 would read as fast).
    pub latency: Option<[f64; 7]>,
    /// Failed fraction of samples.
    pub error_rate: f64,
    /// Samples per second.
    pub throughput: f64,
    /// KiB received per second.
    pub received_kb_per_s: f64,
    /// KiB sent per second.
    pub sent_kb_per_s: f64,
}

impl Row {
    /// The row of `stats` over `elapsed`.
    pub fn of(stats: &LabelStats, elapsed: Duration) -> Row {
        let p = Percentiles::of(&stats.latency);
        let ms = |us: u64| us as f64 / 1000.0;
        Row {
            label: stats.label.clone(),
            group: stats.group,
            samples: stats.samples,
            latency: (p.count > 0).then(|| {
                [
                    p.mean / 1000.0,
                    ms(p.p50),
                    ms(p.p90),
                    ms(p.p95),
                    ms(p.p99),
                    ms(p.min),
                    ms(p.max),
                ]
            }),
            error_rate: stats.error_rate(),
            throughput: per_second(stats.completed(), elapsed),
            received_kb_per_s: per_second(stats.bytes_received, elapsed) / 1024.0,
            sent_kb_per_s: per_second(stats.bytes_sent, elapsed) / 1024.0,
        }
    }

    /// The thirteen cells as text: latencies in ms to three significant figures (`-` when
    /// there is none), the error rate in percent, throughput per second, KB/s.
    pub fn cells(&self) -> [String; 13] {
        let lat = |i: usize| self.latency.map_or_else(|| "-".to_string(), |l| ms(l[i]));
        [
            self.label.clone(),
            self.samples.to_string(),
            lat(0),
            lat(1),
            lat(2),
            lat(3),
            lat(4),
            lat(5),
            lat(6),
            format!("{:.2}%", self.error_rate * 100.0),
            format!("{:.1}/s", self.throughput),
            format!("{:.2}", self.received_kb_per_s),
            format!("{:.2}", self.sent_kb_per_s),
        ]
    }
}

/// Milliseconds to three significant figures: `1.23`, `12.3`, `123`.
pub fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_without_latency_prints_dashes_and_means_are_not_rounded() {
        let mut s = LabelStats::new("get");
        s.samples = 3;
        s.errors = 3;
        let r = Row::of(&s, Duration::from_secs(2));
        assert!(r.latency.is_none());
        let c = r.cells();
        assert_eq!(
            &c[2..9],
            &["-", "-", "-", "-", "-", "-", "-"].map(String::from)
        );
        assert_eq!(c[9], "100.00%");
        s.latency.record(1_500).unwrap();
        s.latency.record(2_001).unwrap();
        let r = Row::of(&s, Duration::from_secs(2));
        // 1750.5 µs: the mean keeps its fraction (the dashboard once rounded it to whole µs).
        assert_eq!(r.latency.unwrap()[0], 1.7505);
        assert_eq!(ms(1.7505), "1.75");
        assert_eq!(ms(12.34), "12.3");
        assert_eq!(ms(123.4), "123");
    }
}
