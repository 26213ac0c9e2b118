//! Watching the target's containers through the Docker engine: resolved and sampled idle before
//! the load, then through it; the readings reach the result through the engine.

use std::time::Duration;

use throng_core::ContainerEvent;
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
            eprintln!(
                "watching {}; sampling them for {} before the load",
                names.join(", "),
                humantime::format_duration(self.idle.max(Duration::from_secs(1)))
            );
        }
        Ok(monitor.start(self.idle).await)
    }
}
