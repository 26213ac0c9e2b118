//! A response's status in its protocol's own terms. Core knows no protocol's codes: a protocol
//! declares its [`StatusSpace`] (a name, how a code reads, what each code says) and its
//! statuses are codes in that space. The report counts each as it is and writes it as the
//! space says (`200`, `grpc 14 UNAVAILABLE`, `sqlstate 40001`); a display colours it by its
//! [`StatusClass`]; none is squeezed into another protocol's numbers (gRPC's OK is 0, which an
//! HTTP-shaped counter would read as "no status").

use std::fmt;
use std::hash::{Hash, Hasher};

/// A protocol's space of status codes.
///
/// Declared once by the protocol, as a `static` (a status holds a reference to it, so that a
/// status stays a copyable pair and recording one costs a compare).
#[derive(Debug)]
pub struct StatusSpace {
    /// The space's name: what identifies it and orders its statuses among others' (`http`,
    /// `grpc`, `sqlstate`).
    pub name: &'static str,
    /// Writes a code of this space as reports show it (`200`, `grpc 14 UNAVAILABLE`).
    pub write: fn(u64, &mut fmt::Formatter<'_>) -> fmt::Result,
    /// What a code of this space says.
    pub class: fn(u64) -> StatusClass,
}

impl StatusSpace {
    /// The status `code` of this space.
    pub const fn status(&'static self, code: u64) -> Status {
        Status {
            space: Some(self),
            code,
        }
    }
}

/// A response's status: a code in its protocol's [`StatusSpace`], or none.
#[derive(Clone, Copy, Default)]
pub struct Status {
    space: Option<&'static StatusSpace>,
    code: u64,
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
    /// No status: the request failed before any answer.
    pub const NONE: Status = Status {
        space: None,
        code: 0,
    };

    /// What the status says (see [`StatusClass`]).
    pub fn class(&self) -> StatusClass {
        match self.space {
            None => StatusClass::None,
            Some(s) => (s.class)(self.code),
        }
    }

    /// Whether there is no status.
    pub fn is_none(&self) -> bool {
        self.space.is_none()
    }

    /// Its code, in its space.
    pub fn code(&self) -> u64 {
        self.code
    }

    /// Its space; `None` for no status.
    pub fn space(&self) -> Option<&'static StatusSpace> {
        self.space
    }

    /// Whether it is a status of `space`.
    pub fn is_of(&self, space: &'static StatusSpace) -> bool {
        self.space.is_some_and(|s| same(s, space))
    }

    /// Its code if it is a status of `space`.
    pub fn code_in(&self, space: &'static StatusSpace) -> Option<u64> {
        self.is_of(space).then_some(self.code)
    }

    fn key(&self) -> (&'static str, u64) {
        (self.space.map_or("", |s| s.name), self.code)
    }
}

/// The same space: the same static, or (a space declared twice by mistake) the same name.
fn same(a: &'static StatusSpace, b: &'static StatusSpace) -> bool {
    std::ptr::eq(a, b) || a.name == b.name
}

impl PartialEq for Status {
    fn eq(&self, other: &Status) -> bool {
        self.code == other.code
            && match (self.space, other.space) {
                (None, None) => true,
                (Some(a), Some(b)) => same(a, b),
                _ => false,
            }
    }
}

impl Eq for Status {}

impl Hash for Status {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl PartialOrd for Status {
    fn partial_cmp(&self, other: &Status) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// By space name, then code: no status first.
impl Ord for Status {
    fn cmp(&self, other: &Status) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// As its space writes it; `none` for no status.
impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.space {
            None => f.write_str("none"),
            Some(s) => (s.write)(self.code, f),
        }
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.space {
            None => f.write_str("Status::NONE"),
            Some(s) => write!(f, "Status({} {})", s.name, self.code),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A space no protocol of throng has: a line protocol's replies `OK` (0) and `ERR n`.
    static LINE: StatusSpace = StatusSpace {
        name: "line",
        write: |code, f| match code {
            0 => f.write_str("line OK"),
            n => write!(f, "line ERR {n}"),
        },
        class: |code| match code {
            0 => StatusClass::Success,
            _ => StatusClass::Failure,
        },
    };

    /// The same name declared again: the same space.
    static LINE_AGAIN: StatusSpace = StatusSpace {
        name: "line",
        write: |_, f| f.write_str("?"),
        class: |_| StatusClass::None,
    };

    static DIGITS: StatusSpace = StatusSpace {
        name: "digits",
        write: |code, f| write!(f, "{code}"),
        class: |_| StatusClass::Warning,
    };

    #[test]
    fn a_space_says_how_its_codes_read_and_what_they_mean() {
        assert_eq!(LINE.status(0).to_string(), "line OK");
        assert_eq!(LINE.status(7).to_string(), "line ERR 7");
        assert_eq!(LINE.status(0).class(), StatusClass::Success);
        assert_eq!(LINE.status(7).class(), StatusClass::Failure);
        assert_eq!(Status::NONE.to_string(), "none");
        assert_eq!(Status::NONE.class(), StatusClass::None);
        assert!(Status::NONE.is_none() && !LINE.status(0).is_none());
        assert_eq!(Status::default(), Status::NONE);
    }

    #[test]
    fn statuses_are_equal_in_the_same_space_only() {
        assert_eq!(LINE.status(3), LINE.status(3));
        assert_eq!(LINE.status(3), LINE_AGAIN.status(3));
        assert_ne!(LINE.status(3), DIGITS.status(3));
        assert_ne!(LINE.status(0), Status::NONE);
        assert_eq!(LINE.status(3).code_in(&LINE), Some(3));
        assert_eq!(LINE.status(3).code_in(&DIGITS), None);
        let mut all = [
            LINE.status(2),
            DIGITS.status(9),
            Status::NONE,
            LINE.status(1),
        ];
        all.sort();
        assert_eq!(
            all,
            [
                Status::NONE,
                DIGITS.status(9),
                LINE.status(1),
                LINE.status(2)
            ]
        );
    }
}
