//! From the file as written to a runnable [`Scenario`]: every name, template, JSONPath, regex,
//! data file and target is checked before any load starts, and a problem names its place as
//! `file:line:column`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use http::{HeaderName, Method};
use serde_json_path::JsonPath;
use serde_saphyr::{Location, Spanned};
use throng_core::stages::parse_duration;

use crate::data::Feed;
use crate::file::{self, File, Item, OnFailure};
use crate::scenario::{Body, Check, Expected, Extract, HttpStep, Scenario, Step, StepKind};
use crate::template::{Templates, BUILTINS};

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
    dir: PathBuf,
    templates: Templates,
    known: HashSet<String>,
    /// Templates to check once every variable name is known: (used names, where).
    uses: Vec<(HashSet<String>, Location)>,
}

impl Ctx<'_> {
    fn at(&self, loc: Location, message: impl Into<String>) -> ScenarioError {
        at(self.file, loc, message.into())
    }

    fn text(&mut self, s: &Spanned<String>) -> Result<crate::template::Text, ScenarioError> {
        let (text, used) = self
            .templates
            .compile(&s.value)
            .map_err(|e| self.at(s.referenced, format!("bad template: {e}")))?;
        if !used.is_empty() {
            self.uses.push((used, s.referenced));
        }
        Ok(text)
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

/// Reads and compiles a scenario file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
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
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    compile_str(&text, &file, &dir)
}

/// Compiles scenario text; `file` names it in messages and `dir` anchors relative data files.
pub fn compile_str(text: &str, file: &str, dir: &Path) -> Result<Scenario, ScenarioError> {
    let parsed: File = serde_saphyr::from_str(text).map_err(|e| {
        let (line, column, message) = crate::yaml::describe(&e, text);
        ScenarioError::At {
            file: file.to_string(),
            line,
            column,
            message,
        }
    })?;
    compile_file(parsed, file, dir, false)
}

/// Compiles a parsed file; `allow_empty` lets a built scenario consist of custom steps only.
pub(crate) fn compile_file(
    parsed: File,
    file: &str,
    dir: &Path,
    allow_empty: bool,
) -> Result<Scenario, ScenarioError> {
    let mut cx = Ctx {
        file,
        dir: dir.to_path_buf(),
        templates: Templates::default(),
        known: HashSet::new(),
        uses: Vec::new(),
    };
    cx.known.extend(BUILTINS.iter().map(|s| s.to_string()));
    cx.known.extend(parsed.variables.keys().cloned());
    let load = crate::load::check(&parsed.load, &|loc, m| at(file, loc, m))?;

    let mut targets = Vec::new();
    for (name, url) in &parsed.targets {
        // The same check as the driver's, so a bad port is refused here with its place rather
        // than at run time.
        throng_http::parse_url(&url.value)
            .map_err(|e| cx.at(url.referenced, format!("target `{name}`: {e}")))?;
        // Steps append their path to the target's, so a query or fragment here would be lost.
        if url.value.contains(['?', '#']) {
            return Err(cx.at(
                url.referenced,
                format!(
                    "target `{name}`: a target is a base URL without `?` or `#`; \
                     put the query in each step's path"
                ),
            ));
        }
        targets.push((name.clone(), url.value.trim_end_matches('/').to_string()));
    }

    let mut feeds = Vec::new();
    for (name, src) in &parsed.data {
        let path = cx.dir.join(&src.value.file);
        let feed = Feed::load(name, &path, src.value.mode, src.value.on_exhausted)
            .map_err(|e| cx.at(src.referenced, format!("data `{name}`: {e}")))?;
        feeds.push(feed);
        cx.known.insert(name.clone());
    }

    // Extracted names are known everywhere: a step may use what an earlier one extracted.
    let mut all_items: Vec<&Spanned<Item>> = Vec::new();
    for item in parsed.steps.value.iter() {
        all_items.push(item);
        if let Some(inner) = &item.value.steps {
            all_items.extend(inner.iter());
        }
    }
    for item in &all_items {
        cx.known.extend(item.value.extract.keys().cloned());
    }

    let mut steps = Vec::new();
    let mut groups = Vec::new();
    // Where each step's label is written, for the duplicate check.
    let mut label_at: Vec<Location> = Vec::new();
    for item in parsed.steps.value.iter() {
        match (&item.value.group, &item.value.steps) {
            (Some(name), Some(inner)) => {
                if item.value.label.is_some() || item.value.request.is_some() {
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
                for s in inner {
                    if s.value.group.is_some() || s.value.steps.is_some() {
                        return Err(cx.at(s.referenced, "groups cannot be nested"));
                    }
                    steps.push(step(&mut cx, s, &targets, parsed.on_failure)?);
                    label_at.push(
                        s.value
                            .label
                            .as_ref()
                            .map_or(s.referenced, |l| l.referenced),
                    );
                }
                groups.push(throng_core::GroupInfo {
                    label: name.value.clone(),
                    first,
                    last: steps.len() - 1,
                });
            }
            (None, None) => {
                steps.push(step(&mut cx, item, &targets, parsed.on_failure)?);
                label_at.push(
                    item.value
                        .label
                        .as_ref()
                        .map_or(item.referenced, |l| l.referenced),
                );
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
    if steps.is_empty() && !allow_empty {
        return Err(cx.at(
            parsed.steps.referenced,
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
            return Err(cx.at(
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
        load,
        thresholds,
        containers: parsed.containers,
        templates: std::sync::Arc::new(cx.templates),
    })
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
    targets: &[(String, String)],
    on_failure: OnFailure,
) -> Result<Step, ScenarioError> {
    let it = &item.value;
    let label = it
        .label
        .as_ref()
        .ok_or_else(|| cx.at(item.referenced, "a step needs a `label`"))?;
    let req = it.request.as_ref().ok_or_else(|| {
        cx.at(
            label.referenced,
            format!("step `{}` needs a `request`", label.value),
        )
    })?;
    let r = &req.value;
    let target = match &r.target {
        Some(t) => targets
            .iter()
            .position(|(n, _)| n == &t.value)
            .ok_or_else(|| {
                let names: Vec<&str> = targets.iter().map(|(n, _)| n.as_str()).collect();
                let known = match names.is_empty() {
                    true => "no `targets` are defined".to_string(),
                    false => format!("the targets are {}", names.join(", ")),
                };
                cx.at(
                    t.referenced,
                    format!("unknown target `{}` ({known})", t.value),
                )
            })?,
        None if targets.len() == 1 => 0,
        None if targets.is_empty() => return Err(cx.at(req.referenced, "no `targets` are defined")),
        None => {
            return Err(cx.at(
                req.referenced,
                "several targets are defined: name one with `target`",
            ))
        }
    };
    let method: Method = r.method.value.to_uppercase().parse().map_err(|_| {
        cx.at(
            r.method.referenced,
            format!("`{}` is not an HTTP method", r.method.value),
        )
    })?;
    if !r.path.value.starts_with('/') && !r.path.value.starts_with("{{") {
        return Err(cx.at(r.path.referenced, "a path starts with `/`"));
    }
    let path = cx.text(&r.path)?;
    let mut headers = Vec::new();
    for (name, value) in &r.headers {
        let h: HeaderName = name
            .parse()
            .map_err(|_| cx.at(value.referenced, format!("`{name}` is not a header name")))?;
        headers.push((h, cx.text(value)?));
    }
    let body = match (&r.body, &r.json) {
        (Some(_), Some(j)) => return Err(cx.at(j.referenced, "give `body` or `json`, not both")),
        (Some(b), None) => Body::Text(cx.text(b)?),
        (None, Some(j)) => {
            let source = serde_json::to_string(&j.value).unwrap_or_default();
            let spanned = Spanned::new(source, j.referenced, j.defined);
            headers.push((
                http::header::CONTENT_TYPE,
                crate::template::Text::Static("application/json".into()),
            ));
            Body::Json(json_leaves(cx, &j.value, j.referenced)?, spanned.value)
        }
        (None, None) => Body::None,
    };
    let mut extract = Vec::new();
    for (name, e) in &it.extract {
        let how = match &e.value {
            file::Extract::Jsonpath(p) => Extract::Json(
                JsonPath::parse(p)
                    .map_err(|err| cx.at(e.referenced, format!("bad JSONPath `{p}`: {err}")))?,
            ),
            file::Extract::Header(h) => Extract::Header(
                h.parse::<HeaderName>()
                    .map_err(|_| cx.at(e.referenced, format!("`{h}` is not a header name")))?,
            ),
            file::Extract::Regex(r) => Extract::Regex(
                regex::Regex::new(r)
                    .map_err(|err| cx.at(e.referenced, format!("bad regex: {err}")))?,
            ),
        };
        extract.push((name.clone(), how));
    }
    let mut checks = Vec::new();
    for c in &it.checks {
        checks.push(check(cx, c)?);
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
    let keep_body = !extract.is_empty() || !checks.is_empty();
    Ok(Step {
        label: label.value.clone(),
        kind: StepKind::Http(HttpStep {
            target,
            method,
            path,
            headers,
            body,
            extract,
            checks,
            keep_body,
        }),
        think,
        proceed: on_failure == OnFailure::Continue,
    })
}

fn json_leaves(
    cx: &mut Ctx,
    v: &serde_json::Value,
    loc: Location,
) -> Result<Vec<(Vec<crate::scenario::JsonKey>, crate::template::Text)>, ScenarioError> {
    use crate::scenario::JsonKey;
    let mut out = Vec::new();
    let mut stack: Vec<(Vec<JsonKey>, &serde_json::Value)> = vec![(Vec::new(), v)];
    while let Some((path, v)) = stack.pop() {
        match v {
            serde_json::Value::String(s) if s.contains("{{") || s.contains("{%") => {
                let t = cx.text(&Spanned::new(s.clone(), loc, loc))?;
                out.push((path, t));
            }
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    let mut p = path.clone();
                    p.push(JsonKey::Index(i));
                    stack.push((p, x));
                }
            }
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    let mut p = path.clone();
                    p.push(JsonKey::Key(k.clone()));
                    stack.push((p, x));
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

fn check(cx: &mut Ctx, c: &Spanned<file::Check>) -> Result<Check, ScenarioError> {
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
    Ok(if let Some(s) = v.status {
        if !(100..=599).contains(&s) {
            return Err(cx.at(
                c.referenced,
                format!("status must be an HTTP status code from 100 to 599, not {s}"),
            ));
        }
        Check::Status(s)
    } else if let Some(p) = &v.jsonpath {
        let path = JsonPath::parse(p)
            .map_err(|e| cx.at(c.referenced, format!("bad JSONPath `{p}`: {e}")))?;
        match (&v.equals, v.exists) {
            (Some(_), Some(_)) => {
                return Err(cx.at(c.referenced, "give `equals` or `exists`, not both"))
            }
            (Some(serde_json::Value::String(t)), None) if t.contains("{{") => {
                let text = cx.text(&Spanned::new(t.clone(), c.referenced, c.defined))?;
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
