//! Whether a difference is beyond the noise: Welch's t-test over rounds, or, with one run a
//! side, the runs' per-second spreads (see the crate's `compare` module for why each).

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::{Figure, Verdict};
use crate::{Point, RunResult};

pub(super) fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Sample variance (n - 1).
fn variance(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom (two-sided 95%), by statrs,
/// for Welch's fractional degrees of freedom as they are (a table rounds them down).
fn t975(df: f64) -> f64 {
    // Welch's degrees of freedom are at least the fewer rounds less one; below 1 (or NaN) would
    // only come of a bug, and is then read as 1, the widest bar.
    let df = if df.is_nan() { 1.0 } else { df.max(1.0) };
    StudentsT::new(0.0, 1.0, df).map_or(f64::INFINITY, |t| t.inverse_cdf(0.975))
}

/// The fewest rounds a side that Welch's test judges: with two a side its t quantile is 4.3 to
/// 12.7, so that a side that did +1612% in throughput was once called within the noise.
pub(crate) const MIN_ROUNDS: usize = 3;

/// Welch's t-test at 95% between two sets of rounds; too few rounds are not judged.
pub(super) fn welch(a: &[f64], b: &[f64]) -> Verdict {
    if a.len() < MIN_ROUNDS || b.len() < MIN_ROUNDS {
        return Verdict::Unknown;
    }
    let (va, vb) = (variance(a) / a.len() as f64, variance(b) / b.len() as f64);
    let diff = (mean(b) - mean(a)).abs();
    let se = (va + vb).sqrt();
    if se == 0.0 {
        return if diff == 0.0 {
            Verdict::Within
        } else {
            Verdict::Beyond
        };
    }
    let df =
        (va + vb).powi(2) / (va.powi(2) / (a.len() - 1) as f64 + vb.powi(2) / (b.len() - 1) as f64);
    if diff / se > t975(df) {
        Verdict::Beyond
    } else {
        Verdict::Within
    }
}

/// A run's whole seconds: the last point is dropped when it is a fraction of a second (the
/// drain after the load), and the first when there are enough (start-up).
fn whole_seconds(r: &RunResult) -> &[Point] {
    let mut s = &r.series[..];
    if let Some(last) = s.last() {
        if last.t.fract() > 1e-9 && s.len() > 1 {
            s = &s[..s.len() - 1];
        }
    }
    if s.len() > 4 {
        s = &s[1..];
    }
    s
}

/// The relative spread (standard deviation over mean) of a figure over a run's seconds.
fn spread(r: &RunResult, f: Figure) -> Option<f64> {
    let v: Vec<f64> = whole_seconds(r)
        .iter()
        .filter_map(|p| f.of_point(p))
        .collect();
    if v.len() < 3 {
        return None;
    }
    let m = mean(&v);
    Some(if m == 0.0 {
        0.0
    } else {
        variance(&v).sqrt() / m
    })
}

/// Beyond noise when the difference exceeds twice the runs' per-second spreads combined.
pub(super) fn intervals(a: &RunResult, b: &RunResult, f: Figure, va: f64, vb: f64) -> Verdict {
    let (Some(ra), Some(rb)) = (spread(a, f), spread(b, f)) else {
        return Verdict::Unknown;
    };
    // The series is TOTAL's: its relative spread, times the label's own values.
    let band = 2.0 * ((va * ra).powi(2) + (vb * rb).powi(2)).sqrt();
    if (vb - va).abs() > band {
        Verdict::Beyond
    } else {
        Verdict::Within
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_t_quantile_is_students() {
        // Two-sided 95% from any printed table, and the normal's 1.960 far out.
        for (df, t) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (3.0, 3.182),
            (4.0, 2.776),
            (10.0, 2.228),
            (30.0, 2.042),
            (60.0, 2.000),
            (120.0, 1.980),
            (1e6, 1.960),
        ] {
            assert!(
                (t975(df) - t).abs() < 0.0005,
                "t(0.975, {df}) = {}",
                t975(df)
            );
        }
        // Between two tabulated degrees of freedom, between their quantiles.
        let between = t975(7.3);
        assert!(between < t975(7.0) && between > t975(8.0), "{between}");
        assert_eq!(t975(0.2), t975(1.0));
        assert_eq!(t975(f64::NAN), t975(1.0));
    }
}
