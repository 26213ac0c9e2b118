//! Integration tests, one binary per theme (one link each, not one per file). Docker Swarm: it changes the host (a swarm, an overlay network), so it is a binary, a stage, of its own.

#[path = "../swarm.rs"]
mod swarm;
