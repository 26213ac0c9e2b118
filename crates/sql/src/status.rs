//! SQLSTATEs as a [`StatusSpace`]: five letters or digits (`40001`), written `sqlstate 40001`;
//! classes `00` and `02` a success, `01` a warning, every other class a failure. A code packs
//! the five characters into the low five bytes of the space's number.

use throng_core::{Status, StatusClass, StatusSpace};

/// SQLSTATEs.
pub static SPACE: StatusSpace = StatusSpace {
    name: "sqlstate",
    write: |code, f| write!(f, "sqlstate {}", String::from_utf8_lossy(&chars(code))),
    class: |code| match chars(code) {
        [b'0', b'0' | b'2', ..] => StatusClass::Success,
        [b'0', b'1', ..] => StatusClass::Warning,
        _ => StatusClass::Failure,
    },
};

/// The five characters of a code.
fn chars(code: u64) -> [u8; 5] {
    let b = code.to_be_bytes();
    [b[3], b[4], b[5], b[6], b[7]]
}

/// The SQLSTATE of five characters (`*b"40001"`).
pub const fn state(c: [u8; 5]) -> Status {
    SPACE.status(u64::from_be_bytes([0, 0, 0, c[0], c[1], c[2], c[3], c[4]]))
}

/// A SQLSTATE from its text; `None` unless it is five ASCII letters or digits.
pub fn sqlstate(code: &str) -> Option<Status> {
    let bytes: [u8; 5] = code.as_bytes().try_into().ok()?;
    bytes
        .iter()
        .all(u8::is_ascii_alphanumeric)
        .then_some(state(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sqlstate_reads_as_itself_and_its_class_says_what_it_means() {
        assert_eq!(sqlstate("40001").unwrap().to_string(), "sqlstate 40001");
        assert_eq!(sqlstate("40P01"), Some(state(*b"40P01")));
        assert_eq!(sqlstate("4001"), None);
        assert_eq!(sqlstate("40 01"), None);
        for (code, class) in [
            (*b"00000", StatusClass::Success),
            (*b"02000", StatusClass::Success),
            (*b"01000", StatusClass::Warning),
            (*b"40001", StatusClass::Failure),
        ] {
            assert_eq!(state(code).class(), class);
        }
    }
}
