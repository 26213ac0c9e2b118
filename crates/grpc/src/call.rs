//! One gRPC call on throng-h2: the request's header block encoded once per step
//! (`throng_h2::hpack::Block`), its messages framed once, the reply's bytes only counted unless
//! a check or an extraction reads them, and the status from the trailers (or the headers of a
//! trailers-only reply), which the connection reads as it decodes them.
//!
//! Why not tonic's client for the load: under it, hyper's HTTP/2 client spawns a task for every
//! request and hands the response back through a channel, and tonic's body encoder and decoder
//! allocate their buffers per call. On throng-h2 the user's own task opens the stream on its
//! worker's connection (no lock, no channel, no task per stream) and reads the reply. tonic
//! stays for reflection, which is a handful of calls.

use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use throng_core::{ErrorClass, Outcome};
use throng_h2::client::{Client, Streaming};
use throng_h2::conn::{Field, Keep, Request, Response, StreamError};
use throng_h2::pool::{Pool, Seat};
use tokio::time::Instant;

/// What a call got back when it ended with OK.
pub(crate) struct Answer {
    /// Response headers and trailers (kept when the reply was asked for).
    pub(crate) metadata: Vec<Field>,
    /// The messages, when they were asked for.
    pub(crate) replies: Vec<Bytes>,
}

/// Why a call did not end with OK.
pub(crate) enum CallError {
    /// The server's status: code, message, headers and trailers.
    Status(u8, String, Vec<Field>),
    /// No connection could be made: the outcome to record (boxed: an `Outcome` is larger than
    /// the other variants, and a call's `Result` stays small).
    Connect(Box<Outcome>),
    /// The stream or its connection failed: its class and what happened.
    Transport(ErrorClass, String),
    /// The call's deadline passed before its end (its stream was reset).
    TimedOut,
}

/// A message behind gRPC's 5-byte prefix (uncompressed, length).
pub(crate) fn frame(message: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(5 + message.len());
    b.put_u8(0);
    // A message past 4 GiB cannot be framed; prost would not have encoded one.
    b.put_u32(u32::try_from(message.len()).unwrap_or(u32::MAX));
    b.put_slice(message);
    b.freeze()
}

/// What one call sends and how.
pub(crate) struct Call<'a> {
    /// The request's header block, encoded.
    pub(crate) headers: &'a [u8],
    /// Its messages, framed.
    pub(crate) frames: &'a [Bytes],
    /// Its body, when it is sent whole: the frames together (`None` for a stream of requests).
    pub(crate) body: Option<Bytes>,
    /// The pause before each message after the first (a stream of requests).
    pub(crate) interval: Option<Duration>,
    /// Whether the reply is read as it arrives and its messages timed (a stream of replies).
    pub(crate) timed: bool,
    /// Keep the reply's metadata and messages.
    pub(crate) keep: bool,
}

impl Call<'_> {
    /// The body of a call sent whole: its one message, or a stream of requests that is sent
    /// at once (none, one, or several without `--message-interval`), as one body.
    pub(crate) fn whole(frames: &[Bytes], client_streams: bool, interval: bool) -> Option<Bytes> {
        match frames {
            [one] => Some(one.clone()),
            [] => Some(Bytes::new()),
            _ if client_streams && interval => None,
            many => {
                let mut b = BytesMut::with_capacity(many.iter().map(Bytes::len).sum());
                many.iter().for_each(|f| b.extend_from_slice(f));
                Some(b.freeze())
            }
        }
    }
}

/// Sends `call` on the seat's connection and reads the reply; with `call.timed`, pushes each
/// reply message's time since the one before (the first's since now) to `gaps`. A call the
/// server did not process (above its GOAWAY's last stream id, refused) goes once more, on a new
/// connection, as long as nothing of its reply came. `used` is the connection it went on last
/// (its bytes are the call's).
///
/// The whole call, its attempts and their streams' messages, ends by `by`: the stream's
/// deadline on its connection, which the connection's task watches with one timer for all its
/// streams (`Client::send_by`, `Client::stream_by`), so a call arms no timer of its own; only
/// the rare new connection of a second attempt is bounded by tokio's.
pub(crate) async fn call(
    pool: &Pool,
    seat: &Seat,
    used: &mut Client,
    call: &Call<'_>,
    gaps: &mut Vec<Duration>,
    by: Instant,
) -> Result<Answer, CallError> {
    let mut reader = Reader {
        messages: Messages::default(),
        last: Instant::now(),
        gaps: call.timed.then_some(gaps),
        keep: call.keep,
        buf: BytesMut::new(),
        got: false,
    };
    let mut retried = false;
    loop {
        match once(used, call, &mut reader, by.into_std()).await {
            Ok(resp) => return ended(resp, reader.buf, call.keep),
            Err(StreamError::NotProcessed(_)) if !retried && !reader.got => {
                retried = true;
                let Ok(opened) = tokio::time::timeout_at(by, pool.client(seat)).await else {
                    return Err(CallError::TimedOut);
                };
                *used = opened.map_err(|o| CallError::Connect(Box::new(o)))?;
            }
            Err(StreamError::TimedOut) => return Err(CallError::TimedOut),
            Err(e) => return Err(CallError::Transport(used.classify(&e), e.to_string())),
        }
    }
}

/// One attempt of a call on `client`, its stream's deadline `by`.
async fn once(
    client: &Client,
    call: &Call<'_>,
    reader: &mut Reader<'_>,
    by: std::time::Instant,
) -> Result<Response, StreamError> {
    let keep = Keep {
        headers: call.keep,
        body: call.keep,
        parts: false,
    };
    let mut stream = match &call.body {
        Some(body) if !call.timed => {
            let req = Request {
                headers: call.headers,
                body: body.clone(),
                keep,
            };
            let mut resp = client.send_by(req, by).await?;
            reader.buf = std::mem::take(&mut resp.body);
            return Ok(resp);
        }
        Some(body) => {
            let req = Request {
                headers: call.headers,
                body: body.clone(),
                keep,
            };
            client.stream_by(req, true, by)?
        }
        None => {
            let req = Request {
                headers: call.headers,
                body: call.frames.first().cloned().unwrap_or_default(),
                keep,
            };
            let mut stream = client.stream_by(req, false, by)?;
            if !send_rest(&mut stream, call, reader).await {
                // The reply ended while requests were still to go: it says how the call went.
                return stream.end().await;
            }
            stream
        }
    };
    while let Some(chunk) = stream.data().await {
        reader.chunk(&chunk);
    }
    stream.end().await
}

/// Sends the messages after the first, each after the interval, reading what the reply brings
/// meanwhile; `false` if the reply ended first.
async fn send_rest(stream: &mut Streaming, call: &Call<'_>, reader: &mut Reader<'_>) -> bool {
    let n = call.frames.len();
    for (i, f) in call.frames.iter().enumerate().skip(1) {
        if let Some(d) = call.interval {
            let pause = tokio::time::sleep(d);
            tokio::pin!(pause);
            loop {
                tokio::select! {
                    biased;
                    () = &mut pause => break,
                    chunk = stream.data() => match chunk {
                        Some(c) => reader.chunk(&c),
                        None => return false,
                    },
                }
            }
        }
        if stream.send(f.clone(), i + 1 == n).is_err() {
            return false;
        }
    }
    true
}

/// What is read of a reply as it arrives: where its messages end (timed when asked) and, when
/// kept, its bytes.
struct Reader<'a> {
    messages: Messages,
    last: Instant,
    gaps: Option<&'a mut Vec<Duration>>,
    keep: bool,
    buf: BytesMut,
    /// Whether any of the reply's body came.
    got: bool,
}

impl Reader<'_> {
    fn chunk(&mut self, chunk: &[u8]) {
        self.got = true;
        if let Some(gaps) = &mut self.gaps {
            let n = self.messages.ends(chunk);
            if n > 0 {
                let now = Instant::now();
                gaps.push(now - self.last);
                // Messages that came in one chunk came at once.
                gaps.extend(std::iter::repeat_n(Duration::ZERO, n - 1));
                self.last = now;
            }
        }
        if self.keep {
            self.buf.extend_from_slice(chunk);
        }
    }
}
/// Where a reply's messages end, read chunk by chunk without keeping their bytes.
#[derive(Default)]
struct Messages {
    /// Bytes of the current message's 5-byte prefix read so far, and the prefix.
    head: usize,
    prefix: [u8; 5],
    /// Bytes of the current message's body still to come.
    left: usize,
}

impl Messages {
    /// How many messages end in `chunk`.
    fn ends(&mut self, mut chunk: &[u8]) -> usize {
        let mut n = 0;
        while !chunk.is_empty() {
            if self.head < 5 {
                let take = (5 - self.head).min(chunk.len());
                self.prefix[self.head..self.head + take].copy_from_slice(&chunk[..take]);
                self.head += take;
                chunk = &chunk[take..];
                if self.head < 5 {
                    break;
                }
                let p = self.prefix;
                self.left = u32::from_be_bytes([p[1], p[2], p[3], p[4]]) as usize;
            }
            let take = self.left.min(chunk.len());
            self.left -= take;
            chunk = &chunk[take..];
            if self.left == 0 {
                n += 1;
                self.head = 0;
            }
        }
        n
    }
}

/// The call's end, by its HTTP status and `grpc-status`.
fn ended(resp: Response, body: BytesMut, keep: bool) -> Result<Answer, CallError> {
    let mut metadata = resp.headers;
    metadata.extend(resp.trailers);
    if resp.status != 200 {
        let status = http::StatusCode::from_u16(resp.status)
            .map_or_else(|_| resp.status.to_string(), |s| s.to_string());
        return Err(CallError::Status(
            from_http(resp.status),
            format!("HTTP status {status}"),
            metadata,
        ));
    }
    match resp.grpc_status.map(u8::try_from) {
        Some(Ok(0)) => {
            let replies = if keep {
                messages(body.freeze())
            } else {
                Vec::new()
            };
            Ok(Answer { metadata, replies })
        }
        Some(Ok(c)) => {
            let text = resp
                .grpc_message
                .map(|v| percent_decode(&v))
                .unwrap_or_default();
            Err(CallError::Status(c, text, metadata))
        }
        // tonic says the same of a reply without a status.
        _ => Err(CallError::Status(
            2,
            "the reply ended without a grpc-status".into(),
            metadata,
        )),
    }
}

/// The messages of a reply's body (a message cut short is left out).
fn messages(mut buf: Bytes) -> Vec<Bytes> {
    let mut out = Vec::new();
    while buf.len() >= 5 {
        let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
        if buf.len() < 5 + len {
            break;
        }
        buf.advance(5);
        out.push(buf.split_to(len));
    }
    out
}

/// The gRPC code of a reply with an HTTP status other than 200 (gRPC's HTTP/2 mapping, as
/// tonic reads it).
fn from_http(status: u16) -> u8 {
    match status {
        400 => 13,
        401 => 16,
        403 => 7,
        404 => 12,
        429 | 502..=504 => 14,
        _ => 2,
    }
}

/// `grpc-message` is percent-encoded (percent-encoding decodes it; an escape that is not two hex
/// digits stays as written, bytes that are not UTF-8 become U+FFFD).
fn percent_decode(v: &[u8]) -> String {
    percent_encoding::percent_decode(v)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_messages_and_messages_text() {
        let f = frame(b"ab");
        assert_eq!(&f[..], [0, 0, 0, 0, 2, b'a', b'b']);
        let mut two = BytesMut::new();
        two.extend_from_slice(&frame(b"x"));
        two.extend_from_slice(&frame(b""));
        two.extend_from_slice(&[0, 0, 0]);
        let m = messages(two.freeze());
        assert_eq!(m, [Bytes::from_static(b"x"), Bytes::new()]);
        assert_eq!(percent_decode(b"no%20such%3A x%"), "no such: x%");
        assert_eq!(percent_decode(b"a%2Fb+c %zz%2"), "a/b+c %zz%2");
        assert_eq!(percent_decode(b"caf%C3%A9 %E6%BC%A2"), "café 漢");
        assert_eq!(percent_decode(b"x%FFy"), "x\u{FFFD}y");
        assert_eq!(from_http(503), 14);
    }

    #[test]
    fn message_ends_are_found_across_chunks() {
        let mut wire = BytesMut::new();
        for m in [&b"hello"[..], b"", b"0123456789"] {
            wire.extend_from_slice(&frame(m));
        }
        let wire = wire.freeze();
        // Whole, then one byte at a time, then split inside a prefix and inside a body.
        assert_eq!(Messages::default().ends(&wire), 3);
        let mut m = Messages::default();
        let ones: Vec<usize> = wire.iter().map(|b| m.ends(&[*b])).collect();
        assert_eq!(ones.iter().sum::<usize>(), 3);
        assert_eq!(ones[9], 1, "the first ends with its 10th byte");
        assert_eq!(ones[14], 1, "the empty one with its prefix");
        let mut m = Messages::default();
        assert_eq!(
            [
                m.ends(&wire[..2]),
                m.ends(&wire[2..12]),
                m.ends(&wire[12..])
            ],
            [0, 1, 2]
        );
    }
}
