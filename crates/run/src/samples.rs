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
    /// sender); `snapshots` are the run's (labels, start and target from the first; the users
    /// alive, JMeter's active threads, from the latest as each batch arrives), `urls` each
    /// step's target where the driver knows it. It returns how many lines it wrote.
    pub(crate) fn spawn(
        mut self,
        mut rx: mpsc::Receiver<Vec<Sample>>,
        snapshots: tokio::sync::watch::Receiver<std::sync::Arc<Snapshot>>,
        urls: Vec<String>,
    ) -> tokio::task::JoinHandle<Result<u64, String>> {
        let first = snapshots.borrow().clone();
        let labels: Vec<String> = first.labels.iter().map(|l| l.label.clone()).collect();
        let start_ms = first
            .started_at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let mut urls: Vec<String> = urls;
        // A step without a URL of its own, and the steps past the list, are the run's target.
        for u in urls.iter_mut().filter(|u| u.is_empty()) {
            u.clone_from(&first.plan.target);
        }
        urls.push(first.plan.target.clone());
        tokio::spawn(async move {
            let mut n = 0u64;
            let fail = |e: std::io::Error| format!("{}: {e}", self.path.display());
            let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
            // Each worker's users alive as its latest sample said: their sum is the run's.
            let mut workers: Vec<u64> = Vec::new();
            while let Some(batch) = rx.recv().await {
                for s in &batch {
                    let w = s.worker as usize;
                    if workers.len() <= w {
                        workers.resize(w + 1, 0);
                    }
                    workers[w] = s.active;
                    let active = workers.iter().sum::<u64>().max(snapshots.borrow().active);
                    let line = throng_report::jtl_line(s, start_ms, &labels, &urls, active);
                    self.file.write_all(line.as_bytes()).map_err(fail)?;
                }
                n += batch.len() as u64;
            }
            self.file.flush().map_err(fail)?;
            Ok(n)
        })
    }
}
