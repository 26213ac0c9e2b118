//! One connection to one of the three databases, behind one enum so the driver's code is
//! written once. PostgreSQL and MySQL/MariaDB go through throng's own connections (`pg`, `my`),
//! plain or TLS; SQLite through sqlx's concrete connection (no `Any` driver converting every
//! row on the hot path).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "sqlite")]
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
#[cfg(feature = "sqlite")]
use sqlx::ConnectOptions as _;
#[cfg(feature = "sqlite")]
use std::str::FromStr as _;
use throng_core::step::Identity;
use throng_core::{ErrorClass, Outcome};

use crate::classify::failure;
use crate::error::DbError;
use crate::param::Value;
use crate::tls::{Mode, TlsPlan};
use crate::url::{redact, Dialect};

/// How to reach a database: its connection options, parsed once from the URL.
#[derive(Debug, Clone)]
pub struct Target {
    dialect: Dialect,
    /// The URL with its password hidden: the only form shown.
    shown: String,
    /// The URL as given: for scrubbing messages, never shown.
    url: String,
    options: Options,
    /// TLS as the URL (or the flags) ask for it.
    tls: TlsPlan,
    /// The CA file the URL names (`sslrootcert`, `ssl-ca`), if any.
    ca: Option<std::path::PathBuf>,
    /// The client certificate and key the URL names (`sslcert` and `sslkey`, `ssl-cert` and
    /// `ssl-key`), if any.
    identity: Option<Identity>,
    connect_timeout: Duration,
}

#[derive(Debug, Clone)]
enum Options {
    Pg(crate::options::Options),
    My(crate::options::Options),
    #[cfg(feature = "sqlite")]
    Lite(SqliteConnectOptions),
}

/// TLS to a database server, beside what its URL says (`sslmode=`, `ssl-mode=`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tls {
    /// Encrypt without checking the server's certificate (PostgreSQL `require`, MySQL
    /// `REQUIRED`), unless the URL names a mode.
    pub insecure: bool,
    /// Trust this PEM file and verify the server against it (`verify-full`,
    /// `VERIFY_IDENTITY`), unless the URL names a mode.
    pub cacert: Option<std::path::PathBuf>,
    /// Present this certificate and key when the server asks for one (`--cert`, `--key`),
    /// over the URL's `sslcert` and `sslkey`.
    pub identity: Option<Identity>,
}

/// An open connection.
#[derive(Debug)]
pub struct Conn {
    db: Db,
}

#[derive(Debug)]
enum Db {
    /// PostgreSQL on throng's own wire codec (see the `pg` module).
    PgWire(crate::pg::PgConn),
    /// MySQL and MariaDB on throng's own wire codec (see the `my` module).
    MyWire(crate::my::MyConn),
    #[cfg(feature = "sqlite")]
    Lite(SqliteConnection),
}

/// What a statement did.
#[derive(Debug, Default)]
pub struct Done {
    /// Rows it returned.
    pub rows: u64,
    /// Rows it changed.
    pub affected: u64,
    /// The rows as JSON objects, when asked for.
    pub data: Vec<serde_json::Value>,
}

/// The client certificate and key a URL names: PostgreSQL's `sslcert` and `sslkey` (or
/// `PGSSLCERT` and `PGSSLKEY`), MySQL's `ssl-cert` and `ssl-key`; both, or neither.
fn url_identity(dialect: Dialect, url: &str) -> Result<Option<Identity>, String> {
    let param = |name: &str| crate::url::param(url, name).map(std::path::PathBuf::from);
    let env = |name: &str| std::env::var_os(name).map(std::path::PathBuf::from);
    match dialect {
        Dialect::Postgres => Identity::pair(
            param("sslcert").or_else(|| env("PGSSLCERT")),
            param("sslkey").or_else(|| env("PGSSLKEY")),
            ("sslcert", "sslkey"),
        ),
        Dialect::MySql => {
            Identity::pair(param("ssl-cert"), param("ssl-key"), ("ssl-cert", "ssl-key"))
        }
        Dialect::Sqlite => Ok(None),
    }
}

impl Target {
    /// Parses the URL into connection options; `cache` is how many prepared statements each
    /// connection keeps (at least the run's statements, so none is prepared twice).
    // `cache` sizes SQLite's statement cache: unread in a build without SQLite.
    #[cfg_attr(not(feature = "sqlite"), allow(unused_variables))]
    pub fn new(url: &str, connect_timeout: Duration, cache: usize) -> Result<Target, String> {
        let dialect = crate::url::check(url)?;
        let shown = redact(url);
        let options = match dialect {
            Dialect::Postgres => Options::Pg(crate::options::Options::postgres(url)?),
            Dialect::MySql => Options::My(crate::options::Options::mysql(url)?),
            #[cfg(feature = "sqlite")]
            Dialect::Sqlite => Options::Lite(
                SqliteConnectOptions::from_str(url)
                    .map_err(|e| format!("{shown}: {}", crate::url::scrub(url, &e.to_string())))?
                    .statement_cache_capacity(cache)
                    .disable_statement_logging(),
            ),
            #[cfg(not(feature = "sqlite"))]
            Dialect::Sqlite => {
                return Err(format!(
                    "{shown}: this build has no SQLite (throng-sql's `sqlite` feature)"
                ))
            }
        };
        let ca = match dialect {
            Dialect::Postgres => crate::url::param(url, "sslrootcert")
                .or_else(|| std::env::var("PGSSLROOTCERT").ok()),
            _ => crate::url::param(url, "ssl-ca").or_else(|| crate::url::param(url, "sslca")),
        }
        .map(std::path::PathBuf::from);
        let identity = url_identity(dialect, url).map_err(|e| format!("{shown}: {e}"))?;
        let (mode, name) = mode_of(&options);
        let tls = TlsPlan::new(mode, name, ca.clone(), identity.clone(), host_of(&options))
            .map_err(|e| format!("{shown}: {e}"))?;
        Ok(Target {
            dialect,
            shown,
            url: url.to_string(),
            options,
            tls,
            ca,
            identity,
            connect_timeout,
        })
    }

    /// Applies TLS options; a mode written in the URL wins over them. SQLite has no TLS.
    pub fn with_tls(mut self, tls: &Tls) -> Result<Target, String> {
        if tls == &Tls::default() {
            return Ok(self);
        }
        let lower = self.url.to_ascii_lowercase();
        let named = lower.contains("sslmode=") || lower.contains("ssl-mode=");
        let (mode, name) = match (named, tls.cacert.is_some() && !tls.insecure, tls.insecure) {
            (true, _, _) => mode_of(&self.options),
            (false, true, _) => (Mode::VerifyFull, "verify-full (--cacert)"),
            (false, false, true) => (Mode::Require, "require (--insecure)"),
            // A client certificate alone changes whom the server sees, not how much TLS the
            // URL asks for (libpq's `prefer` by default, as with `sslcert` in the URL).
            (false, false, false) => mode_of(&self.options),
        };
        let ca = tls.cacert.clone().or(self.ca.clone());
        let ca = if tls.insecure && !named { None } else { ca };
        let identity = tls.identity.clone().or(self.identity.clone());
        self.tls = TlsPlan::new(mode, name, ca, identity, host_of(&self.options))
            .map_err(|e| format!("{}: {e}", self.shown))?;
        self.options = match self.options {
            Options::Pg(o) => Options::Pg(o),
            Options::My(o) => Options::My(o),
            #[cfg(feature = "sqlite")]
            Options::Lite(_) => {
                return Err(format!(
                    "{}: SQLite has no TLS, so no certificate to trust or to skip (TLS is for \
                 postgres:// and mysql://)",
                    self.shown
                ))
            }
        };
        Ok(self)
    }

    /// A SQLite file is created if it is missing (for `throng sql prepare`); a load never
    /// creates one, so a misspelt path fails before it rather than testing an empty file.
    pub fn create_if_missing(self) -> Target {
        #[cfg(feature = "sqlite")]
        if let Options::Lite(o) = self.options {
            return Target {
                options: Options::Lite(o.create_if_missing(true)),
                ..self
            };
        }
        self
    }

    /// Which database.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The URL with its password hidden.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// `text` with the password taken out.
    pub fn scrub(&self, text: &str) -> String {
        crate::url::scrub(&self.url, text)
    }

    /// Opens a connection within the connect timeout; a failure is a classified outcome whose
    /// message names the database (password hidden).
    pub async fn connect(&self) -> Result<Conn, Outcome> {
        let connected = AtomicBool::new(false);
        let attempt = async {
            Ok::<_, DbError>(match &self.options {
                Options::Pg(o) => {
                    Db::PgWire(crate::pg::open(o, &self.url, &self.tls, &connected).await?)
                }
                Options::My(o) => {
                    Db::MyWire(crate::my::open(o, &self.url, &self.tls, &connected).await?)
                }
                #[cfg(feature = "sqlite")]
                Options::Lite(o) => Db::Lite(o.connect().await?),
            })
        };
        match tokio::time::timeout(self.connect_timeout, attempt).await {
            Ok(Ok(db)) => Ok(Conn { db }),
            Ok(Err(e)) => {
                let mut o = failure(&e);
                // No connection came of it, whatever the reason (refused, reset, or the
                // database's refusal: bad credentials, 57P03 while it starts up, too many
                // connections): class `connect`, so the engine backs off before the next try;
                // the database's SQLSTATE stays the status.
                if o.error != Some(ErrorClass::Tls) {
                    o.error = Some(ErrorClass::Connect);
                }
                o.message = Some(self.scrub(&format!(
                    "connect to {}: {}",
                    self.shown,
                    o.message.unwrap_or_default()
                )));
                Err(o)
            }
            Err(_) => {
                let t = self.connect_timeout;
                // MySQL's server speaks first; PostgreSQL's and an HTTP server wait for the
                // client, so a MySQL URL at their port hears nothing.
                let why = match (connected.load(Ordering::Relaxed), self.dialect) {
                    (false, _) => String::new(),
                    (true, Dialect::MySql) => ": the server accepted the connection and sent \
                         no greeting (MySQL and MariaDB greet first): not a MySQL or MariaDB \
                         server, or one too busy to answer"
                        .to_string(),
                    (true, _) => {
                        ": the server accepted the connection and did not finish the login".into()
                    }
                };
                Err(Outcome::failed(
                    ErrorClass::Timeout,
                    format!("connect to {} timed out after {t:?}{why}", self.shown),
                ))
            }
        }
    }
}

/// The TLS mode the options say (the URL's, or the environment's: `PGSSLMODE`), and its name.
fn mode_of(options: &Options) -> (Mode, &'static str) {
    match options {
        Options::Pg(o) | Options::My(o) => (o.mode, o.mode_name),
        #[cfg(feature = "sqlite")]
        Options::Lite(_) => (Mode::Disable, "disable"),
    }
}

/// The host a TLS certificate is checked against.
fn host_of(options: &Options) -> &str {
    match options {
        Options::Pg(o) | Options::My(o) => &o.host,
        #[cfg(feature = "sqlite")]
        Options::Lite(_) => "localhost",
    }
}

/// Rolls back the transaction a user left open (`in_tx`) on its connection, so the next
/// iteration starts clean; a connection whose rollback fails or outlasts `timeout` is dropped,
/// since its state is unknown. Both the URL driver and scenario steps end iterations so.
/// Whether there was a transaction to roll back.
pub(crate) async fn roll_back(
    conn: &mut Option<Conn>,
    in_tx: &mut bool,
    timeout: Duration,
) -> bool {
    if !std::mem::take(in_tx) {
        return false;
    }
    if let Some(c) = conn.as_mut() {
        let rollback = tokio::time::timeout(timeout, c.raw("ROLLBACK")).await;
        if !matches!(rollback, Ok(Ok(()))) {
            *conn = None;
        }
    }
    true
}

impl Conn {
    /// Runs one prepared statement (prepared on this connection at its first use, then taken
    /// from the connection's cache) with its parameters; `keep` keeps the rows as JSON.
    pub async fn run(
        &mut self,
        sql: &Arc<str>,
        args: &[Value],
        keep: bool,
    ) -> Result<Done, DbError> {
        match &mut self.db {
            Db::PgWire(c) => c.run(sql, args, keep).await,
            Db::MyWire(c) => c.run(sql, args, keep).await,
            #[cfg(feature = "sqlite")]
            Db::Lite(c) => Ok(crate::lite::run(c, sql, args, keep).await?),
        }
    }

    /// Runs text as it is, unprepared (transaction control, DDL, scripts of several
    /// statements).
    pub async fn raw(&mut self, sql: &str) -> Result<(), DbError> {
        match &mut self.db {
            Db::PgWire(c) => c.raw(sql).await,
            Db::MyWire(c) => c.raw(sql).await,
            #[cfg(feature = "sqlite")]
            Db::Lite(c) => Ok(crate::lite::raw(c, sql).await?),
        }
    }

    /// Prepares a statement and says how many parameters it takes.
    pub async fn parameters(&mut self, sql: &str) -> Result<usize, DbError> {
        match &mut self.db {
            Db::PgWire(c) => c.parameters(sql).await,
            Db::MyWire(c) => c.parameters(sql).await,
            #[cfg(feature = "sqlite")]
            Db::Lite(c) => Ok(crate::lite::parameters(c, sql).await?),
        }
    }

    /// Closes the connection politely (the server logs no broken connection).
    pub async fn close(self) {
        match self.db {
            Db::PgWire(c) => c.close().await,
            Db::MyWire(c) => c.close().await,
            #[cfg(feature = "sqlite")]
            Db::Lite(c) => {
                use sqlx::Connection as _;
                let _ = c.close().await;
            }
        }
    }

    /// How the connection speaks to its database: `postgres-protocol` (throng's own
    /// connection) with its TLS version and login (`postgres-protocol, TLSv1.3,
    /// SCRAM-SHA-256-PLUS`), `mysql wire`, or `sqlx`.
    pub fn path(&self) -> String {
        match &self.db {
            Db::PgWire(c) => match c.tls_version() {
                Some(v) => format!("postgres-protocol, {v}, {}", c.login_method()),
                None => format!("postgres-protocol, {}", c.login_method()),
            },
            Db::MyWire(c) => match c.tls_version() {
                Some(v) => format!("mysql wire, {v}, {}", c.login_method()),
                None => format!("mysql wire, {}", c.login_method()),
            },
            #[cfg(feature = "sqlite")]
            Db::Lite(_) => "sqlx".into(),
        }
    }

    /// Bytes sent and received on the connection's socket since the last call (or since it
    /// was opened, the login left out), as they crossed it (under TLS, encrypted); `(0, 0)`
    /// for SQLite, which has no socket.
    pub fn traffic(&mut self) -> (u64, u64) {
        match &mut self.db {
            Db::PgWire(c) => c.traffic(),
            Db::MyWire(c) => c.traffic(),
            #[cfg(feature = "sqlite")]
            Db::Lite(_) => (0, 0),
        }
    }
}
