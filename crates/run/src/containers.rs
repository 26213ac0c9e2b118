//! Watching the target's containers through the Docker engine: resolved and sampled idle before
//! the load, then through it; the readings reach the result through the engine.

use std::time::Duration;

use throng_core::{ContainerEvent, ContainerSample};
use throng_docker::{Client, DockerError, Monitor, Sampling, Selection};
use tokio::sync::mpsc;

use crate::RunError;

/// The containers to watch and how long to sample them before the load.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Containers {
    /// Names, ids and labels.
    pub selection: Selection,
    /// Sampling before the load starts (the idle row).
    pub idle: Duration,
}

fn docker_error(e: DockerError) -> RunError {
    if e.is_selection() {
        RunError::Input(e.to_string())
    } else {
        RunError::Runtime(e.to_string())
    }
}

impl Containers {
    /// Resolves the containers (an unknown one is an input error, before any load) and samples
    /// them for the idle period; the receiver goes to the engine.
    pub(crate) async fn start(
        &self,
        messages: bool,
        observer: &dyn crate::observer::Observer,
    ) -> Result<(Sampling, mpsc::Receiver<ContainerEvent>), RunError> {
        let client = Client::from_env().await.map_err(docker_error)?;
        let monitor = Monitor::resolve(client, &self.selection)
            .await
            .map_err(docker_error)?;
        if messages {
            let names: Vec<&str> = monitor
                .containers()
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            observer.event(&crate::observer::Event::Note(format!(
                "watching {}; sampling them for {} before the load",
                names.join(", "),
                humantime::format_duration(self.idle.max(Duration::from_secs(1)))
            )));
        }
        Ok(monitor.start(self.idle).await)
    }
}

/// Samples the containers of these ids for `idle` with no load (at least their first complete
/// reading, about a second): a grid's one idle reading after its last load. Each container's
/// usage over the period, by id; a container that has stopped since is an error.
pub(crate) async fn idle_reading(
    ids: &[String],
    idle: Duration,
) -> Result<Vec<(String, throng_report::Usage)>, RunError> {
    let client = Client::from_env().await.map_err(docker_error)?;
    let selection = Selection {
        containers: ids.to_vec(),
        labels: Vec::new(),
    };
    let monitor = Monitor::resolve(client, &selection)
        .await
        .map_err(docker_error)?;
    let (mut sampling, mut events) = monitor.start(idle).await;
    // Marking a start flushes the readings held so far (negative `t`) at once; the first one
    // after it, or a pause longer than the flush takes, ends the period.
    sampling.load_starts_now();
    let mut readings: Vec<(String, Vec<ContainerSample>)> = Vec::new();
    loop {
        let next = tokio::time::timeout(Duration::from_millis(500), events.recv()).await;
        match next {
            Ok(Some(ContainerEvent::Sample(id, s))) if s.t < 0.0 => {
                match readings.iter_mut().find(|(i, _)| *i == id) {
                    Some((_, v)) => v.push(s),
                    None => readings.push((id, vec![s])),
                }
            }
            Ok(Some(ContainerEvent::Info(_) | ContainerEvent::Gone(..))) => {}
            _ => break,
        }
    }
    drop(sampling);
    Ok(readings
        .into_iter()
        .filter_map(|(id, s)| throng_report::Usage::of(&s).map(|u| (id, u)))
        .collect())
}
