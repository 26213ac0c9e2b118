//! Integration tests, one binary per theme (one link each, not one per file). The Docker engine: container stats and the deployments' files.

#[path = "../deploy.rs"]
mod deploy;
#[path = "../docker_stats.rs"]
mod docker_stats;
