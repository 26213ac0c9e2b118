//! A statement's or a connection's failure, as throng's own connections report it (sqlx's
//! errors stay inside SQLite's path): the database's error with its SQLSTATE, the socket's,
//! TLS's, or a reply that is not the protocol.

use std::io;

/// Why a statement or a connection failed.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The database answered with an error.
    #[error("{0}")]
    Database(WireError),
    /// The socket failed (refused, reset, timed out).
    #[error("connection: {}", throng_net::message(.0))]
    Io(#[from] io::Error),
    /// TLS could not be agreed (a certificate refused, or no TLS where it is required).
    #[error("TLS: {0}")]
    Tls(String),
    /// The server's reply is not the protocol (or a message could not be written).
    #[error("{0}")]
    Protocol(String),
    /// SQLite's failure, through sqlx.
    #[cfg(feature = "sqlite")]
    #[error("{0}")]
    Lite(sqlx::Error),
}

/// A database's error: its SQLSTATE and message (MySQL's also its error number, which is what
/// says a unique or foreign-key violation there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    code: String,
    number: Option<u16>,
    message: String,
}

/// What kind of constraint a database's error says was violated, if one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Violation {
    /// A unique key.
    Unique,
    /// A foreign key.
    ForeignKey,
    /// A NOT NULL column.
    NotNull,
    /// A CHECK constraint.
    Check,
}

impl WireError {
    /// PostgreSQL's error: its SQLSTATE says everything.
    pub(crate) fn postgres(code: String, message: String) -> DbError {
        DbError::Database(WireError {
            code,
            number: None,
            message,
        })
    }

    /// MySQL's error: its number, its SQLSTATE (empty when it sent none) and message.
    pub(crate) fn mysql(number: u16, code: String, message: String) -> DbError {
        DbError::Database(WireError {
            code,
            number: Some(number),
            message,
        })
    }

    /// The SQLSTATE the database sent, if it sent one.
    pub fn code(&self) -> Option<&str> {
        (self.code.len() == 5).then_some(self.code.as_str())
    }

    /// The database's message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The constraint violated: by SQLSTATE for PostgreSQL, by error number for MySQL.
    pub fn violation(&self) -> Option<Violation> {
        Some(match (self.number, self.code.as_str()) {
            (None, "23505") | (Some(1022 | 1062 | 1169 | 1586 | 1859), _) => Violation::Unique,
            (None, "23503") | (Some(1216 | 1217 | 1451 | 1452 | 1830 | 1834), _) => {
                Violation::ForeignKey
            }
            (None, "23502") | (Some(1048 | 1364), _) => Violation::NotNull,
            // MariaDB's 4025 (CONSTRAINT ... failed) is a check; MySQL uses the number for
            // something else, with another SQLSTATE.
            (None, "23514") | (Some(3819), _) | (Some(4025), "23000") => Violation::Check,
            _ => return None,
        })
    }
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.number {
            Some(n) => write!(f, "{n} ({}): {}", self.code, self.message),
            None => write!(f, "{}: {}", self.code, self.message),
        }
    }
}

#[cfg(feature = "sqlite")]
impl From<sqlx::Error> for DbError {
    fn from(e: sqlx::Error) -> DbError {
        DbError::Lite(e)
    }
}
