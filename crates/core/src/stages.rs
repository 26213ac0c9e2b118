//! Ramping stages written k6-style as `duration:target,duration:target,...`, and the durations
//! they and the command line are written in.
//!
//! Each stage moves a value (users or arrivals per second) linearly from where the previous
//! stage ended to its target over its duration. The first stage starts from a given value.
//!
//! A stage of length zero (`0s:100`) is a jump, as in k6: the value becomes the target at once
//! (the open loop's schedule and [`value_at`] both treat it so). A list as a whole must last
//! longer than zero. An empty stage (`30s:10,,5s:0`, or a trailing comma) is refused rather than
//! skipped: it is more often a stage lost in editing than a style.

use std::time::Duration;

use crate::plan::Stage;

/// The longest duration throng accepts: 100 days. Longer is a typo (or an overflow waiting to
/// happen in deadline arithmetic), never a load test.
pub const MAX_DURATION: Duration = Duration::from_secs(100 * 24 * 3600);

/// Why a duration could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Nothing was written.
    #[error("the duration is empty")]
    Empty,
    /// A minus sign.
    #[error("a duration cannot be negative")]
    Negative,
    /// `NaN` or `inf`.
    #[error("`{0}` is not a number of seconds")]
    NotFinite(String),
    /// Longer than [`MAX_DURATION`].
    #[error("longer than 100 days, the most throng accepts")]
    TooLong,
    /// Not a duration at all, in humantime's words.
    #[error("{0}")]
    Syntax(String),
}

/// Why a stage list could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StageError {
    /// The list had no stages.
    #[error("the stage list is empty")]
    Empty,
    /// A stage between commas was empty (1-based position).
    #[error("stage {0} is empty (a doubled or trailing comma?)")]
    EmptyStage(usize),
    /// A stage was not `duration:target`.
    #[error("stage `{0}` is not DURATION:TARGET (for example `30s:100`)")]
    Shape(String),
    /// A stage's duration did not parse.
    #[error("stage `{stage}`: bad duration: {reason}")]
    Duration {
        /// The stage as written.
        stage: String,
        /// Why.
        reason: DurationError,
    },
    /// A stage's target was not a non-negative number.
    #[error("stage `{0}`: the target must be a number, zero or more")]
    Target(String),
    /// Every stage lasts zero: nothing would run.
    #[error("the stages last no time at all: give at least one a duration above zero")]
    ZeroTotal,
    /// The stages add up to more than [`MAX_DURATION`].
    #[error("the stages last longer than 100 days, the most throng accepts")]
    TooLong,
}

/// Parses `30s:100,2m:100,10s:0` into stages.
pub fn parse(text: &str) -> Result<Vec<Stage>, StageError> {
    if text.trim().is_empty() {
        return Err(StageError::Empty);
    }
    let mut stages = Vec::new();
    let mut total = Duration::ZERO;
    for (i, part) in text.split(',').map(str::trim).enumerate() {
        if part.is_empty() {
            return Err(StageError::EmptyStage(i + 1));
        }
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
        total = total.saturating_add(duration);
        if total > MAX_DURATION {
            return Err(StageError::TooLong);
        }
        stages.push(Stage { duration, target });
    }
    if total.is_zero() {
        return Err(StageError::ZeroTotal);
    }
    Ok(stages)
}

/// Parses a duration such as `30s`, `2m`, `1h30m`, `250ms`. A bare number means seconds.
/// Negative, non-finite and longer than [`MAX_DURATION`] are errors.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    if text.starts_with('-') {
        return Err(DurationError::Negative);
    }
    let lower = text.trim_start_matches('+').to_ascii_lowercase();
    if lower.starts_with("nan") || lower.starts_with("inf") {
        return Err(DurationError::NotFinite(text.to_string()));
    }
    let d = match text.parse::<f64>() {
        // A literal too large for f64 (`1e400`) reads as infinity: too long, not "not a number".
        Ok(secs) if secs.is_infinite() => return Err(DurationError::TooLong),
        Ok(secs) if secs.is_nan() => return Err(DurationError::NotFinite(text.to_string())),
        // No leading `-` got this far, so secs >= 0; `try_` refuses what does not fit.
        Ok(secs) => Duration::try_from_secs_f64(secs).map_err(|_| DurationError::TooLong)?,
        Err(_) => humantime::parse_duration(text).map_err(|e| match e {
            humantime::DurationError::NumberOverflow => DurationError::TooLong,
            humantime::DurationError::UnknownUnit { unit, .. } => {
                DurationError::Syntax(format!("unknown unit `{unit}`: use ms, s, m, h or d"))
            }
            // humantime says "expected number at 0", which reads as a bug report.
            _ => DurationError::Syntax("expected a number and a unit".into()),
        })?,
    };
    if d > MAX_DURATION {
        return Err(DurationError::TooLong);
    }
    Ok(d)
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
        assert_eq!(parse(" , "), Err(StageError::EmptyStage(1)));
        assert!(matches!(parse("30s"), Err(StageError::Shape(_))));
        assert!(matches!(parse("3x:10"), Err(StageError::Duration { .. })));
        assert!(matches!(parse("3s:-1"), Err(StageError::Target(_))));
        for bad in ["3s:NaN", "3s:inf", "3s:-inf", "3s:1e400", "3s:", "3s:x"] {
            assert_eq!(parse(bad), Err(StageError::Target(bad.into())), "{bad}");
        }
        assert_eq!(
            parse("-5s:10"),
            Err(StageError::Duration {
                stage: "-5s:10".into(),
                reason: DurationError::Negative
            })
        );
    }

    #[test]
    fn an_empty_stage_is_refused_not_skipped() {
        assert_eq!(parse("30s:10,,5s:0"), Err(StageError::EmptyStage(2)));
        assert_eq!(parse("30s:10,"), Err(StageError::EmptyStage(2)));
        assert_eq!(parse(",30s:10"), Err(StageError::EmptyStage(1)));
        assert_eq!(
            parse("30s:10,,5s:0").unwrap_err().to_string(),
            "stage 2 is empty (a doubled or trailing comma?)"
        );
    }

    #[test]
    fn a_zero_stage_is_a_jump_but_a_zero_list_is_refused() {
        assert_eq!(parse("0s:100"), Err(StageError::ZeroTotal));
        assert_eq!(parse("0s:100,0:5"), Err(StageError::ZeroTotal));
        let s = parse("0s:100,10s:100").unwrap();
        assert_eq!(value_at(0.0, &s, 0.0), 100.0);
        assert_eq!(value_at(0.0, &s, 5.0), 100.0);
    }

    #[test]
    fn stages_longer_than_the_cap_are_refused() {
        assert_eq!(parse("60d:1,60d:1"), Err(StageError::TooLong));
        assert!(parse("50d:1,50d:1").is_ok());
    }

    #[test]
    fn durations_refuse_what_would_panic_or_mislead() {
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration(" 1.5 "), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("100d"), Ok(MAX_DURATION));
        assert_eq!(parse_duration(""), Err(DurationError::Empty));
        assert_eq!(parse_duration("-1"), Err(DurationError::Negative));
        assert_eq!(parse_duration("-5s"), Err(DurationError::Negative));
        assert_eq!(parse_duration("-0"), Err(DurationError::Negative));
        for nf in ["NaN", "nan", "inf", "+inf", "infinity", "NaNs"] {
            assert_eq!(
                parse_duration(nf),
                Err(DurationError::NotFinite(nf.into())),
                "{nf}"
            );
        }
        // Duration::from_secs_f64 panics on all of these.
        for long in ["1e400", "1e20", "18446744073709551616", "101d", "8640001"] {
            assert_eq!(parse_duration(long), Err(DurationError::TooLong), "{long}");
        }
        assert_eq!(
            parse_duration("99999999999999999999999h"),
            Err(DurationError::TooLong)
        );
        assert!(matches!(
            parse_duration("ten"),
            Err(DurationError::Syntax(_))
        ));
        assert!(matches!(
            parse_duration("5 parsecs"),
            Err(DurationError::Syntax(_))
        ));
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
