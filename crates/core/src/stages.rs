//! Ramping stages written k6-style as `duration:target,duration:target,...`.
//!
//! Each stage moves a value (users or arrivals per second) linearly from where the previous
//! stage ended to its target over its duration. The first stage starts from a given value.

use std::time::Duration;

use crate::plan::Stage;

/// Why a stage list could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StageError {
    /// The list had no stages.
    #[error("the stage list is empty")]
    Empty,
    /// A stage was not `duration:target`.
    #[error("stage `{0}` is not DURATION:TARGET (for example `30s:100`)")]
    Shape(String),
    /// A stage's duration did not parse.
    #[error("stage `{stage}`: bad duration: {reason}")]
    Duration {
        /// The stage as written.
        stage: String,
        /// What humantime said.
        reason: String,
    },
    /// A stage's target was not a non-negative number.
    #[error("stage `{0}`: the target must be a non-negative number")]
    Target(String),
}

/// Parses `30s:100,2m:100,10s:0` into stages.
pub fn parse(text: &str) -> Result<Vec<Stage>, StageError> {
    let mut stages = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (d, t) = part
            .split_once(':')
            .ok_or_else(|| StageError::Shape(part.to_string()))?;
        let duration = parse_duration(d.trim()).map_err(|reason| StageError::Duration {
            stage: part.to_string(),
            reason,
        })?;
        let target: f64 = t
            .trim()
            .parse()
            .map_err(|_| StageError::Target(part.to_string()))?;
        if !(target >= 0.0 && target.is_finite()) {
            return Err(StageError::Target(part.to_string()));
        }
        stages.push(Stage { duration, target });
    }
    if stages.is_empty() {
        return Err(StageError::Empty);
    }
    Ok(stages)
}

/// Parses a duration such as `30s`, `2m`, `1h30m`, `250ms`. A bare number means seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    if let Ok(secs) = text.parse::<f64>() {
        if secs >= 0.0 && secs.is_finite() {
            return Ok(Duration::from_secs_f64(secs));
        }
    }
    humantime::parse_duration(text).map_err(|e| e.to_string())
}

/// The total length of a stage list.
pub fn total(stages: &[Stage]) -> Duration {
    stages.iter().map(|s| s.duration).sum()
}

/// The value at `t` seconds after the start, starting from `start`, linear within each stage;
/// after the last stage, the last target.
pub fn value_at(start: f64, stages: &[Stage], t: f64) -> f64 {
    let mut from = start;
    let mut at = 0.0;
    for s in stages {
        let d = s.duration.as_secs_f64();
        if t < at + d {
            return from + (s.target - from) * (t - at) / d;
        }
        at += d;
        from = s.target;
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_k6_style() {
        let s = parse("30s:3000, 2m:3000,10s:0").unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[1].duration, Duration::from_secs(120));
        assert_eq!(s[2].target, 0.0);
        assert_eq!(total(&s), Duration::from_secs(160));
    }

    #[test]
    fn rejects_bad_stages() {
        assert_eq!(parse(""), Err(StageError::Empty));
        assert!(matches!(parse("30s"), Err(StageError::Shape(_))));
        assert!(matches!(parse("3x:10"), Err(StageError::Duration { .. })));
        assert!(matches!(parse("3s:-1"), Err(StageError::Target(_))));
    }

    #[test]
    fn interpolates() {
        let s = parse("10s:100,10s:100,10s:0").unwrap();
        assert_eq!(value_at(0.0, &s, 5.0), 50.0);
        assert_eq!(value_at(0.0, &s, 15.0), 100.0);
        assert_eq!(value_at(0.0, &s, 25.0), 50.0);
        assert_eq!(value_at(0.0, &s, 99.0), 0.0);
    }
}
