//! Thresholds as the command line writes them (`--threshold`, `--until`, a scenario file's),
//! checked against a run's rows. The flags themselves (`RunFlags`, the request's, each
//! protocol's) are clap types and live in `throng-cli`, as do `throng compare` and `merge`
//! (`throng_cli::results`), whose thresholds are these too.

use throng_report::Threshold;

use crate::RunError;

/// Parses thresholds; a label must name one of `labels`. `place` prefixes messages.
pub fn parse_thresholds(
    list: &[String],
    place: &str,
    labels: &[String],
) -> Result<Vec<Threshold>, RunError> {
    let thresholds = list
        .iter()
        .map(|t| {
            t.parse::<Threshold>()
                .map_err(|e| RunError::Input(format!("{place} {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    for t in &thresholds {
        if let Some(l) = &t.label {
            if !labels.contains(l) {
                return Err(RunError::Input(format!(
                    "{place} `{}`: no step or group is labelled {l:?} (the labels are {labels:?})",
                    t.text
                )));
            }
        }
    }
    Ok(thresholds)
}

/// A protocol's flags' error (core's) as the run's: bad input exits 2, the rest 1.
impl From<throng_core::flags::FlagsError> for RunError {
    fn from(e: throng_core::flags::FlagsError) -> Self {
        match e {
            throng_core::flags::FlagsError::Input(m) => RunError::Input(m),
            throng_core::flags::FlagsError::Runtime(m) => RunError::Runtime(m),
        }
    }
}

/// The run's error as a protocol's flags' (a threshold checked for a protocol's URL run).
impl From<RunError> for throng_core::flags::FlagsError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Input(m) => throng_core::flags::FlagsError::Input(m),
            RunError::Runtime(m) => throng_core::flags::FlagsError::Runtime(m),
        }
    }
}
