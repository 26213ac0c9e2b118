//! Failures to outcomes: a database's error is class `sql` with its SQLSTATE as the status (so
//! deadlocks, serialization failures, unique violations and syntax errors count apart); I/O
//! failures get the classes every protocol on TCP uses.

use throng_core::{ErrorClass, Outcome};

use crate::error::{DbError, Violation};

/// The outcome of a failed statement or connect.
pub fn failure(e: &DbError) -> Outcome {
    match e {
        DbError::Database(db) => {
            let code = match (db.code(), db.violation()) {
                (Some(c), _) => c,
                (None, Some(v)) => violated(v),
                (None, None) => "HY000",
            };
            Outcome {
                status: crate::status::sqlstate(code).unwrap_or_default(),
                ..Outcome::failed(ErrorClass::Status, format!("{code}: {}", db.message()))
            }
        }
        DbError::Io(io) => Outcome::failed(
            throng_net::classify_io(io).unwrap_or(ErrorClass::Reset),
            format!("connection: {}", throng_net::message(io)),
        ),
        DbError::Tls(t) => Outcome::failed(ErrorClass::Tls, format!("TLS: {t}")),
        DbError::Protocol(m) => Outcome::failed(ErrorClass::Protocol, m.clone()),
        #[cfg(feature = "sqlite")]
        DbError::Lite(e) => lite::failure(e),
    }
}

/// Whether the connection cannot be used after this error (it must be reopened).
pub(crate) fn lost(e: &DbError) -> bool {
    match e {
        // 08: connection exceptions; 57P0x: the server is shutting down or restarting.
        DbError::Database(db) => db
            .code()
            .is_some_and(|c| c.starts_with("08") || c.starts_with("57P0")),
        DbError::Io(_) | DbError::Tls(_) | DbError::Protocol(_) => true,
        #[cfg(feature = "sqlite")]
        DbError::Lite(e) => lite::lost(e),
    }
}

/// The SQLSTATE of a violated constraint.
fn violated(v: Violation) -> &'static str {
    match v {
        Violation::Unique => "23505",
        Violation::ForeignKey => "23503",
        Violation::NotNull => "23502",
        Violation::Check => "23514",
    }
}

/// SQLite's errors, which come through sqlx.
#[cfg(feature = "sqlite")]
mod lite {
    use super::*;

    pub(super) fn failure(e: &sqlx::Error) -> Outcome {
        match e {
            sqlx::Error::Database(db) => {
                let code = sqlstate(db.as_ref());
                let status = crate::status::sqlstate(code).unwrap_or_default();
                Outcome {
                    status,
                    ..Outcome::failed(ErrorClass::Status, format!("{code}: {}", db.message()))
                }
            }
            sqlx::Error::Io(io) => Outcome::failed(
                throng_net::classify_io(io).unwrap_or(ErrorClass::Reset),
                format!("connection: {}", throng_net::message(io)),
            ),
            sqlx::Error::Protocol(m) => Outcome::failed(ErrorClass::Protocol, m.clone()),
            other => Outcome::failed(ErrorClass::Other, throng_net::message(other)),
        }
    }

    pub(super) fn lost(e: &sqlx::Error) -> bool {
        matches!(
            e,
            sqlx::Error::Io(_) | sqlx::Error::Protocol(_) | sqlx::Error::WorkerCrashed
        )
    }

    /// SQLite's result codes mapped to the SQLSTATE of the same meaning.
    fn sqlstate(db: &dyn sqlx::error::DatabaseError) -> &'static str {
        use sqlx::error::ErrorKind;
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
    }
}
