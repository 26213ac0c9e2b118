//! WebSocket's close codes as a [`StatusSpace`] named `ws`: a step whose connection stays open
//! answers `ws 0 OK`; one the server closes answers the close code it gave, written with its
//! RFC 6455 (section 7.4.1) or IANA name (`ws 1011 INTERNAL_ERROR`). 0 and 1000 (a normal
//! closure) are a success; 1001 (going away) and 1005 (a close frame without a code) a warning,
//! the server having said nothing failed; every other code a failure.

use throng_core::{Status, StatusClass, StatusSpace};

/// WebSocket's statuses: 0 for a connection still open, else the close code.
pub static SPACE: StatusSpace = StatusSpace {
    name: "ws",
    write: |code, f| match u16::try_from(code).ok().and_then(name) {
        Some(n) => write!(f, "ws {code} {n}"),
        None => write!(f, "ws {code}"),
    },
    class: |code| match code {
        0 | 1000 => StatusClass::Success,
        1001 | 1005 => StatusClass::Warning,
        _ => StatusClass::Failure,
    },
};

/// The status of a step whose connection is still open: `ws 0 OK`.
pub const OPEN: Status = SPACE.status(0);

/// The status of a close with `code`.
pub fn status(code: u16) -> Status {
    SPACE.status(u64::from(code))
}

/// Whether a close with `code` says nothing went wrong: 1000, or a close frame without a code
/// (1005, which no frame carries: the reader's stand-in for none).
pub fn normal(code: u16) -> bool {
    matches!(code, 1000 | 1005)
}

/// The name of a code: RFC 6455's and the IANA registry's (1012 to 1015), `OK` for 0.
pub fn name(code: u16) -> Option<&'static str> {
    Some(match code {
        0 => "OK",
        1000 => "NORMAL_CLOSURE",
        1001 => "GOING_AWAY",
        1002 => "PROTOCOL_ERROR",
        1003 => "UNSUPPORTED_DATA",
        1005 => "NO_STATUS_RCVD",
        1006 => "ABNORMAL_CLOSURE",
        1007 => "INVALID_FRAME_PAYLOAD_DATA",
        1008 => "POLICY_VIOLATION",
        1009 => "MESSAGE_TOO_BIG",
        1010 => "MANDATORY_EXT",
        1011 => "INTERNAL_ERROR",
        1012 => "SERVICE_RESTART",
        1013 => "TRY_AGAIN_LATER",
        1014 => "BAD_GATEWAY",
        1015 => "TLS_HANDSHAKE",
        _ => return None,
    })
}

/// The code a status check names: a number (0, or a close code of 1000 to 4999), or a name
/// (`OK`, `NORMAL_CLOSURE`, `internal_error`).
pub fn parse(text: &str) -> Option<u16> {
    if let Ok(n) = text.trim().parse::<u16>() {
        return (n == 0 || (1000..=4999).contains(&n)).then_some(n);
    }
    let upper = text.trim().to_ascii_uppercase();
    (0..=1015).find(|c| name(*c).is_some_and(|n| n == upper))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_with_their_names_and_only_normal_ones_succeed() {
        assert_eq!(OPEN.to_string(), "ws 0 OK");
        assert_eq!(status(1000).to_string(), "ws 1000 NORMAL_CLOSURE");
        assert_eq!(status(1011).to_string(), "ws 1011 INTERNAL_ERROR");
        assert_eq!(status(4001).to_string(), "ws 4001");
        assert_eq!(OPEN.class(), StatusClass::Success);
        assert_eq!(status(1000).class(), StatusClass::Success);
        assert_eq!(status(1001).class(), StatusClass::Warning);
        assert_eq!(status(1011).class(), StatusClass::Failure);
        assert_eq!(status(4001).class(), StatusClass::Failure);
        assert!(!OPEN.is_none(), "an open connection is a status");
    }

    #[test]
    fn checks_name_codes_by_number_or_name() {
        assert_eq!(parse("0"), Some(0));
        assert_eq!(parse("OK"), Some(0));
        assert_eq!(parse("1000"), Some(1000));
        assert_eq!(parse("internal_error"), Some(1011));
        assert_eq!(parse("4001"), Some(4001));
        assert_eq!(parse("200"), None);
        assert_eq!(parse("5000"), None);
        assert_eq!(parse("FINE"), None);
    }
}
