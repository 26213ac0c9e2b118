//! HTTP's status codes as a [`StatusSpace`]: written as themselves (`200`, as reports have
//! always written them), 1xx and 2xx a success, 3xx a redirect, 4xx a warning (the request was
//! refused as made), 5xx a failure.

use throng_core::{Status, StatusClass, StatusSpace};

/// HTTP's status codes.
pub static SPACE: StatusSpace = StatusSpace {
    name: "http",
    write: |code, f| write!(f, "{code}"),
    class: |code| match code {
        100..=299 => StatusClass::Success,
        300..=399 => StatusClass::Redirect,
        400..=499 => StatusClass::Warning,
        _ => StatusClass::Failure,
    },
};

/// The HTTP status `code`.
pub fn status(code: u16) -> Status {
    SPACE.status(u64::from(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_as_themselves_and_are_classed_by_their_hundred() {
        assert_eq!(status(503).to_string(), "503");
        for (code, class) in [
            (200, StatusClass::Success),
            (304, StatusClass::Redirect),
            (429, StatusClass::Warning),
            (503, StatusClass::Failure),
        ] {
            assert_eq!(status(code).class(), class, "{code}");
        }
    }
}
