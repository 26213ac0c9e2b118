//! NATS's statuses as a [`StatusSpace`] named `nats`. NATS has a few status codes of its own,
//! carried in a message's header line (`NATS/1.0 503`): `503` is the server saying a request
//! found no responders, `408` a request that timed out in the server (JetStream's), `404` no
//! messages; a service built on NATS's micro framework (the `Nats-Service-Error-Code` header)
//! answers with codes of its own, which read the same way. A reply without a status, and a
//! published message delivered to every subscriber, is `nats 0 OK`.
//!
//! 0 and codes below 400 are a success; everything else a failure (class `status`).

use throng_core::{Status, StatusClass, StatusSpace};

/// NATS's statuses: 0 for a reply (or delivery) without a status, else the status code.
pub static SPACE: StatusSpace = StatusSpace {
    name: "nats",
    write: |code, f| match u16::try_from(code).ok().and_then(name) {
        Some(n) => write!(f, "nats {code} {n}"),
        None => write!(f, "nats {code}"),
    },
    class: |code| match code {
        0..=399 => StatusClass::Success,
        _ => StatusClass::Failure,
    },
};

/// A reply without a status, or a message delivered: `nats 0 OK`.
pub const OK: Status = SPACE.status(0);

/// The server found no subscriber for a request's subject: `nats 503 NO_RESPONDERS`.
pub const NO_RESPONDERS: Status = SPACE.status(503);

/// The status with `code`.
pub fn status(code: u16) -> Status {
    SPACE.status(u64::from(code))
}

/// The name of a code NATS itself uses; `OK` for 0.
pub fn name(code: u16) -> Option<&'static str> {
    Some(match code {
        0 => "OK",
        100 => "IDLE_HEARTBEAT",
        404 => "NOT_FOUND",
        408 => "TIMEOUT",
        409 => "CONFLICT",
        503 => "NO_RESPONDERS",
        _ => return None,
    })
}

/// The code a status check names: a number (0 to 999) or a name (`OK`, `no_responders`).
pub fn parse(text: &str) -> Option<u16> {
    if let Ok(n) = text.trim().parse::<u16>() {
        return (n < 1000).then_some(n);
    }
    let upper = text.trim().to_ascii_uppercase();
    [0, 100, 404, 408, 409, 503]
        .into_iter()
        .find(|c| name(*c).is_some_and(|n| n == upper))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_with_their_names_and_only_low_ones_succeed() {
        assert_eq!(OK.to_string(), "nats 0 OK");
        assert_eq!(NO_RESPONDERS.to_string(), "nats 503 NO_RESPONDERS");
        assert_eq!(status(500).to_string(), "nats 500");
        assert_eq!(OK.class(), StatusClass::Success);
        assert_eq!(NO_RESPONDERS.class(), StatusClass::Failure);
        assert_eq!(status(400).class(), StatusClass::Failure);
        assert!(!OK.is_none());
    }

    #[test]
    fn checks_name_codes_by_number_or_name() {
        assert_eq!(parse("0"), Some(0));
        assert_eq!(parse("ok"), Some(0));
        assert_eq!(parse("no_responders"), Some(503));
        assert_eq!(parse("500"), Some(500));
        assert_eq!(parse("1000"), None);
        assert_eq!(parse("FINE"), None);
    }
}
