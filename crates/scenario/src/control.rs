//! Branches and loops: which step of an iteration runs next. A step or group may have a `when:`
//! condition (skipped when false), `repeat: N` (run N times) and `until:` (run again until the
//! condition holds, at most `repeat` times); a file of several flows picks one per iteration
//! by weight. Conditions are templates that render `true` or `false`, checked for that shape
//! before any load.

use throng_core::step::Text;
use throng_core::GroupInfo;

use crate::template::{context, Templates};
use crate::Vars;

/// The conditions and loop of a step or a group, over steps `first..=last`.
#[derive(Debug, Clone)]
pub struct Block {
    /// The first step.
    pub first: usize,
    /// The last step (the first, for a step).
    pub last: usize,
    /// A group (several steps, or one written as a group) rather than a step's own.
    pub group: bool,
    /// Run only when this renders `true`.
    pub when: Option<Text>,
    /// How many passes at most (1: no loop).
    pub repeat: u32,
    /// Stop passing once this renders `true`.
    pub until: Option<Text>,
}

/// Where a user's iteration is: what picks and loops need between steps.
#[derive(Debug, Default)]
pub(crate) struct Position {
    /// The first step of this iteration's flow.
    first: usize,
    /// The last step of this iteration's flow.
    pub last: usize,
    /// The last step's failure undid its unit of work (a SQL transaction under `retry_on`,
    /// [`throng_core::Outcome::again`]): the next step is its group's first, or the flow's.
    pub redo: bool,
    /// Per block, the passes made in its current loop.
    passes: Vec<u32>,
    /// Per block, whether a pass through it is under way (groups).
    inside: Vec<bool>,
    /// A condition that could not be decided, failing the step about to run.
    pub failure: Option<String>,
}

/// What a condition reads.
pub(crate) struct Reader<'a> {
    pub templates: &'a Templates,
    pub vars: &'a Vars,
    pub user: u64,
    pub iteration: u64,
}

impl Reader<'_> {
    /// Whether `text` renders `true`; an error says what it rendered instead.
    fn holds(&self, what: &str, text: &Text) -> Result<bool, String> {
        let c = context(self.vars, self.user, self.iteration);
        match self
            .templates
            .render(text, &c)
            .map(|s| s.trim().to_string())
        {
            // minijinja writes the literals `True` and `False`, comparisons `true` and `false`.
            Ok(s) if s.eq_ignore_ascii_case("true") => Ok(true),
            Ok(s) if s.eq_ignore_ascii_case("false") => Ok(false),
            Ok(s) => Err(format!("{what}: rendered `{s}`, not true or false")),
            Err(e) => Err(format!("{what}: {e}")),
        }
    }
}

impl Position {
    /// Starts an iteration over the steps `flow`.
    pub(crate) fn start(&mut self, blocks: usize, flow: &GroupInfo) -> usize {
        self.first = flow.first;
        self.last = flow.last;
        self.redo = false;
        self.passes.clear();
        self.passes.resize(blocks, 0);
        self.inside.clear();
        self.inside.resize(blocks, false);
        self.failure = None;
        flow.first
    }

    /// Counts a pass through block `b`; whether another is due (`until` does not hold yet and
    /// `repeat` allows one). A condition that cannot be decided runs one more pass, which fails.
    fn again(&mut self, b: usize, block: &Block, r: &Reader) -> bool {
        self.passes[b] += 1;
        self.passes[b] < block.repeat && !self.decide("until", block.until.as_ref(), false, r)
    }

    /// Whether block `b` is entered: its `when` holds (or cannot be decided: then the step it
    /// starts with fails).
    fn enters(&mut self, block: &Block, r: &Reader) -> bool {
        self.decide("when", block.when.as_ref(), true, r)
    }

    /// A condition's value, `absent` without one; one that cannot be decided is `absent` too,
    /// and its reason fails the step about to run.
    fn decide(&mut self, what: &str, cond: Option<&Text>, absent: bool, r: &Reader) -> bool {
        match cond.map(|c| r.holds(what, c)) {
            None => absent,
            Some(Ok(b)) => b,
            Some(Err(e)) => {
                self.failure = Some(e);
                absent
            }
        }
    }

    /// The step after `after` (`None`: `first`, the flow's first), or `None` to end the
    /// iteration.
    pub(crate) fn next(
        &mut self,
        blocks: &[Block],
        after: Option<usize>,
        first: usize,
        r: &Reader,
    ) -> Option<usize> {
        let mut step = match after {
            None => first,
            Some(s) if std::mem::take(&mut self.redo) => {
                // Its group's pass goes on from the group's first step (a retry is no new
                // pass of a repeated group), or the flow starts again.
                let group = blocks
                    .iter()
                    .enumerate()
                    .find(|(b, x)| x.group && self.inside[*b] && (x.first..=x.last).contains(&s));
                return Some(group.map_or(self.first, |(_, x)| x.first));
            }
            Some(s) => {
                // The step's own loop first.
                let own = blocks.iter().position(|b| !b.group && b.first == s);
                if let Some(b) = own {
                    if self.again(b, &blocks[b], r) {
                        return Some(s);
                    }
                }
                s + 1
            }
        };
        loop {
            // A group whose last step is behind: another pass, or out of it.
            if let Some(prev) = step.checked_sub(1) {
                let ending = blocks
                    .iter()
                    .enumerate()
                    .find(|(b, x)| x.group && x.last == prev && self.inside[*b]);
                if let Some((b, block)) = ending {
                    self.inside[b] = self.again(b, block, r);
                    if self.inside[b] {
                        // Another pass: its `when` was decided on the way in.
                        step = block.first;
                        continue;
                    }
                }
            }
            if step > self.last {
                return None;
            }
            // Groups starting here, unless a pass is under way.
            let starting = blocks
                .iter()
                .enumerate()
                .find(|(b, x)| x.group && x.first == step && !self.inside[*b]);
            if let Some((b, block)) = starting {
                if !self.enters(block, r) {
                    step = block.last + 1;
                    continue;
                }
                self.inside[b] = true;
                self.passes[b] = 0;
            }
            match self.step_in(blocks, step, r) {
                Some(s) => return Some(s),
                None => step += 1,
            }
        }
    }

    /// Step `step` if its own `when` lets it run (a fresh loop of its own), else `None`.
    fn step_in(&mut self, blocks: &[Block], step: usize, r: &Reader) -> Option<usize> {
        let own = blocks.iter().position(|b| !b.group && b.first == step);
        match own {
            Some(b) if !self.enters(&blocks[b], r) => None,
            Some(b) => {
                self.passes[b] = 0;
                Some(step)
            }
            None => Some(step),
        }
    }
}

/// Whether a condition's expression is one that renders `true` or `false`: a comparison, a
/// test (`is`, `in`), `not`, `and`, `or`, or the words `true` and `false`, at its top level.
pub fn boolean_shaped(expr: &str) -> bool {
    let e = expr.trim();
    if e == "true" || e == "false" {
        return true;
    }
    // Outside brackets and quotes only: `f(a > b)` and `"a > b"` are no comparisons.
    let mut depth = 0i32;
    let mut quote = None;
    let mut top = String::new();
    for c in e.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, c) if depth == 0 => top.push(c),
            _ => {}
        }
    }
    let words: Vec<&str> = top.split_whitespace().collect();
    ["==", "!=", "<", ">"].iter().any(|op| top.contains(op))
        || words.first() == Some(&"not")
        || words
            .iter()
            .any(|w| matches!(*w, "and" | "or" | "is" | "in"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boolean_shapes() {
        for yes in [
            "a > 1",
            "state == 'done'",
            "not done",
            "x is defined",
            "'a' in names",
            "a and b",
            "true",
            "(n | length) >= 3",
        ] {
            assert!(boolean_shaped(yes), "{yes}");
        }
        for no in [
            "amount",
            "f(a > 1)",
            "'a > b'",
            "n + 1",
            "items | length",
            "[a == b]",
        ] {
            assert!(!boolean_shaped(no), "{no}");
        }
    }
}
