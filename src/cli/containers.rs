//! `--container`, `--container-label` and `--idle`: watching the target's containers through
//! the Docker engine during `throng run`.

use std::time::Duration;

use anyhow::anyhow;
use throng_core::stages::parse_duration;
use throng_core::ContainerEvent;
use throng_docker::{Client, DockerError, Monitor, Sampling, Selection};
use tokio::sync::mpsc;

use super::CliError;

/// The containers to watch and how long to sample them before the load.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Watch {
    /// Names, ids and labels.
    pub selection: Selection,
    /// Sampling before the load starts (the idle row).
    pub idle: Duration,
}

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

fn docker_error(e: DockerError) -> CliError {
    if e.is_selection() {
        CliError::Usage(e.to_string())
    } else {
        CliError::Runtime(anyhow!(e))
    }
}

/// Resolves the containers (errors before any load: an unknown name is a usage error) and
/// samples them for the idle period; the receiver goes to the engine.
pub async fn start(
    watch: &Watch,
    quiet: bool,
) -> Result<(Sampling, mpsc::Receiver<ContainerEvent>), CliError> {
    let client = Client::from_env().await.map_err(docker_error)?;
    let monitor = Monitor::resolve(client, &watch.selection)
        .await
        .map_err(docker_error)?;
    if !quiet {
        let names: Vec<&str> = monitor
            .containers()
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        eprintln!(
            "watching {}; sampling them for {} before the load",
            names.join(", "),
            humantime::format_duration(watch.idle.max(Duration::from_secs(1)))
        );
    }
    Ok(monitor.start(watch.idle).await)
}
