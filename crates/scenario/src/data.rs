//! CSV data sources: rows handed to users sequentially, at random, or one per user.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use rand::Rng;

use crate::file::{DataMode, Exhausted};

/// One loaded CSV file.
#[derive(Debug)]
pub struct Feed {
    /// The name variables are read under (`{{ name.column }}`).
    pub name: String,
    /// How rows are handed out.
    pub mode: DataMode,
    /// What happens when the rows run out.
    pub exhausted: Exhausted,
    rows: Vec<serde_json::Value>,
    cursor: AtomicUsize,
}

impl Feed {
    /// Reads a CSV file whose first line names the columns. Numbers stay numbers.
    pub fn load(
        name: &str,
        path: &Path,
        mode: DataMode,
        exhausted: Option<Exhausted>,
    ) -> Result<Self, String> {
        let mut reader = csv::Reader::from_path(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let headers = reader.headers().map_err(|e| e.to_string())?.clone();
        let mut rows = Vec::new();
        for (i, record) in reader.records().enumerate() {
            let record = record.map_err(|e| format!("{}: row {}: {e}", path.display(), i + 2))?;
            let mut row = serde_json::Map::new();
            for (h, v) in headers.iter().zip(record.iter()) {
                let value = match v.parse::<i64>() {
                    Ok(n) => serde_json::Value::from(n),
                    Err(_) => match v.parse::<f64>() {
                        Ok(f) if f.is_finite() => serde_json::Value::from(f),
                        _ => serde_json::Value::from(v),
                    },
                };
                row.insert(h.to_string(), value);
            }
            rows.push(serde_json::Value::Object(row));
        }
        if rows.is_empty() {
            return Err(format!("{} has no rows", path.display()));
        }
        let exhausted = exhausted.unwrap_or(match mode {
            DataMode::Unique => Exhausted::StopUser,
            _ => Exhausted::Wrap,
        });
        Ok(Feed {
            name: name.to_string(),
            mode,
            exhausted,
            rows,
            cursor: AtomicUsize::new(0),
        })
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the file had no rows (never true once loaded).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The row for user `user`'s next iteration, or `None` when the user must stop.
    pub fn draw(&self, user: u64) -> Option<&serde_json::Value> {
        let n = self.rows.len();
        let i = match self.mode {
            DataMode::Random => rand::rng().random_range(0..n),
            DataMode::Sequential => {
                let i = self.cursor.fetch_add(1, Ordering::Relaxed);
                if i >= n && self.exhausted == Exhausted::StopUser {
                    return None;
                }
                i % n
            }
            DataMode::Unique => {
                let i = usize::try_from(user).unwrap_or(usize::MAX);
                if i >= n {
                    if self.exhausted == Exhausted::StopUser {
                        return None;
                    }
                    i % n
                } else {
                    i
                }
            }
        };
        self.rows.get(i)
    }
}

/// Puts each feed's next row into the variables; false when a user must stop.
pub fn draw_all(feeds: &[Feed], user: u64, vars: &mut BTreeMap<String, serde_json::Value>) -> bool {
    for f in feeds {
        match f.draw(user) {
            Some(row) => {
                vars.insert(f.name.clone(), row.clone());
            }
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(mode: DataMode, exhausted: Option<Exhausted>) -> Feed {
        let dir = std::env::temp_dir().join(format!(
            "throng-feed-{}-{:?}-{:?}",
            std::process::id(),
            mode,
            exhausted
        ));
        std::fs::write(&dir, "id,name\n1,ann\n2,bob\n3,cy\n").unwrap();
        let f = Feed::load("acc", &dir, mode, exhausted).unwrap();
        let _ = std::fs::remove_file(&dir);
        f
    }

    fn id(v: Option<&serde_json::Value>) -> Option<i64> {
        v.map(|r| r["id"].as_i64().unwrap())
    }

    #[test]
    fn sequential_wraps_or_stops() {
        let f = feed(DataMode::Sequential, None);
        let got: Vec<_> = (0..5).map(|_| id(f.draw(0))).collect();
        assert_eq!(got, [Some(1), Some(2), Some(3), Some(1), Some(2)]);
        let f = feed(DataMode::Sequential, Some(Exhausted::StopUser));
        let got: Vec<_> = (0..4).map(|_| id(f.draw(0))).collect();
        assert_eq!(got, [Some(1), Some(2), Some(3), None]);
    }

    #[test]
    fn unique_gives_each_user_its_row() {
        let f = feed(DataMode::Unique, None);
        assert_eq!(id(f.draw(0)), Some(1));
        assert_eq!(id(f.draw(0)), Some(1));
        assert_eq!(id(f.draw(2)), Some(3));
        assert_eq!(id(f.draw(3)), None, "more users than rows: stop by default");
        let f = feed(DataMode::Unique, Some(Exhausted::Wrap));
        assert_eq!(id(f.draw(4)), Some(2));
    }

    #[test]
    fn random_stays_in_range_and_varies() {
        let f = feed(DataMode::Random, None);
        let got: std::collections::HashSet<_> = (0..200).map(|_| id(f.draw(0)).unwrap()).collect();
        assert_eq!(got.len(), 3);
        assert_eq!(
            f.draw(0).unwrap()["name"].as_str().map(|s| s.len() >= 2),
            Some(true)
        );
    }
}
