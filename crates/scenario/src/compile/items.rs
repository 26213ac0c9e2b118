//! A list of steps and groups as written, compiled in order: each group over its steps, and
//! the blocks (`when`, `repeat`, `until`) of a step or group, their conditions checked for a
//! true-or-false shape now.

use serde_saphyr::{Location, Spanned};
use throng_core::step::Text;

use super::step::step;
use super::{Ctx, Items, ScenarioError};
use crate::control::{boolean_shaped, Block};
use crate::file::{self, Item, OnFailure};
use crate::scenario::{Step, Target};

/// Where a step's label is written (or the step, without one).
fn label_place(item: &Spanned<Item>) -> Location {
    let label = item.value.label.as_ref();
    label.map_or(item.referenced, |l| l.referenced)
}

/// Steps, groups and blocks compiled so far.
#[derive(Default)]
pub(super) struct Compiled {
    pub(super) steps: Vec<Step>,
    pub(super) groups: Vec<throng_core::GroupInfo>,
    /// Where each step's label is written, for the duplicate check.
    pub(super) label_at: Vec<Location>,
    pub(super) blocks: Vec<Block>,
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
pub(super) fn items(
    cx: &mut Ctx,
    list: &Items,
    targets: &[Target],
    on_failure: OnFailure,
    out: &mut Compiled,
) -> Result<(), ScenarioError> {
    list_of(cx, &list.value, targets, on_failure, out)
}

/// Compiles steps and groups, in the order written, into `out`: a group's own steps and
/// groups first (a group nests in a group: a repeated pair inside a transaction), then the
/// group's block and row, so an inner group's block comes before its enclosing group's (the
/// order [`crate::control`] ends them in).
fn list_of(
    cx: &mut Ctx,
    list: &[Spanned<Item>],
    targets: &[Target],
    on_failure: OnFailure,
    out: &mut Compiled,
) -> Result<(), ScenarioError> {
    for item in list {
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
                let first = out.steps.len();
                let within = item
                    .value
                    .on_failure
                    .as_ref()
                    .map_or(on_failure, |o| o.value);
                list_of(cx, inner, targets, within, out)?;
                let last = out.steps.len() - 1;
                // Every group has a block, even without `when`, `repeat` or `until`: where a
                // pass of it is under way is what a retry goes back to, and what begins a new
                // pass on its row (not a mere return to its first step).
                let plain = Block {
                    first,
                    last,
                    group: true,
                    when: None,
                    repeat: 1,
                    until: None,
                };
                out.blocks
                    .push(block(cx, &item.value, first, last, true)?.unwrap_or(plain));
                out.groups.push(throng_core::GroupInfo {
                    label: name.value.clone(),
                    first,
                    last,
                });
            }
            (None, None) => {
                let n = out.steps.len();
                out.steps.push(step(cx, item, targets, on_failure)?);
                out.label_at.push(label_place(item));
                out.blocks.extend(block(cx, &item.value, n, n, false)?);
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
