//! sqlx's errors to outcomes: a database's error is class `sql` with its SQLSTATE as the status
//! (so deadlocks, serialization failures, unique violations and syntax errors count apart);
//! I/O failures get the classes every protocol on TCP uses.

use throng_core::{ErrorClass, Outcome, Status};

/// The outcome of a failed statement or connect.
pub fn failure(e: &sqlx::Error) -> Outcome {
    match e {
        sqlx::Error::Database(db) => {
            let code = sqlstate(db.as_ref());
            let status = Status::sqlstate(&code).unwrap_or_default();
            Outcome {
                status,
                ..Outcome::failed(ErrorClass::Sql, format!("{code}: {}", db.message()))
            }
        }
        sqlx::Error::Io(io) => Outcome::failed(
            throng_net::classify_io(io).unwrap_or(ErrorClass::Reset),
            format!("connection: {}", throng_net::message(io)),
        ),
        sqlx::Error::Tls(t) => Outcome::failed(ErrorClass::Tls, format!("TLS: {t}")),
        sqlx::Error::Protocol(m) => Outcome::failed(ErrorClass::Protocol, m.clone()),
        sqlx::Error::PoolTimedOut => Outcome::failed(ErrorClass::Timeout, e.to_string()),
        other => Outcome::failed(ErrorClass::Other, throng_net::message(other)),
    }
}

/// Whether the connection cannot be used after this error (it must be reopened).
pub(crate) fn lost(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => {
            let code = sqlstate(db.as_ref());
            // 08: connection exceptions; 57P0x: the server is shutting down or restarting.
            code.starts_with("08") || code.starts_with("57P0")
        }
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        _ => false,
    }
}

/// The SQLSTATE of a database error. PostgreSQL and MySQL give one; SQLite gives its own
/// result codes, mapped here to the SQLSTATE of the same meaning.
fn sqlstate(db: &dyn sqlx::error::DatabaseError) -> String {
    use sqlx::error::ErrorKind;
    if let Some(code) = db.code().filter(|c| c.len() == 5 && !is_sqlite(db)) {
        return code.into_owned();
    }
    let msg = db.message();
    match db.kind() {
        ErrorKind::UniqueViolation => "23505",
        ErrorKind::ForeignKeyViolation => "23503",
        ErrorKind::NotNullViolation => "23502",
        ErrorKind::CheckViolation => "23514",
        _ if msg.contains("syntax error") || msg.contains("incomplete input") => "42601",
        _ if msg.starts_with("no such table") => "42P01",
        _ if msg.starts_with("no such column") => "42703",
        // SQLITE_BUSY and SQLITE_LOCKED: another connection holds the lock.
        _ if matches!(db.code().as_deref(), Some("5" | "6" | "517" | "262")) => "55P03",
        _ => "HY000",
    }
    .to_string()
}

fn is_sqlite(db: &dyn sqlx::error::DatabaseError) -> bool {
    #[cfg(feature = "sqlite")]
    return db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some();
    #[cfg(not(feature = "sqlite"))]
    return {
        let _ = db;
        false
    };
}
