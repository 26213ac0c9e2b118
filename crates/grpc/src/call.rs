//! One gRPC call on the h2 crate directly: the request's frames are built once, the reply's
//! frames are only counted unless a check or an extraction reads them, and the status comes
//! from the trailers (or the headers of a trailers-only reply).
//!
//! Why not tonic's client for the load: under it, hyper's HTTP/2 client spawns a task for every
//! request and hands the response back through a channel, and tonic's body encoder and decoder
//! allocate their buffers per call. On h2 the user's own task sends the frames and reads the
//! reply. tonic stays for reflection, which is a handful of calls.

use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use h2::client::SendRequest;
use h2::RecvStream;
use http::{HeaderMap, HeaderName, Request, Response};
use tokio::time::Instant;

// Header names parsed once, not at every lookup.
const GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
const GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");

/// What a call got back when it ended with OK.
pub(crate) struct Answer {
    /// Response headers and trailers.
    pub(crate) metadata: HeaderMap,
    /// The messages, when they were asked for.
    pub(crate) replies: Vec<Bytes>,
}

/// Why a call did not end with OK.
pub(crate) enum CallError {
    /// The server's status: code, message, headers and trailers.
    Status(u8, String, HeaderMap),
    /// The connection or the stream failed.
    Transport(h2::Error),
}

impl From<h2::Error> for CallError {
    fn from(e: h2::Error) -> Self {
        CallError::Transport(e)
    }
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

/// Sends `frames` on a new stream (one per `interval` after the first) and reads the reply;
/// with `gaps`, pushes each reply message's time since the one before (the first's since now).
///
/// The sender is the session's own handle, borrowed: cloning h2's `SendRequest` for each call
/// (as `ready()` wants) locks the connection's state twice more per call.
pub(crate) async fn call(
    sender: &mut SendRequest<Bytes>,
    request: Request<()>,
    frames: &[Bytes],
    interval: Option<Duration>,
    keep: bool,
    gaps: Option<&mut Vec<Duration>>,
) -> Result<Answer, CallError> {
    let gaps = gaps.map(|g| (g, Messages::default(), Instant::now()));
    std::future::poll_fn(|cx| sender.poll_ready(cx)).await?;
    let (response, mut body) = sender.send_request(request, false)?;
    let n = frames.len();
    let mut send = |i: usize| match frames.get(i) {
        Some(f) => body.send_data(f.clone(), i + 1 == n),
        None => body.send_data(Bytes::new(), true),
    };
    let (sent, received) = match interval {
        // Without pauses, h2 takes every frame at once (it buffers what the windows do not
        // let out yet): no second future to poll beside the reply's.
        None => {
            let sent = (0..n.max(1)).try_for_each(&mut send);
            (sent, read(response.await?, keep, gaps).await)
        }
        Some(d) => {
            let send = async {
                for i in 0..n.max(1) {
                    if i > 0 {
                        tokio::time::sleep(d).await;
                    }
                    send(i)?;
                }
                Ok::<(), h2::Error>(())
            };
            let receive = async { read(response.await?, keep, gaps).await };
            tokio::join!(send, receive)
        }
    };
    // The reply says more than the sending: a server may answer (and close) before it has read
    // everything.
    let answer = received?;
    sent?;
    Ok(answer)
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

async fn read(
    response: Response<RecvStream>,
    keep: bool,
    mut gaps: Option<(&mut Vec<Duration>, Messages, Instant)>,
) -> Result<Answer, CallError> {
    let (parts, mut body) = response.into_parts();
    let mut metadata = parts.headers;
    if parts.status != http::StatusCode::OK {
        return Err(CallError::Status(
            from_http(parts.status.as_u16()),
            format!("HTTP status {}", parts.status),
            metadata,
        ));
    }
    // A trailers-only reply: the status is in the headers.
    if metadata.contains_key(&GRPC_STATUS) {
        return ended(metadata, Vec::new());
    }
    let mut buf = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        if let Some((gaps, messages, last)) = &mut gaps {
            let n = messages.ends(&chunk);
            if n > 0 {
                let now = Instant::now();
                gaps.push(now - *last);
                // Messages that came in one chunk came at once.
                gaps.extend(std::iter::repeat_n(Duration::ZERO, n - 1));
                *last = now;
            }
        }
        if keep {
            buf.extend_from_slice(&chunk);
        }
    }
    // The status is in the trailers; headers and trailers together only for a reply asked for.
    if let Some(trailers) = body.trailers().await? {
        match keep {
            true => metadata.extend(trailers),
            false => metadata = trailers,
        }
    }
    let replies = if keep {
        messages(buf.freeze())
    } else {
        Vec::new()
    };
    ended(metadata, replies)
}

/// The call's end, by its `grpc-status`.
fn ended(metadata: HeaderMap, replies: Vec<Bytes>) -> Result<Answer, CallError> {
    let code = metadata
        .get(&GRPC_STATUS)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u8>().ok());
    match code {
        Some(0) => Ok(Answer { metadata, replies }),
        Some(c) => {
            let text = metadata
                .get(&GRPC_MESSAGE)
                .map(|v| percent_decode(v.as_bytes()))
                .unwrap_or_default();
            Err(CallError::Status(c, text, metadata))
        }
        // tonic says the same of a reply without a status.
        None => Err(CallError::Status(
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
