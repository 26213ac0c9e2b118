//! A grid in the shape its reader publishes: levels as rows and a column group per side (users
//! down, Go and Java across, each with its mean in seconds and its error %), or sides as rows
//! and levels across. The cells are the level table's (each level and side its rounds merged),
//! in the unit asked for, so a pivot never holds a figure the level table does not.

use crate::{Figure, Level, LevelRow};

use super::GridResult;

/// Which coordinate runs across the pivot as column groups; the other runs down as rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Across {
    /// Sides across (`go`, `java`), levels down.
    Sides,
    /// Levels across, sides down.
    Levels,
}

/// The unit of a pivot's latencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Microseconds.
    Micros,
    /// Milliseconds (the other tables' unit).
    Millis,
    /// Seconds.
    Seconds,
}

impl Unit {
    /// The unit's name in a header.
    fn name(self) -> &'static str {
        match self {
            Unit::Micros => "µs",
            Unit::Millis => "ms",
            Unit::Seconds => "s",
        }
    }

    /// A latency in ms in this unit, and the digits it is shown with.
    fn of_ms(self, ms: f64) -> (f64, usize) {
        match self {
            Unit::Micros => (ms * 1000.0, 0),
            Unit::Millis => (ms, 2),
            Unit::Seconds => (ms / 1000.0, 3),
        }
    }
}

/// A pivot of a grid: what runs across, the figures of each column group, their unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Pivot {
    /// What runs across as column groups.
    pub across: Across,
    /// The figures of each group, in order.
    pub figures: Vec<Figure>,
    /// The unit of the latencies.
    pub unit: Unit,
}

/// The figures a pivot shows when none are named: the four the published comparisons share.
const DEFAULT: [Figure; 4] = [
    Figure::Throughput,
    Figure::Mean,
    Figure::P99,
    Figure::ErrorRate,
];

impl Pivot {
    /// A pivot from the command line's words: `across` is `side` or `level` (what becomes the
    /// column groups), `columns` the figures (`mean,p99,error_rate`, the threshold's names;
    /// none: throughput, mean, p99 and error %), `unit` `us`, `ms` or `s` (none: ms). Each
    /// error names the word it refuses.
    pub fn parse(across: &str, columns: Option<&str>, unit: Option<&str>) -> Result<Pivot, String> {
        let across = match across.trim() {
            "side" | "sides" => Across::Sides,
            "level" | "levels" => Across::Levels,
            other => {
                return Err(format!(
                    "--pivot {other:?}: say what runs across as column groups: side (levels as \
                     rows) or level (sides as rows)"
                ))
            }
        };
        let figures = match columns {
            None => DEFAULT.to_vec(),
            Some(c) => c
                .split(',')
                .map(|name| {
                    Figure::named(name.trim()).ok_or_else(|| {
                        format!(
                            "--columns {c:?}: `{}` is not a figure ({})",
                            name.trim(),
                            Figure::NAMES
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        let unit = match unit.map(str::trim) {
            None | Some("ms") => Unit::Millis,
            Some("s") => Unit::Seconds,
            Some("us" | "µs") => Unit::Micros,
            Some(other) => {
                return Err(format!(
                    "--unit {other:?}: the latencies' unit is us, ms or s"
                ))
            }
        };
        Ok(Pivot {
            across,
            figures,
            unit,
        })
    }

    /// The header of a figure's column: its name with the chosen unit.
    fn header(&self, f: Figure) -> String {
        match f {
            f if f.is_latency() => {
                let name = f.name().trim_end_matches(" ms");
                format!("{name} ({})", self.unit.name())
            }
            Figure::Throughput => "Throughput (/s)".into(),
            f => f.name().into(),
        }
    }

    /// A figure of a level table's row, in the pivot's unit, as a cell; `exact` keeps every
    /// digit. Error % is the level table's (failures other than those aborted at the end).
    fn cell(&self, f: Figure, row: &LevelRow, exact: bool) -> String {
        let (v, digits) = match f {
            Figure::ErrorRate => (Some(row.failed_percent), 2),
            f if f.is_latency() => match f.of(&row.total) {
                Some(ms) => {
                    let (v, d) = self.unit.of_ms(ms);
                    (Some(v), d)
                }
                None => (None, 0),
            },
            Figure::Samples => (f.of(&row.total), 0),
            f => (f.of(&row.total), 1),
        };
        match (v, exact) {
            (None, _) => "-".into(),
            (Some(v), true) => v.to_string(),
            (Some(v), false) => format!("{v:.digits$}"),
        }
    }

    /// The pivot's cells, the header first; `exact` keeps every digit (CSV). A coordinate the
    /// grid does not have (a grid of one side) is one group without a name.
    pub fn rows(&self, g: &GridResult, exact: bool) -> Vec<Vec<String>> {
        let mut levels: Vec<Option<Level>> = Vec::new();
        let mut sides: Vec<Option<String>> = Vec::new();
        for r in &g.rows {
            if !levels.contains(&r.level) {
                levels.push(r.level);
            }
            if !sides.contains(&r.side) {
                sides.push(r.side.clone());
            }
        }
        let find = |level: &Option<Level>, side: &Option<String>| {
            g.rows.iter().find(|r| &r.level == level && &r.side == side)
        };
        let level_headers = levels
            .iter()
            .flatten()
            .next()
            .map_or_else(|| vec!["Level".to_string()], Level::headers);
        let level_cells = |l: &Option<Level>| match l {
            Some(l) => l.cells(),
            None => level_headers.iter().map(|_| "-".to_string()).collect(),
        };
        let group = |name: String, f: Figure| match name.is_empty() {
            true => self.header(f),
            false => format!("{name} {}", self.header(f)),
        };
        let mut out = Vec::new();
        match self.across {
            Across::Sides => {
                let mut header = level_headers.clone();
                for s in &sides {
                    for &f in &self.figures {
                        header.push(group(s.clone().unwrap_or_default(), f));
                    }
                }
                out.push(header);
                for l in &levels {
                    let mut row = level_cells(l);
                    for s in &sides {
                        for &f in &self.figures {
                            row.push(find(l, s).map_or("-".into(), |r| self.cell(f, r, exact)));
                        }
                    }
                    out.push(row);
                }
            }
            Across::Levels => {
                let mut header = vec!["Side".to_string()];
                for l in &levels {
                    for &f in &self.figures {
                        header.push(group(l.map(|l| l.to_string()).unwrap_or_default(), f));
                    }
                }
                out.push(header);
                for s in &sides {
                    let mut row = vec![s.clone().unwrap_or_else(|| "-".into())];
                    for l in &levels {
                        for &f in &self.figures {
                            row.push(find(l, s).map_or("-".into(), |r| self.cell(f, r, exact)));
                        }
                    }
                    out.push(row);
                }
            }
        }
        out
    }

    /// The line under the pivot: where its cells come from.
    pub fn note(&self, g: &GridResult) -> String {
        let rounds = g.rows.iter().map(|r| r.rounds).max().unwrap_or(1);
        let merged = match rounds {
            1 => String::new(),
            n => format!(", each cell its {n} rounds merged"),
        };
        format!(
            "pivot of the level table's TOTAL rows{merged}; latencies in {}; Error %: failures \
             other than the requests aborted at the end of a run",
            self.unit.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_of_a_pivot_are_checked_and_named() {
        let p = Pivot::parse("side", Some("mean, error_rate"), Some("s")).unwrap();
        assert_eq!(p.figures, [Figure::Mean, Figure::ErrorRate]);
        assert_eq!((p.across, p.unit), (Across::Sides, Unit::Seconds));
        assert_eq!(p.header(Figure::Mean), "Mean (s)");
        assert_eq!(p.header(Figure::P999), "p99.9 (s)");
        assert_eq!(Pivot::parse("level", None, None).unwrap().figures, DEFAULT);
        for (across, columns, unit, says) in [
            ("row", None, None, "--pivot \"row\""),
            ("side", Some("mean,p42x"), None, "`p42x` is not a figure"),
            ("side", None, Some("min"), "--unit \"min\""),
        ] {
            let e = Pivot::parse(across, columns, unit).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }
}
