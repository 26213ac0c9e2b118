//! Grids in one command: `throng run PLAN --sweep users=... --target go=URL --target java=URL
//! [--rounds R]` runs the same plan at each level against each side in turn (A B A B ...), with
//! a cooldown between runs and each side's containers and databases watched during its own
//! runs, then prints the level table (and, for sides at one level, their comparison). The runs
//! and their order are the library's [`throng_run::Grid`]; this module points each run at its
//! side and level, and checks every side before any load.

use std::path::Path;
use std::sync::Arc;

use throng_core::step::{same_protocol, StepProtocol};
use throng_report::Coordinates;
use throng_run::Side;

use super::args::RunArgs;
use super::runner::{prepare_once, run_once};
use super::CliError;
use throng_cli::Outputs;

/// The sides of an A/B run, typed once from the `--target NAME=URL` flags: the library's
/// [`Side`]s (a name, and the URL or scenario file replacing the plan), for a scenario file
/// the one target of the file they point elsewhere, and each side's own flags.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sides {
    /// The sides, in the order they run.
    pub(crate) list: Vec<Side>,
    /// The scenario's target that each side points at its URL (the file's one target no
    /// `--target NAME=URL` names); none for a URL, which the side's replaces.
    target: Option<String>,
    /// The whole command line of each side that has flags of its own (`--target 'h2=URL
    /// --http2'`): the command's flags with the side's after them, which win.
    own: Vec<(String, RunArgs)>,
}

impl Sides {
    /// The flags a side runs with: its own command line, or the command's.
    fn args<'a>(&'a self, a: &'a RunArgs, side: Option<&Side>) -> &'a RunArgs {
        side.and_then(|s| self.own.iter().find(|(n, _)| *n == s.name))
            .map_or(a, |(_, args)| args)
    }
}

fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

/// The sides when `--target NAME=URL` flags ask for an A/B run: with `throng run URL` every
/// `--target` is a side; with a scenario file of one target, names that are not the file's
/// targets are sides. `None` when the run is a single one (no `--target`, or a scenario's
/// targets pointed elsewhere); a single run refuses `--cooldown`, which it would accept and
/// ignore (there is no second run to pause before).
pub(crate) fn sides(a: &RunArgs) -> Result<Option<Sides>, CliError> {
    let sides = sides_of(a)?;
    let single = || sides.is_none() && !a.run.is_grid() && with_file_sweep(a).is_none();
    if a.with.is_empty() && cooldown(a) && single() {
        return Err(usage(format!(
            "--cooldown {}: a pause between the runs of a sweep, rounds or A/B sides; this is \
             one run (add --sweep, --rounds or --target SIDE=URL twice, or drop --cooldown)",
            a.run.cooldown
        )));
    }
    if (a.run.shape.pivot.is_some() || !a.run.shape.renames.is_empty()) && single() {
        return Err(usage(
            "--pivot and --rename shape a grid's reports: this is one run (add --sweep, \
             --rounds or --target SIDE=URL twice, or drop them)",
        ));
    }
    Ok(sides)
}

/// Whether `--cooldown` asks for a pause (its default is none; a bad value counts, so that it
/// is refused rather than ignored).
fn cooldown(a: &RunArgs) -> bool {
    throng_core::stages::parse_duration(&a.run.cooldown).map_or(true, |d| !d.is_zero())
}

/// A `--target` value: `NAME=URL` or `NAME=FILE.yaml`, and for a side, flags of its own after
/// the URL (`h2=http://127.0.0.1:8080/ --http2`), split as a shell would (quotes kept
/// together).
struct TargetFlag {
    name: String,
    target: String,
    words: Vec<String>,
}

fn target_flag(t: &str) -> Result<TargetFlag, CliError> {
    let (n, u) = t.split_once('=').ok_or_else(|| {
        usage(format!(
            "--target {t:?}: write NAME=URL, e.g. --target go=http://127.0.0.1:8081"
        ))
    })?;
    let mut words = split_words(u).map_err(|e| usage(format!("--target {t:?}: {e}")))?;
    if words.is_empty() {
        return Err(usage(format!(
            "--target {t:?}: NAME=URL, with the URL (or a scenario file) after the ="
        )));
    }
    let target = words.remove(0);
    Ok(TargetFlag {
        name: n.trim().to_string(),
        target,
        words,
    })
}

/// Words as a shell splits them: spaces apart, '...' and "..." kept whole.
fn split_words(s: &str) -> Result<Vec<String>, String> {
    let (mut out, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => (quote, any) = (Some(c), true),
            (None, c) if c.is_whitespace() => {
                if any {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (None, c) => (any, _) = (true, word.push(c)),
        }
    }
    if let Some(q) = quote {
        return Err(format!("the quote {q} is not closed"));
    }
    if any {
        out.push(word);
    }
    Ok(out)
}

/// Flags that shape the grid rather than a run: a side cannot have its own.
const GRID_FLAGS: [&str; 17] = [
    "sweep",
    "rounds",
    "cooldown",
    "until",
    "json",
    "report",
    "target",
    "with",
    "shard",
    "shards",
    "start-at",
    "samples",
    "pivot",
    "columns",
    "unit",
    "metrics-listen",
    "metrics-push",
];

/// A side's whole command line: the process's `throng run` flags with the side's after them
/// (a flag given twice takes the side's value). The side's words are checked alone first, so
/// an unknown flag or one of the grid's is named with its side.
fn side_args(a: &RunArgs, flag: &TargetFlag) -> Result<RunArgs, CliError> {
    use clap::{CommandFactory, FromArgMatches};
    let named = |m: &str| usage(format!("--target {}: {m}", flag.name));
    let cmd = RunArgs::command().args_override_self(true);
    let alone = cmd
        .clone()
        .try_get_matches_from(
            ["throng run", &flag.target]
                .into_iter()
                .chain(flag.words.iter().map(String::as_str)),
        )
        .map_err(|e| named(&clap_message(&e)))?;
    for id in alone.ids() {
        if alone.value_source(id.as_str()) != Some(clap::parser::ValueSource::CommandLine) {
            continue;
        }
        let arg = cmd.get_arguments().find(|x| x.get_id() == id);
        let long = arg.and_then(|x| x.get_long()).unwrap_or(id.as_str());
        if id.as_str() == "mix" {
            return Err(named(&format!(
                "{:?} after {}: a side is one URL or scenario file and its flags",
                flag.words.join(" "),
                flag.target
            )));
        }
        if GRID_FLAGS.contains(&long) {
            return Err(named(&format!(
                "--{long} shapes the grid, not one side: give it once, outside the sides"
            )));
        }
    }
    let argv = command_line();
    let m = cmd
        .try_get_matches_from(
            argv.iter()
                .map(String::as_str)
                .chain(flag.words.iter().map(String::as_str)),
        )
        .map_err(|e| named(&clap_message(&e)))?;
    let own = RunArgs::from_arg_matches(&m).map_err(|e| named(&clap_message(&e)))?;
    if own.url != a.url {
        return Err(named(
            "a side's own flags are read from the command line of `throng run`",
        ));
    }
    Ok(own)
}

#[cfg(test)]
thread_local! {
    /// The command line a test stands in for the process's (`run URL ...`), as the book's
    /// commands are checked in-process.
    pub(crate) static COMMAND_LINE: std::cell::RefCell<Option<Vec<String>>> =
        const { std::cell::RefCell::new(None) };
}

/// The process's own command line, which made the `RunArgs`: `run ...` (the binary's name left
/// out).
fn command_line() -> Vec<String> {
    #[cfg(test)]
    if let Some(words) = COMMAND_LINE.with(|c| c.borrow().clone()) {
        return words;
    }
    std::env::args().skip(1).collect()
}

/// A clap error's message without its usage lines.
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or_default();
    first.trim_start_matches("error: ").to_string()
}

fn sides_of(a: &RunArgs) -> Result<Option<Sides>, CliError> {
    if a.targets.is_empty() {
        return Ok(None);
    }
    let flags = a
        .targets
        .iter()
        .map(|t| target_flag(t))
        .collect::<Result<Vec<_>, CliError>>()?;
    let mut pairs: Vec<Side> = flags
        .iter()
        .map(|f| Side::new(&f.name, &f.target))
        .collect();
    let mut target = None;
    if flags
        .iter()
        .any(|f| super::scenario::is_scenario(&f.target))
    {
        // Sides of scenario files: each a plan of its own (another flow, as a saga's
        // configurations are); the other `--target`s point the files' targets, for every side.
        pairs.retain(|p| super::scenario::is_scenario(&p.target));
        for p in &pairs {
            if !std::path::Path::new(&p.target).is_file() {
                return Err(usage(format!(
                    "--target {}={}: no such scenario file",
                    p.name, p.target
                )));
            }
        }
    } else if super::scenario::is_scenario(&a.url) {
        // A file that does not load says why in the run itself.
        let Ok(scenario) = throng_scenario::load(Path::new(&a.url), &crate::protocols()) else {
            return Ok(None);
        };
        let own: Vec<&str> = scenario.targets.iter().map(|t| t.name.as_str()).collect();
        let foreign: Vec<Side> = pairs
            .iter()
            .filter(|p| !own.contains(&p.name.as_str()))
            .cloned()
            .collect();
        // One unknown name is a mistyped target rather than an A/B run: the override says so.
        if foreign.len() < 2 {
            return Ok(None);
        }
        // The sides replace the one target of the file that no --target NAME=URL points
        // elsewhere; the file's other targets stay the same for every side.
        let free: Vec<&str> = own
            .iter()
            .copied()
            .filter(|t| !pairs.iter().any(|p| p.name == *t))
            .collect();
        if free.len() != 1 {
            return Err(usage(format!(
                "--target: the sides {} replace one target of {}, but {} of its targets are not \
                 pointed elsewhere ({free:?}): give all but one of them as --target NAME=URL",
                foreign
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                a.url,
                free.len()
            )));
        }
        target = free.first().map(|t| t.to_string());
        pairs = foreign;
    }
    if pairs.len() < 2 {
        return Err(usage(format!(
            "--target {}: an A/B run needs two or more sides (--target A=URL --target B=URL, \
             or --target A=FILE.yaml --target B=FILE.yaml)",
            a.targets[0]
        )));
    }
    let protocols = crate::protocols();
    let mut own = Vec::new();
    for (i, p) in pairs.iter().enumerate() {
        let flag = format!("--target {}={}", p.name, p.target);
        if p.name.is_empty() || pairs[..i].iter().any(|q| q.name == p.name) {
            return Err(usage(format!("{flag}: each side needs a name of its own")));
        }
        if let Some(f) = flags
            .iter()
            .find(|f| f.name == p.name && !f.words.is_empty())
        {
            own.push((p.name.clone(), side_args(a, f)?));
        }
        if super::scenario::is_scenario(&p.target) {
            continue;
        }
        // Every side's URL is checked before the first side's load.
        let checked = match protocols.for_url(&p.target) {
            Some(proto) => proto.check_target(&p.target),
            None => Err(format!(
                "not a URL of the protocols throng speaks ({})",
                protocols.schemes()
            )),
        };
        checked.map_err(|e| usage(format!("{flag}: {e}")))?;
    }
    // Flags after a name that is no side (a scenario's target pointed elsewhere) would be
    // silently dropped.
    if let Some(f) = flags
        .iter()
        .find(|f| !f.words.is_empty() && !pairs.iter().any(|p| p.name == f.name))
    {
        return Err(usage(format!(
            "--target {}={}: flags after a target that is not a side ({}); a side's flags \
             follow its URL or file",
            f.name,
            f.target,
            f.words.join(" ")
        )));
    }
    Ok(Some(Sides {
        list: pairs,
        target,
        own,
    }))
}

/// The flags of one run of the grid: the side's URL in place of the plan's (a scenario's one
/// side target pointed at it), the level's users or rate, the side's containers and databases
/// only, and no outputs of its own (the grid writes them). `side` is the run's, as the grid
/// hands it over in its cell.
fn cell_args(
    a: &RunArgs,
    at: &Coordinates,
    side: Option<&Side>,
    sides: &Sides,
) -> Result<RunArgs, CliError> {
    let a = sides.args(a, side);
    let mut r = a.clone();
    let names: Vec<&str> = sides.list.iter().map(|s| s.name.as_str()).collect();
    // The --target entries that are no side: a scenario's targets pointed elsewhere.
    let others = || {
        a.targets.iter().filter(|t| {
            !t.split_once('=')
                .is_some_and(|(n, _)| names.contains(&n.trim()))
        })
    };
    if let Some(side) = side {
        match &sides.target {
            // The scenario's flags point its targets by name: the sides' target at this side,
            // the others where their own --target NAME=URL says.
            Some(target) => {
                r.targets = others()
                    .cloned()
                    .chain(std::iter::once(format!("{target}={}", side.target)))
                    .collect();
            }
            // A side of its own scenario file: the file's plan, its targets pointed by the
            // --target entries that are no side.
            None if super::scenario::is_scenario(&side.target) => {
                r.url = side.target.clone();
                r.mix.clear();
                r.targets = others().cloned().collect();
            }
            None => {
                r.url = side.target.clone();
                r.targets.clear();
                if let (true, Some(p)) = (mixed(&sides.list), protocol_of(&side.target)) {
                    // Sides of several protocols: each takes the flags of its own.
                    r = super::runner::for_protocol(&r, &*p);
                }
            }
        }
    }
    if let Some(level) = at.level {
        r.run = r.run.at_level(level);
    }
    // `--idle` samples a side's containers once before its first run, and the grid once more
    // after the last (`Grid::idle`): before a later run they are just out of a load, and 8
    // levels were 8 idle periods.
    if at.round > 1 || at.level != a.run.levels()?.first().copied() {
        r.run.idle = None;
    }
    // `--container go=web-go` is this side's when it names a side; a plain name is every
    // side's. The same for `--db-stats go=postgres://...`.
    let side = at.side.as_deref();
    r.run.containers = side_entries(&a.run.containers, &names, side);
    for p in r.protocols.all_mut() {
        p.for_side(&|list| side_entries(list, &names, side));
    }
    r.run.json = None;
    r.run.reports.clear();
    r.run.shape = Default::default();
    r.run.sweep = None;
    r.run.until = None;
    r.run.rounds = 1;
    Ok(r)
}

/// A list's entries for one side: those that name no side (`NAME`) and the side's own
/// (`SIDE=NAME`, as `NAME`).
fn side_entries(list: &[String], sides: &[&str], side: Option<&str>) -> Vec<String> {
    list.iter()
        .filter_map(|c| match c.split_once('=') {
            Some((n, c)) if sides.contains(&n) => (Some(n) == side).then(|| c.to_string()),
            _ => Some(c.clone()),
        })
        .collect()
}

/// The protocol a URL's scheme picks, its declaration (none: its run then says why).
fn protocol_of(url: &str) -> Option<Arc<dyn StepProtocol>> {
    crate::protocols().for_url(url).cloned()
}

/// Whether the sides speak more than one protocol (HTTP against gRPC: transports side by side),
/// by their declarations.
fn mixed(sides: &[Side]) -> bool {
    sides.windows(2).any(
        |w| match (protocol_of(&w[0].target), protocol_of(&w[1].target)) {
            (Some(a), Some(b)) => !same_protocol(&*a, &*b),
            (a, b) => a.is_some() || b.is_some(),
        },
    )
}

/// Runs the grid: every side checked first (its URL, its protocol's flags, its server where
/// the protocol asks one before the load, as gRPC's reflection), then every run.
pub(crate) async fn run(a: &RunArgs, sides: Sides, out: Outputs) -> Result<u8, CliError> {
    let swept = with_file_sweep(a);
    let a = swept.as_ref().unwrap_or(a);
    one_process(&out, "a sweep, rounds or A/B sides")?;
    if mixed(&sides.list) && !super::scenario::is_scenario(&a.url) {
        // A protocol's flags go to its own sides; one that applies to no side is refused.
        let protocols: Vec<_> = sides
            .list
            .iter()
            .filter_map(|s| protocol_of(&s.target))
            .collect();
        super::runner::applies_to_any(a, &protocols)?;
    }
    let first_level = a.run.levels()?.first().copied();
    let (mut labels, mut thresholds) = (Vec::new(), Vec::new());
    let check: Vec<Option<&Side>> = match sides.list.is_empty() {
        true => vec![None],
        false => sides.list.iter().map(Some).collect(),
    };
    for side in check {
        let at = Coordinates {
            level: first_level,
            side: side.map(|s| s.name.clone()),
            round: 1,
        };
        let args = cell_args(a, &at, side, &sides)?;
        for p in args.protocols.all() {
            p.check_watched(&args.request)
                .map_err(|e| match (CliError::from(e), side) {
                    (CliError::Usage(m), Some(s)) => usage(format!("side {}: {m}", s.name)),
                    (e, _) => e,
                })?;
        }
        let named = |e: String| match side {
            Some(s) => format!("side {}: {e}", s.name),
            None => e,
        };
        // Made and checked as it will run, but not started.
        let checked = match prepare_once(&args, throng_core::Shard::WHOLE).await {
            Ok(prepared) => prepared.check().await,
            Err(e) => Err(e),
        };
        match checked {
            Ok(c) => (labels, thresholds) = (c.labels, c.thresholds),
            Err(CliError::Usage(m)) => return Err(usage(named(m))),
            Err(CliError::Runtime(e)) => {
                return Err(CliError::Runtime(anyhow::anyhow!(named(format!("{e:#}")))))
            }
        }
    }
    // Checked by the first side's run above.
    let idle = a
        .run
        .idle
        .as_deref()
        .and_then(|d| throng_core::stages::parse_duration(d).ok())
        .unwrap_or_default();
    let mut grid = a
        .run
        .grid(&labels)?
        .with_thresholds(thresholds)
        .sides(sides.list.clone())
        .idle(idle);
    if let Some(m) = &out.metrics {
        grid = grid.metrics(m.clone());
    }
    let finished = grid
        .execute(|cell| {
            let out = &out;
            let sides = &sides;
            let at = cell.at.clone();
            async move {
                let args = cell_args(a, &at, cell.side.as_ref(), sides).map_err(run_error)?;
                // Each run's samples in a file of their own: `s.jtl` -> `s.1000-users-go-1.jtl`.
                let tag: Vec<String> = [
                    at.level.map(|l| l.tag()),
                    at.side.clone(),
                    Some(at.round.to_string()),
                ]
                .into_iter()
                .flatten()
                .collect();
                let run_out = Outputs {
                    show: out.show,
                    quiet: out.quiet,
                    samples: out
                        .samples
                        .as_ref()
                        .map(|p| throng_run::beside(p, &tag.join("-"))),
                    metrics: out.metrics.clone(),
                    cell: Some(cell),
                    ..Outputs::default()
                };
                super::runner::watched(&args, run_out, |o| run_once(&args, o))
                    .await
                    .map_err(run_error)
            }
        })
        .await?;
    for f in &finished.failures {
        eprintln!("throng: error: {f}");
    }
    Ok(finished.exit_code())
}

/// The flags with a scenario file's `load: sweep:` as `--sweep`, when the command line gives
/// none (the flag wins over the file, as over the rest of its `load:`); `None` when there is no
/// such file or sweep. The file checked its sweep where it is written (`file:line:column`); a
/// file that does not load says why in the run itself.
pub(crate) fn with_file_sweep(a: &RunArgs) -> Option<RunArgs> {
    if a.run.sweep.is_some() || !super::scenario::is_scenario(&a.url) {
        return None;
    }
    let scenario = throng_scenario::load(Path::new(&a.url), &crate::protocols()).ok()?;
    let mut r = a.clone();
    r.run.sweep = Some(scenario.sweep?.flag());
    Some(r)
}

/// A grid of runs is one process's: a shard of it would silently run every level whole, and
/// `throng merge` takes runs, not grids.
fn one_process(out: &Outputs, what: &str) -> Result<(), CliError> {
    if !out.shard.is_whole() || out.start_at.is_some() {
        return Err(usage(format!(
            "--shard, --shards and --start-at split one run between processes: not with {what}"
        )));
    }
    Ok(())
}

/// A run's failure as the grid's: bad input stays bad input (exit 2).
fn run_error(e: CliError) -> throng_run::RunError {
    match e {
        CliError::Usage(m) => throng_run::RunError::Input(m),
        other => throng_run::RunError::Runtime(format!("{other:#}")),
    }
}

/// Runs the plan's file and every `--with` file at the same time, each a workload of its own
/// (its own load model, steps and thresholds); one result with a row per workload and TOTAL.
/// Every workload is checked before any starts.
pub(crate) async fn together(a: &RunArgs, out: Outputs) -> Result<u8, CliError> {
    one_process(&out, "--with")?;
    if a.run.is_grid()
        || a.run.until.is_some()
        || cooldown(a)
        || !a.targets.is_empty() && sides(a)?.is_some()
    {
        return Err(usage(
            "--with runs workloads at the same time: not with --sweep, --rounds, --cooldown or \
             A/B sides",
        ));
    }
    let stem = |f: &str| {
        Path::new(f)
            .file_stem()
            .map_or(f.to_string(), |s| s.to_string_lossy().into_owned())
    };
    let mut list = vec![(stem(&a.url), a.url.clone())];
    for w in &a.with {
        let (name, file) = match w.split_once('=') {
            Some((n, f)) if !Path::new(w).exists() => (n.trim().to_string(), f.to_string()),
            _ => (stem(w), w.clone()),
        };
        list.push((name, file));
    }
    for (i, (name, file)) in list.iter().enumerate() {
        if !super::scenario::is_scenario(file) {
            let flag = if i == 0 { "" } else { "--with " };
            return Err(usage(format!(
                "{flag}{file}: a workload of --with is a scenario file (.yaml, .yml) with its \
                 own load"
            )));
        }
        if name.is_empty() || list[..i].iter().any(|(n, _)| n == name) {
            return Err(usage(format!(
                "--with {file}: each workload needs a name of its own (NAME=FILE)"
            )));
        }
    }
    let args: Vec<RunArgs> = list
        .iter()
        .enumerate()
        .map(|(i, (_, file))| {
            let mut r = a.clone();
            r.url = file.clone();
            // The plan's mix (`a.yaml@7 b.yaml@3`) is the first workload's; each `--with`
            // workload is its own file only.
            if i > 0 {
                r.mix.clear();
            }
            r.with.clear();
            r.run.json = None;
            r.run.reports.clear();
            r
        })
        .collect();
    for ((name, _), args) in list.iter().zip(&args) {
        let checked = match prepare_once(args, throng_core::Shard::WHOLE).await {
            Ok(prepared) => prepared.check().await,
            Err(e) => Err(e),
        };
        match checked {
            Ok(_) => {}
            Err(CliError::Usage(m)) => return Err(usage(format!("workload {name}: {m}"))),
            Err(CliError::Runtime(e)) => {
                return Err(CliError::Runtime(anyhow::anyhow!("workload {name}: {e:#}")))
            }
        }
    }
    let mut grid = throng_run::Grid::new()
        .observer(throng_run::Console)
        .summary(true)
        .messages(!out.quiet);
    if let Some(p) = &out.json {
        grid = grid.json(p);
    }
    if let Some(m) = &out.metrics {
        grid = grid.metrics(m.clone());
    }
    for (format, path) in &out.reports {
        grid = grid.report(*format, path);
    }
    let names: Vec<String> = list.iter().map(|(name, _)| name.clone()).collect();
    let finished = grid
        .together(names.clone(), |cell| {
            // The cell of the workload named as its title (every name is one of `names`).
            let i = names.iter().position(|n| *n == cell.title).unwrap_or(0);
            let args = args[i].clone();
            let run_out = Outputs {
                // One dashboard or progress line: the first workload's.
                show: match i {
                    0 => out.show,
                    _ => throng_run::Show::Nothing,
                },
                quiet: out.quiet,
                samples: out
                    .samples
                    .as_ref()
                    .map(|p| throng_run::beside(p, &cell.title)),
                metrics: out.metrics.clone(),
                // Its cell: titled with its name, a cell of its own for the metrics exporter
                // (labelled by its name) and on the workloads' dashboard.
                cell: Some(cell),
                ..Outputs::default()
            };
            Box::pin(async move { run_once(&args, run_out).await.map_err(run_error) })
        })
        .await?;
    for f in &finished.failures {
        eprintln!("throng: error: {f}");
    }
    Ok(finished.exit_code())
}
