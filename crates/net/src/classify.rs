//! I/O and TLS failures to classes, by walking an error's `source()` chain.

use std::error::Error as StdError;
use std::io;

use throng_core::ErrorClass;

/// The class of the first I/O or TLS error in `err`'s chain, if any: a protocol's own classifier
/// looks for its errors first, then asks this.
pub fn classify_io(err: &(dyn StdError + 'static)) -> Option<ErrorClass> {
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            match io.kind() {
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::UnexpectedEof => return Some(ErrorClass::Reset),
                io::ErrorKind::TimedOut => return Some(ErrorClass::Timeout),
                io::ErrorKind::ConnectionRefused => return Some(ErrorClass::Connect),
                // rustls reports through an `InvalidData` error wrapping its own (`get_ref`;
                // `source` skips the wrapped error and gives its cause).
                io::ErrorKind::InvalidData
                    if io.get_ref().is_some_and(|i| i.is::<rustls::Error>())
                        || e.source().is_some_and(|s| s.is::<rustls::Error>()) =>
                {
                    return Some(ErrorClass::Tls)
                }
                _ => {}
            }
        }
        if e.is::<rustls::Error>() {
            return Some(ErrorClass::Tls);
        }
        cur = e.source();
    }
    None
}

/// The error and its causes on one line, for a sample message.
pub fn message(err: &(dyn StdError + 'static)) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_kinds_map_to_classes() {
        let e = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(classify_io(&e), Some(ErrorClass::Connect));
        let e = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_eq!(classify_io(&e), Some(ErrorClass::Reset));
        let e = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        assert_eq!(classify_io(&e), Some(ErrorClass::Tls));
        assert_eq!(classify_io(&io::Error::other("x")), None);
    }
}
