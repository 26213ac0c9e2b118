//! Transport failures to classes, walking `source()`: the socket's and TLS's through throng-net,
//! h2's and hyper's here. (A status the server sent is class `status`, DEADLINE_EXCEEDED a
//! `timeout`: see the driver.) Reflection's calls go through tonic, which keeps a transport
//! error as its status's source.

use std::error::Error as StdError;

use throng_core::ErrorClass;

/// The class of a transport error (h2's or hyper's, or an I/O or TLS error below it).
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
        } else if let Some(h2) = e.downcast_ref::<h2::Error>() {
            // h2 keeps the socket's error to itself (no `source`).
            if let Some(c) = h2.get_io().and_then(|io| throng_net::classify_io(io)) {
                return c;
            }
            // A connection-level protocol error (GOAWAY with an error, bytes that are not
            // HTTP/2) is the peer not speaking the protocol; a stream reset is a reset.
            if h2.is_go_away() && h2.reason() == Some(h2::Reason::PROTOCOL_ERROR) || h2.is_library()
            {
                return ErrorClass::Protocol;
            }
            class.get_or_insert(ErrorClass::Reset);
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
