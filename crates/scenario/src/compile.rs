//! From the file as written to a runnable [`Scenario`]: every name, template, JSONPath, regex,
//! data file and target is checked before any load starts, and a problem names its place as
//! `file:line:column`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_saphyr::{Location, Spanned};
use throng_core::step::{Place, Protocols, StepError, TemplateCompiler, Text};

use crate::control::Block;
use crate::data::Feed;
use crate::file::{self, File, Item, OnFailure};
use crate::scenario::{Scenario, Step, Target};
use crate::template::{Templates, BUILTINS, FUNCTIONS};

mod items;
mod step;

use items::{items, Compiled};

/// A scenario that cannot be used, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{file}: {message}")]
    Read {
        /// The file.
        file: String,
        /// Why.
        message: String,
    },
    /// A problem with no place in a file: a scenario built in Rust.
    #[error("{name}: {message}")]
    Built {
        /// The scenario's name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A problem at a place in the file.
    #[error("{file}:{line}:{column}: {message}")]
    At {
        /// The file.
        file: String,
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: u64,
        /// What is wrong.
        message: String,
    },
}

struct Ctx<'a> {
    file: &'a str,
    protocols: &'a Protocols,
    dir: PathBuf,
    templates: Templates,
    known: HashSet<String>,
    /// Templates to check once every variable name is known: (used names, where).
    uses: Vec<(HashSet<String>, Place)>,
}

impl TemplateCompiler for Ctx<'_> {
    fn text(&mut self, source: &str, at: Place) -> Result<Text, StepError> {
        let (text, used) = self
            .templates
            .compile(source)
            .map_err(|e| StepError::at(at, format!("bad template: {e}")))?;
        if !used.is_empty() {
            self.uses.push((used, at));
        }
        Ok(text)
    }

    fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Ctx<'_> {
    fn at(&self, loc: Location, message: impl Into<String>) -> ScenarioError {
        at(self.file, loc, message.into())
    }

    fn place(&self, e: StepError) -> ScenarioError {
        place_error(self.file, e.at, e.message)
    }

    fn spanned_text(&mut self, s: &Spanned<String>) -> Result<Text, ScenarioError> {
        let at = file::place(s.referenced);
        TemplateCompiler::text(self, &s.value, at).map_err(|e| self.place(e))
    }
}

/// An error at a place; a place of line 0 is no place (a scenario built in Rust).
fn at(file: &str, loc: Location, message: String) -> ScenarioError {
    if loc.line() == 0 {
        return ScenarioError::Built {
            name: file.to_string(),
            message,
        };
    }
    ScenarioError::At {
        file: file.to_string(),
        line: loc.line(),
        column: loc.column(),
        message,
    }
}

/// An error at a place a protocol named.
pub(crate) fn place_error(file: &str, at: Place, message: String) -> ScenarioError {
    if at.line == 0 {
        return ScenarioError::Built {
            name: file.to_string(),
            message,
        };
    }
    ScenarioError::At {
        file: file.to_string(),
        line: at.line,
        column: at.column,
        message,
    }
}

/// Reads and compiles a scenario file; its targets' URL schemes pick among `protocols`.
pub fn load(path: &Path, protocols: &Protocols) -> Result<Scenario, ScenarioError> {
    let (text, file) = read(path)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    compile_str(&text, &file, &dir, protocols)
}

/// A scenario file's text and its name for messages.
pub(crate) fn read(path: &Path) -> Result<(String, String), ScenarioError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| ScenarioError::Read {
        file: file.clone(),
        message: format!("cannot read the scenario file: {e}"),
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        // Point at the first byte that is not UTF-8: a binary file, or text in another encoding.
        let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let good = std::str::from_utf8(good).unwrap_or_default();
        let line = good.matches('\n').count() as u64 + 1;
        let column = good.rsplit('\n').next().unwrap_or_default().chars().count() as u64 + 1;
        ScenarioError::At {
            file: file.clone(),
            line,
            column,
            message: "not a text file: a scenario is YAML text in UTF-8".into(),
        }
    })?;
    Ok((text, file))
}

/// Compiles scenario text; `file` names it in messages and `dir` anchors relative data files.
pub fn compile_str(
    text: &str,
    file: &str,
    dir: &Path,
    protocols: &Protocols,
) -> Result<Scenario, ScenarioError> {
    if crate::yaml::blank(text) {
        return Err(ScenarioError::At {
            file: file.to_string(),
            line: 1,
            column: 1,
            message: "the file is empty; a scenario needs at least `targets` and `steps`".into(),
        });
    }
    compile_file(parse(text, file)?, file, dir, false, protocols)
}

/// The file as written, its YAML errors at their place.
pub(crate) fn parse(text: &str, file: &str) -> Result<File, ScenarioError> {
    serde_saphyr::from_str(text).map_err(|e| {
        let (line, column, message) = crate::yaml::describe(&e, text);
        ScenarioError::At {
            file: file.to_string(),
            line,
            column,
            message,
        }
    })
}

/// Compiles a parsed file; `allow_empty` lets a built scenario consist of custom steps only.
/// The checks run in the order a reader meets them, so the first problem reported is the
/// first in the file: targets, data, the lists of steps, then what needs every step seen
/// (unique labels, known variables).
pub(crate) fn compile_file(
    parsed: File,
    file: &str,
    dir: &Path,
    allow_empty: bool,
    protocols: &Protocols,
) -> Result<Scenario, ScenarioError> {
    let mut cx = Ctx {
        file,
        protocols,
        dir: dir.to_path_buf(),
        templates: Templates::default(),
        known: HashSet::new(),
        uses: Vec::new(),
    };
    cx.known
        .extend(BUILTINS.iter().chain(FUNCTIONS).map(|s| s.to_string()));
    cx.known.extend(parsed.variables.keys().cloned());
    let load = crate::load::check(&parsed.load, &|loc, m| at(file, loc, m))?;
    let sweep = parsed
        .load
        .sweep
        .as_ref()
        .map(|s| crate::load::sweep(s, &|loc, m| at(file, loc, m)))
        .transpose()?;
    let targets = targets(&cx, &parsed.targets)?;
    let feeds = feeds(&mut cx, &parsed.data)?;
    let lists = lists(&cx, &parsed.steps, &parsed.flows)?;
    // Extracted names are known everywhere: a step may use what an earlier one extracted.
    for (_, list) in &lists {
        for item in list.value.iter() {
            cx.known.extend(item.value.extract.keys().cloned());
            for inner in item.value.steps.iter().flatten() {
                cx.known.extend(inner.value.extract.keys().cloned());
            }
        }
    }
    let Flows {
        steps,
        label_at,
        blocks,
        groups,
        flows,
    } = flows(&mut cx, &lists, &targets, parsed.on_failure)?;
    if steps.is_empty() && !allow_empty {
        let at = lists
            .first()
            .map_or(Location::UNKNOWN, |(_, l)| l.referenced);
        return Err(cx.at(
            at,
            "steps: the list is empty; a scenario needs at least one step",
        ));
    }
    unique_labels(&cx, &steps, &label_at)?;
    known_variables(&cx)?;
    let thresholds = parsed
        .thresholds
        .iter()
        .map(|t| {
            (
                t.value.clone(),
                format!("{}:{}:{}", file, t.referenced.line(), t.referenced.column()),
            )
        })
        .collect();
    let goodput = match &parsed.goodput {
        Some(g) => g
            .value
            .parse()
            .map_err(|e| cx.at(g.referenced, format!("goodput: {e}")))?,
        None => throng_core::stream::Goodput::default(),
    };
    Ok(Scenario {
        name: file.to_string(),
        sweep,
        targets,
        variables: parsed.variables,
        feeds,
        steps,
        groups,
        flows,
        blocks,
        seed: parsed.seed,
        load,
        thresholds,
        goodput,
        containers: parsed.containers,
        templates: std::sync::Arc::new(cx.templates),
    })
}

/// The targets by name, each URL's protocol found by its scheme and checked by it.
fn targets(
    cx: &Ctx,
    written: &BTreeMap<String, Spanned<String>>,
) -> Result<Vec<Target>, ScenarioError> {
    let protocols = cx.protocols;
    let mut targets = Vec::new();
    for (name, url) in written {
        let protocol = protocols.for_url(&url.value).ok_or_else(|| {
            cx.at(
                url.referenced,
                format!(
                    "target `{name}`: URL `{}`: not a URL of a protocol throng loads ({})",
                    url.value,
                    protocols.schemes()
                ),
            )
        })?;
        // The protocol's own check, so a bad port is refused here with its place rather than
        // at run time.
        protocol
            .check_target(&url.value)
            .map_err(|e| cx.at(url.referenced, format!("target `{name}`: {e}")))?;
        targets.push(Target {
            name: name.clone(),
            url: url.value.trim_end_matches('/').to_string(),
            protocol: protocol.clone(),
        });
    }
    Ok(targets)
}

/// The data files, read now (relative to the scenario's folder); their names become known
/// variables.
fn feeds(
    cx: &mut Ctx,
    written: &BTreeMap<String, Spanned<file::DataSource>>,
) -> Result<Vec<Feed>, ScenarioError> {
    let mut feeds = Vec::new();
    for (name, src) in written {
        let path = cx.dir.join(&src.value.file);
        let feed = Feed::load(name, &path, src.value.mode, src.value.on_exhausted)
            .map_err(|e| cx.at(src.referenced, format!("data `{name}`: {e}")))?;
        feeds.push(feed);
        cx.known.insert(name.clone());
    }
    Ok(feeds)
}

/// A list of steps, and the flow it is if it is one.
type List<'p> = (Option<&'p Spanned<file::Flow>>, &'p Items);

/// The lists of steps: the file's `steps`, or each flow's.
fn lists<'p>(
    cx: &Ctx,
    steps: &'p Option<Items>,
    flows: &'p Option<Spanned<Vec<Spanned<file::Flow>>>>,
) -> Result<Vec<List<'p>>, ScenarioError> {
    match (steps, flows) {
        (Some(steps), None) => Ok(vec![(None, steps)]),
        (None, Some(flows)) if flows.value.is_empty() => Err(cx.at(
            flows.referenced,
            "flows: the list is empty; give at least one flow, or `steps`",
        )),
        (None, Some(flows)) => Ok(flows
            .value
            .iter()
            .map(|f| (Some(f), &f.value.steps))
            .collect()),
        (Some(_), Some(flows)) => Err(cx.at(
            flows.referenced,
            "give `steps` (one flow) or `flows` (several, picked by weight), not both",
        )),
        (None, None) => Err(ScenarioError::At {
            file: cx.file.to_string(),
            line: 1,
            column: 1,
            message: "the required key `steps` is missing: it takes a list of steps \
                          (- label: ..., request: ...); or give `flows`, several lists \
                          picked by weight"
                .into(),
        }),
    }
}

/// Every list's steps compiled, one after another, with the groups and flows over them.
struct Flows {
    steps: Vec<Step>,
    label_at: Vec<Location>,
    blocks: Vec<Block>,
    groups: Vec<throng_core::GroupInfo>,
    flows: Vec<(throng_core::GroupInfo, u32)>,
}

/// Compiles each list of steps; a flow must have steps, and is a group over them too.
fn flows(
    cx: &mut Ctx,
    lists: &[List],
    targets: &[Target],
    on_failure: OnFailure,
) -> Result<Flows, ScenarioError> {
    let mut out = Compiled::default();
    let mut groups = Vec::new();
    let mut flows = Vec::new();
    for (flow, list) in lists {
        let first = out.steps.len();
        items(cx, list, targets, on_failure, &mut out)?;
        let steps = &out.steps;
        if let Some(f) = flow {
            if steps.len() == first {
                return Err(cx.at(
                    list.referenced,
                    format!("flow `{}` has no steps", f.value.flow.value),
                ));
            }
            let weight = weight(cx, &f.value.weight)?;
            let info = throng_core::GroupInfo {
                label: f.value.flow.value.clone(),
                first,
                last: steps.len() - 1,
            };
            // A flow is a row too, timed as a group: its passes per second.
            groups.push(info.clone());
            flows.push((info, weight));
        }
        groups.append(&mut out.groups);
    }
    let Compiled {
        steps,
        label_at,
        blocks,
        ..
    } = out;
    Ok(Flows {
        steps,
        label_at,
        blocks,
        groups,
        flows,
    })
}

/// Labels name rows, so two steps may not share one.
fn unique_labels(cx: &Ctx, steps: &[Step], label_at: &[Location]) -> Result<(), ScenarioError> {
    let mut labels: HashMap<&str, Location> = HashMap::new();
    for (s, loc) in steps.iter().zip(label_at) {
        if let Some(first) = labels.insert(&s.label, *loc) {
            let first = match first.line() {
                0 => String::new(),
                l => format!(" (first at line {l})"),
            };
            return Err(cx.at(
                *loc,
                format!(
                    "two steps are labelled `{}`{first}: labels name rows, make them unique",
                    s.label
                ),
            ));
        }
    }
    Ok(())
}

/// Every template's variables, checked once every name (variables, data, extractions) is
/// known.
fn known_variables(cx: &Ctx) -> Result<(), ScenarioError> {
    for (used, loc) in &cx.uses {
        let mut unknown: Vec<&String> = used.iter().filter(|u| !cx.known.contains(*u)).collect();
        unknown.sort();
        if let Some(u) = unknown.first() {
            return Err(place_error(
                cx.file,
                *loc,
                format!("unknown variable `{u}` (not in variables, data, or any extract)"),
            ));
        }
    }
    Ok(())
}

/// A list of steps and groups as written.
type Items = Spanned<Vec<Spanned<Item>>>;

/// A flow's weight: a whole number above zero.
fn weight(cx: &Ctx, w: &Spanned<file::YamlNode>) -> Result<u32, ScenarioError> {
    let shown = match &w.value {
        file::YamlNode::Number(n) => match n.as_u64() {
            Some(n @ 1..=1_000_000) => return Ok(n as u32),
            _ => n.to_string(),
        },
        file::YamlNode::String(s) => format!("`{s}`"),
        other => format!("{other:?}").to_lowercase(),
    };
    Err(cx.at(
        w.referenced,
        format!(
            "weight: expected a whole number from 1 to 1000000 (the flow's share of the \
             iterations is its weight over the sum of the weights), found {shown}"
        ),
    ))
}
