//! What a SQL run sends: statements as the user wrote them (or a workload), their parameters,
//! transactions and labels; checked without a database (the database checks the rest in
//! [`crate::SqlDriver::check`]).

use std::time::Duration;

use crate::oltp::{OltpOptions, Workload};

/// A SQL load: a database, and statements or a workload.
#[derive(Debug, Clone)]
pub struct SqlConfig {
    /// The database URL (postgres://, mysql://, mariadb://, sqlite://). Its password is never
    /// shown: messages, labels and results carry [`crate::redact`]'s form.
    pub url: String,
    /// The statements of one iteration, in order (`--sql`, `--sql-file`).
    pub statements: Vec<String>,
    /// `--param` expressions bound to the placeholders of the statements in order: the first
    /// statement takes as many as it has placeholders, the next the following ones, and so on.
    pub params: Vec<String>,
    /// Wrap each iteration's statements in one transaction (BEGIN ... COMMIT).
    pub transaction: bool,
    /// The row label: of the transaction with `transaction`, else of the single statement.
    pub label: Option<String>,
    /// A sysbench workload instead of statements.
    pub workload: Option<Workload>,
    /// The workload's tables.
    pub oltp: OltpOptions,
    /// A step (its statements) must finish within this.
    pub timeout: Duration,
    /// A connection must be made within this.
    pub connect_timeout: Duration,
    /// TLS beside the URL's own `sslmode`.
    pub tls: crate::conn::Tls,
    /// Failures that roll a transaction back and run it again, counted apart.
    pub retry: crate::Retry,
    /// The share of the run this process makes (`--shard`): `seq()` interleaves with the
    /// other shards' ([`crate::param::Seq`]).
    pub shard: throng_core::Shard,
}

impl SqlConfig {
    /// A configuration for `url` with no statements yet and the default timeouts.
    pub fn new(url: impl Into<String>) -> SqlConfig {
        SqlConfig {
            url: url.into(),
            statements: Vec::new(),
            params: Vec::new(),
            transaction: false,
            label: None,
            workload: None,
            oltp: OltpOptions::default(),
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            tls: crate::conn::Tls::default(),
            retry: crate::Retry::default(),
            shard: throng_core::Shard::WHOLE,
        }
    }
}

/// Splits a script into statements at `;`, outside quotes and comments; empty ones are dropped.
pub fn split_statements(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                cur.push(c);
                if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' | '`' => {
                    quote = Some(c);
                    cur.push(c);
                }
                '-' if chars.peek() == Some(&'-') => {
                    // A comment to the end of the line.
                    for c in chars.by_ref() {
                        if c == '\n' {
                            cur.push('\n');
                            break;
                        }
                    }
                }
                ';' => {
                    let s = cur.trim();
                    if !s.is_empty() {
                        out.push(s.to_string());
                    }
                    cur.clear();
                }
                _ => cur.push(c),
            },
        }
    }
    let s = cur.trim();
    if !s.is_empty() {
        out.push(s.to_string());
    }
    out
}

/// A statement's row label: its first words, up to the first clause that carries values
/// (`SELECT c FROM sbtest1 WHERE id = $1` is `SELECT c FROM sbtest1`).
pub fn label_of(sql: &str) -> String {
    const STOP: &[&str] = &[
        "WHERE",
        "VALUES",
        "ORDER",
        "GROUP",
        "LIMIT",
        "HAVING",
        "ON",
        "USING",
        "RETURNING",
    ];
    let mut words = Vec::new();
    for w in sql.split_whitespace() {
        if words.len() == 4 || w.starts_with('(') || STOP.iter().any(|s| s.eq_ignore_ascii_case(w))
        {
            break;
        }
        words.push(w);
    }
    let mut label = words.join(" ");
    if label.chars().count() > 48 {
        label = label.chars().take(47).collect::<String>() + "…";
    }
    label
}

/// Makes labels unique by numbering repeats: `SELECT 1`, `SELECT 1 (2)`.
pub(crate) fn unique(labels: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(labels.len());
    for l in labels {
        let mut name = l.clone();
        let mut n = 1;
        while out.contains(&name) {
            n += 1;
            name = format!("{l} ({n})");
        }
        out.push(name);
    }
    out
}

/// Whether a statement is transaction control, which is sent as it is rather than prepared.
pub(crate) fn is_control(sql: &str) -> bool {
    let first = sql
        .split(|c: char| c.is_whitespace() || c == ';')
        .next()
        .unwrap_or_default();
    ["BEGIN", "START", "COMMIT", "ROLLBACK", "END"]
        .iter()
        .any(|k| k.eq_ignore_ascii_case(first))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_split_at_semicolons_outside_quotes_and_comments() {
        let s = "SELECT 'a;b' FROM t; -- a comment; still\nUPDATE t SET x = 1 ;\n\n;  ";
        assert_eq!(
            split_statements(s),
            vec!["SELECT 'a;b' FROM t", "UPDATE t SET x = 1"]
        );
    }

    #[test]
    fn labels_are_the_first_words() {
        assert_eq!(
            label_of("SELECT c FROM sbtest1 WHERE id = $1"),
            "SELECT c FROM sbtest1"
        );
        assert_eq!(
            label_of("UPDATE t SET k = k + 1 WHERE id = ?"),
            "UPDATE t SET k"
        );
        assert_eq!(
            label_of("INSERT INTO t (a, b) VALUES (1, 2)"),
            "INSERT INTO t"
        );
        assert_eq!(label_of("select 1"), "select 1");
        assert_eq!(
            unique(vec!["a".into(), "a".into(), "b".into(), "a".into()]),
            vec!["a", "a (2)", "b", "a (3)"]
        );
        assert!(is_control("begin") && is_control("COMMIT;") && !is_control("SELECT 1"));
    }
}
