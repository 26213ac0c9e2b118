//! A response's status in its protocol's own terms: an HTTP code, a gRPC code with its name, a
//! SQLSTATE. The report counts each as it is; none of them is squeezed into another's numbers
//! (gRPC's OK is 0, which an HTTP-shaped counter would read as "no status").

use std::fmt;

/// A response's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[non_exhaustive]
pub enum Status {
    /// No status: the request failed before any answer.
    #[default]
    None,
    /// An HTTP status code.
    Http(u16),
    /// A gRPC status code (0 is OK).
    Grpc(u8),
    /// A SQLSTATE: five characters, such as `40001` (serialization failure).
    Sql([u8; 5]),
}

/// What a status says, whatever its protocol: what a display colours it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusClass {
    /// The request did what it asked (HTTP 1xx and 2xx, gRPC OK, SQLSTATE class 00 or 02).
    Success,
    /// The answer points elsewhere (HTTP 3xx).
    Redirect,
    /// The request was refused as it was made, or succeeded with a warning (HTTP 4xx, SQLSTATE
    /// class 01).
    Warning,
    /// The request failed (HTTP 5xx, any other gRPC code or SQLSTATE).
    Failure,
    /// No answer came.
    None,
}

impl Status {
    /// What the status says (see [`StatusClass`]).
    pub fn class(&self) -> StatusClass {
        match self {
            Status::None => StatusClass::None,
            Status::Http(100..=299) | Status::Grpc(0) => StatusClass::Success,
            Status::Sql([b'0', b'0' | b'2', ..]) => StatusClass::Success,
            Status::Http(300..=399) => StatusClass::Redirect,
            Status::Http(400..=499) | Status::Sql([b'0', b'1', ..]) => StatusClass::Warning,
            Status::Http(_) | Status::Grpc(_) | Status::Sql(_) => StatusClass::Failure,
        }
    }

    /// Whether there is no status.
    pub fn is_none(&self) -> bool {
        matches!(self, Status::None)
    }

    /// A SQLSTATE from its text; `None` unless it is five ASCII letters or digits.
    pub fn sqlstate(code: &str) -> Option<Status> {
        let bytes: [u8; 5] = code.as_bytes().try_into().ok()?;
        bytes
            .iter()
            .all(u8::is_ascii_alphanumeric)
            .then_some(Status::Sql(bytes))
    }
}

/// The name of a gRPC status code (`UNKNOWN` past the 17 the protocol defines).
pub fn grpc_name(code: u8) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    NAMES.get(usize::from(code)).copied().unwrap_or("UNKNOWN")
}

/// As the report writes it: `200` (HTTP, as before), `grpc 0 OK`, `sqlstate 40001`.
impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::None => f.write_str("none"),
            Status::Http(c) => write!(f, "{c}"),
            Status::Grpc(c) => write!(f, "grpc {c} {}", grpc_name(*c)),
            Status::Sql(s) => write!(f, "sqlstate {}", String::from_utf8_lossy(s)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_protocol_keeps_its_terms() {
        assert_eq!(Status::Http(503).to_string(), "503");
        assert_eq!(Status::Grpc(0).to_string(), "grpc 0 OK");
        assert_eq!(Status::Grpc(14).to_string(), "grpc 14 UNAVAILABLE");
        assert_eq!(Status::Grpc(99).to_string(), "grpc 99 UNKNOWN");
        assert_eq!(
            Status::sqlstate("40001").unwrap().to_string(),
            "sqlstate 40001"
        );
        assert_eq!(Status::sqlstate("4001"), None);
        assert_eq!(Status::sqlstate("40 01"), None);
        assert!(!Status::Grpc(0).is_none(), "gRPC's OK is a status");
        let mut all = [Status::Sql(*b"40001"), Status::Grpc(0), Status::Http(200)];
        all.sort();
        assert_eq!(all[0], Status::Http(200));
    }

    #[test]
    fn a_class_says_what_a_status_means_whatever_its_protocol() {
        use StatusClass::*;
        for (status, class) in [
            (Status::Http(200), Success),
            (Status::Http(304), Redirect),
            (Status::Http(429), Warning),
            (Status::Http(503), Failure),
            (Status::Grpc(0), Success),
            (Status::Grpc(14), Failure),
            (Status::Sql(*b"00000"), Success),
            (Status::Sql(*b"02000"), Success),
            (Status::Sql(*b"01000"), Warning),
            (Status::Sql(*b"40001"), Failure),
            (Status::None, None),
        ] {
            assert_eq!(status.class(), class, "{status}");
        }
    }
}
