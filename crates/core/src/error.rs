use serde::{Deserialize, Serialize};

/// What kind of failure a request met. Small on purpose: a failure's message is kept only as a
/// sample, while its class is what the report counts and thresholds test.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorClass {
    /// The connection could not be established (refused, unreachable, DNS).
    Connect,
    /// The request or the connect attempt did not finish within its timeout.
    Timeout,
    /// The request was still unanswered (or, in the open loop, still queued) when the run ended
    /// and its grace period ran out: it had waited at least its age.
    Aborted,
    /// An open-loop arrival that never started: every slot was busy and the queue full (or the
    /// generator fell further behind its schedule than the queue holds). Asked for and never
    /// sent, so a failure: a run that drops arrivals cannot pass an error-rate threshold.
    Dropped,
    /// The peer reset or closed the connection before the response was complete.
    Reset,
    /// A reply read as a stream of parts (server-sent events, NDJSON lines, chunks) was cut
    /// off mid-way, after at least one part: the connection closed or reset before its end, or
    /// the body ended inside an event. The parts that came are still counted in its parts row.
    Cut,
    /// The TLS handshake failed (bad certificate, no common protocol).
    Tls,
    /// The peer answered with something that is not the protocol (a garbage status line).
    Protocol,
    /// The target answered with a status that says the request failed, in its protocol's terms
    /// (an HTTP status of 400 or above, a gRPC status other than OK, a database's SQLSTATE
    /// error): the statuses counted say which.
    Status,
    /// A check on the response failed.
    Check,
    /// Anything that fits no other class.
    Other,
}

impl ErrorClass {
    /// Every class, in report order.
    pub const ALL: [ErrorClass; 11] = [
        ErrorClass::Connect,
        ErrorClass::Timeout,
        ErrorClass::Aborted,
        ErrorClass::Dropped,
        ErrorClass::Reset,
        ErrorClass::Cut,
        ErrorClass::Tls,
        ErrorClass::Protocol,
        ErrorClass::Status,
        ErrorClass::Check,
        ErrorClass::Other,
    ];

    /// The stable name used in the JSON result and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Connect => "connect",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Aborted => "aborted",
            ErrorClass::Dropped => "dropped",
            ErrorClass::Reset => "reset",
            ErrorClass::Cut => "cut",
            ErrorClass::Tls => "tls",
            ErrorClass::Protocol => "protocol",
            ErrorClass::Status => "status",
            ErrorClass::Check => "check",
            ErrorClass::Other => "other",
        }
    }

    /// The class of a name [`ErrorClass::name`] gives, or one an older throng wrote for a
    /// failing status (`http_status`, `grpc_status`, `sql`), so that its results still merge.
    pub fn from_name(name: &str) -> Option<ErrorClass> {
        match name {
            "http_status" | "grpc_status" | "sql" => Some(ErrorClass::Status),
            _ => ErrorClass::ALL.into_iter().find(|c| c.name() == name),
        }
    }

    /// Whether a request that failed this way kept its user waiting without an answer (it timed
    /// out, or the run ended first), so that the time it waited is a lower bound of its latency
    /// and is counted in the latency histogram; other failures are timed apart.
    pub fn waited(self) -> bool {
        matches!(self, ErrorClass::Timeout | ErrorClass::Aborted)
    }

    /// Whether the connection could not be established at all: no request reached the target.
    pub fn unconnected(self) -> bool {
        matches!(self, ErrorClass::Connect | ErrorClass::Tls)
    }

    /// Whether a user that failed this way waits before it tries again, on a new connection:
    /// the connection could not be made, or the peer does not speak the protocol (an HTTP/1.1
    /// server asked for HTTP/2, garbage for an answer). Retried at once, such a target fails
    /// as fast as it is asked, and the run would report those instant failures as its load.
    pub fn backs_off(self) -> bool {
        matches!(
            self,
            ErrorClass::Connect | ErrorClass::Tls | ErrorClass::Protocol
        )
    }

    /// The position of this class in [`ErrorClass::ALL`], for array-indexed counters.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_and_older_status_names_are_status() {
        for class in ErrorClass::ALL {
            assert_eq!(ErrorClass::from_name(class.name()), Some(class));
            assert_eq!(ErrorClass::ALL[class.index()], class);
        }
        for old in ["http_status", "grpc_status", "sql"] {
            assert_eq!(ErrorClass::from_name(old), Some(ErrorClass::Status));
        }
        assert_eq!(ErrorClass::from_name("teleport"), None);
    }
}
