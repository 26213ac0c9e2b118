//! `--container`, `--container-label` and `--idle`: the containers a run watches (the library's
//! [`throng_run::Containers`]), every bad value named with its flag.

use std::time::Duration;

use throng_core::stages::parse_duration;
use throng_docker::Selection;
pub use throng_run::Containers as Watch;

use super::CliError;

/// The containers `throng run`'s flags select; `None` when none is.
pub fn watch_of(a: &super::args::RunArgs) -> Result<Option<Watch>, CliError> {
    watch_from(
        &a.containers,
        &a.container_labels,
        a.idle.as_deref(),
        !a.sql.db_stats.is_empty(),
    )
}

/// Validates the flags; `None` when no container is selected. `databases`: `--db-stats` reads
/// databases through the `--idle` period too, so it needs no container then.
pub fn watch_from(
    containers: &[String],
    labels: &[String],
    idle: Option<&str>,
    databases: bool,
) -> Result<Option<Watch>, CliError> {
    for name in containers {
        if name.trim().is_empty() {
            return Err(CliError::Usage(
                "--container needs a container name or id".into(),
            ));
        }
    }
    for label in labels {
        if label.split('=').next().unwrap_or("").trim().is_empty() {
            return Err(CliError::Usage(format!(
                "--container-label {label:?}: write KEY=VALUE (or KEY), e.g. com.docker.compose.project=shop"
            )));
        }
    }
    let idle = idle
        .map(|v| {
            parse_duration(v).map_err(|e| {
                CliError::Usage(format!(
                    "--idle {v:?}: not a duration ({e}); write e.g. 10s"
                ))
            })
        })
        .transpose()?;
    let selection = Selection {
        containers: containers.to_vec(),
        labels: labels.to_vec(),
    };
    if selection.is_empty() {
        return match idle {
            Some(_) if !databases => Err(CliError::Usage(
                "--idle samples containers or databases before the load: name them with --container, --container-label or --db-stats".into(),
            )),
            _ => Ok(None),
        };
    }
    Ok(Some(Watch {
        selection,
        idle: idle.unwrap_or(Duration::ZERO),
    }))
}
