//! AMQP's statuses as a [`StatusSpace`] named `amqp`: the reply codes of AMQP 0.9.1 (a
//! returned message's `312 NO_ROUTE`, a channel or connection closed with `403
//! ACCESS_REFUSED`, `404 NOT_FOUND`, `406 PRECONDITION_FAILED`, `530 NOT_ALLOWED`, ...), and one
//! of throng's: `amqp NACKED`, the broker's `basic.nack` of a confirmed publish (AMQP gives a
//! nack no code). A reply received, or a message delivered, is `amqp 0 OK`.
//!
//! 0 is a success; every other code a failure (class `status`).

use throng_core::{Status, StatusClass, StatusSpace};

/// The code of a publish the broker nacked (publisher confirms): not an AMQP reply code.
pub const NACKED_CODE: u16 = 1000;

/// AMQP's statuses: 0 for a reply or delivery, else a reply code (or [`NACKED_CODE`]).
pub static SPACE: StatusSpace = StatusSpace {
    name: "amqp",
    write: |code, f| match u16::try_from(code).ok().and_then(name) {
        Some(n) if code == u64::from(NACKED_CODE) => write!(f, "amqp {n}"),
        Some(n) => write!(f, "amqp {code} {n}"),
        None => write!(f, "amqp {code}"),
    },
    class: |code| match code {
        0 => StatusClass::Success,
        _ => StatusClass::Failure,
    },
};

/// A reply received, or a message delivered: `amqp 0 OK`.
pub const OK: Status = SPACE.status(0);

/// A mandatory publish the broker could not route and returned: `amqp 312 NO_ROUTE`.
pub const NO_ROUTE: Status = SPACE.status(312);

/// A publish the broker nacked: `amqp NACKED`.
pub const NACKED: Status = SPACE.status(NACKED_CODE as u64);

/// The status with `code`.
pub fn status(code: u16) -> Status {
    SPACE.status(u64::from(code))
}

const CODES: [(u16, &str); 18] = [
    (0, "OK"),
    (311, "CONTENT_TOO_LARGE"),
    (312, "NO_ROUTE"),
    (313, "NO_CONSUMERS"),
    (320, "CONNECTION_FORCED"),
    (402, "INVALID_PATH"),
    (403, "ACCESS_REFUSED"),
    (404, "NOT_FOUND"),
    (405, "RESOURCE_LOCKED"),
    (406, "PRECONDITION_FAILED"),
    (501, "FRAME_ERROR"),
    (502, "SYNTAX_ERROR"),
    (503, "COMMAND_INVALID"),
    (504, "CHANNEL_ERROR"),
    (506, "RESOURCE_ERROR"),
    (530, "NOT_ALLOWED"),
    (541, "INTERNAL_ERROR"),
    (NACKED_CODE, "NACKED"),
];

/// The name of a code; `OK` for 0.
pub fn name(code: u16) -> Option<&'static str> {
    CODES.iter().find(|(c, _)| *c == code).map(|(_, n)| *n)
}

/// The code a status check names: a number (0 to 1000) or a name (`OK`, `no_route`, `NACKED`).
pub fn parse(text: &str) -> Option<u16> {
    if let Ok(n) = text.trim().parse::<u16>() {
        return (n <= NACKED_CODE).then_some(n);
    }
    let upper = text.trim().to_ascii_uppercase();
    CODES.iter().find(|(_, n)| *n == upper).map(|(c, _)| *c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_with_their_names_and_only_zero_succeeds() {
        assert_eq!(OK.to_string(), "amqp 0 OK");
        assert_eq!(NO_ROUTE.to_string(), "amqp 312 NO_ROUTE");
        assert_eq!(status(403).to_string(), "amqp 403 ACCESS_REFUSED");
        assert_eq!(NACKED.to_string(), "amqp NACKED");
        assert_eq!(status(999).to_string(), "amqp 999");
        assert_eq!(OK.class(), StatusClass::Success);
        assert_eq!(NO_ROUTE.class(), StatusClass::Failure);
        assert_eq!(NACKED.class(), StatusClass::Failure);
    }

    #[test]
    fn checks_name_codes_by_number_or_name() {
        assert_eq!(parse("0"), Some(0));
        assert_eq!(parse("ok"), Some(0));
        assert_eq!(parse("no_route"), Some(312));
        assert_eq!(parse("NACKED"), Some(NACKED_CODE));
        assert_eq!(parse("1001"), None);
        assert_eq!(parse("FINE"), None);
    }
}
