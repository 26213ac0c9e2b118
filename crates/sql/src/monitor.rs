//! The databases of `--db-stats` watched beside a run: each a [`DbStats`], which core's
//! [`throng_core::watch`] reads once a second through an idle window and the load, and once
//! more after it, when the database has published what the load did
//! ([`DbStats::flush_wait`]).

use std::time::Duration;

use throng_core::watch::{ReadError, Server};
use throng_core::DatabaseInfo;

use crate::stats::DbStats;

impl Server for DbStats {
    fn info(&self) -> DatabaseInfo {
        DbStats::info(self)
    }

    async fn read(&mut self) -> Result<Vec<u64>, ReadError> {
        self.sample().await
    }

    /// A database that cannot say waits the whole settle.
    async fn publishes_in(&mut self, loaded: Duration, ended: Duration) -> Option<Duration> {
        self.flush_wait(loaded, ended).await.ok()
    }

    fn note(&self) -> Option<String> {
        DbStats::note(self)
    }
}
