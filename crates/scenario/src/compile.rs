//! From the file as written to a runnable [`Scenario`]: every name, template, JSONPath, regex,
//! data file and target is checked before any load starts, and a problem names its place as
//! `file:line:column`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json_path::JsonPath;
use serde_saphyr::{Location, Spanned};
use throng_core::stages::parse_duration;
use throng_core::step::{Place, Protocols, StepError, TemplateCompiler, Text};

use crate::control::{boolean_shaped, Block};
use crate::data::Feed;
use crate::file::{self, node, File, Item, OnFailure};
use crate::scenario::{Check, Expected, Extract, ProtocolStep, Scenario, Step, StepKind, Target};
use crate::template::{Templates, BUILTINS, FUNCTIONS};

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

    let mut targets = Vec::new();
    for (name, url) in &parsed.targets {
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

    let mut feeds = Vec::new();
    for (name, src) in &parsed.data {
        let path = cx.dir.join(&src.value.file);
        let feed = Feed::load(name, &path, src.value.mode, src.value.on_exhausted)
            .map_err(|e| cx.at(src.referenced, format!("data `{name}`: {e}")))?;
        feeds.push(feed);
        cx.known.insert(name.clone());
    }

    // The lists of steps: the file's `steps`, or each flow's.
    let lists: Vec<(Option<&Spanned<file::Flow>>, &Items)> = match (&parsed.steps, &parsed.flows) {
        (Some(steps), None) => vec![(None, steps)],
        (None, Some(flows)) if flows.value.is_empty() => {
            return Err(cx.at(
                flows.referenced,
                "flows: the list is empty; give at least one flow, or `steps`",
            ))
        }
        (None, Some(flows)) => flows
            .value
            .iter()
            .map(|f| (Some(f), &f.value.steps))
            .collect(),
        (Some(_), Some(flows)) => {
            return Err(cx.at(
                flows.referenced,
                "give `steps` (one flow) or `flows` (several, picked by weight), not both",
            ))
        }
        (None, None) => {
            return Err(ScenarioError::At {
                file: file.to_string(),
                line: 1,
                column: 1,
                message: "the required key `steps` is missing: it takes a list of steps \
                              (- label: ..., request: ...); or give `flows`, several lists \
                              picked by weight"
                    .into(),
            })
        }
    };
    // Extracted names are known everywhere: a step may use what an earlier one extracted.
    for (_, list) in &lists {
        for item in list.value.iter() {
            cx.known.extend(item.value.extract.keys().cloned());
            for inner in item.value.steps.iter().flatten() {
                cx.known.extend(inner.value.extract.keys().cloned());
            }
        }
    }

    let mut out = Compiled::default();
    let mut groups = Vec::new();
    let mut flows = Vec::new();
    for (flow, list) in &lists {
        let first = out.steps.len();
        items(&mut cx, list, &targets, parsed.on_failure, &mut out)?;
        let steps = &out.steps;
        if let Some(f) = flow {
            if steps.len() == first {
                return Err(cx.at(
                    list.referenced,
                    format!("flow `{}` has no steps", f.value.flow.value),
                ));
            }
            let weight = weight(&cx, &f.value.weight)?;
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
    if steps.is_empty() && !allow_empty {
        let at = lists
            .first()
            .map_or(Location::UNKNOWN, |(_, l)| l.referenced);
        return Err(cx.at(
            at,
            "steps: the list is empty; a scenario needs at least one step",
        ));
    }
    let mut labels: HashMap<&str, Location> = HashMap::new();
    for (s, loc) in steps.iter().zip(&label_at) {
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
    Ok(Scenario {
        name: file.to_string(),
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
        containers: parsed.containers,
        templates: std::sync::Arc::new(cx.templates),
    })
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

/// Where a step's label is written (or the step, without one).
fn label_place(item: &Spanned<Item>) -> Location {
    let label = item.value.label.as_ref();
    label.map_or(item.referenced, |l| l.referenced)
}

/// Steps, groups and blocks compiled so far.
#[derive(Default)]
struct Compiled {
    steps: Vec<Step>,
    groups: Vec<throng_core::GroupInfo>,
    /// Where each step's label is written, for the duplicate check.
    label_at: Vec<Location>,
    blocks: Vec<Block>,
}

/// A condition: one `{{ expression }}` that renders true or false (a comparison, a test, `not`,
/// `and`, `or`), checked for that shape now so that a typo is not a run of skipped steps.
fn condition(cx: &mut Ctx, s: &Spanned<String>, what: &str) -> Result<Text, ScenarioError> {
    let t = s.value.trim();
    let expr = t
        .strip_prefix("{{")
        .and_then(|x| x.strip_suffix("}}"))
        .filter(|x| !x.contains("{{") && !x.contains("}}"));
    if !expr.is_some_and(boolean_shaped) {
        return Err(cx.at(
            s.referenced,
            format!(
                "{what} `{}`: a condition renders true or false: write one comparison or test, \
                 such as \"{{{{ balance > 100 }}}}\" or \"{{{{ state == 'done' }}}}\"",
                s.value
            ),
        ));
    }
    cx.spanned_text(s)
}

/// The `when`, `repeat` and `until` of a step or group over steps `first..=last`, if any.
fn block(
    cx: &mut Ctx,
    it: &Item,
    first: usize,
    last: usize,
    group: bool,
) -> Result<Option<Block>, ScenarioError> {
    if it.when.is_none() && it.repeat.is_none() && it.until.is_none() {
        return Ok(None);
    }
    if let (Some(u), None) = (&it.until, &it.repeat) {
        return Err(cx.at(
            u.referenced,
            "`until` needs `repeat: N`, the most passes: a condition that never holds would \
             loop for ever",
        ));
    }
    let when = it
        .when
        .as_ref()
        .map(|w| condition(cx, w, "when"))
        .transpose()?;
    let until = it
        .until
        .as_ref()
        .map(|u| condition(cx, u, "until"))
        .transpose()?;
    let repeat = match &it.repeat {
        None => 1,
        Some(r) => match &r.value {
            file::YamlNode::Number(n) if matches!(n.as_u64(), Some(1..=1_000_000)) => {
                n.as_u64().unwrap_or(1) as u32
            }
            _ => {
                return Err(cx.at(
                    r.referenced,
                    "repeat: expected a whole number of passes from 1 to 1000000",
                ))
            }
        },
    };
    Ok(Some(Block {
        first,
        last,
        group,
        when,
        repeat,
        until,
    }))
}

/// Compiles a list of steps and groups into `out`.
fn items(
    cx: &mut Ctx,
    list: &Items,
    targets: &[Target],
    on_failure: OnFailure,
    out: &mut Compiled,
) -> Result<(), ScenarioError> {
    let Compiled {
        steps,
        groups,
        label_at,
        blocks,
    } = out;
    for item in list.value.iter() {
        match (&item.value.group, &item.value.steps) {
            (Some(name), Some(inner)) => {
                if item.value.label.is_some() || !item.value.requests.is_empty() {
                    return Err(cx.at(
                        item.referenced,
                        "an item is a step (label, request) or a group (group, steps), not both",
                    ));
                }
                if inner.is_empty() {
                    return Err(cx.at(
                        name.referenced,
                        format!("group `{}` has no steps", name.value),
                    ));
                }
                let first = steps.len();
                let within = item
                    .value
                    .on_failure
                    .as_ref()
                    .map_or(on_failure, |o| o.value);
                for s in inner {
                    if s.value.group.is_some() || s.value.steps.is_some() {
                        return Err(cx.at(s.referenced, "groups cannot be nested"));
                    }
                    let n = steps.len();
                    steps.push(step(cx, s, targets, within)?);
                    label_at.push(label_place(s));
                    blocks.extend(block(cx, &s.value, n, n, false)?);
                }
                blocks.extend(block(cx, &item.value, first, steps.len() - 1, true)?);
                groups.push(throng_core::GroupInfo {
                    label: name.value.clone(),
                    first,
                    last: steps.len() - 1,
                });
            }
            (None, None) => {
                let n = steps.len();
                steps.push(step(cx, item, targets, on_failure)?);
                label_at.push(label_place(item));
                blocks.extend(block(cx, &item.value, n, n, false)?);
            }
            (Some(name), None) => return Err(cx.at(name.referenced, "a group needs `steps`")),
            (None, Some(_)) => {
                return Err(cx.at(
                    item.referenced,
                    "`steps` belongs to a group: add `group: NAME`",
                ))
            }
        }
    }
    Ok(())
}

fn duration(cx: &Ctx, s: &Spanned<String>, what: &str) -> Result<Duration, ScenarioError> {
    parse_duration(s.value.trim()).map_err(|_| {
        cx.at(
            s.referenced,
            format!(
                "{what} `{}`: not a duration (write e.g. 100ms, 2s, or 50ms..200ms)",
                s.value
            ),
        )
    })
}

fn step(
    cx: &mut Ctx,
    item: &Spanned<Item>,
    targets: &[Target],
    on_failure: OnFailure,
) -> Result<Step, ScenarioError> {
    let it = &item.value;
    let label = it
        .label
        .as_ref()
        .ok_or_else(|| cx.at(item.referenced, "a step needs a `label`"))?;
    let (key, req) = match it.requests.as_slice() {
        [one] => one,
        [] => {
            return Err(cx.at(
                label.referenced,
                format!(
                    "step `{}` needs a request: {}",
                    label.value,
                    keys(cx.protocols)
                ),
            ))
        }
        [_, (k, _), ..] => {
            return Err(cx.at(
                k.referenced,
                format!(
                    "step `{}` has a second request `{}`: a step sends one",
                    label.value, k.value
                ),
            ))
        }
    };
    let protocols = cx.protocols;
    let Some(protocol) = protocols.for_key(&key.value) else {
        let mut fields: Vec<String> = file::ITEM_FIELDS.iter().map(|f| format!("`{f}`")).collect();
        fields.extend(cx.protocols.all().iter().map(|p| format!("`{}`", p.key())));
        return Err(cx.at(
            key.referenced,
            format!(
                "unknown field `{}`, expected one of {}",
                key.value,
                fields.join(", ")
            ),
        ));
    };
    let mut request = node(req);
    // The target is the scenario's business: take it out before the protocol reads the rest.
    let mut target_name = None;
    if let throng_core::step::NodeValue::Map(members) = &mut request.value {
        if let Some(i) = members.iter().position(|(k, _)| k == "target") {
            target_name = Some(members.remove(i).1);
        }
    }
    let of_protocol: Vec<usize> = (0..targets.len())
        .filter(|i| targets[*i].protocol.key() == protocol.key())
        .collect();
    let target = match &target_name {
        Some(t) => {
            let name = t.text("target").map_err(|e| cx.place(e))?;
            let i = targets.iter().position(|x| x.name == name).ok_or_else(|| {
                let names: Vec<&str> = targets.iter().map(|x| x.name.as_str()).collect();
                let known = match names.is_empty() {
                    true => "no `targets` are defined".to_string(),
                    false => format!("the targets are {}", names.join(", ")),
                };
                place_error(cx.file, t.at, format!("unknown target `{name}` ({known})"))
            })?;
            if !of_protocol.contains(&i) {
                return Err(place_error(
                    cx.file,
                    t.at,
                    format!(
                        "target `{name}` is {} ({}), not a target of `{}` steps ({})",
                        targets[i].protocol.name(),
                        targets[i].url,
                        key.value,
                        protocol.name()
                    ),
                ));
            }
            i
        }
        None => match of_protocol.as_slice() {
            [one] => *one,
            [] if targets.is_empty() => {
                return Err(cx.at(req.referenced, "no `targets` are defined"))
            }
            [] => {
                return Err(cx.at(
                    req.referenced,
                    format!(
                        "no target is {} ({}): add one to `targets`",
                        protocol.name(),
                        protocol
                            .schemes()
                            .iter()
                            .map(|s| format!("{s}://"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ))
            }
            _ => {
                return Err(cx.at(
                    req.referenced,
                    format!(
                        "several {} targets are defined: name one with `target`",
                        protocol.name()
                    ),
                ))
            }
        },
    };
    let call = protocol.compile(&request, cx).map_err(|e| cx.place(e))?;
    let mut extract = Vec::new();
    for (name, e) in &it.extract {
        let how = match &e.value {
            file::Extract::Jsonpath(p) => Extract::Json(
                JsonPath::parse(p)
                    .map_err(|err| cx.at(e.referenced, format!("bad JSONPath `{p}`: {err}")))?,
            ),
            file::Extract::Header(h) | file::Extract::Metadata(h) => {
                if h.is_empty() || h.chars().any(|c| c.is_whitespace() || c == ':') {
                    return Err(cx.at(e.referenced, format!("`{h}` is not a header name")));
                }
                Extract::Header(h.to_ascii_lowercase())
            }
            file::Extract::Regex(r) => Extract::Regex(
                regex::Regex::new(r)
                    .map_err(|err| cx.at(e.referenced, format!("bad regex: {err}")))?,
            ),
        };
        extract.push((name.clone(), how));
    }
    let mut checks = Vec::new();
    for c in &it.checks {
        checks.push(check(cx, c, &**protocol)?);
    }
    let think = match &it.think_time {
        None => None,
        Some(t) => Some(match t.value.split_once("..") {
            Some((a, b)) => {
                let lo = duration(
                    cx,
                    &Spanned::new(a.to_string(), t.referenced, t.defined),
                    "think_time",
                )?;
                let hi = duration(
                    cx,
                    &Spanned::new(b.to_string(), t.referenced, t.defined),
                    "think_time",
                )?;
                if hi < lo {
                    return Err(cx.at(
                        t.referenced,
                        "think_time range: the second bound is below the first",
                    ));
                }
                (lo, hi)
            }
            None => {
                let d = duration(cx, t, "think_time")?;
                (d, d)
            }
        }),
    };
    Ok(Step {
        label: label.value.clone(),
        kind: StepKind::Request(ProtocolStep {
            target,
            call,
            extract,
            checks,
        }),
        think,
        proceed: it.on_failure.as_ref().map_or(on_failure, |o| o.value) == OnFailure::Continue,
    })
}

/// The request keys, for messages, each with what its protocol says it holds: `request` (http:
/// method, path, ...), `grpc` (grpc: call, message, ...).
fn keys(protocols: &Protocols) -> String {
    protocols
        .all()
        .iter()
        .map(|p| match p.step_help() {
            "" => format!("`{}` ({})", p.key(), p.name()),
            help => format!("`{}` ({}: {help})", p.key(), p.name()),
        })
        .collect::<Vec<_>>()
        .join(" or ")
}

fn check(
    cx: &mut Ctx,
    c: &Spanned<file::Check>,
    protocol: &dyn throng_core::step::StepProtocol,
) -> Result<Check, ScenarioError> {
    let v = &c.value;
    let kinds = [
        v.status.is_some(),
        v.jsonpath.is_some(),
        v.body_contains.is_some(),
        v.latency_under.is_some(),
    ];
    if kinds.iter().filter(|k| **k).count() != 1 {
        return Err(cx.at(
            c.referenced,
            "a check has one of `status`, `jsonpath`, `body_contains`, `latency_under`",
        ));
    }
    if (v.equals.is_some() || v.exists.is_some()) && v.jsonpath.is_none() {
        return Err(cx.at(c.referenced, "`equals` and `exists` go with `jsonpath`"));
    }
    Ok(if let Some(s) = &v.status {
        Check::Status(protocol.status(&node(s)).map_err(|e| cx.place(e))?)
    } else if let Some(p) = &v.jsonpath {
        let path = JsonPath::parse(p)
            .map_err(|e| cx.at(c.referenced, format!("bad JSONPath `{p}`: {e}")))?;
        match (&v.equals, v.exists) {
            (Some(_), Some(_)) => {
                return Err(cx.at(c.referenced, "give `equals` or `exists`, not both"))
            }
            (Some(serde_json::Value::String(t)), None) if t.contains("{{") => {
                let text = cx.spanned_text(&Spanned::new(t.clone(), c.referenced, c.defined))?;
                Check::JsonEquals(p.clone(), path, Expected::Template(text))
            }
            (Some(e), None) => Check::JsonEquals(p.clone(), path, Expected::Value(e.clone())),
            (None, e) => Check::JsonExists(p.clone(), path, e.unwrap_or(true)),
        }
    } else if let Some(b) = &v.body_contains {
        Check::BodyContains(b.clone())
    } else {
        let d = v.latency_under.clone().unwrap_or_default();
        Check::LatencyUnder(
            parse_duration(d.trim())
                .map_err(|e| cx.at(c.referenced, format!("latency_under: {e}")))?,
        )
    })
}
