//! Raw TCP's statuses as a [`StatusSpace`] named `tcp`: `tcp ok` when a whole framed reply
//! came, `tcp closed` when the peer closed the connection (a clean FIN) before it did. A reset
//! (RST) or a timeout has no status: nothing answered.

use throng_core::{Status, StatusClass, StatusSpace};

/// Raw TCP's statuses.
pub static SPACE: StatusSpace = StatusSpace {
    name: "tcp",
    write: |code, f| match code {
        0 => f.write_str("tcp ok"),
        1 => f.write_str("tcp closed"),
        n => write!(f, "tcp {n}"),
    },
    class: |code| match code {
        0 => StatusClass::Success,
        _ => StatusClass::Failure,
    },
};

/// A whole framed reply came.
pub const OK: Status = SPACE.status(0);

/// The peer closed the connection before a whole reply.
pub const CLOSED: Status = SPACE.status(1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_as_tcp_and_a_close_is_a_failure() {
        assert_eq!(OK.to_string(), "tcp ok");
        assert_eq!(CLOSED.to_string(), "tcp closed");
        assert_eq!(OK.class(), StatusClass::Success);
        assert_eq!(CLOSED.class(), StatusClass::Failure);
    }
}
