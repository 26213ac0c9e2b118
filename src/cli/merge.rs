//! `throng merge`: the results of a plan's shards as the result of the whole plan, summarised,
//! judged by thresholds once, and written as one result.

use std::path::PathBuf;

use clap::Args;
use throng_report::{merge, render_summary};

use super::{CliError, EXIT_OK, EXIT_THRESHOLDS};

/// Flags of `throng merge`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  throng merge shard-0.json shard-1.json shard-2.json
  throng merge shard-*.json --json merged.json --threshold 'p99<250ms'

Each shard of the plan must be there once (run with --shard I/N). Exit codes: 0 passed,
2 usage or input error (a missing or repeated shard, shards of different plans), 99 a
threshold failed.")]
pub struct MergeArgs {
    /// The shards' result files (`throng run --shard I/N --json FILE`), or logs holding their
    /// results as lines (`--json -`, then `kubectl logs` or `docker service logs`).
    #[arg(required = true, value_name = "RESULT")]
    pub results: Vec<PathBuf>,
    /// Write the merged result to this file (`-`: on standard output, as one line).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// A pass/fail condition on the merged result, as for `throng run` (repeatable).
    #[arg(long = "threshold")]
    pub thresholds: Vec<String>,
}

/// The results in a file: a result file (`--json FILE`), or logs holding results as lines
/// (`--json -` collected by `kubectl logs` or `docker service logs`, whose lines may carry a
/// prefix before the JSON).
fn read_results(path: &std::path::Path) -> Result<Vec<throng_report::RunResult>, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("{}: cannot read the result: {e}", path.display())))?;
    if let Ok(one) = serde_json::from_str(&text) {
        return Ok(vec![one]);
    }
    let found: Vec<throng_report::RunResult> = text
        .lines()
        .filter_map(|l| l.find('{').and_then(|i| serde_json::from_str(&l[i..]).ok()))
        .collect();
    if found.is_empty() {
        // Say what is wrong with it as one result.
        return super::compare::read_result(path).map(|r| vec![r]);
    }
    Ok(found)
}

/// Runs `throng merge`.
pub fn run_merge(a: &MergeArgs) -> Result<u8, CliError> {
    if let Some(path) = &a.json {
        super::writable("--json", path)?;
    }
    let mut results = Vec::new();
    let mut files = Vec::new();
    for p in &a.results {
        let found = read_results(p)?;
        files.extend(std::iter::repeat_n(p.clone(), found.len()));
        results.extend(found);
    }
    let mut merged = merge(&results).map_err(|e| {
        // Positions become the user's file names.
        let mut m = e.to_string();
        for (i, p) in files.iter().enumerate().rev() {
            m = m.replace(&format!("result {}", i + 1), &p.display().to_string());
            m = m.replace(
                &format!("results {} and", i + 1),
                &format!("{} and", p.display()),
            );
            m = m.replace(
                &format!("and {} are", i + 1),
                &format!("and {} are", p.display()),
            );
        }
        CliError::Usage(m)
    })?;
    let labels: Vec<String> = merged.labels.iter().map(|l| l.label.clone()).collect();
    let thresholds = throng_run::flags::parse_thresholds(&a.thresholds, "--threshold", &labels)?;
    merged.thresholds = thresholds.iter().map(|t| t.evaluate(&merged)).collect();
    if a.json.as_deref() == Some(std::path::Path::new("-")) {
        eprint!("{}", render_summary(&merged));
    } else {
        print!("{}", render_summary(&merged));
    }
    if a.json.as_deref() == Some(std::path::Path::new("-")) {
        let text = serde_json::to_string(&merged)
            .map_err(|e| CliError::Runtime(anyhow::anyhow!("the merged result as JSON: {e}")))?;
        println!("{text}");
    } else if let Some(path) = &a.json {
        let text = serde_json::to_string_pretty(&merged)
            .map_err(|e| CliError::Runtime(anyhow::anyhow!("the merged result as JSON: {e}")))?;
        std::fs::write(path, text + "\n").map_err(|e| {
            CliError::Runtime(anyhow::anyhow!("cannot write {}: {e}", path.display()))
        })?;
        eprintln!("merged result written to {}", path.display());
    }
    Ok(if merged.passed() {
        EXIT_OK
    } else {
        EXIT_THRESHOLDS
    })
}
