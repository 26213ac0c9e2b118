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
    /// Per block, whether the last [`Position::next`] began a new pass of it (a group entered,
    /// looped or started over by a redo): what ends its pass on its row. Coming back to a
    /// group's first step does not by itself (a repeated first step, or a repeated group
    /// first inside it).
    began: Vec<bool>,
    /// Whether the last [`Position::next`] started the whole flow over (a redo outside any
    /// group).
    flow_began: bool,
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
        self.began.clear();
        self.began.resize(blocks, false);
        self.flow_began = false;
        self.failure = None;
        flow.first
    }

    /// Whether the last step given began a new pass of block `b` (see [`Position::began`]).
    pub(crate) fn began(&self, b: usize) -> bool {
        self.began.get(b).copied().unwrap_or(false)
    }

    /// Whether the last step given started the flow over.
    pub(crate) fn flow_began(&self) -> bool {
        self.flow_began
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
        self.began.fill(false);
        self.flow_began = false;
        let step = match after {
            None => first,
            Some(s) if std::mem::take(&mut self.redo) => {
                // Its group's pass goes on from the group's first step (a retry is no new
                // pass of a repeated group), or the flow starts again. Among nested groups
                // the unit undone is the innermost that is not a loop (a transaction, not
                // the pair repeated inside it nor the loop around it); the groups inside it
                // start afresh.
                let groups: Vec<(usize, &Block)> = blocks
                    .iter()
                    .enumerate()
                    .filter(|(b, x)| x.group && self.inside[*b] && (x.first..=x.last).contains(&s))
                    .collect();
                let unit = groups
                    .iter()
                    .find(|(_, x)| x.repeat == 1 && x.until.is_none())
                    .or(groups.first());
                let Some(&(u, unit)) = unit else {
                    // No group: the flow starts again, every group afresh.
                    self.inside.fill(false);
                    self.flow_began = true;
                    return self.walk(blocks, self.first, r);
                };
                for (b, x) in blocks.iter().enumerate() {
                    if b != u && x.group && unit.first <= x.first && x.last <= unit.last {
                        self.inside[b] = false;
                    }
                }
                // A new pass on the unit's row (the failed one ended), and the groups starting
                // with it entered afresh, as on the way in.
                self.began[u] = true;
                return self.walk(blocks, unit.first, r);
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
        self.walk(blocks, step, r)
    }

    /// The first step to run from `step` on: past the groups whose last step is behind it
    /// (another pass, or out), into the groups starting at it, past what a false `when` skips.
    fn walk(&mut self, blocks: &[Block], mut step: usize, r: &Reader) -> Option<usize> {
        'next: loop {
            // Groups whose last step is behind, innermost first (an inner group's block comes
            // before its enclosing group's): another pass, or out of it.
            if let Some(prev) = step.checked_sub(1) {
                for (b, block) in blocks.iter().enumerate() {
                    if !(block.group && block.last == prev && self.inside[b]) {
                        continue;
                    }
                    self.inside[b] = self.again(b, block, r);
                    if self.inside[b] {
                        // Another pass: its `when` was decided on the way in.
                        self.began[b] = true;
                        step = block.first;
                        continue 'next;
                    }
                }
            }
            if step > self.last {
                return None;
            }
            // Groups starting here, outermost first, unless a pass is under way.
            for (b, block) in blocks.iter().enumerate().rev() {
                if !(block.group && block.first == step && !self.inside[b]) {
                    continue;
                }
                if !self.enters(block, r) {
                    step = block.last + 1;
                    continue 'next;
                }
                self.inside[b] = true;
                self.began[b] = true;
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

    fn group(first: usize, last: usize, repeat: u32) -> Block {
        Block {
            first,
            last,
            group: true,
            when: None,
            repeat,
            until: None,
        }
    }

    /// The steps a user runs through `blocks` over steps `0..=last`, with a redo (a retried
    /// transaction) after the step at `redo_at`-th place of the walk.
    fn walk(blocks: &[Block], last: usize, redo_at: Option<usize>) -> Vec<usize> {
        passes(blocks, last, redo_at)
            .into_iter()
            .map(|(s, _)| s)
            .collect()
    }

    #[test]
    fn nested_groups_run_in_the_order_written() {
        // BEGIN (0), a pair (1, 2) three times, COMMIT (3); the pair's block before the
        // transaction's, as the compiler writes them.
        let blocks = [group(1, 2, 3), group(0, 3, 1)];
        assert_eq!(walk(&blocks, 3, None), [0, 1, 2, 1, 2, 1, 2, 3]);
        // Both ending on the same step: the pair's passes, then out of both.
        let blocks = [group(1, 2, 2), group(0, 2, 1)];
        assert_eq!(walk(&blocks, 2, None), [0, 1, 2, 1, 2]);
        // The transaction repeated around the pair: each of its passes does every pair.
        let blocks = [group(1, 2, 2), group(0, 3, 2)];
        assert_eq!(walk(&blocks, 3, None), [0, 1, 2, 1, 2, 3, 0, 1, 2, 1, 2, 3]);
    }

    #[test]
    fn a_retry_inside_a_repeated_pair_starts_the_transaction_again_with_fresh_pairs() {
        let blocks = [group(1, 2, 2), group(0, 3, 1)];
        // The credit of the second pair undoes the transaction: BEGIN again, then two pairs.
        assert_eq!(walk(&blocks, 3, Some(4)), [0, 1, 2, 1, 2, 0, 1, 2, 1, 2, 3]);
    }

    fn step(at: usize, repeat: u32) -> Block {
        Block {
            group: false,
            ..group(at, at, repeat)
        }
    }

    /// The steps a user runs through `blocks` over steps `0..=last` (with a redo after the
    /// `redo_at`-th), each with the blocks it began a new pass of.
    fn passes(blocks: &[Block], last: usize, redo_at: Option<usize>) -> Vec<(usize, Vec<usize>)> {
        let templates = Templates::default();
        let vars = Vars::new();
        let r = Reader {
            templates: &templates,
            vars: &vars,
            user: 0,
            iteration: 0,
        };
        let mut p = Position::default();
        let flow = GroupInfo {
            label: "flow".into(),
            first: 0,
            last,
        };
        let first = p.start(blocks.len(), &flow);
        let mut at = p.next(blocks, None, first, &r);
        let mut seen = Vec::new();
        while let Some(s) = at {
            let began = (0..blocks.len()).filter(|b| p.began(*b)).collect();
            seen.push((s, began));
            p.redo = redo_at == Some(seen.len() - 1);
            at = p.next(blocks, Some(s), 0, &r);
            assert!(seen.len() < 100, "{seen:?}");
        }
        seen
    }

    #[test]
    fn a_loop_first_in_a_group_begins_no_pass_of_the_group() {
        // A step repeated first in a group (0, 1): no new pass of the group at its repeats.
        let blocks = [step(0, 3), group(0, 1, 1)];
        let b = |v: &[usize]| v.to_vec();
        assert_eq!(
            passes(&blocks, 1, None),
            [(0, b(&[1])), (0, b(&[])), (0, b(&[])), (1, b(&[]))]
        );
        // A pair (0, 1) repeated first in a transaction (0, 2): a new pass of the pair only.
        let blocks = [group(0, 1, 2), group(0, 2, 1)];
        assert_eq!(
            passes(&blocks, 2, None),
            [
                (0, b(&[0, 1])),
                (1, b(&[])),
                (0, b(&[0])),
                (1, b(&[])),
                (2, b(&[]))
            ]
        );
        // Both ending on the same step, the transaction repeated: its second pass enters the
        // pair afresh.
        let blocks = [group(0, 1, 2), group(0, 1, 2)];
        let walked: Vec<(usize, Vec<usize>)> = passes(&blocks, 1, None);
        assert_eq!(
            walked,
            [
                (0, b(&[0, 1])),
                (1, b(&[])),
                (0, b(&[0])),
                (1, b(&[])),
                (0, b(&[0, 1])),
                (1, b(&[])),
                (0, b(&[0])),
                (1, b(&[]))
            ]
        );
    }

    #[test]
    fn a_retry_in_a_pair_first_in_its_transaction_enters_the_pair_afresh() {
        // The pair (0, 1) twice in a transaction (0, 2) of no loop; the credit of the second
        // pair undoes it: the transaction's new pass, its pairs from the first.
        let blocks = [group(0, 1, 2), group(0, 2, 1)];
        assert_eq!(walk(&blocks, 2, Some(3)), [0, 1, 0, 1, 0, 1, 0, 1, 2]);
        let walked = passes(&blocks, 2, Some(3));
        assert_eq!(walked[4].1, [0, 1], "{walked:?}");
        // Outside any group: the flow starts over.
        let blocks = [group(1, 2, 1)];
        assert_eq!(walk(&blocks, 2, Some(0)), [0, 0, 1, 2]);
    }

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
