//! What a run needs of its process: files for its connections, and tracing told that nothing
//! listens.
//!
//! The open-file limit is raised by every run ([`raise_open_files`], from
//! [`crate::Run::execute`]; a limit too low for the run's connections is a warning to its
//! observer, and the command line's usage error). Tracing is the caller's: a library installs
//! no global subscriber behind its user's back, so [`quiet_tracing`] is an explicit call, which
//! `throng` makes at its start.

/// Files a process keeps open beside a run's connections: the runtime's, the samples file, the
/// Docker engine's socket, the metrics endpoint.
const SPARE: u64 = 64;

/// The open-file limit is too low for a run's connections, even raised to the hard limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "{connections} connections need about {need} open files, but the open-file limit is \
     {limit} (already raised to the hard limit)"
)]
pub struct OpenFiles {
    /// The connections the run opens at most.
    pub connections: u64,
    /// The files that needs, with some to spare.
    pub need: u64,
    /// The limit, raised as far as it goes.
    pub limit: u64,
}

/// Raises this process's open-file limit (the soft limit, to the hard one, as Go's runtime does
/// at start) for a run of `connections`; the limit now, or why it is still too low.
pub fn raise_open_files(connections: u64) -> Result<u64, OpenFiles> {
    // A platform without the limit, or a call that fails, leaves the usual default.
    let limit = rlimit::increase_nofile_limit(u64::MAX).unwrap_or(1024);
    let need = connections.saturating_add(SPARE);
    match need > limit {
        true => Err(OpenFiles {
            connections,
            need,
            limit,
        }),
        false => Ok(limit),
    }
}

/// Tells tracing that nothing listens: installs its no-op subscriber as the process's global
/// default, unless one is set already (yours is kept); whether it did.
///
/// Why it matters: with no subscriber ever set, and tracing's `log` feature on (sqlx turns it on
/// for every crate of the build), tracing falls back to `log` at every disabled callsite of
/// the libraries under a protocol (h2's spans, several a gRPC call): the span keeps its
/// metadata, records its fields on creation and asks `log` on each enter, exit and drop, as
/// `tracing::dispatcher::has_been_set()` is false. Any subscriber set (this one, which is
/// interested in nothing, or your own) turns that fallback off; it measured 5-7% of a gRPC
/// run's CPU. A process that logs through tracing's `log` fallback on purpose should not call
/// it; one that installs its own subscriber need not.
pub fn quiet_tracing() -> bool {
    tracing::subscriber::set_global_default(tracing::subscriber::NoSubscriber::default()).is_ok()
}
