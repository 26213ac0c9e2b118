//! The HTTP/1.1 client codec, without I/O: a request serialized into one buffer, and a response
//! read from a connection's buffer as bytes arrive, parsed by httparse.
//!
//! The reader looks at three headers only (Content-Length, Transfer-Encoding, Connection) unless
//! the caller keeps the response for checks and extractions. A body is framed by Content-Length,
//! by the chunked coding (extensions skipped, trailers checked and skipped) or by the
//! connection's close; HEAD responses, 1xx (skipped), 204 and 304 have none. A body that is not
//! kept is consumed from the buffer as it arrives and never held, whatever its size.
//!
//! `differential.rs` holds the reader to hyper's client, response by generated response, and
//! lists where it deliberately differs.

use bytes::{Buf, BytesMut};
use http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderName, HeaderValue, Method};

/// The most a response head (status line and headers) may take.
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// The most headers a response may have (hyper's default too).
const MAX_HEADERS: usize = 100;
/// The most a chunk-size line or a trailer line may take.
const MAX_LINE: usize = 4096;

/// Serializes a request into `out` (cleared first): request line; the `base` headers but those
/// that `extra` replaces, then `extra`; a `content-length` when there is a body (or the method
/// usually has one) and the caller set no framing; the body.
pub(crate) fn write_request(
    out: &mut Vec<u8>,
    method: &Method,
    target: &str,
    base: &HeaderMap,
    extra: &HeaderMap,
    body: &[u8],
) {
    out.clear();
    out.extend_from_slice(method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let kept = base.iter().filter(|(n, _)| !extra.contains_key(*n));
    for (name, value) in kept.chain(extra) {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let has = |n| base.contains_key(&n) || extra.contains_key(&n);
    let framed = has(CONTENT_LENGTH) || has(TRANSFER_ENCODING);
    let usually_has_body = !matches!(
        *method,
        Method::GET | Method::HEAD | Method::DELETE | Method::OPTIONS | Method::TRACE
    );
    if !framed && (!body.is_empty() || usually_has_body) {
        out.extend_from_slice(b"content-length: ");
        out.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
}

/// Why a response could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReadError {
    /// The bytes are not an HTTP/1.1 response (class `protocol`).
    Malformed(String),
    /// The connection ended before the response was complete (class `reset`); `started` says
    /// whether any byte of the response had arrived.
    Incomplete {
        /// Whether the server sent any byte of this response.
        started: bool,
    },
}

fn malformed(m: impl Into<String>) -> ReadError {
    ReadError::Malformed(m.into())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Length(u64),
    ChunkSize,
    ChunkData(u64),
    ChunkEnd,
    Trailers,
    UntilClose,
    Done,
}

/// Reads one response from a connection's buffer. Feed it with [`ResponseReader::advance`]
/// after every read, and [`ResponseReader::eof`] when the connection ends.
#[derive(Debug)]
pub(crate) struct ResponseReader {
    head_request: bool,
    keep: bool,
    /// Hold the body (`keep`, unless it is read as a stream: then only its events are kept,
    /// and a non-2xx body up to [`crate::stream::MAX_ERROR_BODY`]).
    pub(crate) keep_body: bool,
    state: State,
    started: bool,
    trailer_bytes: usize,
    trailers: usize,
    /// The final status code (1xx responses skipped).
    pub(crate) status: u16,
    /// The connection cannot carry another request (HTTP/1.0, `Connection: close`, a body
    /// delimited by the close).
    pub(crate) close: bool,
    /// The headers, when kept. Boxed: the reader lives in every HTTP/1.1 user's task while it
    /// waits for a response, and an empty map inline is 96 bytes there.
    pub(crate) headers: Option<Box<HeaderMap>>,
    /// The body, when kept.
    pub(crate) body: Vec<u8>,
}

impl ResponseReader {
    /// A reader for the response to a request (`head_request`: its method was HEAD); `keep`
    /// holds the headers and body for the caller.
    pub(crate) fn new(head_request: bool, keep: bool) -> Self {
        ResponseReader {
            head_request,
            keep,
            keep_body: keep,
            state: State::Head,
            started: false,
            trailer_bytes: 0,
            trailers: 0,
            status: 0,
            close: false,
            headers: None,
            body: Vec::new(),
        }
    }

    /// Whether any byte of the response has arrived.
    pub(crate) fn started(&self) -> bool {
        self.started
    }

    /// Whether the reader is inside a body (more room to read helps).
    pub(crate) fn in_body(&self) -> bool {
        !matches!(self.state, State::Head | State::Done)
    }

    /// Consumes from `buf` what belongs to this response; `Ok(true)` once it is complete
    /// (bytes after it stay in `buf`).
    #[cfg(test)]
    pub(crate) fn advance(&mut self, buf: &mut BytesMut) -> Result<bool, ReadError> {
        self.advance_with(buf, &mut |_| {})
    }

    /// [`ResponseReader::advance`], handing `body` each slice of a 2xx response's body as it
    /// leaves the buffer (the chunked coding's framing taken out; an error's body is not the
    /// stream the caller reads).
    pub(crate) fn advance_with(
        &mut self,
        buf: &mut BytesMut,
        body: &mut impl FnMut(&[u8]),
    ) -> Result<bool, ReadError> {
        loop {
            match self.state {
                State::Done => return Ok(true),
                State::Head => {
                    if buf.is_empty() {
                        return Ok(false);
                    }
                    self.started = true;
                    if !self.head(buf)? {
                        return Ok(false);
                    }
                }
                State::Length(left) | State::ChunkData(left) => {
                    let n = self.take(buf, left, body);
                    let chunked = matches!(self.state, State::ChunkData(_));
                    self.state = match (left - n, chunked) {
                        (0, false) => State::Done,
                        (0, true) => State::ChunkEnd,
                        (rest, false) => State::Length(rest),
                        (rest, true) => State::ChunkData(rest),
                    };
                    if n < left {
                        return Ok(false);
                    }
                }
                State::UntilClose => {
                    self.take(buf, u64::MAX, body);
                    return Ok(false);
                }
                State::ChunkEnd => {
                    // Byte by byte: a wrong first byte is refused without waiting for a second.
                    if !b"\r\n".starts_with(&buf[..buf.len().min(2)]) {
                        return Err(malformed("chunk data not followed by CRLF"));
                    }
                    if buf.len() < 2 {
                        return Ok(false);
                    }
                    buf.advance(2);
                    self.state = State::ChunkSize;
                }
                State::ChunkSize => {
                    let Some((size, len)) = chunk_line(buf)? else {
                        return Ok(false);
                    };
                    buf.advance(len);
                    self.state = match size {
                        0 => State::Trailers,
                        n => State::ChunkData(n),
                    };
                }
                State::Trailers => {
                    let Some(line) = line(buf)? else {
                        return Ok(false);
                    };
                    let end = line + 2;
                    if line == 0 {
                        buf.advance(end);
                        self.state = State::Done;
                    } else {
                        trailer(&buf[..line])?;
                        buf.advance(end);
                        self.trailer_bytes += end;
                        self.trailers += 1;
                        if self.trailer_bytes > MAX_HEAD {
                            return Err(malformed("trailers over 64 KiB"));
                        }
                        if self.trailers > MAX_HEADERS {
                            return Err(malformed(format!("more than {MAX_HEADERS} trailers")));
                        }
                    }
                }
            }
        }
    }

    /// The connection ended: completes a body delimited by the close, or says what was cut.
    pub(crate) fn eof(&mut self) -> Result<(), ReadError> {
        match self.state {
            State::Done => Ok(()),
            State::UntilClose => {
                self.state = State::Done;
                Ok(())
            }
            _ => Err(ReadError::Incomplete {
                started: self.started,
            }),
        }
    }

    /// Consumes up to `max` body bytes from the buffer (kept, or handed to `body`, or
    /// dropped); how many.
    fn take(&mut self, buf: &mut BytesMut, max: u64, body: &mut impl FnMut(&[u8])) -> u64 {
        let n = (buf.len() as u64).min(max) as usize;
        let success = (200..300).contains(&self.status);
        if self.keep_body {
            self.body.extend_from_slice(&buf[..n]);
        } else if self.keep && !success {
            // Read as a stream, but an error: its body is kept for checks, as any response's.
            let room = crate::stream::MAX_ERROR_BODY.saturating_sub(self.body.len());
            self.body.extend_from_slice(&buf[..n.min(room)]);
        }
        if n > 0 && success {
            body(&buf[..n]);
        }
        buf.advance(n);
        n as u64
    }

    /// Parses a response head if the buffer holds it all; `Ok(false)` when more is needed.
    fn head(&mut self, buf: &mut BytesMut) -> Result<bool, ReadError> {
        // Uninitialized: filling 100 empty headers (3.2 KB) was a twentieth of a request's cost.
        let mut slots =
            [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut []);
        let parsed = httparse::ParserConfig::default()
            .allow_spaces_after_header_name_in_responses(true)
            .allow_obsolete_multiline_headers_in_responses(true)
            .allow_multiple_spaces_in_response_status_delimiters(true)
            .parse_response_with_uninit_headers(&mut resp, buf, &mut slots);
        let len = match parsed {
            // Checked complete as well as partial: a head over the limit may arrive in one read.
            Ok(httparse::Status::Complete(n)) if n > MAX_HEAD => {
                return Err(malformed("response head over 64 KiB"))
            }
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
                return Err(malformed("response head over 64 KiB"))
            }
            Ok(httparse::Status::Partial) => return Ok(false),
            Err(httparse::Error::TooManyHeaders) => {
                return Err(malformed(format!(
                    "more than {MAX_HEADERS} response headers"
                )))
            }
            Err(e) => return Err(malformed(format!("not an HTTP/1.1 response: {e}"))),
        };
        let code = resp.code.unwrap_or(0);
        if code < 100 {
            // Three digits, but no class (RFC 9110 section 15): hyper refuses them too.
            return Err(malformed(format!("status code {code:03}")));
        }
        if (100..200).contains(&code) {
            if code == 101 {
                return Err(malformed(
                    "101 Switching Protocols to a request that asked for none",
                ));
            }
            buf.advance(len);
            return Ok(true);
        }
        let http10 = resp.version == Some(0);
        let (mut said_close, mut said_keep_alive) = (false, false);
        let mut coded = None;
        for h in resp.headers.iter() {
            let name = h.name.as_bytes();
            if name.eq_ignore_ascii_case(b"transfer-encoding") {
                // The last coding decides: chunked is framed; anything else runs to the close.
                let last = tokens(h.value).last().unwrap_or_default();
                coded = Some(last.eq_ignore_ascii_case(b"chunked"));
            } else if name.eq_ignore_ascii_case(b"connection") {
                for t in tokens(h.value) {
                    said_close |= t.eq_ignore_ascii_case(b"close");
                    said_keep_alive |= t.eq_ignore_ascii_case(b"keep-alive");
                }
            }
        }
        // A close anywhere wins over a keep-alive, in any order.
        let mut close = said_close || (http10 && !said_keep_alive);
        // The framing, in RFC 9112 section 6.3's order: a response that cannot have a body has
        // none whatever its headers say (their values are not looked at); Transfer-Encoding
        // overrides Content-Length (not looked at either); HTTP/1.0 has no Transfer-Encoding.
        let state = if self.head_request || code == 204 || code == 304 {
            State::Done
        } else if let Some(chunked) = coded {
            if http10 {
                // RFC 9112 section 6.1: its framing is faulty.
                return Err(malformed("Transfer-Encoding in an HTTP/1.0 response"));
            }
            if chunked {
                State::ChunkSize
            } else {
                close = true;
                State::UntilClose
            }
        } else {
            let mut length: Option<u64> = None;
            // A second pass over the headers, not a list kept from the first: that list was
            // an allocation a response.
            let lengths = resp.headers.iter();
            for h in lengths.filter(|h| h.name.eq_ignore_ascii_case("content-length")) {
                let n = content_length(h.value)?;
                if length.is_some_and(|l| l != n) {
                    return Err(malformed("two different Content-Length headers"));
                }
                length = Some(n);
            }
            match length {
                None => {
                    close = true;
                    State::UntilClose
                }
                Some(0) => State::Done,
                Some(n) => State::Length(n),
            }
        };
        if self.keep {
            for h in resp.headers.iter() {
                let value = if h.value.contains(&b'\n') {
                    HeaderValue::from_bytes(&unfold(h.value))
                } else {
                    HeaderValue::from_bytes(h.value)
                };
                if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(h.name.as_bytes()), value) {
                    self.headers.get_or_insert_default().append(n, v);
                }
            }
        }
        self.status = code;
        buf.advance(len);
        self.state = state;
        self.close = close;
        Ok(true)
    }
}

/// A folded header value (obsolete line folding) as one line: each fold and the white space
/// around it become one space (RFC 9112 section 5.2), as hyper makes it.
fn unfold(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len());
    for (i, part) in value.split(|&b| b == b'\n').enumerate() {
        let part = if i == 0 {
            part.trim_ascii_end()
        } else {
            out.push(b' ');
            part.trim_ascii()
        };
        out.extend_from_slice(part);
    }
    out
}

/// The length of the line at the start of `buf` without its line ending, when it is all there.
/// Its end is CRLF; a CR not followed by LF is refused as soon as the byte after it arrives.
fn line(buf: &[u8]) -> Result<Option<usize>, ReadError> {
    let seen = &buf[..buf.len().min(MAX_LINE)];
    match seen.iter().position(|&b| b == b'\n' || b == b'\r') {
        Some(i) if seen[i] == b'\r' => match seen.get(i + 1) {
            Some(b'\n') => Ok(Some(i)),
            Some(_) => Err(malformed("a CR not followed by LF in a chunk line")),
            None if buf.len() >= MAX_LINE => Err(malformed("a chunk line over 4 KiB")),
            None => Ok(None),
        },
        Some(_) => Err(malformed("a chunk line not ended by CRLF")),
        None if buf.len() >= MAX_LINE => Err(malformed("a chunk line over 4 KiB")),
        None => Ok(None),
    }
}

/// A chunk-size line at the start of `buf` (RFC 9112 section 7.1): hexadecimal digits (any
/// number of leading zeros), optional spaces or tabs, optional extensions after `;` (not read),
/// CRLF. Its size and length once it is all there; refused as soon as the bytes that came cannot
/// begin one, as hyper refuses them.
fn chunk_line(buf: &[u8]) -> Result<Option<(u64, usize)>, ReadError> {
    let bad = || malformed("a bad chunk size");
    let mut n: u64 = 0;
    let mut i = 0;
    while let Some(v) = buf.get(i).and_then(|&b| (b as char).to_digit(16)) {
        n = n
            .checked_mul(16)
            .and_then(|n| n.checked_add(u64::from(v)))
            .ok_or_else(|| malformed("a chunk size over 2^64"))?;
        i += 1;
    }
    if i == 0 && !buf.is_empty() {
        return Err(bad());
    }
    while matches!(buf.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    if buf.get(i) == Some(&b';') {
        i += buf[i..]
            .iter()
            .position(|&b| b == b'\r' || b == b'\n')
            .unwrap_or(buf.len() - i);
    }
    if i >= MAX_LINE {
        return Err(malformed("a chunk line over 4 KiB"));
    }
    match (buf.get(i), buf.get(i + 1)) {
        (None, _) | (Some(b'\r'), None) => Ok(None),
        (Some(b'\r'), Some(b'\n')) => Ok(Some((n, i + 2))),
        _ => Err(bad()),
    }
}

/// A trailer line is a field line (RFC 9112 section 7.1.2): a name of token characters, a
/// colon, a value without control characters but tab. hyper refuses a trailer section that is
/// not.
fn trailer(line: &[u8]) -> Result<(), ReadError> {
    let colon = line.iter().position(|&b| b == b':').unwrap_or(0);
    let (name, value) = line.split_at(colon);
    let token = |b: &u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b);
    let text = |b: &u8| *b == b'\t' || (*b >= b' ' && *b != 0x7f);
    if name.is_empty() || !name.iter().all(token) || !value.iter().all(text) {
        return Err(malformed("a trailer that is not a header line"));
    }
    Ok(())
}

/// A Content-Length value: digits, or the same digits repeated in a list.
fn content_length(value: &[u8]) -> Result<u64, ReadError> {
    let mut found: Option<u64> = None;
    for t in tokens(value) {
        if t.is_empty() || t.len() > 19 || !t.iter().all(u8::is_ascii_digit) {
            return Err(malformed("a bad Content-Length"));
        }
        let n = t.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
        if found.is_some_and(|f| f != n) {
            return Err(malformed("a Content-Length list of different values"));
        }
        found = Some(n);
    }
    found.ok_or_else(|| malformed("an empty Content-Length"))
}

/// The comma-separated tokens of a header value, trimmed.
fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(<[u8]>::trim_ascii)
}

#[cfg(test)]
mod differential;

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` to a reader in pieces of `step` bytes; the result, and what was left over.
    fn read(
        wire: &[u8],
        step: usize,
        head: bool,
        eof: bool,
    ) -> (Result<ResponseReader, ReadError>, usize) {
        let mut r = ResponseReader::new(head, true);
        let mut buf = BytesMut::new();
        for piece in wire.chunks(step.max(1)) {
            buf.extend_from_slice(piece);
            match r.advance(&mut buf) {
                Ok(true) => return (Ok(r), buf.len()),
                Ok(false) => {}
                Err(e) => return (Err(e), buf.len()),
            }
        }
        if eof {
            if let Err(e) = r.eof() {
                return (Err(e), buf.len());
            }
            return (Ok(r), buf.len());
        }
        (Err(ReadError::Incomplete { started: true }), buf.len())
    }

    /// The wire, whether the request was HEAD, the status, the body, whether the connection
    /// closes after.
    type Case = (&'static [u8], bool, u16, &'static [u8], bool);

    #[test]
    fn frames_every_kind_of_body_at_every_split() {
        let cases: &[Case] = &[
            (b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello", false, 200, b"hello", false),
            (
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\nx-trailer: y\r\n\r\n",
                false,
                200,
                b"hello!",
                false,
            ),
            (b"HTTP/1.0 200 OK\r\n\r\nuntil the close", false, 200, b"until the close", true),
            (
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok",
                false,
                201,
                b"ok",
                false,
            ),
            (b"HTTP/1.1 204 No Content\r\ncontent-length: 9\r\n\r\n", false, 204, b"", false),
            (b"HTTP/1.1 304 Not Modified\r\n\r\n", false, 304, b"", false),
            (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n", true, 200, b"", false),
            (b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 1\r\n\r\nx", false, 200, b"x", true),
            (b"HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 1\r\n\r\nx", false, 200, b"x", false),
        ];
        for &(wire, head, status, body, close) in cases {
            for step in 1..=wire.len() {
                let (r, left) = read(wire, step, head, true);
                let r = r.unwrap_or_else(|e| panic!("{e:?} at step {step}: {wire:?}"));
                assert_eq!(
                    (r.status, r.body.as_slice(), r.close),
                    (status, body, close)
                );
                assert_eq!(left, 0, "{wire:?}");
            }
        }
    }

    #[test]
    fn refuses_what_is_not_http_and_says_what_was_cut() {
        for (wire, says) in [
            (&b"SSH-2.0-OpenSSH\r\n\r\n"[..], "not an HTTP/1.1 response"),
            (
                b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n",
                "bad Content-Length",
            ),
            (
                b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n",
                "two different",
            ),
            (
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
                "bad chunk size",
            ),
            (
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\nab\r\n",
                "not followed by CRLF",
            ),
            (
                b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
                "Switching Protocols",
            ),
        ] {
            match read(wire, 3, false, true).0 {
                Err(ReadError::Malformed(m)) => assert!(m.contains(says), "{m}"),
                other => panic!("{wire:?}: {other:?}"),
            }
        }
        assert_eq!(
            read(b"", 1, false, true).0.unwrap_err(),
            ReadError::Incomplete { started: false }
        );
        assert_eq!(
            read(
                b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nabc",
                4,
                false,
                true
            )
            .0
            .unwrap_err(),
            ReadError::Incomplete { started: true }
        );
        let mut big = b"HTTP/1.1 200 OK\r\n".to_vec();
        big.extend_from_slice(b"x-a: ");
        big.extend(std::iter::repeat_n(b'b', 70_000));
        assert!(
            matches!(read(&big, 4096, false, true).0, Err(ReadError::Malformed(m)) if m.contains("64 KiB"))
        );
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        many.extend(std::iter::repeat_n(b"x-a: b\r\n".as_slice(), 101).flatten());
        many.extend_from_slice(b"\r\n");
        assert!(
            matches!(read(&many, 4096, false, true).0, Err(ReadError::Malformed(m)) if m.contains("more than 100"))
        );
    }

    /// A head of `size` bytes in all (a status line, one long header, the blank line), then
    /// a body of two bytes.
    fn head_of(size: usize) -> Vec<u8> {
        let start = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-a: ";
        let mut wire = start.to_vec();
        wire.extend(std::iter::repeat_n(b'b', size - start.len() - 4));
        wire.extend_from_slice(b"\r\n\r\nok");
        wire
    }

    /// The head's limit holds however the head arrives: whole in one read (a 100,000-byte
    /// header was accepted so, the limit being checked only while the head was incomplete), or
    /// in pieces that do or do not end at the limit.
    #[test]
    fn a_head_over_64_kib_is_refused_in_one_read_or_many() {
        for size in [MAX_HEAD + 1, MAX_HEAD + 2, 100_000] {
            let wire = head_of(size);
            for step in [wire.len(), 100_000, MAX_HEAD + 1, MAX_HEAD, 4096, 1000] {
                match read(&wire, step, false, true).0 {
                    Err(ReadError::Malformed(m)) => assert!(m.contains("64 KiB"), "{m}"),
                    other => panic!(
                        "{size}-byte head in {step}-byte reads: {:?}",
                        other.map(|r| r.status)
                    ),
                }
            }
        }
        // At the limit exactly, it is read, whole or in pieces.
        let wire = head_of(MAX_HEAD);
        for step in [wire.len(), MAX_HEAD, MAX_HEAD - 1, 4096, 1000] {
            let (r, left) = read(&wire, step, false, true);
            let r = r.unwrap_or_else(|e| panic!("{step}: {e:?}"));
            assert_eq!((r.status, r.body.as_slice(), left), (200, &b"ok"[..], 0));
        }
    }

    #[test]
    fn a_body_not_kept_is_consumed_not_held() {
        let mut r = ResponseReader::new(false, false);
        let mut buf = BytesMut::from(&b"HTTP/1.1 200 OK\r\ncontent-length: 10000000\r\n\r\n"[..]);
        assert!(!r.advance(&mut buf).unwrap());
        let mut total = 0;
        while total < 10_000_000 {
            buf.extend_from_slice(&[b'a'; 4096][..4096.min(10_000_000 - total)]);
            total += 4096.min(10_000_000 - total);
            let done = r.advance(&mut buf).unwrap();
            assert!(buf.is_empty());
            assert_eq!(done, total == 10_000_000);
        }
        assert!(r.body.is_empty() && r.headers.is_none());
    }

    /// A body read as a stream: every byte of a 2xx body reaches the sink, in the slices the
    /// reads brought, without the chunked coding's framing, and none is held, however long;
    /// an error's body is not the stream.
    #[test]
    fn a_streamed_body_goes_to_the_sink_and_is_not_held() {
        let mut r = ResponseReader::new(false, true);
        r.keep_body = false;
        let mut buf = BytesMut::from(&b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"[..]);
        let (mut seen, mut slices) = (0usize, 0usize);
        let mut sink = |b: &[u8]| {
            assert!(b.iter().all(|&c| c == b'x'), "framing reached the sink");
            seen += b.len();
            slices += 1;
        };
        assert!(!r.advance_with(&mut buf, &mut sink).unwrap());
        for _ in 0..2_000 {
            buf.extend_from_slice(b"1000\r\n");
            buf.extend_from_slice(&[b'x'; 0x1000]);
            buf.extend_from_slice(b"\r\n");
            assert!(!r.advance_with(&mut buf, &mut sink).unwrap());
            assert!(buf.is_empty());
        }
        buf.extend_from_slice(b"0\r\n\r\n");
        assert!(r.advance_with(&mut buf, &mut sink).unwrap());
        assert_eq!((seen, slices), (2_000 * 0x1000, 2_000));
        assert!(r.body.is_empty() && r.headers.is_some_and(|h| !h.is_empty()));

        let mut r = ResponseReader::new(false, true);
        let mut buf = BytesMut::from(&b"HTTP/1.1 500 Oops\r\ncontent-length: 2\r\n\r\nno"[..]);
        let mut called = false;
        assert!(r.advance_with(&mut buf, &mut |_| called = true).unwrap());
        assert!(!called);
        assert_eq!(r.body, b"no");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Arbitrary bytes, after a valid head or not, split at arbitrary points: the reader
        /// never panics, ends (each call consumes or returns), and never lets the buffer hold
        /// more than a head's limit and one read.
        #[test]
        fn any_byte_stream_split_anywhere_is_read_safely(
            prefix in proptest::sample::select(vec![
                &b""[..],
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
                b"HTTP/1.1 200 OK\r\ncontent-length: 40\r\n\r\n",
                b"HTTP/1.0 200 OK\r\n\r\n",
                b"HTTP/1.1 100 Continue\r\n\r\n",
            ]),
            tail in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::prelude::any::<u8>(),
                    proptest::sample::select(b"0123456789abcdefHTP/1. \r\n:;".to_vec()),
                ],
                0..600,
            ),
            cuts in proptest::collection::vec(1usize..200, 1..20),
            keep in proptest::prelude::any::<bool>(),
        ) {
            let wire = [prefix, &tail[..]].concat();
            let mut r = ResponseReader::new(false, keep);
            let mut buf = BytesMut::new();
            let mut at = 0;
            let mut cut = cuts.iter().cycle();
            while at < wire.len() {
                let n = (*cut.next().unwrap_or(&1)).min(wire.len() - at);
                buf.extend_from_slice(&wire[at..at + n]);
                at += n;
                match r.advance(&mut buf) {
                    Ok(false) => proptest::prop_assert!(buf.len() <= MAX_HEAD + n),
                    Ok(true) | Err(_) => break,
                }
            }
            let _ = r.eof();
            proptest::prop_assert!(r.body.len() <= wire.len());
        }
    }

    #[test]
    fn writes_one_buffer_with_framing() {
        let mut out = Vec::new();
        let mut h = HeaderMap::new();
        h.insert("host", HeaderValue::from_static("a:1"));
        h.insert("x-a", HeaderValue::from_static("1"));
        let none = HeaderMap::new();
        write_request(&mut out, &Method::POST, "/x?y", &h, &none, b"{}");
        assert_eq!(
            out,
            b"POST /x?y HTTP/1.1\r\nhost: a:1\r\nx-a: 1\r\ncontent-length: 2\r\n\r\n{}"
        );
        let mut extra = HeaderMap::new();
        extra.insert("x-a", HeaderValue::from_static("2"));
        write_request(&mut out, &Method::GET, "/", &h, &extra, b"");
        assert_eq!(out, b"GET / HTTP/1.1\r\nhost: a:1\r\nx-a: 2\r\n\r\n");
        write_request(&mut out, &Method::PUT, "/", &h, &none, b"");
        assert!(out.ends_with(b"content-length: 0\r\n\r\n"));
    }
}
