//! One request step of a scenario: the protocol it is written for, its target, what it sends
//! (compiled by the protocol), what it extracts and checks, and its think time.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json_path::JsonPath;
use serde_saphyr::Spanned;
use throng_core::stages::parse_duration;
use throng_core::step::{Node, Protocols, StepProtocol};

use super::{place_error, Ctx, ScenarioError};
use crate::file::{self, node, Item, OnFailure};
use crate::scenario::{Check, Expected, Extract, ProtocolStep, Step, StepKind, Target};

/// A request step: its protocol found by the key it is written under, its target picked,
/// what it sends compiled by the protocol, then its extractions, checks and think time.
pub(super) fn step(
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
    let (key, req) = request(cx, &it.requests, label)?;
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
    let target = target(cx, target_name.as_ref(), targets, &**protocol, key, req)?;
    let call = protocol.compile(&request, cx).map_err(|e| cx.place(e))?;
    let extract = extractions(cx, &it.extract)?;
    let mut checks = Vec::new();
    for c in &it.checks {
        checks.push(check(cx, c, &**protocol)?);
    }
    let think = match &it.think_time {
        None => None,
        Some(t) => Some(think_time(cx, t)?),
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

/// The one request of a step: its key and what is written under it.
fn request<'i>(
    cx: &Ctx,
    requests: &'i [(Spanned<String>, Spanned<file::YamlNode>)],
    label: &Spanned<String>,
) -> Result<&'i (Spanned<String>, Spanned<file::YamlNode>), ScenarioError> {
    match requests {
        [one] => Ok(one),
        [] => Err(cx.at(
            label.referenced,
            format!(
                "step `{}` needs a request: {}",
                label.value,
                keys(cx.protocols)
            ),
        )),
        [_, (k, _), ..] => Err(cx.at(
            k.referenced,
            format!(
                "step `{}` has a second request `{}`: a step sends one",
                label.value, k.value
            ),
        )),
    }
}

/// The index of a step's target: the one it names, which must be of its protocol, or else
/// the only target of its protocol.
fn target(
    cx: &Ctx,
    named: Option<&Node>,
    targets: &[Target],
    protocol: &dyn StepProtocol,
    key: &Spanned<String>,
    req: &Spanned<file::YamlNode>,
) -> Result<usize, ScenarioError> {
    let of_protocol: Vec<usize> = (0..targets.len())
        .filter(|i| targets[*i].protocol.key() == protocol.key())
        .collect();
    match named {
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
            Ok(i)
        }
        None => match of_protocol.as_slice() {
            [one] => Ok(*one),
            [] if targets.is_empty() => Err(cx.at(req.referenced, "no `targets` are defined")),
            [] => Err(cx.at(
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
            )),
            _ => Err(cx.at(
                req.referenced,
                format!(
                    "several {} targets are defined: name one with `target`",
                    protocol.name()
                ),
            )),
        },
    }
}

/// A step's extractions, each JSONPath, header name and regex checked now.
fn extractions(
    cx: &Ctx,
    written: &BTreeMap<String, Spanned<file::Extract>>,
) -> Result<Vec<(String, Extract)>, ScenarioError> {
    let mut extract = Vec::new();
    for (name, e) in written {
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
    Ok(extract)
}

/// A think time: one duration, or a range `lo..hi` drawn from per pass.
fn think_time(cx: &Ctx, t: &Spanned<String>) -> Result<(Duration, Duration), ScenarioError> {
    match t.value.split_once("..") {
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
            Ok((lo, hi))
        }
        None => {
            let d = duration(cx, t, "think_time")?;
            Ok((d, d))
        }
    }
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
    protocol: &dyn StepProtocol,
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
