//! Differential tests of the response reader against hyper's HTTP/1.1 client, the reference: a
//! generated response (valid or not: folded and duplicate headers, heads over the limit, chunk
//! extensions and trailers, bad lengths, 1xx, bytes after the response, cuts, a byte changed) is
//! read by both, and both must give the same verdict: read, with the same status, headers, body
//! and whether bytes were left after it; or refused, with the same class. throng's reader must
//! also give the same verdict at every split of the bytes into reads.
//!
//! hyper reads the response whole from an in-memory connection (no socket: about 3 ms a case in
//! a debug build) that answers only once the request is written, as a server does, and ends
//! when its bytes do. Whole, because hyper's verdict on a malformed head cut short depends on
//! how the bytes arrive (see `deliberate_differences_from_hyper`). Where throng deliberately
//! differs from hyper, the difference is written out: in [`expected`] and [`check`] for the
//! generated cases (and the generator leaves out the changed bytes that would make the others),
//! and case by case in `deliberate_differences_from_hyper`.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::{Buf, Bytes, BytesMut};
use http::HeaderMap;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use proptest::prelude::*;
use throng_core::ErrorClass;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::{ReadError, ResponseReader, MAX_HEAD};

/// What a client made of a response.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// Read: its status, headers and body, and whether bytes came after it on a connection that
    /// stays open (the driver drops such a connection).
    Read {
        status: u16,
        headers: HeaderMap,
        body: Vec<u8>,
        after: bool,
    },
    /// Refused, with this class.
    Refused(ErrorClass),
}

/// throng's reader, fed `wire` in reads ending at `cuts` (increasing), then the close.
fn throng(wire: &[u8], cuts: &[usize], head_request: bool) -> Verdict {
    let mut r = ResponseReader::new(head_request, true);
    let mut buf = BytesMut::new();
    let mut at = 0;
    for end in cuts.iter().copied().chain([wire.len()]) {
        if end <= at {
            continue;
        }
        buf.extend_from_slice(&wire[at..end]);
        at = end;
        match r.advance(&mut buf) {
            Ok(true) => {
                let left = buf.len() + (wire.len() - at);
                return read(r, left > 0);
            }
            Ok(false) => {}
            Err(e) => return refused(&e),
        }
    }
    match r.eof() {
        Ok(()) => read(r, false),
        Err(e) => refused(&e),
    }
}

fn read(r: ResponseReader, left: bool) -> Verdict {
    Verdict::Read {
        status: r.status,
        after: left && !r.close,
        headers: r.headers.map(|h| *h).unwrap_or_default(),
        body: r.body,
    }
}

/// The classes the driver gives the reader's errors.
fn refused(e: &ReadError) -> Verdict {
    Verdict::Refused(match e {
        ReadError::Malformed(_) => ErrorClass::Protocol,
        ReadError::Incomplete { .. } => ErrorClass::Reset,
    })
}

/// A connection in memory: reads wait for the request to be written, then give the pieces in
/// turn (a read takes at most one piece), then the close.
struct Wire {
    pieces: VecDeque<Bytes>,
    written: bool,
    waiting: Option<Waker>,
}

impl AsyncRead for Wire {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.written {
            self.waiting = Some(cx.waker().clone());
            return Poll::Pending;
        }
        if let Some(piece) = self.pieces.front_mut() {
            let n = piece.len().min(out.remaining());
            out.put_slice(&piece[..n]);
            piece.advance(n);
            if piece.is_empty() {
                self.pieces.pop_front();
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Wire {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.written = true;
        if let Some(w) = self.waiting.take() {
            w.wake();
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// hyper's client (with the two leniencies throng's parser has and hyper can be asked for:
/// spaces after a header name, obsolete line folding), fed `wire` in reads ending at `cuts`.
fn hyper(wire: &[u8], cuts: &[usize], head_request: bool) -> Verdict {
    let mut pieces = VecDeque::new();
    let mut at = 0;
    for end in cuts.iter().copied().chain([wire.len()]) {
        if end > at {
            pieces.push_back(Bytes::copy_from_slice(&wire[at..end]));
            at = end;
        }
    }
    let io = Wire {
        pieces,
        written: false,
        waiting: None,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    rt.block_on(async move {
        let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
            .allow_spaces_after_header_name_in_responses(true)
            .allow_obsolete_multiline_headers_in_responses(true)
            .handshake::<_, Empty<Bytes>>(TokioIo::new(io))
            .await
            .expect("a handshake in memory");
        let conn = tokio::spawn(conn);
        let method = if head_request {
            http::Method::HEAD
        } else {
            http::Method::GET
        };
        let request = http::Request::builder()
            .method(method)
            .uri("/")
            .header("host", "127.0.0.1")
            .body(Empty::new())
            .expect("a request");
        let response = match sender.send_request(request).await {
            Ok(r) => r,
            Err(e) => return Verdict::Refused(class(&e)),
        };
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = match response.into_body().collect().await {
            Ok(b) => b.to_bytes().to_vec(),
            Err(e) => return Verdict::Refused(class(&e)),
        };
        drop(sender);
        // Bytes after the response, on a connection kept open, end hyper's connection with
        // "unexpected message".
        let after = !matches!(conn.await, Ok(Ok(())));
        Verdict::Read {
            status,
            headers,
            body,
            after,
        }
    })
}

/// The class of hyper's error, by walking its `source()` chain: hyper's own kinds, the socket's
/// and TLS's errors by throng-net, and for the errors of hyper's body decoder (an I/O error of
/// its own inside a body error, which the rest leaves `other`) what they mean: bytes that are
/// not HTTP/1.1, or a close before the body's end.
fn class(e: &hyper::Error) -> ErrorClass {
    match hyper_class(e) {
        ErrorClass::Other => {}
        c => return c,
    }
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            match io.kind() {
                io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput => {
                    return ErrorClass::Protocol
                }
                io::ErrorKind::UnexpectedEof => return ErrorClass::Reset,
                _ => {}
            }
        }
        cur = e.source();
    }
    ErrorClass::Other
}

/// A framing header, its value written from the body's length `n`.
#[derive(Debug, Clone, Copy)]
enum Framing {
    Length,
    LengthLess,
    LengthMore,
    LengthList,
    LengthListDiffering,
    LengthPlus,
    LengthSpaced,
    LengthEmpty,
    LengthHex,
    LengthHuge,
    Te(&'static str),
    Connection(&'static str),
}

impl Framing {
    fn line(self, n: usize) -> String {
        match self {
            Framing::Length => format!("content-length: {n}"),
            Framing::LengthLess => format!("content-length: {}", n.saturating_sub(1)),
            Framing::LengthMore => format!("content-length: {}", n + 1),
            Framing::LengthList => format!("content-length: {n}, {n}"),
            Framing::LengthListDiffering => format!("content-length: {n}, {}", n + 1),
            Framing::LengthPlus => format!("content-length: +{n}"),
            Framing::LengthSpaced => format!("Content-Length:   {n}  "),
            Framing::LengthEmpty => "content-length:".into(),
            Framing::LengthHex => format!("content-length: 0x{n:x}"),
            Framing::LengthHuge => "content-length: 99999999999999999999".into(),
            Framing::Te(v) => format!("transfer-encoding: {v}"),
            Framing::Connection(v) => format!("connection: {v}"),
        }
    }
}

fn framing() -> impl Strategy<Value = Framing> {
    let good = vec![
        Framing::Length,
        Framing::LengthList,
        Framing::LengthSpaced,
        Framing::Te("chunked"),
        Framing::Te("Chunked"),
        Framing::Te("gzip, chunked"),
        Framing::Te("gzip"),
        Framing::Connection("close"),
        Framing::Connection("keep-alive"),
        Framing::Connection("Keep-Alive, Close"),
        Framing::Connection("close, keep-alive"),
    ];
    let bad = vec![
        Framing::LengthLess,
        Framing::LengthMore,
        Framing::LengthListDiffering,
        Framing::LengthPlus,
        Framing::LengthEmpty,
        Framing::LengthHex,
        Framing::LengthHuge,
        Framing::Te("chunked, gzip"),
        Framing::Te("identity"),
        Framing::Te(""),
    ];
    prop_oneof![4 => prop::sample::select(good), 1 => prop::sample::select(bad)]
}

/// Mostly one of `good`, sometimes one of `bad`.
fn mostly(good: Vec<&'static str>, bad: Vec<&'static str>) -> impl Strategy<Value = &'static str> {
    prop_oneof![5 => prop::sample::select(good), 1 => prop::sample::select(bad)]
}

/// How a chunked body is written.
#[derive(Debug, Clone)]
struct Chunks {
    /// Where the body is cut into chunks (offsets, in any order).
    cuts: Vec<usize>,
    /// The chunk sizes' digits: lower-case, upper-case, zero-padded to this many digits.
    digits: &'static str,
    /// After the size, before the line's end.
    ext: &'static str,
    /// After each chunk's data.
    data_end: &'static str,
    /// The last chunk's line, then the trailers, then the end.
    last: &'static str,
    trailers: &'static str,
    end: &'static str,
}

fn chunks() -> impl Strategy<Value = Chunks> {
    (
        prop::collection::vec(0usize..64, 0..4),
        mostly(vec!["x", "X", "08", "016"], vec!["020", " x"]),
        mostly(
            vec![
                "",
                "",
                "",
                ";a=b",
                ";a",
                " ;a=1",
                ";a=\"q;\\\"x\"",
                "\t;b=c;d",
                "  ",
            ],
            vec![";a\rb", ";a\nb", "x", "\x0c"],
        ),
        mostly(vec!["\r\n"], vec!["\n", "", "XY", "\r"]),
        mostly(
            vec!["0", "000", "0;e=1", "00000000000000000"],
            vec!["fffffffffffffffff", "", " 0"],
        ),
        mostly(
            vec![
                "",
                "",
                "x-t: 1\r\n",
                "x-t: 1\r\nx-u: 2\r\nx-t: 3\r\n",
                "x-t:\r\n",
            ],
            vec![
                "no colon\r\n",
                " folded: 1\r\n",
                "x-t : 1\r\n",
                ": 1\r\n",
                "x-t: \x01\r\n",
                "x-t: 1\rx-u: 2\r\n",
            ],
        ),
        mostly(vec!["\r\n"], vec!["x\r\n\r\n", "\r\r\n"]),
    )
        .prop_map(
            |(cuts, digits, ext, data_end, last, trailers, end)| Chunks {
                cuts,
                digits,
                ext,
                data_end,
                last,
                trailers,
                end,
            },
        )
}

impl Chunks {
    /// Writes `body` chunked; where the trailer section starts.
    fn write(&self, body: &[u8], out: &mut Vec<u8>) -> usize {
        let mut cuts: Vec<usize> = self.cuts.iter().map(|c| c % (body.len() + 1)).collect();
        cuts.push(body.len());
        cuts.sort_unstable();
        cuts.dedup();
        let mut at = 0;
        for end in cuts {
            if end == at {
                continue;
            }
            let n = end - at;
            let size = match self.digits {
                "x" => format!("{n:x}"),
                "X" => format!("{n:X}"),
                "08" => format!("{n:08x}"),
                "016" => format!("{n:016x}"),
                "020" => format!("{n:020x}"),
                _ => format!(" {n:x}"),
            };
            out.extend_from_slice(size.as_bytes());
            out.extend_from_slice(self.ext.as_bytes());
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(&body[at..end]);
            out.extend_from_slice(self.data_end.as_bytes());
            at = end;
        }
        out.extend_from_slice(self.last.as_bytes());
        out.extend_from_slice(b"\r\n");
        let trailers = out.len();
        out.extend_from_slice(self.trailers.as_bytes());
        out.extend_from_slice(self.end.as_bytes());
        trailers
    }
}

/// A generated response and how it is read.
#[derive(Debug, Clone)]
struct Case {
    head_request: bool,
    informational: &'static str,
    status: &'static str,
    framing: Vec<Framing>,
    extra: Vec<&'static str>,
    /// A header that makes the head this long (0: none).
    pad: usize,
    /// Heads' lines end in LF alone.
    bare_lf: bool,
    body: Vec<u8>,
    chunks: Chunks,
    tail: &'static str,
    /// The bytes end early: at this thousandth of them.
    cut: Option<u16>,
    /// A byte changed: at this thousandth of them, to this.
    change: Option<(u16, u8)>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        (
            prop::bool::weighted(0.15),
            mostly(
                vec!["", "", "", "", "HTTP/1.1 100 Continue\r\n\r\n"],
                vec![
                    "HTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\n",
                    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\ncontent-length: 3\r\n\r\n",
                ],
            ),
            mostly(
                vec![
                    "HTTP/1.1 200 OK",
                    "HTTP/1.1 200 OK",
                    "HTTP/1.1 201 Created",
                    "HTTP/1.0 200 OK",
                    "HTTP/1.1 204 No Content",
                    "HTTP/1.1 304 Not Modified",
                    "HTTP/1.1 404 Not Found",
                    "HTTP/1.1 503 Unavailable",
                    "HTTP/1.1 600 High",
                    "HTTP/1.1 200",
                    "HTTP/1.1 200 ",
                ],
                vec![
                    "HTTP/1.1 101 Switching Protocols",
                    "HTTP/1.1 099 Low",
                    "HTTP/1.1 000 Zero",
                    "HTTP/1.1 20 OK",
                    "HTTP/1.2 200 OK",
                    "HTTP/2 200 OK",
                    "ICY 200 OK",
                ],
            ),
            prop::collection::vec(framing(), 0..3),
            prop::collection::vec(
                mostly(
                    vec![
                        "x-a: 1",
                        "x-a: 2",
                        "X-A: 3",
                        "x-folded: a\r\n  b\r\n\tc",
                        "x-sp : v",
                        "x-empty:",
                        "x-tab:\tv\t",
                        "x-obs: caf\u{e9}",
                    ],
                    vec!["bad header line", ": no name", "x-ctl: a\x01b", "x-del: a\x7fb"],
                ),
                0..4,
            ),
            prop_oneof![
                30 => Just(0),
                1 => prop::sample::select(vec![30_000, MAX_HEAD, MAX_HEAD + 1, 100_000]),
            ],
            prop::bool::weighted(0.05),
        ),
        (
            prop::collection::vec(any::<u8>(), 0..48),
            chunks(),
            prop::sample::select(vec![
                "",
                "",
                "",
                "",
                "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
                "junk",
                "\r\n",
            ]),
            prop::option::weighted(0.1, 0u16..1000),
            prop::option::weighted(
                0.15,
                (
                    0u16..1000,
                    prop::sample::select(vec![
                        b'\r', b'\n', b' ', b'\t', b':', b';', b',', b'0', b'9', b'a', b'G', b'H',
                        0, 0x7f, 0xff,
                    ]),
                ),
            ),
        ),
    )
        .prop_map(
            |(
                (head_request, informational, status, framing, extra, pad, bare_lf),
                (body, chunks, tail, cut, change),
            )| Case {
                head_request,
                informational,
                status,
                framing,
                extra,
                pad,
                bare_lf,
                body,
                chunks,
                tail,
                cut,
                change,
            },
        )
}

/// The case's bytes (before any cut), and where its final head starts and ends.
fn render(case: &Case) -> (Vec<u8>, usize, usize) {
    let eol = if case.bare_lf { "\n" } else { "\r\n" };
    let mut head = format!("{}{eol}", case.status);
    for f in &case.framing {
        head.push_str(&f.line(case.body.len()));
        head.push_str(eol);
    }
    for x in &case.extra {
        head.push_str(x);
        head.push_str(eol);
    }
    let mut head = head.into_bytes();
    let rest = eol.len();
    if case.pad > 0 {
        let line = b"x-pad: ".len() + eol.len();
        let fill = case.pad.saturating_sub(head.len() + rest + line).max(1);
        head.extend_from_slice(b"x-pad: ");
        head.extend(std::iter::repeat_n(b'p', fill));
        head.extend_from_slice(eol.as_bytes());
    }
    head.extend_from_slice(eol.as_bytes());
    let mut wire = case.informational.as_bytes().to_vec();
    let start = wire.len();
    wire.extend_from_slice(&head);
    let end = wire.len();
    // The body as the last Transfer-Encoding says (hyper's reading of it is the reference).
    let chunked = case
        .framing
        .iter()
        .rev()
        .find_map(|f| match f {
            Framing::Te(v) => Some(v.rsplit(',').next().unwrap_or("").trim()),
            _ => None,
        })
        .is_some_and(|last| last.eq_ignore_ascii_case("chunked"));
    let trailers = if chunked {
        case.chunks.write(&case.body, &mut wire)
    } else {
        wire.extend_from_slice(&case.body);
        wire.len()
    };
    let tail = wire.len();
    wire.extend_from_slice(case.tail.as_bytes());
    if let Some((at, byte)) = case.change {
        let i = usize::from(at) * wire.len() / 1000;
        let line = wire[..i.min(wire.len())]
            .rsplit(|&b| b == b'\n')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let skip = case.pad > 0
            // Deliberate differences (see `deliberate_differences_from_hyper`) a changed byte
            // would make: a bare LF in the trailer section, a byte past ASCII in the framing
            // headers hyper reads as text.
            || ((trailers..tail).contains(&i) && (byte == b'\n' || wire[i] == b'\r'))
            || (byte >= 0x80
                && (start..end).contains(&i)
                && (line.starts_with(b"connection") || line.starts_with(b"transfer-encoding")));
        if let (false, Some(b)) = (skip, wire.get_mut(i)) {
            *b = byte;
        }
    }
    (wire, start, end)
}

/// The bytes as sent: cut short where the case says.
fn cut(case: &Case, whole: &[u8]) -> Vec<u8> {
    let n = case
        .cut
        .map_or(whole.len(), |at| usize::from(at) * whole.len() / 1000);
    whole[..n].to_vec()
}

/// What throng must say, given hyper's verdict: the same, but where throng deliberately
/// differs.
fn expected(case: &Case, wire: &[u8], head: (usize, usize), reference: Verdict) -> Verdict {
    let (start, end) = head;
    // A head over 64 KiB is refused (hyper's limit is its read buffer's, 400 KiB): the limit
    // bounds what a connection holds while it waits for a head, for thousands of connections.
    if case.pad > 0 && end - start > MAX_HEAD && wire.len() - start > MAX_HEAD {
        return Verdict::Refused(ErrorClass::Protocol);
    }
    match reference {
        // hyper gives a 101 to its caller to upgrade the connection; throng never asks for an
        // upgrade, so a 101 is a server not speaking HTTP/1.1 as asked (RFC 9110 section 15.2.2).
        Verdict::Read { status: 101, .. } => Verdict::Refused(ErrorClass::Protocol),
        v => v,
    }
}

/// Where throng's reads end, for the whole bytes: none (one read), each split in two, one byte
/// at a time; for large ones, splits around the head's limit and a few more.
fn splits(len: usize) -> Vec<Vec<usize>> {
    let mut all = vec![vec![]];
    if len <= 1024 {
        all.extend((1..len).map(|i| vec![i]));
        all.push((1..len).collect());
    } else {
        for at in [
            1,
            4096,
            MAX_HEAD - 1,
            MAX_HEAD,
            MAX_HEAD + 1,
            MAX_HEAD + 2,
            len - 1,
        ] {
            all.push(vec![at.min(len)]);
        }
        all.push((4096..len).step_by(4096).collect());
        all.push((1000..len).step_by(1000).collect());
    }
    all
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// The same verdict as hyper's for every generated response, and the same at every split.
    #[test]
    fn throng_reads_every_response_as_hyper_does(case in case()) {
        check(&case).map_err(TestCaseError::fail)?;
    }
}

/// throng's verdicts on the case (whole, and at every split) against hyper's: the message of the
/// first that differs.
fn check(case: &Case) -> Result<(), String> {
    let (whole, start, end) = render(case);
    let wire = cut(case, &whole);
    let head = (start, end);
    let mut want = expected(case, &wire, head, hyper(&wire, &[], case.head_request));
    let got = throng(&wire, &[], case.head_request);
    if case.cut.is_some() && (&got, &want) == (&PROTOCOL, &RESET) {
        // hyper judges a head, a trailer section, only once it has all of it: cut short, it is
        // `reset` to hyper even when the bytes that came are not HTTP/1.1; throng looks at the
        // bytes as they come. Then the response's whole bytes must be refused by hyper too.
        let full = expected(case, &whole, head, hyper(&whole, &[], case.head_request));
        if full != PROTOCOL {
            return Err(format!(
                "{:?}: protocol cut short, but hyper reads it whole as {full:?}",
                Shown(&wire)
            ));
        }
        want = PROTOCOL;
    }
    for cuts in splits(wire.len()) {
        let got = throng(&wire, &cuts, case.head_request);
        if got != want {
            return Err(format!(
                "{:?} read in pieces ending at {:?}:\n   throng {got:?}\n    hyper {want:?}",
                Shown(&wire),
                &cuts[..cuts.len().min(8)]
            ));
        }
    }
    Ok(())
}

const PROTOCOL: Verdict = Verdict::Refused(ErrorClass::Protocol);
const RESET: Verdict = Verdict::Refused(ErrorClass::Reset);

/// Bytes as text, shortened past 400.
struct Shown<'a>(&'a [u8]);

impl std::fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.0;
        if b.len() > 400 {
            let (a, z) = (&b[..200], &b[b.len() - 200..]);
            write!(
                f,
                "{} bytes: {:?} … {:?}",
                b.len(),
                String::from_utf8_lossy(a),
                String::from_utf8_lossy(z)
            )
        } else {
            write!(f, "{:?}", String::from_utf8_lossy(b))
        }
    }
}

/// Where throng deliberately reads a response otherwise than hyper: each case's bytes, hyper's
/// verdict and throng's, and why.
#[test]
fn deliberate_differences_from_hyper() {
    let ok = |status, body: &[u8], after| Verdict::Read {
        status,
        headers: HeaderMap::new(),
        body: body.to_vec(),
        after,
    };
    let big = |n| "b".repeat(n);
    let cases: Vec<(&str, Vec<u8>, Verdict, Verdict)> = vec![
        (
            // throng holds a head whole in a connection's buffer, for thousands of connections;
            // hyper's bound is its read buffer's, 400 KiB.
            "a head over 64 KiB",
            format!("HTTP/1.1 200 OK\r\nx-big: {}\r\ncontent-length: 2\r\n\r\nok", big(100_000))
                .into_bytes(),
            ok(200, b"ok", false),
            PROTOCOL,
        ),
        (
            // throng never asks for an upgrade (RFC 9110 section 15.2.2); hyper hands a 101 to
            // its caller to upgrade the connection.
            "101 to a request that asked for none",
            b"HTTP/1.1 101 Switching Protocols\r\nupgrade: h2c\r\n\r\n".to_vec(),
            ok(101, b"", false),
            PROTOCOL,
        ),
        (
            // RFC 9112 section 4: a recipient may split the status line on runs of white space
            // (httparse can; hyper's client does not let it).
            "spaces in runs in the status line",
            b"HTTP/1.1  200  OK\r\ncontent-length: 2\r\n\r\nok".to_vec(),
            PROTOCOL,
            ok(200, b"ok", false),
        ),
        (
            // throng holds a chunk line whole in the read buffer, up to 4 KiB; hyper streams
            // extensions and bounds them at 16 KiB a body.
            "a chunk line over 4 KiB",
            format!("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2;x={}\r\nok\r\n0\r\n\r\n", big(5000))
                .into_bytes(),
            ok(200, b"ok", false),
            PROTOCOL,
        ),
        (
            // The other side of the same bound: throng holds one chunk line at a time.
            "chunk extensions over 16 KiB in all",
            format!(
                "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{}0\r\n\r\n",
                format!("1;x={}\r\nk\r\n", big(1000)).repeat(20)
            )
            .into_bytes(),
            PROTOCOL,
            ok(200, &[b'k'; 20], false),
        ),
        (
            // throng bounds trailers as it bounds a head, at 64 KiB; hyper at 16 KiB.
            "trailers of 20 KiB",
            format!(
                "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n{}\r\n",
                format!("x-t: {}\r\n", big(4000)).repeat(5)
            )
            .into_bytes(),
            PROTOCOL,
            ok(200, b"ok", false),
        ),
        (
            // Chunked framing lines end in CRLF (RFC 9112 section 7.1); hyper finds the trailer
            // section's end by CRLFs and hands it to httparse, which takes a bare LF as a line's
            // end (so hyper needs a CRLF more than the section has).
            "a bare LF in the trailers",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nx-t: 1\n\r\n\r\n"
                .to_vec(),
            ok(200, b"ok", false),
            PROTOCOL,
        ),
        (
            // throng reads a Connection header's tokens whatever the others' bytes; hyper reads
            // none of a value that is not ASCII, so it keeps the connection and finds bytes
            // after the response on it.
            "a close beside a token past ASCII",
            b"HTTP/1.1 200 OK\r\nconnection: close, caf\xe9\r\ncontent-length: 2\r\n\r\nokHTTP/1.1"
                .to_vec(),
            ok(200, b"ok", true),
            ok(200, b"ok", false),
        ),
        (
            // The same for Transfer-Encoding: hyper, not reading it, reads the body to the close.
            "chunked after a coding past ASCII",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: caf\xe9, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
                .to_vec(),
            ok(200, b"2\r\nok\r\n0\r\n\r\n", false),
            ok(200, b"ok", false),
        ),
    ];
    for (why, wire, theirs, ours) in cases {
        let strip = |v: Verdict| match v {
            Verdict::Read {
                status,
                body,
                after,
                ..
            } => ok(status, &body, after),
            v => v,
        };
        assert_eq!(strip(hyper(&wire, &[], false)), theirs, "hyper: {why}");
        for cuts in splits(wire.len()) {
            assert_eq!(
                strip(throng(&wire, &cuts, false)),
                ours,
                "throng: {why} {cuts:?}"
            );
        }
    }
    // hyper, after part of a head, parses again only once the head's end has come: a malformed
    // head cut short is `reset` to hyper in pieces and `protocol` whole. throng parses what it
    // has each time: `protocol` at every split (hence hyper's verdicts on whole bytes above).
    let wire = b"HTTP/1.1 200 OK\r\nbad header line\r\nx-a: 1";
    assert_eq!(hyper(wire, &[], false), PROTOCOL);
    assert_eq!(hyper(wire, &[10], false), RESET);
    for cuts in splits(wire.len()) {
        assert_eq!(throng(wire, &cuts, false), PROTOCOL, "{cuts:?}");
    }
}

/// hyper's kinds of error and the socket's below them, as throng's HTTP/2 driver read them
/// when it ran on hyper's client.
fn hyper_class(err: &(dyn std::error::Error + 'static)) -> ErrorClass {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
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
