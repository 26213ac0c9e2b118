//! gRPC's status codes as a [`StatusSpace`]: written with their names (`grpc 14 UNAVAILABLE`),
//! OK (0) a success and every other code a failure.

use throng_core::{Status, StatusClass, StatusSpace};

/// gRPC's status codes.
pub static SPACE: StatusSpace = StatusSpace {
    name: "grpc",
    write: |code, f| match u8::try_from(code) {
        Ok(c) => write!(f, "grpc {c} {}", name(c)),
        Err(_) => write!(f, "grpc {code} UNKNOWN"),
    },
    class: |code| match code {
        0 => StatusClass::Success,
        _ => StatusClass::Failure,
    },
};

/// The gRPC status `code` (0 is OK).
pub fn status(code: u8) -> Status {
    SPACE.status(u64::from(code))
}

/// The name of a gRPC status code (`UNKNOWN` past the 17 the protocol defines).
pub fn name(code: u8) -> &'static str {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_with_their_names_and_only_ok_succeeds() {
        assert_eq!(status(0).to_string(), "grpc 0 OK");
        assert_eq!(status(14).to_string(), "grpc 14 UNAVAILABLE");
        assert_eq!(status(99).to_string(), "grpc 99 UNKNOWN");
        assert_eq!(status(0).class(), StatusClass::Success);
        assert_eq!(status(14).class(), StatusClass::Failure);
        assert!(!status(0).is_none(), "gRPC's OK is a status");
    }
}
