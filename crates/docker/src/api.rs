//! The few fields of the Engine API's answers that throng reads. Unknown fields are ignored and
//! missing ones default, so the same types read every API version from 1.41 on.

use serde::Deserialize;

/// One entry of `GET /containers/json`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ContainerSummary {
    /// The full id.
    pub id: String,
    /// Names, each with a leading `/`.
    pub names: Vec<String>,
}

/// `GET /containers/{id}/json`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ContainerInspect {
    /// The full id.
    pub id: String,
    /// The name, with a leading `/`.
    pub name: String,
    /// The image id (`sha256:...`).
    pub image: String,
    /// The configuration the container was created with.
    pub config: ContainerConfig,
    /// Whether it runs.
    pub state: ContainerState,
}

/// The part of a container's configuration we read.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ContainerConfig {
    /// The image reference the container was created from (`name:tag`).
    pub image: String,
}

/// A container's state.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ContainerState {
    /// `running`, `exited`, `paused`, ...
    pub status: String,
    /// Whether it runs.
    pub running: bool,
    /// The exit code, once it has stopped.
    pub exit_code: i64,
}

impl ContainerState {
    /// Why sampling this container stopped, in words.
    pub fn why_gone(&self) -> String {
        match self.status.as_str() {
            "exited" => format!("exited (code {})", self.exit_code),
            "" => "stopped".to_string(),
            s => s.to_string(),
        }
    }
}

/// `GET /images/{name}/json`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ImageInspect {
    /// The image id.
    pub id: String,
    /// Size of the image's layers, bytes.
    pub size: u64,
}
