//! Where a message ends on a byte stream: at a delimiter, after a length prefix's count, or
//! after a fixed number of bytes. The client reads replies with it and frames its requests with
//! it; the testbed server does the same from the other side.

use std::fmt;
use std::str::FromStr;

/// The byte order of a length prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    /// Most significant byte first (network order).
    Big,
    /// Least significant byte first.
    Little,
}

/// How messages are delimited on the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Framing {
    /// A message ends with these bytes (`\n` for a line protocol); the payload excludes them.
    Delimiter(Vec<u8>),
    /// A message is a length prefix, then that many bytes.
    Length {
        /// The prefix's size in bytes: 1, 2, 4 or 8.
        width: u8,
        /// Its byte order.
        endian: Endian,
        /// Whether the length counts the prefix itself.
        counts_itself: bool,
    },
    /// A message is exactly this many bytes.
    Fixed(usize),
}

impl Default for Framing {
    /// Lines: most text protocols (and `-d 'PING'`) speak them.
    fn default() -> Self {
        Framing::Delimiter(b"\n".to_vec())
    }
}

/// A frame found at the start of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The payload's range in the buffer.
    pub payload: std::ops::Range<usize>,
    /// The whole frame's length (prefix or delimiter included).
    pub len: usize,
}

/// Why the bytes read are not a frame that may be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The reply is (or says it is) larger than the limit.
    #[error("a reply of {size} bytes is over the limit of {limit} bytes")]
    TooLarge {
        /// Its size, or at least what has been read of it.
        size: u64,
        /// The limit.
        limit: usize,
    },
    /// No delimiter within the limit.
    #[error("no delimiter {delimiter} within the first {limit} bytes of the reply")]
    NoDelimiter {
        /// The delimiter, escaped.
        delimiter: String,
        /// The limit.
        limit: usize,
    },
    /// A length prefix that counts itself but is smaller than itself.
    #[error("a length prefix of {len} counts itself but is smaller than its own {width} bytes")]
    BadLength {
        /// The length read.
        len: u64,
        /// The prefix's size.
        width: u8,
    },
}

impl Framing {
    /// Finds a frame at the start of `buf`, its payload at most `limit` bytes; `Ok(None)` when
    /// more bytes are needed. `searched` is how far a delimiter was already looked for (kept by
    /// the caller between reads, so a long line arriving in small reads is scanned once).
    pub fn find(
        &self,
        buf: &[u8],
        limit: usize,
        searched: &mut usize,
    ) -> Result<Option<Found>, FrameError> {
        match self {
            Framing::Delimiter(d) => {
                // Past the limit and its delimiter nothing can end a frame that may be taken.
                let end = buf.len().min(limit + d.len());
                let from = searched.saturating_sub(d.len().saturating_sub(1)).min(end);
                let window = &buf[from..end];
                if let Some(at) = find_bytes(window, d) {
                    let end = from + at;
                    return Ok(Some(Found {
                        payload: 0..end,
                        len: end + d.len(),
                    }));
                }
                *searched = buf.len();
                if buf.len() >= limit + d.len() {
                    return Err(FrameError::NoDelimiter {
                        delimiter: escape(d),
                        limit,
                    });
                }
                Ok(None)
            }
            Framing::Length {
                width,
                endian,
                counts_itself,
            } => {
                let w = usize::from(*width);
                let Some(prefix) = buf.get(..w) else {
                    return Ok(None);
                };
                let len = read_len(prefix, *endian);
                let payload = match counts_itself {
                    true => len
                        .checked_sub(w as u64)
                        .ok_or(FrameError::BadLength { len, width: *width })?,
                    false => len,
                };
                // Refused on its prefix, before a byte of it is read or buffered.
                if payload > limit as u64 {
                    return Err(FrameError::TooLarge {
                        size: payload,
                        limit,
                    });
                }
                let end = w + payload as usize;
                Ok((buf.len() >= end).then_some(Found {
                    payload: w..end,
                    len: end,
                }))
            }
            Framing::Fixed(n) => {
                if *n > limit {
                    return Err(FrameError::TooLarge {
                        size: *n as u64,
                        limit,
                    });
                }
                Ok((buf.len() >= *n).then_some(Found {
                    payload: 0..*n,
                    len: *n,
                }))
            }
        }
    }

    /// Appends `payload` to `out` as a message: after its length prefix, or followed by the
    /// delimiter unless it already ends with it; a fixed-size message as it is.
    pub fn encode(&self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        match self {
            Framing::Delimiter(d) => {
                out.extend_from_slice(payload);
                if !payload.ends_with(d) {
                    out.extend_from_slice(d);
                }
            }
            Framing::Length {
                width,
                endian,
                counts_itself,
            } => {
                let w = usize::from(*width);
                let len = payload.len() as u64 + if *counts_itself { w as u64 } else { 0 };
                if w < 8 && len >> (8 * w) != 0 {
                    return Err(format!(
                        "a message of {} bytes does not fit a {w}-byte length prefix",
                        payload.len()
                    ));
                }
                let bytes = match endian {
                    Endian::Big => len.to_be_bytes(),
                    Endian::Little => len.to_le_bytes(),
                };
                match endian {
                    Endian::Big => out.extend_from_slice(&bytes[8 - w..]),
                    Endian::Little => out.extend_from_slice(&bytes[..w]),
                }
                out.extend_from_slice(payload);
            }
            Framing::Fixed(_) => out.extend_from_slice(payload),
        }
        Ok(())
    }
}

fn read_len(prefix: &[u8], endian: Endian) -> u64 {
    let fold = |acc: u64, b: &u8| (acc << 8) | u64::from(*b);
    match endian {
        Endian::Big => prefix.iter().fold(0, fold),
        Endian::Little => prefix.iter().rev().fold(0, fold),
    }
}

fn find_bytes(hay: &[u8], needle: &[u8]) -> Option<usize> {
    match needle {
        [] => Some(0),
        [b] => hay.iter().position(|x| x == b),
        _ => hay.windows(needle.len()).position(|w| w == needle),
    }
}

/// `line`, `crlf`, `delim:TEXT` (with escapes such as `\0` or `\x1e`), `len1` to `len8`
/// (`len2`, `len4le`, `len4+self`: big-endian unless `le`, `+self` when the length counts the
/// prefix), `fixed:N`.
impl FromStr for Framing {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "`{s}` is not a framing: expected line, crlf, delim:TEXT, len1, len2, len4 or len8 \
                 (with le for little-endian and +self when the length counts the prefix, as \
                 len4le+self), or fixed:N"
            )
        };
        match s {
            "line" => return Ok(Framing::Delimiter(b"\n".to_vec())),
            "crlf" => return Ok(Framing::Delimiter(b"\r\n".to_vec())),
            _ => {}
        }
        if let Some(d) = s.strip_prefix("delim:") {
            let d = unescape(d).map_err(|e| format!("framing `{s}`: {e}"))?;
            if d.is_empty() {
                return Err(format!("`{s}`: a delimiter has at least one byte"));
            }
            return Ok(Framing::Delimiter(d));
        }
        if let Some(n) = s.strip_prefix("fixed:") {
            return match n.parse::<usize>() {
                Ok(n) if n > 0 => Ok(Framing::Fixed(n)),
                _ => Err(format!(
                    "`{s}`: a fixed size is a whole number of bytes above 0"
                )),
            };
        }
        let rest = s.strip_prefix("len").ok_or_else(bad)?;
        let (rest, counts_itself) = match rest.strip_suffix("+self") {
            Some(r) => (r, true),
            None => (rest, false),
        };
        let (w, endian) = match (rest.strip_suffix("le"), rest.strip_suffix("be")) {
            (Some(w), _) => (w, Endian::Little),
            (_, Some(w)) => (w, Endian::Big),
            _ => (rest, Endian::Big),
        };
        let width = match w {
            "1" => 1,
            "2" => 2,
            "4" => 4,
            "8" => 8,
            _ => return Err(bad()),
        };
        Ok(Framing::Length {
            width,
            endian,
            counts_itself,
        })
    }
}

/// As [`Framing::from_str`] reads it.
impl fmt::Display for Framing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Framing::Delimiter(d) if d == b"\n" => f.write_str("line"),
            Framing::Delimiter(d) if d == b"\r\n" => f.write_str("crlf"),
            Framing::Delimiter(d) => write!(f, "delim:{}", escape(d)),
            Framing::Length {
                width,
                endian,
                counts_itself,
            } => {
                write!(f, "len{width}")?;
                if *endian == Endian::Little {
                    f.write_str("le")?;
                }
                if *counts_itself {
                    f.write_str("+self")?;
                }
                Ok(())
            }
            Framing::Fixed(n) => write!(f, "fixed:{n}"),
        }
    }
}

/// Text with C's escapes decoded (`\n`, `\r`, `\t`, `\0`, `\\`, `\xHH`): a command line's way
/// to write a delimiter or a request ending in a newline.
pub fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match bytes.next() {
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(b't') => out.push(b'\t'),
            Some(b'0') => out.push(0),
            Some(b'\\') => out.push(b'\\'),
            Some(b'x') => {
                let hex = [bytes.next(), bytes.next()];
                match hex {
                    [Some(h), Some(l)] => match (hex_digit(h), hex_digit(l)) {
                        (Some(h), Some(l)) => out.push(h << 4 | l),
                        _ => return Err(format!("`{s}`: \\x takes two hex digits")),
                    },
                    _ => return Err(format!("`{s}`: \\x takes two hex digits")),
                }
            }
            Some(c) => {
                return Err(format!(
                    "`{s}`: unknown escape \\{}; use \\n, \\r, \\t, \\0, \\\\ or \\xHH",
                    c as char
                ))
            }
            None => return Err(format!("`{s}` ends with a lone \\")),
        }
    }
    Ok(out)
}

/// Bytes as [`unescape`] reads them back, printable ASCII as itself.
pub fn escape(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        match c {
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            0 => s.push_str("\\0"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s
}

/// Hex text (spaces allowed between bytes) as bytes.
pub fn from_hex(s: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!("hex `{s}` has an odd number of digits"));
    }
    digits
        .chunks(2)
        .map(|p| match (hex_digit(p[0]), hex_digit(p[1])) {
            (Some(h), Some(l)) => Ok(h << 4 | l),
            _ => Err(format!(
                "hex `{s}` holds a character that is not a hex digit"
            )),
        })
        .collect()
}

fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(f: &Framing, buf: &[u8], limit: usize) -> Result<Option<Found>, FrameError> {
        f.find(buf, limit, &mut 0)
    }

    #[test]
    fn framings_read_and_print_the_same() {
        for s in [
            "line",
            "crlf",
            "delim:\\0",
            "delim:END",
            "len1",
            "len2",
            "len4le",
            "len8+self",
            "len2le+self",
            "fixed:16",
        ] {
            let f: Framing = s.parse().unwrap();
            assert_eq!(f.to_string(), s);
        }
        assert_eq!("len4be".parse::<Framing>().unwrap().to_string(), "len4");
        for bad in ["len3", "lenx", "fixed:0", "delim:", "delim:\\q", "words"] {
            let e = bad.parse::<Framing>().unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn a_delimited_frame_ends_at_its_delimiter_even_across_reads() {
        let f: Framing = "crlf".parse().unwrap();
        let mut searched = 0;
        assert_eq!(f.find(b"PON", 100, &mut searched), Ok(None));
        assert_eq!(searched, 3);
        // The delimiter split across two reads is still found.
        assert_eq!(f.find(b"PONG\r", 100, &mut searched), Ok(None));
        let found = f
            .find(b"PONG\r\nnext", 100, &mut searched)
            .unwrap()
            .unwrap();
        assert_eq!((found.payload, found.len), (0..4, 6));
    }

    #[test]
    fn a_delimited_reply_past_the_limit_is_refused() {
        let f = Framing::default();
        assert_eq!(find(&f, b"abcd\n", 4).unwrap().unwrap().payload, 0..4);
        assert!(matches!(
            find(&f, b"abcde\n", 4),
            Err(FrameError::NoDelimiter { limit: 4, .. })
        ));
        // A delimiter past the limit does not make it a frame either.
        assert!(find(&f, b"abcdefgh\n", 4).is_err());
    }

    #[test]
    fn a_length_prefix_is_read_in_either_order_and_may_count_itself() {
        let be: Framing = "len2".parse().unwrap();
        assert_eq!(find(&be, &[0, 3, b'a', b'b'], 10), Ok(None));
        let found = find(&be, &[0, 3, b'a', b'b', b'c', b'x'], 10)
            .unwrap()
            .unwrap();
        assert_eq!((found.payload, found.len), (2..5, 5));
        let le: Framing = "len4le+self".parse().unwrap();
        let found = find(&le, &[6, 0, 0, 0, b'h', b'i'], 10).unwrap().unwrap();
        assert_eq!(found.payload, 4..6);
        assert_eq!(
            find(&le, &[3, 0, 0, 0], 10),
            Err(FrameError::BadLength { len: 3, width: 4 })
        );
        // Refused on the prefix alone.
        assert_eq!(
            find(&be, &[0xff, 0xff], 10),
            Err(FrameError::TooLarge {
                size: 65535,
                limit: 10
            })
        );
        assert_eq!(find(&be, &[0], 10), Ok(None));
    }

    #[test]
    fn encoding_frames_a_request_as_the_framing_reads_it() {
        for spec in [
            "line",
            "delim:\\0",
            "len1",
            "len2le",
            "len4+self",
            "len8le+self",
        ] {
            let f: Framing = spec.parse().unwrap();
            let mut out = Vec::new();
            f.encode(b"hello", &mut out).unwrap();
            let found = find(&f, &out, 100).unwrap().unwrap();
            assert_eq!(&out[found.payload], b"hello", "{spec}");
            assert_eq!(found.len, out.len(), "{spec}");
        }
        let mut out = Vec::new();
        Framing::default().encode(b"PING\n", &mut out).unwrap();
        assert_eq!(out, b"PING\n", "a delimiter already there is not doubled");
        let e = Framing::Length {
            width: 1,
            endian: Endian::Big,
            counts_itself: false,
        }
        .encode(&[0; 256], &mut Vec::new())
        .unwrap_err();
        assert!(e.contains("does not fit"), "{e}");
    }

    #[test]
    fn escapes_and_hex_decode() {
        assert_eq!(unescape("a\\n\\x1e\\0\\\\").unwrap(), b"a\n\x1e\0\\");
        assert_eq!(escape(b"a\n\x1e\0\\"), "a\\n\\x1e\\0\\\\");
        assert!(unescape("\\x1").is_err());
        assert!(unescape("x\\").is_err());
        assert_eq!(from_hex("de ad BE ef").unwrap(), [0xde, 0xad, 0xbe, 0xef]);
        assert!(from_hex("abc").is_err());
        assert!(from_hex("zz").is_err());
    }
}
