//! Integration tests, one binary per theme (one link each, not one per file). The Docker engine: container stats and the deployments' files, the published comparisons' containers, and live metrics into a real Prometheus (its Grafana dashboard watches a container).

#[path = "../common/mod.rs"]
mod common;
#[path = "../deploy.rs"]
mod deploy;
#[path = "../docker_stats.rs"]
mod docker_stats;
#[path = "../metrics.rs"]
mod metrics;
#[path = "../published_docker.rs"]
mod published_docker;
