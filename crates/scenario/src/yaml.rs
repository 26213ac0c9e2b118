//! serde-saphyr's errors in the user's words. The parser knows the place and the Rust type
//! (`invalid u32`), and sometimes its own options (`set DuplicateKeyPolicy in Options`); the user
//! knows the key and the value they wrote. So the key and the value are read back from the text
//! at the error's place, and each key of the format has a description of what it takes.

use serde_saphyr::Error;

/// What each key of the scenario format takes, in the user's words.
const EXPECTS: &[(&str, &str)] = &[
    // The file.
    (
        "targets",
        "a mapping of names to base URLs (api: http://127.0.0.1:8080)",
    ),
    ("variables", "a mapping of names to values"),
    (
        "data",
        "a mapping of names to CSV sources (users: { file: users.csv })",
    ),
    (
        "load",
        "a mapping of load settings (users, duration, rate, ...)",
    ),
    ("thresholds", "a list of conditions such as \"p99<250ms\""),
    (
        "goodput",
        "objectives such as \"ttft<200ms,tpot<50ms\" (ttft, tpot, e2e)",
    ),
    ("on_failure", "`skip_iteration` or `continue`"),
    ("steps", "a list of steps (- label: ..., request: ...)"),
    (
        "flows",
        "a list of flows (- flow: NAME, weight: 7, steps: [...])",
    ),
    (
        "seed",
        "a whole number, seeding the picks of flows and random arrivals",
    ),
    ("weight", "a whole number from 1 to 1000000"),
    ("when", "a condition such as \"{{ balance > 100 }}\""),
    ("repeat", "a whole number of passes from 1 to 1000000"),
    (
        "until",
        "a condition such as \"{{ state == 'done' }}\", with `repeat`",
    ),
    ("containers", "a list of container names"),
    // load:
    ("users", "a whole number of at least 1"),
    ("user_stages", "stages such as \"30s:100,2m:100,10s:0\""),
    ("requests", "a whole number of at least 1"),
    ("iterations", "a whole number of at least 1"),
    ("duration", "a duration such as 30s or 2m"),
    (
        "think_time",
        "a duration such as 100ms, or a range such as 50ms..200ms",
    ),
    ("rate", "a number of iterations per second above 0"),
    ("rate_stages", "stages such as \"30s:3000,2m:3000\""),
    (
        "arrivals",
        "`even`, `poisson` or `gamma:SHAPE` (e.g. gamma:0.5)",
    ),
    ("max_in_flight", "a whole number of at least 1"),
    ("queue", "a whole number, 0 or more"),
    // A step or group.
    ("label", "a text naming the step's row"),
    ("group", "a text naming the group's row"),
    (
        "request",
        "a mapping with `path` (and method, headers, body or json)",
    ),
    (
        "extract",
        "a mapping of variable names to { jsonpath: ... }, { header: ... } or { regex: ... }",
    ),
    ("checks", "a list of checks such as `- status: 200`"),
    // request:
    ("target", "the name of one of the targets"),
    ("method", "an HTTP method such as GET or POST"),
    ("path", "a path such as /api/items"),
    ("headers", "a mapping of header names to texts"),
    ("body", "a text"),
    // A check.
    (
        "status",
        "a status as the step's protocol reads it: an HTTP code such as 200, a gRPC code or its \
         name, a SQLSTATE",
    ),
    ("jsonpath", "a JSONPath such as $.id"),
    ("exists", "true or false"),
    ("body_contains", "a text"),
    ("latency_under", "a duration such as 50ms"),
    // data:
    ("file", "the path of a CSV file"),
    ("mode", "`sequential`, `random` or `unique`"),
    ("on_exhausted", "`wrap` or `stop_user`"),
];

fn expects(key: &str) -> Option<&'static str> {
    EXPECTS.iter().find(|(k, _)| *k == key).map(|(_, e)| *e)
}

/// Whether `text` holds nothing but blank lines and comments.
pub(crate) fn blank(text: &str) -> bool {
    Source::new(text).blank()
}

/// A parse error as a place (1-based line and column) and a message.
pub(crate) fn describe(err: &Error, text: &str) -> (u64, u64, String) {
    let src = Source::new(text);
    let err = innermost(err);
    // Every error this format can raise has a place; should one not, the file as a whole is
    // the best place to name.
    let (line, col) = err
        .location()
        .filter(|l| l.line() >= 1)
        .map_or((1, 1), |l| (l.line(), l.column().max(1)));
    let message = match err {
        Error::Eof { .. } if src.blank() => {
            return (
                1,
                1,
                "the file is empty; a scenario needs at least `targets` and `steps`".into(),
            )
        }
        Error::Eof { .. } => "the file ends in the middle of a value".into(),
        Error::MultipleDocuments { .. } => {
            "the file holds more than one YAML document (`---`); a scenario is one".into()
        }
        Error::SerdeUnknownField {
            field, expected, ..
        } => unknown_key(field, expected),
        Error::SerdeMissingField { field, .. } => match expects(field) {
            Some(e) => format!("the required key `{field}` is missing: it takes {e}"),
            None => format!("the required key `{field}` is missing"),
        },
        Error::DuplicateMappingKey { key, .. } => match key {
            Some(k) => match src.first_key_before(k, line, col) {
                Some(first) => format!("duplicate key `{k}` (first at line {first})"),
                None => format!("duplicate key `{k}`"),
            },
            None => "duplicate key".into(),
        },
        Error::SerdeUnknownVariant {
            variant, expected, ..
        } => {
            let list = expected
                .iter()
                .map(|e| format!("`{e}`"))
                .collect::<Vec<_>>()
                .join(", ");
            match src.key_at(line, col).filter(|k| expects(k).is_some()) {
                Some(k) => format!("{k} must be one of {list}, not `{variant}`"),
                None => format!("`{variant}` is not one of {list}"),
            }
        }
        Error::InvalidScalar { ty, .. } => wrong_value(&src, line, col, type_words(ty)),
        Error::Unexpected { expected, .. } => wrong_value(&src, line, col, shape_words(expected)),
        Error::SerdeInvalidType { expected, .. } | Error::SerdeInvalidValue { expected, .. } => {
            wrong_value(&src, line, col, expected.clone())
        }
        Error::NonFiniteFloat { value, .. } => {
            format!("`{value}` is not a number a scenario can use (NaN and infinities are not)")
        }
        other => parser_words(other),
    };
    (line, col, message)
}

/// The error an alias or a snippet wraps, which carries the real reason.
fn innermost(err: &Error) -> &Error {
    match err.without_snippet() {
        Error::AliasError { error, .. } => innermost(error),
        e => e,
    }
}

/// `the key must be X, not Y`, with the key and value read from the text.
fn wrong_value(src: &Source, line: u64, col: u64, fallback: String) -> String {
    let key = src.key_at(line, col);
    let want = key
        .as_deref()
        .and_then(expects)
        .map(str::to_string)
        .unwrap_or(fallback);
    let value = src.value_at(line, col);
    match (key, value) {
        (Some(k), None) => format!("{k} is empty: it takes {want}"),
        (Some(k), Some(v)) => format!("{k} must be {want}, not {v}"),
        (None, v) if line == 1 && col == 1 => format!(
            "a scenario file is a mapping of keys (targets:, steps:, ...), not {}",
            v.unwrap_or_else(|| "this".into())
        ),
        (None, None) => format!("expected {want} here"),
        (None, Some(v)) => format!("expected {want}, not {v}"),
    }
}

fn unknown_key(field: &str, expected: &[&str]) -> String {
    let close = expected
        .iter()
        .filter(|k| strsim::levenshtein(field, k) <= 2)
        .min_by_key(|k| strsim::levenshtein(field, k));
    let hint = close
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default();
    format!(
        "unknown key `{field}`{hint}; the keys here are {}",
        expected.join(", ")
    )
}

fn type_words(ty: &str) -> String {
    match ty {
        "u8" | "u16" | "u32" | "u64" | "usize" => format!(
            "a whole number from 0 to {}",
            match ty {
                "u8" => u64::from(u8::MAX),
                "u16" => u64::from(u16::MAX),
                "u32" => u64::from(u32::MAX),
                _ => u64::MAX,
            }
        ),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "bool" => "true or false".into(),
        "char" => "a single character".into(),
        other => format!("a value of type {other}"),
    }
}

fn shape_words(expected: &str) -> String {
    if expected.contains("mapping") {
        "a mapping (key: value lines)".into()
    } else if expected.contains("sequence") {
        "a list (- item lines)".into()
    } else if expected.contains("scalar") {
        "a single value".into()
    } else {
        expected.to_string()
    }
}

/// The parser's own message (syntax errors: brackets, indentation) without its location, with
/// the one that reads as an implementation detail reworded.
fn parser_words(err: &Error) -> String {
    let full = err.to_string();
    let first = full
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("invalid YAML");
    let first = strip_location(first);
    if first.contains("tabs disallowed") {
        return "a tab in the indentation: YAML indents with spaces only".into();
    }
    format!("not valid YAML: {first}")
}

/// `error: line 5 column 3: unknown field` -> `unknown field`; `... at line 1, column 1` too.
fn strip_location(m: &str) -> String {
    let m = m.strip_prefix("error: ").unwrap_or(m);
    let m = match m.strip_prefix("line ").and_then(|r| r.split_once(": ")) {
        Some((place, after)) if place.contains("column") => after,
        _ => m,
    };
    match m.rfind(" at line ") {
        Some(i) => m[..i].to_string(),
        None => m.to_string(),
    }
}

/// The scenario text, read back at an error's place.
struct Source<'a> {
    lines: Vec<&'a str>,
}

impl<'a> Source<'a> {
    fn new(text: &'a str) -> Self {
        Source {
            lines: text.lines().collect(),
        }
    }

    /// Nothing but blank lines and comments.
    fn blank(&self) -> bool {
        self.lines.iter().all(|l| {
            let t = l.trim_start_matches('\u{feff}').trim();
            t.is_empty() || t.starts_with('#')
        })
    }

    fn line(&self, line: u64) -> Option<&'a str> {
        let i = usize::try_from(line).ok()?.checked_sub(1)?;
        self.lines.get(i).copied()
    }

    /// The key whose value is at (line, col): the last `key:` before the column on that line,
    /// or else the nearest line above that ends in `key:` (a block value).
    fn key_at(&self, line: u64, col: u64) -> Option<String> {
        let text = self.line(line)?;
        let before: String = text.chars().take(col as usize).collect();
        if let Some(k) = key_before_colon(&before) {
            return Some(k);
        }
        (1..line)
            .rev()
            .filter_map(|l| self.line(l))
            .map(str::trim_end)
            .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .and_then(|l| {
                l.strip_suffix(':')
                    .and_then(|l| key_before_colon(&format!("{l}:")))
            })
    }

    /// The value as written at (line, col): a scalar up to a comment or the end of its flow,
    /// or "a list" / "a mapping"; `None` when nothing is written there.
    fn value_at(&self, line: u64, col: u64) -> Option<String> {
        let text = self.line(line)?;
        let mut rest: String = text.chars().skip(col as usize - 1).collect();
        // An empty value is placed on its key's colon.
        if let Some(r) = rest.strip_prefix(':') {
            rest = r.to_string();
        }
        let in_flow = text
            .chars()
            .take(col as usize - 1)
            .any(|c| c == '{' || c == '[');
        if let Some(i) = rest.find(" #") {
            rest.truncate(i);
        }
        let rest = rest.trim();
        let rest = match rest.chars().next() {
            None | Some('#') => {
                // A block value starts on a later line.
                let next = ((line + 1)..=self.lines.len() as u64)
                    .filter_map(|l| self.line(l))
                    .map(str::trim)
                    .find(|l| !l.is_empty() && !l.starts_with('#'))?;
                return match next.chars().next() {
                    Some('-') => Some("a list".into()),
                    _ if key_before_colon(next).is_some() => Some("a mapping".into()),
                    _ => None,
                };
            }
            Some('[') => return Some("a list".into()),
            Some('{') => return Some("a mapping".into()),
            Some('-') if rest.starts_with("- ") || rest == "-" => return Some("a list".into()),
            Some(_) => rest,
        };
        let value = match rest.chars().next() {
            Some(q @ ('"' | '\'')) => match rest[1..].find(q) {
                Some(end) => &rest[..end + 2],
                None => rest,
            },
            _ if in_flow => rest.split([',', '}', ']']).next().unwrap_or(rest).trim(),
            _ => rest,
        };
        if key_before_colon(value).is_some_and(|_| value.ends_with(':') || value.contains(": ")) {
            return Some("a mapping".into());
        }
        let mut shown: String = value.chars().take(40).collect();
        if shown.len() < value.len() {
            shown.push('…');
        }
        // Numbers read best bare (`not -3`), words quoted (`not \`abc\``).
        if shown.parse::<f64>().is_ok() || shown.starts_with(['"', '\'']) {
            Some(shown)
        } else {
            Some(format!("`{shown}`"))
        }
    }

    /// The line of the first `key` in the block mapping whose duplicate is at (line, col).
    fn first_key_before(&self, key: &str, line: u64, col: u64) -> Option<u64> {
        for l in (1..line).rev() {
            let text = self.line(l)?;
            let trimmed = text.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            // A key's column, past any `- ` that opens a list item on the same line.
            let mut key_col = text.len() - trimmed.len() + 1;
            let mut rest = trimmed;
            let mut item = false;
            while let Some(r) = rest.strip_prefix('-').filter(|r| r.starts_with(' ')) {
                let r2 = r.trim_start();
                key_col += 1 + (r.len() - r2.len());
                rest = r2;
                item = true;
            }
            if key_col as u64 == col && key_before_colon(rest).is_some_and(|k| k == key) {
                return Some(l);
            }
            if (key_col as u64) < col || (item && key_col as u64 == col) {
                return None;
            }
        }
        None
    }
}

/// The key of `  - name: value` or `{ a: 1, name: ` (the last `key:` in the text).
fn key_before_colon(text: &str) -> Option<String> {
    let text = text.trim_end();
    let colon = text.rfind(':')?;
    let head = text[..colon].trim_end();
    let head = head.trim_end_matches(['"', '\'']);
    let start = head
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '-' || *c == '.'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let key = &head[start..];
    (!key.is_empty() && !key.chars().all(|c| c == '-')).then(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_keys_and_values_back() {
        let s = Source::new("load:\n  users: -3 # three\n  x: { a: 1, b: [2] }\nsteps:\n  - 1\n");
        assert_eq!(s.key_at(2, 10).as_deref(), Some("users"));
        assert_eq!(s.value_at(2, 10).as_deref(), Some("-3"));
        assert_eq!(s.key_at(3, 11).as_deref(), Some("a"));
        assert_eq!(s.value_at(3, 11).as_deref(), Some("1"));
        assert_eq!(s.key_at(3, 17).as_deref(), Some("b"));
        assert_eq!(s.value_at(3, 17).as_deref(), Some("a list"));
        assert_eq!(s.key_at(4, 6).as_deref(), Some("steps"));
        assert_eq!(s.value_at(4, 6).as_deref(), Some("a list"));
    }

    #[test]
    fn finds_the_first_of_a_duplicate_key() {
        let s = Source::new(
            "a:\n  users: 1\n  b: 2\n\n  users: 3\nsteps:\n  - x: 1\n    y: 2\n    x: 3\n",
        );
        assert_eq!(s.first_key_before("users", 5, 3), Some(2));
        assert_eq!(s.first_key_before("x", 9, 5), Some(7));
        assert_eq!(s.first_key_before("a", 6, 1), Some(1));
        // Line 7 opens the list item that holds the duplicate: the search stops there.
        assert_eq!(s.first_key_before("users", 9, 5), None);
    }

    #[test]
    fn suggests_a_close_key() {
        let m = unknown_key("laod", &["targets", "load", "steps"]);
        assert_eq!(
            m,
            "unknown key `laod` (did you mean `load`?); the keys here are targets, load, steps"
        );
        assert!(!unknown_key("zzzzzz", &["load"]).contains("did you mean"));
        // The closest key within two edits (characters, not bytes), the first of equals.
        let hint = |k: &str| {
            let m = unknown_key(k, &["targets", "load", "steps", "flows", "seed"]);
            m.split_once("(did you mean `")
                .and_then(|(_, rest)| rest.split_once('`'))
                .map(|(k, _)| k.to_string())
        };
        assert_eq!(hint("target").as_deref(), Some("targets"));
        assert_eq!(hint("stpes").as_deref(), Some("steps"));
        assert_eq!(hint("lóad").as_deref(), Some("load"));
        assert_eq!(hint("flaws").as_deref(), Some("flows"));
        assert_eq!(hint("sped").as_deref(), Some("seed"));
        assert_eq!(hint("stepsss").as_deref(), Some("steps"));
        assert_eq!(hint("stepssss"), None);
    }
}
