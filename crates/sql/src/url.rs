//! Database URLs: which database a URL names, and the same URL with its password hidden (the
//! only form that reaches a label, a message, the summary or the JSON result).

use std::fmt;

/// The databases throng speaks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// PostgreSQL (`postgres://`, `postgresql://`): placeholders `$1`, `$2`, ...
    Postgres,
    /// MySQL or MariaDB (`mysql://`, `mariadb://`): placeholders `?`.
    MySql,
    /// SQLite (`sqlite://FILE`, `sqlite::memory:`): placeholders `?`.
    Sqlite,
}

impl Dialect {
    /// The dialect of a URL, by its scheme (case-insensitive).
    pub fn of(url: &str) -> Option<Dialect> {
        let scheme = url.split_once(':')?.0.to_ascii_lowercase();
        match scheme.as_str() {
            "postgres" | "postgresql" => Some(Dialect::Postgres),
            "mysql" | "mariadb" => Some(Dialect::MySql),
            "sqlite" => Some(Dialect::Sqlite),
            _ => None,
        }
    }

    /// The `n`th (1-based) bind placeholder.
    pub fn placeholder(self, n: usize) -> String {
        match self {
            Dialect::Postgres => format!("${n}"),
            Dialect::MySql | Dialect::Sqlite => "?".to_string(),
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dialect::Postgres => "PostgreSQL",
            Dialect::MySql => "MySQL",
            Dialect::Sqlite => "SQLite",
        })
    }
}

/// The URL schemes of databases, as a scenario's targets and `throng run` recognise them.
pub const SCHEMES: &[&str] = &["postgres", "postgresql", "mysql", "mariadb", "sqlite"];

pub use throng_core::redact;

/// Removes every occurrence of the URL's password from `text` (a driver's message that quotes
/// the URL or the password), so nothing shown can leak it.
pub(crate) fn scrub(url: &str, text: &str) -> String {
    match written_password(url) {
        Some(pw) if !pw.is_empty() => text.replace(url, &redact(url)).replace(pw, "***"),
        _ => text.to_string(),
    }
}

/// The password of a URL as written: its user-info part, or a `password=` parameter (which
/// wins, as sqlx reads PostgreSQL's).
fn written_password(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let info = rest[..end].rsplit_once('@').map(|(info, _)| info);
    let from_info = info.and_then(|i| i.split_once(':')).map(|(_, p)| p);
    written_param(url, "password").or(from_info)
}

/// The password of a URL, percent-decoded: what a login sends.
pub(crate) fn password(url: &str) -> Option<String> {
    written_password(url).map(percent_decode)
}

/// The password of a URL, or where it gives none, the one its database's clients read from
/// the environment (so it stays out of `ps`): `PGPASSWORD` for PostgreSQL, `MYSQL_PWD` for
/// MySQL and MariaDB.
pub(crate) fn password_or_env(url: &str) -> Option<String> {
    password(url).or_else(|| {
        let var = match Dialect::of(url)? {
            Dialect::Postgres => "PGPASSWORD",
            Dialect::MySql => "MYSQL_PWD",
            Dialect::Sqlite => return None,
        };
        std::env::var(var).ok()
    })
}

/// A query parameter of a URL (its name in any case), percent-decoded.
pub(crate) fn param(url: &str, name: &str) -> Option<String> {
    written_param(url, name).map(percent_decode)
}

fn written_param<'u>(url: &'u str, name: &str) -> Option<&'u str> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|kv| match kv.split_once('=') {
        Some((k, v)) if k.eq_ignore_ascii_case(name) => Some(v),
        _ => None,
    })
}

/// A URL part percent-decoded (percent-encoding): an escape that is not two hex digits stays as
/// written, `+` stays `+` (a space only in a form), bytes that are not UTF-8 become U+FFFD.
pub(crate) fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// Checks a database URL before anything connects: a known scheme and, for servers, a host.
pub fn check(url: &str) -> Result<Dialect, String> {
    let shown = redact(url);
    let dialect = Dialect::of(url).ok_or_else(|| {
        format!(
            "{shown}: not a database URL (postgres://USER:PASSWORD@HOST:PORT/DB, \
             mysql://USER:PASSWORD@HOST:PORT/DB or sqlite://FILE)"
        )
    })?;
    let rest = url.split_once(':').map(|x| x.1).unwrap_or_default();
    match dialect {
        Dialect::Sqlite => {
            let file = rest.trim_start_matches("//");
            if file.is_empty() {
                return Err(format!(
                    "{shown}: a SQLite URL names its file: sqlite://FILE (sqlite:///abs/path)"
                ));
            }
        }
        Dialect::Postgres | Dialect::MySql => {
            let Some(after) = rest.strip_prefix("//") else {
                return Err(format!("{shown}: expected {}://HOST/DB", scheme(url)));
            };
            let end = after.find(['/', '?']).unwrap_or(after.len());
            let host = after[..end].rsplit_once('@').map_or(&after[..end], |x| x.1);
            // PostgreSQL may name its host (a socket directory) in the query instead.
            if host.is_empty() && !url.contains("host=") {
                return Err(format!("{shown}: the URL names no host"));
            }
            if let Some((_, port)) = host.rsplit_once(':').filter(|_| !host.ends_with(']')) {
                if port.parse::<u16>().is_err() {
                    return Err(format!("{shown}: the port `{port}` is not a number"));
                }
            }
        }
    }
    Ok(dialect)
}

fn scheme(url: &str) -> &str {
    url.split_once(':').map_or(url, |x| x.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_everywhere() {
        assert_eq!(
            redact("postgres://bob:s3cr@t@127.0.0.1:5432/db?sslmode=disable"),
            "postgres://bob:***@127.0.0.1:5432/db?sslmode=disable"
        );
        assert_eq!(
            redact("mysql://root@localhost/db?password=hunter2&x=1"),
            "mysql://root@localhost/db?password=***&x=1"
        );
        assert_eq!(redact("sqlite://data.db"), "sqlite://data.db");
        let url = "postgres://bob:hunter2@h/db";
        assert_eq!(
            scrub(url, "cannot reach postgres://bob:hunter2@h/db (hunter2)"),
            "cannot reach postgres://bob:***@h/db (***)"
        );
    }

    #[test]
    fn passwords_come_from_the_url_decoded() {
        assert_eq!(
            password("postgres://u:p%40ss@h/db").as_deref(),
            Some("p@ss")
        );
        assert_eq!(
            password("postgres://u:a:b@h:5/db?x=1").as_deref(),
            Some("a:b")
        );
        assert_eq!(
            password("postgres://u@h/db?password=s%2Fcret").as_deref(),
            Some("s/cret")
        );
        assert_eq!(password("mysql://u@h/db"), None);
        assert_eq!(
            param("mysql://u@h/db?a=1&Time-Zone=%2B08:00", "time-zone").as_deref(),
            Some("+08:00")
        );
    }

    #[test]
    fn percent_escapes_are_decoded_and_bad_ones_kept() {
        // `+` is itself in a URL's user info and path (it is a space only in a form).
        assert_eq!(percent_decode("a%2Fb+c"), "a/b+c");
        assert_eq!(percent_decode("100%zz%2"), "100%zz%2");
        assert_eq!(percent_decode("caf%C3%A9%20%E6%BC%A2"), "café 漢");
        assert_eq!(percent_decode("x%FFy"), "x\u{FFFD}y");
        assert_eq!(
            password("mysql://u:p%40x+%2F@h/db").as_deref(),
            Some("p@x+/")
        );
    }

    #[test]
    fn urls_are_checked_before_connecting() {
        assert_eq!(
            check("postgres://u:p@127.0.0.1:5/db"),
            Ok(Dialect::Postgres)
        );
        assert_eq!(check("mariadb://u@127.0.0.1/db"), Ok(Dialect::MySql));
        assert_eq!(check("sqlite://x.db"), Ok(Dialect::Sqlite));
        assert!(check("sqlite://").unwrap_err().contains("names its file"));
        assert!(check("postgres:///db").unwrap_err().contains("no host"));
        let e = check("postgres://u:pw@h:99x/db").unwrap_err();
        assert!(e.contains("not a number") && !e.contains("pw@"), "{e}");
        assert!(check("redis://h")
            .unwrap_err()
            .contains("not a database URL"));
    }
}
