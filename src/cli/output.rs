//! What a finished run leaves: the summary printed, the JSON result written (checked writable
//! before the load; kept in a spare file if the disk fails at the end), the exit code; and the
//! headless progress line while it runs.

use std::io::Write as _;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Context as _;
use throng_core::{Percentiles, RunState, Snapshot};
use throng_report::{render_summary, Threshold};

use super::runner::Outputs;
use super::{CliError, EXIT_OK, EXIT_THRESHOLDS};

/// Builds the result (`report::finish`: the final snapshot carries the changes made while the
/// run went), prints the summary, writes the JSON; the exit code.
pub fn finish(
    snapshot: &Snapshot,
    thresholds: &[Threshold],
    out: &Outputs,
) -> Result<u8, CliError> {
    let result = throng_report::finish(snapshot, thresholds);
    let to_stdout = out.json.as_deref() == Some(std::path::Path::new("-"));
    if to_stdout {
        // `--json -`: the result is standard output's (a shard's, for `kubectl logs` or
        // `docker service logs`); the summary goes to standard error.
        eprint!("{}", render_summary(&result));
    } else {
        print!("{}", render_summary(&result));
    }
    let mut code = if result.passed() {
        EXIT_OK
    } else {
        EXIT_THRESHOLDS
    };
    if to_stdout {
        let text = serde_json::to_string(&result).context("serialising the result")?;
        // A closed standard output (a pipe whose reader left) is an error, not a panic.
        let mut stdout = std::io::stdout().lock();
        if let Err(e) = writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
            eprintln!("throng: error: cannot write the result to standard output: {e}");
            code = super::EXIT_RUNTIME;
        }
    } else if let Some(path) = &out.json {
        let text = serde_json::to_string_pretty(&result).context("serialising the result")? + "\n";
        if let Err(e) = write_result(path, &text) {
            // The run is over and cannot be had again: keep its result somewhere.
            let spare = std::env::temp_dir().join(format!(
                "throng-result-{}-{}.json",
                std::process::id(),
                snapshot
                    .started_at
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs())
            ));
            match std::fs::write(&spare, &text) {
                Ok(()) => eprintln!(
                    "throng: error: cannot write {}: {e}; the result was written to {} instead",
                    path.display(),
                    spare.display()
                ),
                Err(e2) => eprintln!(
                    "throng: error: cannot write {} ({e}) nor {} ({e2}); the result is lost",
                    path.display(),
                    spare.display()
                ),
            }
            code = super::EXIT_RUNTIME;
        } else {
            eprintln!("result written to {}", path.display());
        }
    }
    if let Some(keep) = &out.keep {
        if let Ok(mut k) = keep.lock() {
            k.push(result.clone());
        }
    }
    for (format, path) in &out.reports {
        match super::compare::write_report(&result, *format, path) {
            Ok(()) => eprintln!("report written to {}", path.display()),
            Err(e) => {
                eprintln!("throng: error: {e}");
                code = super::EXIT_RUNTIME;
            }
        }
    }
    Ok(code)
}

/// Writes the result and makes sure it reached the file (a full disk shows up at `sync`).
fn write_result(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut f = std::fs::File::create(path)?;
    f.write_all(text.as_bytes())?;
    f.flush()?;
    match f.sync_all() {
        // Character devices and pipes cannot sync; what they took was written.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => Ok(()),
        other => other,
    }
}

/// Checks, before any load, that a result file can be written at `path`: its directory exists
/// and takes a new file, or the file exists and can be written. Nothing is left behind.
pub fn check_writable(path: &std::path::Path) -> Result<(), CliError> {
    if path == std::path::Path::new("-") {
        return Ok(());
    }
    let bad = |why: String| CliError::Usage(format!("--json {}: {why}", path.display()));
    if path.is_dir() {
        return Err(bad("is a directory; name a file".into()));
    }
    if path.exists() {
        return std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(drop)
            .map_err(|e| bad(format!("cannot be written: {e}")));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(bad(format!(
            "the directory {} does not exist",
            dir.display()
        )));
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(_) => std::fs::remove_file(path)
            .map_err(|e| bad(format!("cannot be removed after a test write: {e}"))),
        Err(e) => Err(bad(format!("cannot be created: {e}"))),
    }
}

/// The headless progress line, about once a second on stderr.
pub(crate) async fn progress(mut rx: tokio::sync::watch::Receiver<Arc<Snapshot>>) {
    while rx.changed().await.is_ok() {
        let s = rx.borrow_and_update().clone();
        if s.state == RunState::Done || s.series.is_empty() {
            continue;
        }
        eprintln!("{}", progress_line(&s));
    }
}

/// One progress line: elapsed, last-second rate and percentiles, errors so far.
pub fn progress_line(s: &Snapshot) -> String {
    let last = Percentiles::of(&s.last.latency);
    let point = s.series.last().copied().unwrap_or_default();
    let ms = |us: u64| us as f64 / 1000.0;
    let mut line = format!(
        "[{:>6.1}s] {:>8} req/s  p50 {:>7.2} ms  p99 {:>7.2} ms  errors {} ({:.2}%)  active {}",
        s.elapsed.as_secs_f64(),
        point.requests,
        ms(last.p50),
        ms(last.p99),
        s.total.errors,
        s.total.error_rate() * 100.0,
        s.active
    );
    if let Some(l) = &s.lag {
        line.push_str(&format!("  late {}  dropped {}", l.late, l.dropped));
    }
    line
}
