//! Integration tests, one binary per theme (one link each, not one per file). The Docker engine: container stats and the deployments' files.

#[path = "../docker_stats.rs"]
mod docker_stats;
#[path = "../deploy.rs"]
mod deploy;
