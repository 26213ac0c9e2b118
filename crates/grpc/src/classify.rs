//! Transport failures to classes, walking `source()`: the socket's and TLS's through throng-net,
//! hyper's here (the load's calls are classified by throng-h2). (A status the server sent is class `status`, DEADLINE_EXCEEDED a
//! `timeout`: see the driver.) Reflection's calls go through tonic, which keeps a transport
//! error as its status's source.

use std::error::Error as StdError;

use throng_core::ErrorClass;

/// The class of a transport error (hyper's, or an I/O or TLS error below it).
pub fn classify(err: &(dyn StdError + 'static)) -> ErrorClass {
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    let mut class = None;
    while let Some(e) = cur {
        if let Some(h) = e.downcast_ref::<hyper::Error>() {
            if h.is_timeout() {
                return ErrorClass::Timeout;
            }
            if h.is_parse() || h.is_parse_status() || h.is_parse_too_large() {
                return ErrorClass::Protocol;
            }
            class.get_or_insert(ErrorClass::Reset);
        } else if let Some(c) = throng_net::classify_io(e) {
            return c;
        }
        cur = e.source();
    }
    class.unwrap_or(ErrorClass::Other)
}

/// Whether a tonic status came from the transport rather than from the server: tonic keeps
/// the transport error as the status's source.
pub(crate) fn transport_error(status: &tonic::Status) -> Option<&(dyn StdError + 'static)> {
    StdError::source(status)
}
