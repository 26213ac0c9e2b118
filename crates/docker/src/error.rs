use std::path::PathBuf;

/// What can go wrong between throng and the Docker engine.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    /// `DOCKER_HOST` names a transport other than a Unix socket.
    #[error(
        "DOCKER_HOST={0:?} is not supported: throng reaches the Docker engine through a Unix socket \
         only (DOCKER_HOST=unix:///path/to/docker.sock)"
    )]
    UnsupportedHost(String),
    /// Nothing answers on the socket: the engine is not running, or listens elsewhere.
    #[error(
        "cannot reach the Docker engine at {}: {source} (start it, e.g. `sudo service docker start`, \
         or set DOCKER_HOST=unix:///path/to/docker.sock if it listens elsewhere)",
        path.display()
    )]
    Unreachable {
        /// The socket.
        path: PathBuf,
        /// Why connecting failed.
        source: std::io::Error,
    },
    /// The socket exists but this user may not use it.
    #[error(
        "permission denied on the Docker socket {}: run throng as a member of the `docker` group \
         (or as root), or set DOCKER_HOST to a socket you may use",
        path.display()
    )]
    PermissionDenied {
        /// The socket.
        path: PathBuf,
    },
    /// The HTTP exchange with the engine failed.
    #[error("GET {request} on the Docker engine: {source}")]
    Http {
        /// The request path.
        request: String,
        /// The failure.
        source: hyper::Error,
    },
    /// The engine did not answer in time.
    #[error("the Docker engine did not answer GET {request} within {secs} s")]
    Timeout {
        /// The request path.
        request: String,
        /// The time allowed.
        secs: u64,
    },
    /// The engine answered with an error status.
    #[error("GET {request}: the Docker engine answered {status}: {message}")]
    Status {
        /// The request path.
        request: String,
        /// The HTTP status.
        status: u16,
        /// The engine's message.
        message: String,
    },
    /// The engine's answer was not the JSON we expect.
    #[error("GET {request}: unexpected answer from the Docker engine: {source}")]
    Decode {
        /// The request path.
        request: String,
        /// The parse failure.
        source: serde_json::Error,
    },
    /// `--container` names no container.
    #[error("no container is named {0:?} or has that id (`docker ps` lists the running ones)")]
    UnknownContainer(String),
    /// `--container` names a container that is not running.
    #[error("container {0:?} is not running (`docker start {0}`)")]
    NotRunning(String),
    /// `--container-label` matches no running container.
    #[error("no running container has the label {0:?} (`docker ps --filter label={0}`)")]
    NoLabelMatch(String),
}

impl DockerError {
    /// Whether the user's selection is at fault (an unknown name, a label matching nothing)
    /// rather than the engine or the way to it. The command line maps these to exit code 2.
    pub fn is_selection(&self) -> bool {
        matches!(
            self,
            DockerError::UnknownContainer(_)
                | DockerError::NotRunning(_)
                | DockerError::NoLabelMatch(_)
                | DockerError::UnsupportedHost(_)
        )
    }
}
