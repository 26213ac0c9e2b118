//! Where and as whom to connect, read from a `postgres://` or `mysql://` URL (and, for
//! PostgreSQL, the environment variables libpq reads: `PGHOST`, `PGPORT`, `PGUSER`,
//! `PGDATABASE`, `PGSSLMODE`, `PGAPPNAME`). The password is not kept here: it is read from the
//! URL (or `PGPASSWORD`, `MYSQL_PWD`) when a login needs it, so it is in one place only.

use crate::tls::Mode;
use crate::url::{param, percent_decode, redact};

/// A server's connection options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Options {
    /// The host name or address (`localhost` when the URL names none).
    pub(crate) host: String,
    pub(crate) port: u16,
    /// A Unix socket: PostgreSQL's directory (a host that starts with `/`) or MySQL's file
    /// (`?socket=`).
    pub(crate) socket: Option<String>,
    pub(crate) user: String,
    pub(crate) database: Option<String>,
    /// PostgreSQL's `application_name`.
    pub(crate) application_name: Option<String>,
    /// PostgreSQL's `options` (`-c deadlock_timeout=100ms`).
    pub(crate) options: Option<String>,
    /// MySQL's character set and collation (`SET NAMES`).
    pub(crate) charset: String,
    pub(crate) collation: Option<String>,
    /// The TLS mode and its name as written.
    pub(crate) mode: Mode,
    pub(crate) mode_name: &'static str,
}

/// The URL's authority (user info and host) and path, split.
struct Parts {
    user: Option<String>,
    host: Option<String>,
    port: Option<u16>,
    database: Option<String>,
}

fn parts(url: &str) -> Result<Parts, String> {
    let shown = redact(url);
    let rest = url.split_once("://").map_or("", |x| x.1);
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (info, hostport) = match authority.rsplit_once('@') {
        Some((info, host)) => (Some(info), host),
        None => (None, authority),
    };
    let user = info
        .map(|i| i.split_once(':').map_or(i, |x| x.0))
        .filter(|u| !u.is_empty())
        .map(percent_decode);
    let (host, port) = match hostport
        .rsplit_once(':')
        .filter(|_| !hostport.ends_with(']'))
    {
        Some((h, p)) => {
            let port = p
                .parse::<u16>()
                .map_err(|_| format!("{shown}: the port `{p}` is not a number"))?;
            (h, Some(port))
        }
        None => (hostport, None),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let path = tail.split('?').next().unwrap_or_default();
    let database = path.trim_start_matches('/');
    Ok(Parts {
        user,
        host: (!host.is_empty()).then(|| percent_decode(host)),
        port,
        database: (!database.is_empty()).then(|| percent_decode(database)),
    })
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A name that goes into a statement as it is (a character set, a collation): letters, digits
/// and `_` only.
fn word(what: &str, v: String) -> Result<String, String> {
    match !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        true => Ok(v),
        false => Err(format!("{what} `{v}`: not a name")),
    }
}

impl Options {
    /// A `postgres://` URL's options, libpq's environment filling what it leaves out.
    pub(crate) fn postgres(url: &str) -> Result<Options, String> {
        let shown = redact(url);
        let p = parts(url)?;
        let host = param(url, "host")
            .or(p.host)
            .or_else(|| env("PGHOST"))
            .unwrap_or_else(|| "localhost".into());
        let port = match param(url, "port").or_else(|| env("PGPORT")) {
            Some(v) if p.port.is_none() => v
                .parse()
                .map_err(|_| format!("{shown}: the port `{v}` is not a number"))?,
            _ => p.port.unwrap_or(5432),
        };
        let mode_text = param(url, "sslmode")
            .or_else(|| param(url, "ssl-mode"))
            .or_else(|| env("PGSSLMODE"));
        let (mode, mode_name) = match mode_text.as_deref().map(str::to_ascii_lowercase) {
            None => (Mode::Prefer, "prefer"),
            Some(m) => match m.as_str() {
                "disable" => (Mode::Disable, "disable"),
                // No server asks for TLS first; `allow` is plain as long as it may be.
                "allow" => (Mode::Disable, "allow"),
                "prefer" => (Mode::Prefer, "prefer"),
                "require" => (Mode::Require, "require"),
                "verify-ca" => (Mode::VerifyCa, "verify-ca"),
                "verify-full" => (Mode::VerifyFull, "verify-full"),
                other => {
                    return Err(format!(
                        "{shown}: sslmode `{other}` is not one of disable, allow, prefer, \
                         require, verify-ca, verify-full"
                    ))
                }
            },
        };
        Ok(Options {
            socket: host.starts_with('/').then(|| host.clone()),
            host,
            port,
            user: param(url, "user")
                .or(p.user)
                .or_else(|| env("PGUSER"))
                .or_else(|| env("USER"))
                .unwrap_or_else(|| "postgres".into()),
            database: param(url, "dbname")
                .or(p.database)
                .or_else(|| env("PGDATABASE")),
            application_name: param(url, "application_name").or_else(|| env("PGAPPNAME")),
            options: param(url, "options"),
            charset: String::new(),
            collation: None,
            mode,
            mode_name,
        })
    }

    /// A `mysql://` or `mariadb://` URL's options.
    pub(crate) fn mysql(url: &str) -> Result<Options, String> {
        let shown = redact(url);
        let p = parts(url)?;
        let mode_text = param(url, "ssl-mode").or_else(|| param(url, "sslmode"));
        let (mode, mode_name) = match mode_text.as_deref().map(str::to_ascii_uppercase) {
            None => (Mode::Prefer, "PREFERRED"),
            Some(m) => match m.replace('-', "_").as_str() {
                "DISABLED" => (Mode::Disable, "DISABLED"),
                "PREFERRED" => (Mode::Prefer, "PREFERRED"),
                "REQUIRED" => (Mode::Require, "REQUIRED"),
                "VERIFY_CA" => (Mode::VerifyCa, "VERIFY_CA"),
                "VERIFY_IDENTITY" => (Mode::VerifyFull, "VERIFY_IDENTITY"),
                other => {
                    return Err(format!(
                        "{shown}: ssl-mode `{other}` is not one of DISABLED, PREFERRED, \
                         REQUIRED, VERIFY_CA, VERIFY_IDENTITY"
                    ))
                }
            },
        };
        let bad = |e: String| format!("{shown}: {e}");
        Ok(Options {
            host: p.host.unwrap_or_else(|| "localhost".into()),
            port: p.port.unwrap_or(3306),
            socket: param(url, "socket"),
            user: p.user.unwrap_or_else(|| "root".into()),
            database: p.database,
            application_name: None,
            options: None,
            charset: word("charset", param(url, "charset").unwrap_or("utf8mb4".into()))
                .map_err(bad)?,
            collation: param(url, "collation")
                .map(|c| word("collation", c))
                .transpose()
                .map_err(bad)?,
            mode,
            mode_name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host, port, user and database.
    fn where_who(o: &Options) -> (&str, u16, &str, Option<&str>) {
        (&o.host, o.port, &o.user, o.database.as_deref())
    }

    #[test]
    fn postgres_urls_give_their_parts_decoded() {
        let o = Options::postgres(
            "postgres://b%40b:pw@db.example:6543/my%20db?sslmode=verify-full&application_name=x\
             &options=-c%20deadlock_timeout%3D100ms",
        )
        .unwrap();
        assert_eq!(where_who(&o), ("db.example", 6543, "b@b", Some("my db")));
        assert_eq!((o.mode, o.mode_name), (Mode::VerifyFull, "verify-full"));
        assert_eq!(o.application_name.as_deref(), Some("x"));
        assert_eq!(o.options.as_deref(), Some("-c deadlock_timeout=100ms"));
        assert_eq!(o.socket, None);
        let s = Options::postgres("postgres://u@%2Frun%2Fpostgresql/db").unwrap();
        assert_eq!(s.socket.as_deref(), Some("/run/postgresql"));
        let s = Options::postgres("postgres://u@/db?host=/tmp&port=5433").unwrap();
        assert_eq!((s.socket.as_deref(), s.port), (Some("/tmp"), 5433));
        let e = Options::postgres("postgres://u:pw@h/db?sslmode=sometimes").unwrap_err();
        assert!(e.contains("sometimes") && !e.contains("pw"), "{e}");
    }

    #[test]
    fn mysql_urls_give_their_parts_and_refuse_what_would_go_into_sql() {
        let o = Options::mysql("mysql://u:pw@[::1]/shop?ssl-mode=required&collation=utf8mb4_bin")
            .unwrap();
        assert_eq!(where_who(&o), ("::1", 3306, "u", Some("shop")));
        assert_eq!((o.mode, o.mode_name), (Mode::Require, "REQUIRED"));
        assert_eq!(
            (o.charset.as_str(), o.collation.as_deref()),
            ("utf8mb4", Some("utf8mb4_bin"))
        );
        let d = Options::mysql("mariadb://h").unwrap();
        assert_eq!((d.user.as_str(), d.mode_name), ("root", "PREFERRED"));
        assert!(Options::mysql("mysql://h/db?charset=utf8';DROP")
            .unwrap_err()
            .contains("not a name"));
    }
}
