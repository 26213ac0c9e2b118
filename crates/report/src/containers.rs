//! The target's containers in the result: resource use at idle and under load, from the
//! monitor's readings (one a second), and the summary table of each container.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use throng_core::{ContainerSample, ContainerSeries};

/// CPU and memory over a set of readings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// Readings summarised.
    pub samples: usize,
    /// Seconds from the first reading to the last.
    pub span: f64,
    /// Mean CPU use, percent of one core (250 = two and a half cores).
    pub cpu_mean: f64,
    /// 95th percentile of CPU use (nearest rank), percent of one core.
    pub cpu_p95: f64,
    /// Highest CPU use, percent of one core.
    pub cpu_max: f64,
    /// Mean memory used (usage minus inactive page cache, as `docker stats`), bytes.
    pub mem_mean: u64,
    /// Highest memory used, bytes.
    pub mem_max: u64,
}

impl Usage {
    /// The usage over `samples`; `None` when there are none.
    pub fn of(samples: &[ContainerSample]) -> Option<Self> {
        let n = samples.len();
        let (first, last) = (samples.first()?, samples.last()?);
        let mut cpu: Vec<f64> = samples.iter().map(|s| s.cpu_percent).collect();
        cpu.sort_by(f64::total_cmp);
        let rank = ((0.95 * n as f64).ceil() as usize).clamp(1, n);
        Some(Usage {
            samples: n,
            span: last.t - first.t,
            cpu_mean: cpu.iter().sum::<f64>() / n as f64,
            cpu_p95: cpu[rank - 1],
            cpu_max: cpu[n - 1],
            mem_mean: (samples.iter().map(|s| s.mem_used as u128).sum::<u128>() / n as u128) as u64,
            mem_max: samples.iter().map(|s| s.mem_used).max().unwrap_or(0),
        })
    }
}

/// One watched container.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContainerResult {
    /// The container's name.
    pub name: String,
    /// Its full id.
    pub id: String,
    /// The image reference it runs.
    pub image: String,
    /// The image's size, bytes.
    pub image_size: u64,
    /// Readings before the load started (`--idle`, or at least the first reading).
    pub idle: Option<Usage>,
    /// Readings while the load ran.
    pub load: Option<Usage>,
    /// Readings after the load, with none following: in a grid (a sweep, rounds, A/B sides),
    /// taken once after its last run and kept in each side's last run. The idle readings of a
    /// grid's later runs follow a load, so only its first run of a side has `idle`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_after: Option<Usage>,
    /// The memory limit (the host's memory when the container has none), bytes.
    pub mem_limit: u64,
    /// Network bytes received during the load, all interfaces.
    pub net_rx: u64,
    /// Network bytes sent during the load.
    pub net_tx: u64,
    /// Block device bytes read during the load.
    pub blk_read: u64,
    /// Block device bytes written during the load.
    pub blk_write: u64,
    /// Most processes and threads seen during the load.
    pub pids: u64,
    /// Why sampling stopped before the end of the run (the container stopped or vanished).
    pub gone: Option<String>,
    /// Every reading, idle ones first (negative `t`: seconds before the load started).
    pub samples: Vec<ContainerSample>,
}

impl ContainerResult {
    /// The result of one container's readings.
    pub fn from_series(c: &ContainerSeries) -> Self {
        let split = c.samples.partition_point(|s| s.t < 0.0);
        let (idle, load) = c.samples.split_at(split);
        // Totals over the run count from the last reading before the load (or the first one).
        let base = idle.last().or(load.first()).copied().unwrap_or_default();
        let end = c.samples.last().copied().unwrap_or_default();
        ContainerResult {
            name: c.info.name.clone(),
            id: c.info.id.clone(),
            image: c.info.image.clone(),
            image_size: c.info.image_size,
            idle: Usage::of(idle),
            load: Usage::of(load),
            idle_after: None,
            mem_limit: end.mem_limit,
            net_rx: end.net_rx.saturating_sub(base.net_rx),
            net_tx: end.net_tx.saturating_sub(base.net_tx),
            blk_read: end.blk_read.saturating_sub(base.blk_read),
            blk_write: end.blk_write.saturating_sub(base.blk_write),
            pids: load.iter().map(|s| s.pids).max().unwrap_or(end.pids),
            gone: c.info.gone.clone(),
            samples: c.samples.clone(),
        }
    }
}

/// Bytes in binary units, as `docker stats` prints them (`1.438MiB`, `23.54GiB`).
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{n}B"),
        _ => format!("{v:.2}{}", UNITS[unit]),
    }
}

/// An image size as `docker images` prints it: decimal units (`kB`, `MB`, `GB`: powers of 1000)
/// and three significant figures in Go's `%.3g` (docker's `units.HumanSizeWithPrecision(size,
/// 3)`), so `88172544` is `88.2MB`, `84000000` is `84MB`, and `999999` is `1e+03kB` as docker has
/// it. A size the user compares with `docker images` must read the same.
pub(crate) fn image_size(n: u64) -> String {
    const UNITS: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1000.0 && unit < UNITS.len() - 1 {
        v /= 1000.0;
        unit += 1;
    }
    format!("{}{}", go_g3(v), UNITS[unit])
}

/// Go's `%.3g` of a non-negative number: three significant figures, trailing zeros dropped, and
/// the exponent form (`1e+03`) when rounding carries to a fourth digit.
fn go_g3(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    // "d.dde±x": the rounded mantissa and its exponent, as %g decides with.
    let sci = format!("{v:.2e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: String| -> String {
        match s.contains('.') {
            true => s.trim_end_matches('0').trim_end_matches('.').to_string(),
            false => s,
        }
    };
    if !(-4..3).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa.to_string()), exp.abs())
    } else {
        let decimals = (2 - exp).max(0) as usize;
        trim(format!("{v:.decimals$}"))
    }
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// One table per watched container: CPU and memory at idle and under load, then the totals.
pub fn render_containers(containers: &[ContainerResult]) -> String {
    let mut out = String::new();
    for c in containers {
        let _ = writeln!(
            out,
            "\nContainer {} ({})   image {} ({})",
            c.name,
            short(&c.id),
            c.image,
            image_size(c.image_size)
        );
        let header = [
            "",
            "Samples",
            "CPU % mean",
            "p95",
            "max",
            "Mem mean",
            "max",
            "limit",
        ];
        let mut rows = vec![header.map(String::from)];
        let mut phases = vec![("idle", &c.idle), ("under load", &c.load)];
        if c.idle_after.is_some() {
            phases.push(("idle after load", &c.idle_after));
        }
        for (label, u) in phases {
            let row = match u {
                Some(u) => [
                    label.to_string(),
                    u.samples.to_string(),
                    format!("{:.2}", u.cpu_mean),
                    format!("{:.2}", u.cpu_p95),
                    format!("{:.2}", u.cpu_max),
                    bytes(u.mem_mean),
                    bytes(u.mem_max),
                    bytes(c.mem_limit),
                ],
                None => [label, "0", "-", "-", "-", "-", "-", "-"].map(String::from),
            };
            rows.push(row);
        }
        let widths: Vec<usize> = (0..8)
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        for r in &rows {
            let mut line = format!("  {:<w$}", r[0], w = widths[0]);
            for (cell, w) in r.iter().zip(&widths).skip(1) {
                let _ = write!(line, "  {cell:>w$}");
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
        let _ = writeln!(
            out,
            "  Network rx {} tx {}   Block read {} write {}   PIDs {}",
            bytes(c.net_rx),
            bytes(c.net_tx),
            bytes(c.blk_read),
            bytes(c.blk_write),
            c.pids
        );
        if let Some(why) = &c.gone {
            let _ = writeln!(out, "  sampling stopped during the run: {why}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_core::ContainerInfo;

    fn reading(t: f64, cpu: f64, mem: u64, rx: u64) -> ContainerSample {
        ContainerSample {
            t,
            cpu_percent: cpu,
            mem_used: mem,
            mem_limit: 1 << 30,
            net_rx: rx,
            net_tx: rx / 2,
            pids: 3,
            ..ContainerSample::default()
        }
    }

    fn series() -> ContainerSeries {
        let mut samples = vec![reading(-2.0, 0.5, 100, 1000), reading(-1.0, 1.5, 300, 2000)];
        // Under load: CPU 10, 20, ..., 200 %.
        samples
            .extend((1..=20).map(|i| reading(i as f64, 10.0 * i as f64, 1000 + i, 2000 + 500 * i)));
        ContainerSeries {
            info: ContainerInfo {
                id: "0123456789abcdef".into(),
                name: "web".into(),
                image: "web:1".into(),
                image_size: 12 << 20,
                gone: Some("exited (code 137)".into()),
            },
            samples,
        }
    }

    #[test]
    fn image_sizes_read_as_docker_images_prints_them() {
        // Up to 88172544: read off `docker images` (Docker 28.2 CLI) for a FROM-scratch image of
        // exactly that many bytes; the gigabyte sizes follow the same %.3g rule.
        for (bytes, docker) in [
            (0, "0B"),
            (999, "999B"),
            (1_000, "1kB"),
            (1_234, "1.23kB"),
            (999_999, "1e+03kB"),
            (12_345_678, "12.3MB"),
            (12 << 20, "12.6MB"),
            (84_000_000, "84MB"),
            (88_172_544, "88.2MB"),
            (1_500_000_000, "1.5GB"),
            (123_456_789_012, "123GB"),
        ] {
            assert_eq!(image_size(bytes), docker, "{bytes} bytes");
        }
    }

    #[test]
    fn idle_and_load_are_split_at_the_start_of_the_load() {
        let r = ContainerResult::from_series(&series());
        let idle = r.idle.as_ref().expect("idle readings");
        assert_eq!(
            (idle.samples, idle.cpu_mean, idle.mem_mean, idle.mem_max),
            (2, 1.0, 200, 300)
        );
        let load = r.load.as_ref().expect("load readings");
        assert_eq!(load.samples, 20);
        assert!((load.cpu_mean - 105.0).abs() < 1e-9, "{}", load.cpu_mean);
        // Nearest rank: ceil(0.95 * 20) = 19th of 20 -> 190 %.
        assert_eq!((load.cpu_p95, load.cpu_max), (190.0, 200.0));
        assert_eq!((load.mem_mean, load.mem_max), (1010, 1020));
        assert_eq!(load.span, 19.0);
        // From the last idle reading (2000) to the last one (2000 + 500 * 20).
        assert_eq!((r.net_rx, r.net_tx), (10_000, 5000));
        assert_eq!((r.mem_limit, r.pids), (1 << 30, 3));
    }

    #[test]
    fn the_table_shows_both_rows_and_the_totals() {
        let text = render_containers(&[ContainerResult::from_series(&series())]);
        assert!(
            text.contains("Container web (0123456789ab)   image web:1 (12.6MB)"),
            "{text}"
        );
        let load = text
            .lines()
            .find(|l| l.trim_start().starts_with("under load"))
            .expect("row");
        let cells: Vec<&str> = load.split_whitespace().collect();
        assert_eq!(
            cells[2..],
            ["20", "105.00", "190.00", "200.00", "1010B", "1020B", "1.00GiB"]
        );
        assert!(text.contains("Network rx 9.77KiB tx 4.88KiB"), "{text}");
        assert!(
            text.contains("sampling stopped during the run: exited (code 137)"),
            "{text}"
        );
    }

    #[test]
    fn an_idle_reading_after_the_load_is_a_row_of_its_own() {
        let mut r = ContainerResult::from_series(&series());
        assert!(!render_containers(std::slice::from_ref(&r)).contains("idle after load"));
        r.idle_after = Usage::of(&[reading(30.0, 0.25, 4096, 0)]);
        let text = render_containers(&[r]);
        let after = text
            .lines()
            .find(|l| l.trim_start().starts_with("idle after load"))
            .expect("the row");
        let cells: Vec<&str> = after.split_whitespace().collect();
        assert_eq!(cells[3..6], ["1", "0.25", "0.25"], "{text}");
        assert!(after.contains("4.00KiB"), "{after}");
    }

    #[test]
    fn no_readings_give_no_usage() {
        let mut s = series();
        s.samples.clear();
        let r = ContainerResult::from_series(&s);
        assert_eq!((&r.idle, &r.load, r.net_rx), (&None, &None, 0));
        assert!(render_containers(&[r]).contains("under load        0"));
    }
}
