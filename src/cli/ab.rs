//! A/B in one command: `throng run PLAN --target go=URL --target java=URL [--rounds R]` runs the
//! same plan against each target in turn (A B A B ...), with a cooldown between runs and each
//! side's containers watched during its own runs, then prints the comparison.

use std::path::Path;

use throng_report::{
    compare, comparison_markdown, render_comparison, render_comparison_html, Format, RunResult,
    Side,
};

use super::args::RunArgs;
use super::runner::{run_once, Outputs};
use super::{CliError, EXIT_OK, EXIT_THRESHOLDS};

/// One side of an A/B run: its name and the URL it puts the plan against.
#[derive(Debug, Clone, PartialEq)]
pub struct AbSide {
    /// The name in the comparison's columns.
    pub name: String,
    /// The URL replacing the plan's target.
    pub url: String,
}

fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

/// The sides when `--target NAME=URL` flags ask for an A/B run: with `throng run URL` every
/// `--target` is a side; with a scenario file of one target, names that are not the file's
/// targets are sides. `None` when the run is a single one (no `--target`, or a scenario's
/// targets pointed elsewhere).
pub fn sides(a: &RunArgs) -> Result<Option<Vec<AbSide>>, CliError> {
    if a.targets.is_empty() {
        if a.rounds != 1 {
            return Err(usage(
                "--rounds alternates the targets of an A/B run: give two or more --target NAME=URL",
            ));
        }
        return Ok(None);
    }
    let pairs = a
        .targets
        .iter()
        .map(|t| {
            let (n, u) = t.split_once('=').ok_or_else(|| {
                usage(format!(
                    "--target {t:?}: write NAME=URL, e.g. --target go=http://127.0.0.1:8081"
                ))
            })?;
            Ok(AbSide {
                name: n.trim().to_string(),
                url: u.trim().to_string(),
            })
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    if super::scenario::is_scenario(&a.url) {
        // A file that does not load says why in the run itself.
        let Ok(scenario) = throng_scenario::load(Path::new(&a.url), &crate::protocols()) else {
            return Ok(None);
        };
        let own: Vec<&str> = scenario.targets.iter().map(|t| t.name.as_str()).collect();
        let foreign: Vec<&AbSide> = pairs
            .iter()
            .filter(|p| !own.contains(&p.name.as_str()))
            .collect();
        // One unknown name is a mistyped target rather than an A/B run: the override says so.
        if foreign.is_empty() || pairs.len() < 2 {
            return Ok(None);
        }
        if foreign.len() != pairs.len() || own.len() != 1 {
            return Err(usage(format!(
                "--target: {} names no target of {} (its targets are {own:?}); an A/B run of a \
                 scenario needs a file of one target, and --target SIDE=URL for each side",
                foreign[0].name, a.url
            )));
        }
    }
    if pairs.len() < 2 {
        return Err(usage(format!(
            "--target {}: an A/B run needs two or more sides (--target A=URL --target B=URL)",
            a.targets[0]
        )));
    }
    let protocols = crate::protocols();
    for (i, p) in pairs.iter().enumerate() {
        if p.name.is_empty() || pairs[..i].iter().any(|q| q.name == p.name) {
            return Err(usage(format!(
                "--target {:?}: each side needs a name of its own",
                a.targets[i]
            )));
        }
        // Every side's URL is checked before the first side's load.
        let checked = match protocols.for_url(&p.url) {
            Some(proto) => proto.check_target(&p.url),
            None => throng_http::HttpConfig::new(&p.url)
                .map(|_| ())
                .map_err(|e| e.to_string()),
        };
        checked.map_err(|e| usage(format!("--target {:?}: {e}", a.targets[i])))?;
    }
    Ok(Some(pairs))
}

/// The flags of one side's run: its URL in place of the plan's, its containers only, and no
/// outputs of its own (the comparison writes them).
fn side_args(a: &RunArgs, side: &AbSide, names: &[&str]) -> RunArgs {
    let mut r = a.clone();
    if super::scenario::is_scenario(&a.url) {
        // The file has one target (checked): point it at this side.
        let scenario = throng_scenario::load(Path::new(&a.url), &crate::protocols());
        let target = scenario
            .ok()
            .and_then(|s| s.targets.first().map(|t| t.name.clone()))
            .unwrap_or_default();
        r.targets = vec![format!("{target}={}", side.url)];
    } else {
        r.url = side.url.clone();
        r.targets.clear();
    }
    // `--container go=web-go` is this side's when it names it; a plain name is every side's.
    r.run.containers = a
        .run
        .containers
        .iter()
        .filter_map(|c| match c.split_once('=') {
            Some((n, c)) if names.contains(&n) => (n == side.name).then(|| c.to_string()),
            _ => Some(c.clone()),
        })
        .collect();
    r.run.json = None;
    r.run.reports.clear();
    r
}

/// Runs every side `--rounds` times, alternating, then prints and writes the comparison.
pub async fn run(a: &RunArgs, sides: Vec<AbSide>, out: Outputs) -> Result<u8, CliError> {
    for (format, _) in &out.run.reports {
        if !matches!(format, Format::Html | Format::Markdown | Format::Json) {
            return Err(usage(
                "--report: an A/B run writes html, markdown or json (its comparison); write other \
                 formats of each run with throng report on the JSON",
            ));
        }
    }
    let cooldown = throng_core::stages::parse_duration(&a.cooldown)
        .map_err(|e| usage(format!("--cooldown {:?}: not a duration ({e})", a.cooldown)))?;
    let names: Vec<&str> = sides.iter().map(|s| s.name.as_str()).collect();
    let mut results: Vec<Side> = sides
        .iter()
        .map(|s| Side {
            name: s.name.clone(),
            runs: Vec::new(),
        })
        .collect();
    let mut code = EXIT_OK;
    let total = a.rounds as usize * sides.len();
    let mut n = 0;
    for round in 1..=a.rounds {
        for (i, side) in sides.iter().enumerate() {
            if n > 0 && !cooldown.is_zero() {
                if !a.run.quiet {
                    eprintln!("cooling down for {}", a.cooldown);
                }
                tokio::time::sleep(cooldown).await;
            }
            n += 1;
            let title = if a.rounds > 1 {
                format!("{}, round {round} of {}", side.name, a.rounds)
            } else {
                side.name.clone()
            };
            if !a.run.quiet {
                eprintln!("run {n} of {total}: {title} ({})", side.url);
            }
            // Each run's samples in a file of its own: `s.jtl` -> `s.go-1.jtl`.
            let samples = out
                .run
                .samples
                .as_ref()
                .map(|p| throng_run::beside(p, &format!("{}-{round}", side.name)));
            let run_out = Outputs {
                run: throng_run::flags::Outputs {
                    show: out.run.show,
                    quiet: out.run.quiet,
                    title: Some(title),
                    samples,
                    ..Default::default()
                },
                databases: None,
            };
            let finished = run_once(&side_args(a, side, &names), run_out).await?;
            match finished.exit_code() {
                EXIT_OK => {}
                EXIT_THRESHOLDS => code = EXIT_THRESHOLDS,
                other => return Ok(other),
            }
            let stopped = finished.result.interrupted;
            results[i].runs.push(finished.result);
            if stopped {
                // A signal stopped this run: the comparison is of what ran.
                return finish(&results, &out, code);
            }
        }
    }
    finish(&results, &out, code)
}

fn finish(sides: &[Side], out: &Outputs, code: u8) -> Result<u8, CliError> {
    let sides: Vec<Side> = sides
        .iter()
        .filter(|s| !s.runs.is_empty())
        .cloned()
        .collect();
    if sides.len() < 2 {
        eprintln!("throng: the A/B run stopped before every side ran: no comparison");
        return Ok(code);
    }
    // The same plan against each side by construction: nothing to refuse.
    let c = compare(&sides, true).map_err(|e| usage(e.to_string()))?;
    println!("\n{}", render_comparison(&c));
    let doc = combined(&sides, &c);
    let write = |path: &Path, text: String| {
        std::fs::write(path, text)
            .map(|()| eprintln!("written to {}", path.display()))
            .map_err(|e| CliError::Runtime(anyhow::anyhow!("cannot write {}: {e}", path.display())))
    };
    if let Some(path) = &out.run.json {
        write(path, doc.clone())?;
    }
    for (format, path) in &out.run.reports {
        let text = match format {
            Format::Html => render_comparison_html(&c, &sides),
            Format::Markdown => comparison_markdown(&c),
            _ => doc.clone(),
        };
        write(path, text)?;
    }
    Ok(code)
}

/// The combined JSON of an A/B run: every run's result by side, and the comparison.
/// `throng compare` reads it back as its sides.
fn combined(sides: &[Side], c: &throng_report::Comparison) -> String {
    let sides: Vec<serde_json::Value> = sides
        .iter()
        .map(|s| serde_json::json!({ "name": s.name, "runs": s.runs }))
        .collect();
    let doc = serde_json::json!({
        "schema_version": throng_report::SCHEMA_VERSION,
        "kind": "comparison",
        "sides": sides,
        "comparison": c,
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// The sides of a combined A/B result file, if `text` is one.
pub fn read_combined(text: &str) -> Option<Vec<Side>> {
    let doc: serde_json::Value = serde_json::from_str(text).ok()?;
    if doc.get("kind")?.as_str()? != "comparison" {
        return None;
    }
    doc.get("sides")?
        .as_array()?
        .iter()
        .map(|s| {
            Some(Side {
                name: s.get("name")?.as_str()?.to_string(),
                runs: serde_json::from_value::<Vec<RunResult>>(s.get("runs")?.clone()).ok()?,
            })
        })
        .collect()
}
