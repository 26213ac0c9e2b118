//! A grid in the shape its reader publishes: levels as rows and a column group per side (users
//! down, Go and Java across, each with its mean in seconds, its error % and its container's CPU
//! and memory), or sides as rows and levels across. The cells are the level table's (each level
//! and side its rounds merged), in the unit asked for, so a pivot never holds a figure the level
//! table does not.

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

/// A column of each group: a figure of the level table's TOTAL row, or the level table's
/// containers under load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// A figure of the TOTAL row.
    Figure(Figure),
    /// The side's containers' mean CPU under load, percent (summed over its containers).
    Cpu,
    /// The side's containers' mean memory under load, MiB (summed over its containers).
    Memory,
}

impl Column {
    /// The column a name says: a figure's (`mean`, `p99`, `error_rate`), `cpu` or `memory`.
    fn named(name: &str) -> Option<Column> {
        match name {
            "cpu" => Some(Column::Cpu),
            "memory" | "mem" => Some(Column::Memory),
            name => Figure::named(name).map(Column::Figure),
        }
    }
}

/// A pivot of a grid: what runs across, the columns of each column group, their unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Pivot {
    /// What runs across as column groups.
    pub across: Across,
    /// The columns of each group, in order.
    pub columns: Vec<Column>,
    /// The unit of the latencies.
    pub unit: Unit,
}

/// The columns a pivot shows when none are named: the four the published comparisons share.
const DEFAULT: [Column; 4] = [
    Column::Figure(Figure::Throughput),
    Column::Figure(Figure::Mean),
    Column::Figure(Figure::P99),
    Column::Figure(Figure::ErrorRate),
];

impl Pivot {
    /// A pivot from the command line's words: `across` is `side` or `level` (what becomes the
    /// column groups), `columns` the figures (`mean,p99,error_rate`, the threshold's names, and
    /// `cpu` and `memory` for the containers under load; none: throughput, mean, p99 and error
    /// %), `unit` `us`, `ms` or `s` (none: ms). Each error names the word it refuses.
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
        let columns = match columns {
            None => DEFAULT.to_vec(),
            Some(c) => c
                .split(',')
                .map(|name| {
                    Column::named(name.trim()).ok_or_else(|| {
                        format!(
                            "--columns {c:?}: `{}` is not a figure ({}, and the containers' \
                             cpu and memory)",
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
            columns,
            unit,
        })
    }

    /// The header of a column: its name with the chosen unit, as the level table names it.
    fn header(&self, c: Column) -> String {
        let f = match c {
            Column::Figure(f) => f,
            Column::Cpu => return "CPU %".into(),
            Column::Memory => return "Memory (MiB)".into(),
        };
        match f {
            f if f.is_latency() => {
                let name = f.name().trim_end_matches(" ms");
                format!("{name} ({})", self.unit.name())
            }
            Figure::Throughput => "Throughput (/s)".into(),
            f => f.name().into(),
        }
    }

    /// A column of a level table's row, in the pivot's unit, as a cell; `exact` keeps every
    /// digit. Error % is the level table's (failures other than those aborted at the end); a
    /// row without containers has no CPU or memory (`-`).
    fn cell(&self, c: Column, row: &LevelRow, exact: bool) -> String {
        let containers = (!row.containers.is_empty()).then_some(&row.containers);
        let f = match c {
            Column::Figure(f) => f,
            Column::Cpu => {
                let cpu = containers.map(|c| c.iter().map(|c| c.cpu_percent).sum::<f64>());
                return Self::shown(cpu, 1, exact);
            }
            Column::Memory => {
                let bytes = containers.map(|c| c.iter().map(|c| c.memory).sum::<u64>());
                let mib = bytes.map(|b| b as f64 / (1024.0 * 1024.0));
                return Self::shown(mib, 1, exact);
            }
        };
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
        Self::shown(v, digits, exact)
    }

    /// A cell's text: `-` for no value, every digit when `exact`, else `digits` of them.
    fn shown(v: Option<f64>, digits: usize, exact: bool) -> String {
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
        let group = |name: String, f: Column| match name.is_empty() {
            true => self.header(f),
            false => format!("{name} {}", self.header(f)),
        };
        let mut out = Vec::new();
        match self.across {
            Across::Sides => {
                let mut header = level_headers.clone();
                for s in &sides {
                    for &f in &self.columns {
                        header.push(group(s.clone().unwrap_or_default(), f));
                    }
                }
                out.push(header);
                for l in &levels {
                    let mut row = level_cells(l);
                    for s in &sides {
                        for &f in &self.columns {
                            row.push(find(l, s).map_or("-".into(), |r| self.cell(f, r, exact)));
                        }
                    }
                    out.push(row);
                }
            }
            Across::Levels => {
                let mut header = vec!["Side".to_string()];
                for l in &levels {
                    for &f in &self.columns {
                        header.push(group(l.map(|l| l.to_string()).unwrap_or_default(), f));
                    }
                }
                out.push(header);
                for s in &sides {
                    let mut row = vec![s.clone().unwrap_or_else(|| "-".into())];
                    for l in &levels {
                        for &f in &self.columns {
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
        let p = Pivot::parse("side", Some("mean, error_rate,cpu,memory"), Some("s")).unwrap();
        assert_eq!(
            p.columns,
            [
                Column::Figure(Figure::Mean),
                Column::Figure(Figure::ErrorRate),
                Column::Cpu,
                Column::Memory
            ]
        );
        assert_eq!((p.across, p.unit), (Across::Sides, Unit::Seconds));
        assert_eq!(p.header(Column::Figure(Figure::Mean)), "Mean (s)");
        assert_eq!(p.header(Column::Figure(Figure::P999)), "p99.9 (s)");
        assert_eq!(p.header(Column::Memory), "Memory (MiB)");
        assert_eq!(Pivot::parse("level", None, None).unwrap().columns, DEFAULT);
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
