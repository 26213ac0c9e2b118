//! Failures to classes, by walking the error's `source()` chain: hyper's own errors here, the
//! socket's and TLS's in `throng-net`.

use std::error::Error as StdError;

use throng_core::ErrorClass;

/// The class of a failed request's error.
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
            if h.is_incomplete_message() || h.is_canceled() || h.is_closed() {
                class.get_or_insert(ErrorClass::Reset);
            }
        } else if let Some(c) = throng_net::classify_io(e) {
            // The first socket or TLS error below says why better than hyper's "closed".
            return c;
        }
        cur = e.source();
    }
    class.unwrap_or(ErrorClass::Other)
}
