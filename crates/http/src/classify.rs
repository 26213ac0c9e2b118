//! Failures to classes, by walking the error's `source()` chain.

use std::error::Error as StdError;
use std::io;

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
        }
        if let Some(io) = e.downcast_ref::<io::Error>() {
            match io.kind() {
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::UnexpectedEof => return ErrorClass::Reset,
                io::ErrorKind::TimedOut => return ErrorClass::Timeout,
                io::ErrorKind::ConnectionRefused => return ErrorClass::Connect,
                io::ErrorKind::InvalidData
                    if e.source().is_some_and(|s| s.is::<rustls::Error>()) =>
                {
                    return ErrorClass::Tls
                }
                _ => {}
            }
        }
        if e.is::<rustls::Error>() {
            return ErrorClass::Tls;
        }
        cur = e.source();
    }
    class.unwrap_or(ErrorClass::Other)
}

/// The error and its causes on one line, for a sample message.
pub(crate) fn message(err: &(dyn StdError + 'static)) -> String {
    let mut s = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        let m = e.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = e.source();
    }
    s
}
