//! The samples file: every request as a line of JMeter's JTL, written while the run goes (a
//! batch a worker and second), never held in memory for the whole run.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use throng_core::{Sample, Snapshot};
use tokio::sync::mpsc;

use crate::RunError;

/// Batches the writer may be behind by before the aggregator counts them as lost.
const BACKLOG: usize = 256;

/// A samples file opened before the load (a path that cannot be written stops the run now).
pub(crate) struct Samples {
    path: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
}

impl Samples {
    /// Creates the file and writes the JTL header.
    pub(crate) fn create(path: &Path) -> Result<Samples, RunError> {
        let bad = |e: std::io::Error| {
            RunError::Input(format!(
                "the samples file {}: cannot write it: {e}",
                path.display()
            ))
        };
        let f = std::fs::File::create(path).map_err(bad)?;
        let mut file = std::io::BufWriter::with_capacity(256 * 1024, f);
        writeln!(file, "{}", throng_report::JTL_HEADER).map_err(bad)?;
        Ok(Samples {
            path: path.to_path_buf(),
            file,
        })
    }

    /// The channel the engine sends batches into (`Extras::samples`).
    pub(crate) fn channel() -> (mpsc::Sender<Vec<Sample>>, mpsc::Receiver<Vec<Sample>>) {
        mpsc::channel(BACKLOG)
    }

    /// The task that writes what arrives on `rx` until the run ends (the engine drops its
    /// sender); `first` is the run's first snapshot (labels, start, target). It returns how
    /// many lines it wrote.
    pub(crate) fn spawn(
        mut self,
        mut rx: mpsc::Receiver<Vec<Sample>>,
        first: &Snapshot,
    ) -> tokio::task::JoinHandle<Result<u64, String>> {
        let labels: Vec<String> = first.labels.iter().map(|l| l.label.clone()).collect();
        let start_ms = first
            .started_at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let url = first.plan.target.clone();
        tokio::spawn(async move {
            let mut n = 0u64;
            let fail = |e: std::io::Error| format!("{}: {e}", self.path.display());
            while let Some(batch) = rx.recv().await {
                for s in &batch {
                    let line = throng_report::jtl_line(s, start_ms, &labels, &url);
                    self.file.write_all(line.as_bytes()).map_err(fail)?;
                }
                n += batch.len() as u64;
            }
            self.file.flush().map_err(fail)?;
            Ok(n)
        })
    }
}
