//! What a finished run leaves: the summary printed, the JSON result written (kept in a spare
//! file if the disk fails at the end), other reports beside it.
//!
//! Standard output is either for people (the summary) or for a document (`--json -`, a report
//! to `-`), never both: a document there is for a pipe or a scheduler's logs, which must read
//! it whole. A grid's document takes standard output from its runs too (the grid says so in
//! each run's [`crate::Cell`]), so their summaries go to standard error as a single run's do.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use throng_report::{render_report, render_summary, Format, RunResult};

use crate::observer::{Event, Observer};
use crate::{Finished, RunError};

/// Whether a document goes to standard output: the JSON result or a report written to `-`.
pub(crate) fn takes_stdout(json: Option<&Path>, reports: &[(Format, PathBuf)]) -> bool {
    let stdout = Some(Path::new("-"));
    json == stdout || reports.iter().any(|(_, p)| Some(p.as_path()) == stdout)
}

/// Where a run's text for people goes: standard error when standard output holds a document,
/// the run's own (`json`, `reports`) or its grid's (`grid_takes_stdout`).
pub(crate) fn for_people(
    json: Option<&Path>,
    reports: &[(Format, PathBuf)],
    grid_takes_stdout: bool,
) -> Stream {
    match takes_stdout(json, reports) || grid_takes_stdout {
        true => Stream::Err,
        false => Stream::Out,
    }
}

pub(crate) use crate::observer::Stream;

/// Prints the summary, writes the JSON result and the reports; what fails goes to
/// `finished.failures`.
pub(crate) fn write(
    finished: &mut Finished,
    json: Option<&Path>,
    reports: &[(Format, PathBuf)],
    summary: Option<Stream>,
    messages: bool,
    observer: &dyn Observer,
) {
    let result = &finished.result;
    let to_stdout = json == Some(Path::new("-"));
    // With the result on standard output (a shard's, for `kubectl logs`), standard error.
    if let Some(to) = summary {
        observer.event(&Event::Text {
            text: render_summary(result),
            to,
        });
    }
    let mut failures = Vec::new();
    match json {
        Some(_) if to_stdout => match serde_json::to_string(result) {
            Ok(text) => {
                // A closed standard output (a pipe whose reader left) is an error, not a panic.
                let mut stdout = std::io::stdout().lock();
                if let Err(e) = writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
                    failures.push(format!("cannot write the result to standard output: {e}"));
                }
            }
            Err(e) => failures.push(format!("serialising the result: {e}")),
        },
        Some(path) => match serde_json::to_string_pretty(result) {
            Ok(text) => match write_synced(path, &(text.clone() + "\n")) {
                Ok(()) if messages => observer.event(&Event::Written {
                    what: "result".into(),
                    path: path.to_path_buf(),
                }),
                Ok(()) => {}
                Err(e) => failures.push(spare(path, &text, e, &finished.snapshot.started_at)),
            },
            Err(e) => failures.push(format!("serialising the result: {e}")),
        },
        None => {}
    }
    for (format, path) in reports {
        match write_report(result, *format, path) {
            Ok(()) if messages && path != Path::new("-") => observer.event(&Event::Written {
                what: "report".into(),
                path: path.clone(),
            }),
            Ok(()) => {}
            Err(e) => failures.push(e.to_string()),
        }
    }
    finished.failures.extend(failures);
}

/// The run is over and cannot be had again: its result goes to a spare file in the temporary
/// directory; the message says where.
fn spare(path: &Path, text: &str, e: std::io::Error, started: &SystemTime) -> String {
    let spare = std::env::temp_dir().join(format!(
        "throng-result-{}-{}.json",
        std::process::id(),
        started
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    ));
    match std::fs::write(&spare, text) {
        Ok(()) => format!(
            "cannot write {}: {e}; the result was written to {} instead",
            path.display(),
            spare.display()
        ),
        Err(e2) => format!(
            "cannot write {} ({e}) nor {} ({e2}); the result is lost",
            path.display(),
            spare.display()
        ),
    }
}

/// Writes `text` and makes sure it reached the file (a full disk shows up at `sync`).
fn write_synced(path: &Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::File::create(path)?;
    f.write_all(text.as_bytes())?;
    f.flush()?;
    match f.sync_all() {
        // Character devices and pipes cannot sync; what they took was written.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => Ok(()),
        other => other,
    }
}

/// Checks, before any load, that a file can be written at `path`: its directory exists and
/// takes a new file, or the file exists and can be written. Nothing is left behind. `-`
/// (standard output) always can. The message starts with the path.
pub fn check_writable(path: &Path) -> Result<(), String> {
    if path == Path::new("-") {
        return Ok(());
    }
    let bad = |why: String| format!("{}: {why}", path.display());
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
        _ => Path::new("."),
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

/// A file beside `path` named for `suffix` before its extension (`t.csv` -> `t.series.csv`):
/// where a report's secondary document (CSV's series) goes, or one run's file of several.
/// An empty suffix is `path` itself.
pub fn beside(path: &Path, suffix: &str) -> PathBuf {
    if suffix.is_empty() {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let ext = path
        .extension()
        .map_or_else(String::new, |e| format!(".{}", e.to_string_lossy()));
    path.with_file_name(format!("{stem}.{suffix}{ext}"))
}

/// Writes `result` in `format` to `path` (and its secondary documents beside it); `-` is
/// standard output, as for the JSON result. A run's reports and `throng report` both write
/// through it; what fails is a [`RunError::Runtime`] naming the file.
pub fn write_report(result: &RunResult, format: Format, path: &Path) -> Result<(), RunError> {
    if path == Path::new("-") {
        let mut stdout = std::io::stdout().lock();
        for (_, text) in render_report(result, format) {
            stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
                .map_err(|e| {
                    RunError::Runtime(format!("cannot write the report to standard output: {e}"))
                })?;
        }
        return Ok(());
    }
    for (suffix, text) in render_report(result, format) {
        let p = beside(path, suffix);
        std::fs::write(&p, text).map_err(|e| {
            RunError::Runtime(format!("cannot write the report {}: {e}", p.display()))
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_cannot_be_written_is_named_with_why() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope/x.json");
        let e = check_writable(&missing).unwrap_err();
        assert!(e.starts_with(&missing.display().to_string()), "{e}");
        assert!(e.contains("does not exist"), "{e}");
        let e = check_writable(dir.path()).unwrap_err();
        assert!(e.contains("is a directory"), "{e}");
        let fine = dir.path().join("r.json");
        check_writable(&fine).unwrap();
        assert!(!fine.exists(), "the test write is removed");
        check_writable(Path::new("-")).unwrap();
    }

    #[test]
    fn secondary_documents_go_beside_the_named_file() {
        assert_eq!(
            beside(Path::new("d/t.csv"), "series"),
            PathBuf::from("d/t.series.csv")
        );
        assert_eq!(beside(Path::new("t.csv"), ""), PathBuf::from("t.csv"));
    }
}
