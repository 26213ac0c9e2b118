//! The connection state machine without I/O, against a server scripted frame by frame: every
//! byte it writes is read back as frames, every answer is fed in pieces split anywhere.

use bytes::{Bytes, BytesMut};
use throng_h2::conn::{Config, Conn, ConnError, Keep, Request, Response, StreamError};
use throng_h2::frame::{self, flag, kind, setting, Head, Reason, PREFACE};
use throng_h2::hpack::{encode_field, Block, Decoder};

/// A frame as written by the client.
#[derive(Debug, Clone)]
struct F {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Vec<u8>,
}

/// The frames in `bytes` (whole frames only).
fn frames(mut bytes: &[u8]) -> Vec<F> {
    if bytes.starts_with(PREFACE) {
        bytes = &bytes[PREFACE.len()..];
    }
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let h = Head::read(bytes);
        out.push(F {
            kind: h.kind,
            flags: h.flags,
            stream: h.stream,
            payload: bytes[9..9 + h.len].to_vec(),
        });
        bytes = &bytes[9 + h.len..];
    }
    out
}

fn written(c: &mut Conn) -> Vec<F> {
    let mut buf = Vec::new();
    c.swap_out(&mut buf);
    frames(&buf)
}

/// The streams whose HEADERS the connection wrote since the last look.
fn headers_sent(c: &mut Conn) -> Vec<u32> {
    written(c)
        .iter()
        .filter(|f| f.kind == kind::HEADERS)
        .map(|f| f.stream)
        .collect()
}

fn frame_bytes(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_header(&mut out, payload.len(), kind, flags, stream);
    out.extend_from_slice(payload);
    out
}

fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_settings(&mut out, pairs);
    out
}

fn response_block(status: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    encode_field(&mut b, b":status", status.as_bytes(), false);
    for (n, v) in extra {
        encode_field(&mut b, n.as_bytes(), v.as_bytes(), false);
    }
    b
}

/// Feeds `bytes` to the connection in pieces of `step` bytes.
fn feed(c: &mut Conn, bytes: &[u8], step: usize) -> Result<(), ConnError> {
    let mut buf = BytesMut::new();
    for piece in bytes.chunks(step.max(1)) {
        buf.extend_from_slice(piece);
        c.recv(&mut buf)?;
    }
    assert!(buf.is_empty(), "{} bytes left unread", buf.len());
    Ok(())
}

fn get() -> Vec<u8> {
    Block::builder()
        .field(":method", b"GET")
        .field(":scheme", b"http")
        .field(":path", b"/")
        .field(":authority", b"test")
        .build()
        .fixed()
        .expect("fixed")
        .to_vec()
}

fn req<'a>(block: &'a [u8], body: &'static [u8]) -> Request<'a> {
    Request {
        headers: block,
        body: Bytes::from_static(body),
        keep: Keep {
            headers: true,
            body: true,
            parts: false,
        },
    }
}

/// A connection past the handshake, with the server's settings `pairs`.
fn ready(cfg: Config, pairs: &[(u16, u32)]) -> Conn {
    let mut c = Conn::new(cfg);
    let mut server = settings(pairs);
    server.extend(frame_bytes(kind::SETTINGS, flag::ACK, 0, &[]));
    feed(&mut c, &server, 1000).expect("handshake");
    let out = written(&mut c);
    assert!(out
        .iter()
        .any(|f| f.kind == kind::SETTINGS && f.flags == flag::ACK));
    c
}

fn done(c: &mut Conn, key: &throng_h2::conn::Key) -> Result<Response, StreamError> {
    c.take(key).expect("complete")
}

#[test]
fn the_preface_settings_and_connection_window_go_first() {
    let mut c = Conn::new(Config::default());
    let mut buf = Vec::new();
    c.swap_out(&mut buf);
    assert!(buf.starts_with(PREFACE));
    let f = frames(&buf);
    assert_eq!(f[0].kind, kind::SETTINGS);
    assert!(f[0]
        .payload
        .chunks(6)
        .any(|p| p == [0, setting::ENABLE_PUSH as u8, 0, 0, 0, 0]));
    assert_eq!(f[1].kind, kind::WINDOW_UPDATE);
    let inc = u32::from_be_bytes(f[1].payload[..4].try_into().unwrap());
    assert_eq!(inc, 5 * 1024 * 1024 - 65_535);
}

#[test]
fn a_response_split_anywhere_reads_the_same() {
    let block = get();
    let mut answer = settings(&[]);
    let head = response_block("200", &[("content-type", "text/plain"), ("x-a", "b")]);
    answer.extend(frame_bytes(kind::HEADERS, flag::END_HEADERS, 1, &head));
    answer.extend(frame_bytes(kind::DATA, 0, 1, b"hello, "));
    // Padded DATA: pad length 3, then 3 bytes of padding.
    answer.extend(frame_bytes(kind::DATA, flag::PADDED, 1, b"\x03world\0\0\0"));
    answer.extend(frame_bytes(kind::DATA, flag::END_STREAM, 1, b"!"));
    for step in [1, 2, 7, 9, 10, 64, 4096] {
        let mut c = Conn::new(Config::default());
        let key = c.open(req(&block, b"")).expect("open");
        let out = written(&mut c);
        let h = out
            .iter()
            .find(|f| f.kind == kind::HEADERS)
            .expect("HEADERS");
        assert_eq!(
            (h.stream, h.flags),
            (1, flag::END_STREAM | flag::END_HEADERS)
        );
        assert_eq!(h.payload, block);
        feed(&mut c, &answer, step).expect("answer");
        let r = done(&mut c, &key).expect("ok");
        assert_eq!(r.status, 200);
        assert_eq!(&r.body[..], b"hello, world!");
        assert_eq!((r.body_len, r.data_frames), (13, 3));
        assert_eq!(r.headers[1], (b"x-a".to_vec(), b"b".to_vec()));
        assert_eq!(c.open_streams(), 0);
    }
}

#[test]
fn a_header_block_in_continuations_with_padding_and_priority_and_1xx_skipped() {
    let block = get();
    let mut c = ready(Config::default(), &[]);
    let key = c.open(req(&block, b"")).expect("open");
    written(&mut c);
    let mut answer = Vec::new();
    // A 103 first, skipped.
    let early = response_block("103", &[("link", "</a>")]);
    answer.extend(frame_bytes(kind::HEADERS, flag::END_HEADERS, 1, &early));
    let long = "v".repeat(300);
    let head = response_block("404", &[("x-long", &long), ("x-b", "c")]);
    // HEADERS with padding (2) and a priority block, then two CONTINUATIONs.
    let mut first = vec![2u8, 0, 0, 0, 0, 16];
    first.extend_from_slice(&head[..100]);
    first.extend_from_slice(&[0, 0]);
    answer.extend(frame_bytes(
        kind::HEADERS,
        flag::PADDED | flag::PRIORITY,
        1,
        &first,
    ));
    answer.extend(frame_bytes(kind::CONTINUATION, 0, 1, &head[100..200]));
    answer.extend(frame_bytes(
        kind::CONTINUATION,
        flag::END_HEADERS,
        1,
        &head[200..],
    ));
    // Trailers.
    let mut t = Vec::new();
    encode_field(&mut t, b"grpc-status", b"5", false);
    encode_field(&mut t, b"grpc-message", b"not%20found", false);
    answer.extend(frame_bytes(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &t,
    ));
    feed(&mut c, &answer, 13).expect("answer");
    let r = done(&mut c, &key).expect("ok");
    assert_eq!(r.status, 404);
    assert_eq!(r.headers[0].1.len(), 300);
    assert_eq!(r.grpc_status, Some(5));
    assert_eq!(r.grpc_message.as_deref(), Some(&b"not%20found"[..]));
    assert_eq!(r.trailers.len(), 2);
}

#[test]
fn requests_over_max_concurrent_streams_wait_and_go_in_order() {
    let block = get();
    let mut c = ready(Config::default(), &[(setting::MAX_CONCURRENT_STREAMS, 2)]);
    let keys: Vec<_> = (0..4)
        .map(|_| c.open(req(&block, b"")).expect("open"))
        .collect();
    let ids: Vec<u32> = headers_sent(&mut c);
    assert_eq!(ids, [1, 3]);
    assert_eq!(c.waiting_streams(), 2);
    let ok = response_block("200", &[]);
    feed(
        &mut c,
        &frame_bytes(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 3, &ok),
        100,
    )
    .expect("3");
    let ids: Vec<u32> = headers_sent(&mut c);
    assert_eq!(ids, [5]);
    assert_eq!(done(&mut c, &keys[1]).expect("3").status, 200);
    // The server raises the limit mid-run: the last one goes at once.
    feed(
        &mut c,
        &settings(&[(setting::MAX_CONCURRENT_STREAMS, 10)]),
        100,
    )
    .expect("settings");
    let ids: Vec<u32> = headers_sent(&mut c);
    assert_eq!(ids, [7]);
    assert!(c.take(&keys[0]).is_none());
}

#[test]
fn a_request_past_its_deadline_times_out_and_its_stream_is_cancelled_or_forgotten() {
    use std::time::{Duration, Instant};
    let block = get();
    let mut c = ready(Config::default(), &[(setting::MAX_CONCURRENT_STREAMS, 2)]);
    let t0 = Instant::now();
    let at = |ms| t0 + Duration::from_millis(ms);
    // Streams 1 and 3 open, the third waits for a slot; the second has no deadline.
    let keys: Vec<_> = (0..3)
        .map(|_| c.open(req(&block, b"")).expect("open"))
        .collect();
    c.set_deadline(&keys[0], at(100));
    c.set_deadline(&keys[2], at(50));
    assert_eq!(c.next_deadline(), Some(at(50)));
    written(&mut c);
    // Before any deadline nothing changes, and the earliest is still to come.
    assert_eq!(c.expire(at(49)), Some(at(50)));
    assert!(c.take(&keys[2]).is_none());
    assert!(written(&mut c).is_empty());
    // The waiting request is forgotten (no frame), the open one is not yet due.
    assert_eq!(c.expire(at(50)), Some(at(100)));
    assert_eq!(done(&mut c, &keys[2]), Err(StreamError::TimedOut));
    assert!(written(&mut c).is_empty());
    assert_eq!(c.waiting_streams(), 0);
    // Stream 1 is reset with CANCEL and its slot frees a place: the next request goes at once.
    assert_eq!(c.expire(at(100)), None);
    assert_eq!(done(&mut c, &keys[0]), Err(StreamError::TimedOut));
    let out = written(&mut c);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].kind, out[0].stream), (kind::RST_STREAM, 1));
    assert_eq!(out[0].payload, Reason::CANCEL.0.to_be_bytes());
    assert_eq!(c.open_streams(), 1);
    let next = c.open(req(&block, b"")).expect("open");
    let ids: Vec<u32> = headers_sent(&mut c);
    assert_eq!(ids, [5]);
    // A late answer on the cancelled stream is ignored; the others' still count.
    let ok = response_block("200", &[]);
    for id in [1, 3, 5] {
        let f = frame_bytes(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, id, &ok);
        feed(&mut c, &f, 7).expect("answer");
    }
    assert_eq!(done(&mut c, &keys[1]).expect("3").status, 200);
    assert_eq!(done(&mut c, &next).expect("5").status, 200);
}

#[test]
fn goaway_ends_the_streams_above_its_last_id_as_not_processed_and_lets_the_rest_finish() {
    let block = get();
    let mut c = ready(Config::default(), &[(setting::MAX_CONCURRENT_STREAMS, 3)]);
    let keys: Vec<_> = (0..4)
        .map(|_| c.open(req(&block, b"")).expect("open"))
        .collect();
    written(&mut c);
    let mut g = 1u32.to_be_bytes().to_vec();
    g.extend_from_slice(&0u32.to_be_bytes());
    feed(&mut c, &frame_bytes(kind::GOAWAY, 0, 0, &g), 5).expect("goaway");
    assert!(!c.is_usable());
    for k in &keys[1..] {
        assert!(matches!(done(&mut c, k), Err(StreamError::NotProcessed(_))));
    }
    assert!(matches!(
        c.open(req(&block, b"")),
        Err(StreamError::NotProcessed(_))
    ));
    assert!(!c.is_closed(), "stream 1 is still in flight");
    let ok = response_block("200", &[]);
    feed(
        &mut c,
        &frame_bytes(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, &ok),
        3,
    )
    .expect("1");
    assert_eq!(done(&mut c, &keys[0]).expect("1").status, 200);
    assert!(c.is_closed());
}

#[test]
fn rst_stream_refused_is_not_processed_and_others_are_resets() {
    let block = get();
    let mut c = ready(Config::default(), &[]);
    let a = c.open(req(&block, b"")).expect("a");
    let b = c.open(req(&block, b"")).expect("b");
    let mut answer = frame_bytes(
        kind::RST_STREAM,
        0,
        1,
        &Reason::REFUSED_STREAM.0.to_be_bytes(),
    );
    answer.extend(frame_bytes(
        kind::RST_STREAM,
        0,
        3,
        &Reason::INTERNAL_ERROR.0.to_be_bytes(),
    ));
    // A frame on a stream already reset is ignored.
    answer.extend(frame_bytes(kind::WINDOW_UPDATE, 0, 3, &5u32.to_be_bytes()));
    feed(&mut c, &answer, 4).expect("rst");
    assert!(matches!(
        done(&mut c, &a),
        Err(StreamError::NotProcessed(_))
    ));
    assert_eq!(
        done(&mut c, &b),
        Err(StreamError::Reset(Reason::INTERNAL_ERROR))
    );
    assert!(c.is_usable());
}

#[test]
fn a_body_waits_for_both_windows_and_follows_settings_changes() {
    static BODY: [u8; 100_000] = [7u8; 100_000];
    let block = get();
    let mut c = ready(Config::default(), &[]);
    let key = c.open(req(&block, &BODY)).expect("open");
    let out = written(&mut c);
    let sent: usize = out
        .iter()
        .filter(|f| f.kind == kind::DATA)
        .map(|f| f.payload.len())
        .sum();
    assert_eq!(sent, 65_535, "the initial windows");
    assert!(out
        .iter()
        .filter(|f| f.kind == kind::DATA)
        .all(|f| f.payload.len() <= 16_384));
    // The connection's window opens, not the stream's: nothing more.
    feed(
        &mut c,
        &frame_bytes(kind::WINDOW_UPDATE, 0, 0, &100_000u32.to_be_bytes()),
        3,
    )
    .expect("wu");
    assert!(written(&mut c).is_empty());
    // The stream's initial window is raised by SETTINGS mid-run: 10,000 more.
    feed(
        &mut c,
        &settings(&[(setting::INITIAL_WINDOW_SIZE, 75_535)]),
        7,
    )
    .expect("settings");
    let out = written(&mut c);
    let sent: usize = out
        .iter()
        .filter(|f| f.kind == kind::DATA)
        .map(|f| f.payload.len())
        .sum();
    assert_eq!(sent, 10_000);
    // Lowered below what is in flight: the window goes negative and nothing is sent ...
    feed(&mut c, &settings(&[(setting::INITIAL_WINDOW_SIZE, 1)]), 7).expect("settings");
    feed(
        &mut c,
        &frame_bytes(kind::WINDOW_UPDATE, 0, 1, &75_000u32.to_be_bytes()),
        3,
    )
    .expect("wu");
    let sent: usize = written(&mut c)
        .iter()
        .filter(|f| f.kind == kind::DATA)
        .map(|f| f.payload.len())
        .sum();
    assert_eq!(sent, 0, "the stream's window is -534");
    feed(
        &mut c,
        &frame_bytes(kind::WINDOW_UPDATE, 0, 1, &30_000u32.to_be_bytes()),
        3,
    )
    .expect("wu");
    let out = written(&mut c);
    let data: Vec<&F> = out.iter().filter(|f| f.kind == kind::DATA).collect();
    let sent: usize = data.iter().map(|f| f.payload.len()).sum();
    assert_eq!(sent, 100_000 - 75_535, "the rest of the body");
    assert_eq!(data.last().expect("data").flags, flag::END_STREAM);
    let ok = response_block("200", &[]);
    feed(
        &mut c,
        &frame_bytes(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, &ok),
        3,
    )
    .expect("ok");
    assert_eq!(done(&mut c, &key).expect("ok").status, 200);
}

#[test]
fn our_receive_windows_are_replenished_at_half() {
    let block = get();
    let cfg = Config {
        stream_window: 1000,
        conn_window: 65_535,
        ..Config::default()
    };
    let mut c = ready(cfg, &[]);
    let key = c.open(req(&block, b"")).expect("open");
    written(&mut c);
    let mut answer = frame_bytes(
        kind::HEADERS,
        flag::END_HEADERS,
        1,
        &response_block("200", &[]),
    );
    for _ in 0..100 {
        answer.extend(frame_bytes(kind::DATA, 0, 1, &[1u8; 400]));
    }
    answer.extend(frame_bytes(kind::DATA, flag::END_STREAM, 1, &[]));
    feed(&mut c, &answer, 409).expect("answer");
    let out = written(&mut c);
    let stream_inc: u32 = out
        .iter()
        .filter(|f| f.kind == kind::WINDOW_UPDATE && f.stream == 1)
        .map(|f| u32::from_be_bytes(f.payload[..4].try_into().unwrap()))
        .sum();
    let conn_inc: u32 = out
        .iter()
        .filter(|f| f.kind == kind::WINDOW_UPDATE && f.stream == 0)
        .map(|f| u32::from_be_bytes(f.payload[..4].try_into().unwrap()))
        .sum();
    assert_eq!(stream_inc, 40_000);
    assert!(conn_inc >= 40_000 - 32_768, "{conn_inc}");
    assert_eq!(done(&mut c, &key).expect("ok").body_len, 40_000);
    // Beyond the stream's window: a stream error, the connection lives.
    let cfg = Config {
        stream_window: 100,
        ..Config::default()
    };
    let mut c = ready(cfg, &[]);
    let key = c.open(req(&block, b"")).expect("open");
    let mut answer = frame_bytes(
        kind::HEADERS,
        flag::END_HEADERS,
        1,
        &response_block("200", &[]),
    );
    answer.extend(frame_bytes(kind::DATA, 0, 1, &[1u8; 101]));
    feed(&mut c, &answer, 1000).expect("answer");
    assert!(matches!(
        done(&mut c, &key),
        Err(StreamError::Protocol(Reason::FLOW_CONTROL_ERROR, _))
    ));
    assert!(written(&mut c)
        .iter()
        .any(|f| f.kind == kind::RST_STREAM && f.stream == 1));
    assert!(c.is_usable());
}

#[test]
fn pings_are_answered_and_ours_counted() {
    let mut c = ready(Config::default(), &[]);
    feed(&mut c, &frame_bytes(kind::PING, 0, 0, b"12345678"), 2).expect("ping");
    let out = written(&mut c);
    assert_eq!(
        (out[0].kind, out[0].flags, &out[0].payload[..]),
        (kind::PING, flag::ACK, &b"12345678"[..])
    );
    c.ping(*b"abcdefgh");
    written(&mut c);
    feed(
        &mut c,
        &frame_bytes(kind::PING, flag::ACK, 0, b"abcdefgh"),
        17,
    )
    .expect("ack");
    assert_eq!(c.pings_acked(), 1);
}

#[test]
fn an_http1_answer_is_not_http2() {
    let block = get();
    let mut c = Conn::new(Config::default());
    let key = c.open(req(&block, b"")).expect("open");
    let e = feed(&mut c, b"HTTP/1.1 400 Bad Request\r\n\r\n", 5);
    assert_eq!(e, Err(ConnError::NotHttp2));
    assert_eq!(
        done(&mut c, &key),
        Err(StreamError::Conn(ConnError::NotHttp2))
    );
}

#[test]
fn connection_errors_send_goaway_and_fail_every_stream() {
    let block = get();
    let cases: Vec<(&str, Vec<u8>, Reason)> = vec![
        (
            "DATA on stream 0",
            frame_bytes(kind::DATA, 0, 0, b"x"),
            Reason::PROTOCOL_ERROR,
        ),
        (
            "a stream never opened",
            frame_bytes(kind::DATA, 0, 9, b"x"),
            Reason::PROTOCOL_ERROR,
        ),
        (
            "push",
            frame_bytes(kind::PUSH_PROMISE, flag::END_HEADERS, 1, &[0, 0, 0, 2]),
            Reason::PROTOCOL_ERROR,
        ),
        (
            "bad HPACK",
            frame_bytes(kind::HEADERS, flag::END_HEADERS, 1, &[0xbf]),
            Reason::COMPRESSION_ERROR,
        ),
        (
            "ping size",
            frame_bytes(kind::PING, 0, 0, b"1234"),
            Reason::FRAME_SIZE_ERROR,
        ),
        (
            "oversized frame",
            frame_bytes(kind::DATA, 0, 1, &[0u8; 16_385]),
            Reason::FRAME_SIZE_ERROR,
        ),
        (
            "window overflow",
            frame_bytes(kind::WINDOW_UPDATE, 0, 0, &0x7fff_ffffu32.to_be_bytes()),
            Reason::FLOW_CONTROL_ERROR,
        ),
        (
            "settings size",
            frame_bytes(kind::SETTINGS, 0, 0, &[0, 4, 0]),
            Reason::FRAME_SIZE_ERROR,
        ),
        (
            "interrupted block",
            {
                let mut b = frame_bytes(kind::HEADERS, 0, 1, &response_block("200", &[]));
                b.extend(frame_bytes(kind::PING, 0, 0, b"12345678"));
                b
            },
            Reason::PROTOCOL_ERROR,
        ),
        (
            "continuation alone",
            frame_bytes(kind::CONTINUATION, flag::END_HEADERS, 1, &[0x88]),
            Reason::PROTOCOL_ERROR,
        ),
    ];
    for (name, bytes, reason) in cases {
        let mut c = ready(Config::default(), &[]);
        let key = c.open(req(&block, b"")).expect("open");
        written(&mut c);
        let e = feed(&mut c, &bytes, 100_000);
        assert!(
            matches!(&e, Err(ConnError::Protocol(r, _)) if *r == reason),
            "{name}: {e:?}"
        );
        let out = written(&mut c);
        let g = out
            .iter()
            .find(|f| f.kind == kind::GOAWAY)
            .unwrap_or_else(|| panic!("{name}: GOAWAY"));
        assert_eq!(&g.payload[4..8], &reason.0.to_be_bytes(), "{name}");
        assert!(
            matches!(done(&mut c, &key), Err(StreamError::Conn(_))),
            "{name}"
        );
        assert!(c.is_closed() && !c.is_usable(), "{name}");
    }
}

#[test]
fn stream_errors_reset_one_stream_and_unknown_frames_are_ignored() {
    let block = get();
    let mut c = ready(Config::default(), &[]);
    let a = c.open(req(&block, b"")).expect("a");
    let b = c.open(req(&block, b"")).expect("b");
    written(&mut c);
    let mut answer = frame_bytes(0xfa, 0x3, 0, b"an extension frame");
    answer.extend(frame_bytes(kind::PRIORITY, 0, 3, &[0, 0, 0, 0, 9]));
    // DATA before the head on stream 1; trailers without END_STREAM on stream 3.
    answer.extend(frame_bytes(kind::DATA, 0, 1, b"x"));
    answer.extend(frame_bytes(
        kind::HEADERS,
        flag::END_HEADERS,
        3,
        &response_block("200", &[]),
    ));
    let mut t = Vec::new();
    encode_field(&mut t, b"x-t", b"1", false);
    answer.extend(frame_bytes(kind::HEADERS, flag::END_HEADERS, 3, &t));
    feed(&mut c, &answer, 11).expect("stream errors only");
    assert!(matches!(
        done(&mut c, &a),
        Err(StreamError::Protocol(Reason::PROTOCOL_ERROR, _))
    ));
    assert!(matches!(
        done(&mut c, &b),
        Err(StreamError::Protocol(Reason::PROTOCOL_ERROR, _))
    ));
    let rst: Vec<u32> = written(&mut c)
        .iter()
        .filter(|f| f.kind == kind::RST_STREAM)
        .map(|f| f.stream)
        .collect();
    assert_eq!(rst, [1, 3]);
    assert!(c.is_usable());
}

#[test]
fn a_lowered_header_table_size_is_signalled_once_at_the_next_block() {
    let block = get();
    let mut c = ready(Config::default(), &[(setting::HEADER_TABLE_SIZE, 0)]);
    c.open(req(&block, b"")).expect("a");
    c.open(req(&block, b"")).expect("b");
    let hs: Vec<F> = written(&mut c)
        .into_iter()
        .filter(|f| f.kind == kind::HEADERS)
        .collect();
    assert_eq!(hs[0].payload[0], 0x20, "size update to 0 first");
    assert_eq!(&hs[0].payload[1..], &block[..]);
    assert_eq!(hs[1].payload, block);
    // The server's decoder (ours, here) reads both.
    let mut d = Decoder::new(4096);
    for h in &hs {
        d.decode(&h.payload, |_, _| {}).expect("valid");
    }
}

#[test]
fn a_header_block_larger_than_the_frame_size_goes_in_continuations() {
    let long = vec![b'{'; 40_000]; // 15 bits in Huffman: sent plain
    let block = Block::builder()
        .field(":method", b"GET")
        .field("x-long", &long)
        .build();
    let block = block.fixed().expect("fixed").to_vec();
    let mut c = ready(Config::default(), &[]);
    c.open(req(&block, b"")).expect("open");
    let out = written(&mut c);
    let kinds: Vec<(u8, u8)> = out.iter().map(|f| (f.kind, f.flags)).collect();
    assert_eq!(
        kinds,
        [
            (kind::HEADERS, flag::END_STREAM),
            (kind::CONTINUATION, 0),
            (kind::CONTINUATION, flag::END_HEADERS)
        ]
    );
    let joined: Vec<u8> = out.iter().flat_map(|f| f.payload.clone()).collect();
    assert_eq!(joined, block);
}

#[test]
fn the_connections_end_fails_open_streams_and_unsent_requests_are_not_processed() {
    let block = get();
    let mut c = ready(Config::default(), &[(setting::MAX_CONCURRENT_STREAMS, 1)]);
    let a = c.open(req(&block, b"")).expect("a");
    let b = c.open(req(&block, b"")).expect("b");
    c.fail(ConnError::Closed("eof".into()));
    assert_eq!(
        done(&mut c, &a),
        Err(StreamError::Conn(ConnError::Closed("eof".into())))
    );
    assert!(matches!(
        done(&mut c, &b),
        Err(StreamError::NotProcessed(_))
    ));
}

#[test]
fn a_body_sent_in_parts_ends_with_the_last_and_an_empty_end_is_an_empty_data_frame() {
    let block = get();
    let mut c = ready(Config::default(), &[]);
    let key = c.open_partial(req(&block, b"ab")).expect("open");
    let out = written(&mut c);
    let kinds: Vec<(u8, u8, usize)> = out
        .iter()
        .map(|f| (f.kind, f.flags, f.payload.len()))
        .collect();
    assert_eq!(
        kinds,
        [
            (kind::HEADERS, flag::END_HEADERS, block.len()),
            (kind::DATA, 0, 2)
        ]
    );
    c.send_data(&key, Bytes::from_static(b"cd"), false)
        .expect("more");
    c.send_data(&key, Bytes::new(), true).expect("end");
    let out = written(&mut c);
    let kinds: Vec<(u8, u8, Vec<u8>)> = out
        .iter()
        .map(|f| (f.kind, f.flags, f.payload.clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            (kind::DATA, 0, b"cd".to_vec()),
            (kind::DATA, flag::END_STREAM, vec![])
        ]
    );
    assert!(
        c.send_data(&key, Bytes::from_static(b"x"), true).is_err(),
        "ended"
    );
    // A second request whose whole body waits for a window it does not have.
    feed(&mut c, &settings(&[(setting::INITIAL_WINDOW_SIZE, 0)]), 100).expect("settings");
    let other = c.open_partial(req(&block, b"")).expect("open");
    c.send_data(&other, Bytes::from_static(b"held"), true)
        .expect("held");
    let out = written(&mut c);
    assert!(
        out.iter().all(|f| f.kind != kind::DATA),
        "no window: nothing sent"
    );
    feed(
        &mut c,
        &frame_bytes(kind::WINDOW_UPDATE, 0, 3, &10u32.to_be_bytes()),
        100,
    )
    .expect("wu");
    let out = written(&mut c);
    let data: Vec<(u8, Vec<u8>)> = out
        .iter()
        .filter(|f| f.kind == kind::DATA)
        .map(|f| (f.flags, f.payload.clone()))
        .collect();
    assert_eq!(data, [(flag::END_STREAM, b"held".to_vec())]);
    // The first request was ended before its response came: no reset.
    let ok = response_block("200", &[]);
    feed(
        &mut c,
        &frame_bytes(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, &ok),
        3,
    )
    .expect("ok");
    assert_eq!(done(&mut c, &key).expect("ok").status, 200);
    assert!(written(&mut c).iter().all(|f| f.kind != kind::RST_STREAM));
}

#[test]
fn a_response_that_ends_before_the_request_body_resets_the_rest() {
    let block = get();
    let mut c = ready(Config::default(), &[]);
    let key = c.open_partial(req(&block, b"part")).expect("open");
    written(&mut c);
    let ok = response_block("200", &[]);
    feed(
        &mut c,
        &frame_bytes(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, &ok),
        3,
    )
    .expect("ok");
    let out = written(&mut c);
    let rst: Vec<(u32, Vec<u8>)> = out
        .iter()
        .filter(|f| f.kind == kind::RST_STREAM)
        .map(|f| (f.stream, f.payload.clone()))
        .collect();
    assert_eq!(rst, [(1, Reason::CANCEL.0.to_be_bytes().to_vec())]);
    assert!(c
        .send_data(&key, Bytes::from_static(b"late"), true)
        .is_err());
    assert_eq!(done(&mut c, &key).expect("ok").status, 200);
}

#[test]
fn a_header_block_over_the_limit_is_a_connection_error_however_it_is_split() {
    let block = get();
    let cfg = Config {
        max_header_block: 1000,
        ..Config::default()
    };
    let mut c = ready(cfg, &[]);
    let key = c.open(req(&block, b"")).expect("open");
    written(&mut c);
    let long = "v".repeat(1500);
    let head = response_block("200", &[("x-long", &long)]);
    let mut answer = frame_bytes(kind::HEADERS, 0, 1, &head[..600]);
    answer.extend(frame_bytes(kind::CONTINUATION, 0, 1, &head[600..]));
    answer.extend(frame_bytes(kind::CONTINUATION, flag::END_HEADERS, 1, &[]));
    let e = feed(&mut c, &answer, 50);
    assert!(
        matches!(e, Err(ConnError::Protocol(Reason::ENHANCE_YOUR_CALM, _))),
        "{e:?}"
    );
    assert!(matches!(done(&mut c, &key), Err(StreamError::Conn(_))));
    // Under the limit, the same split reads.
    let mut c = ready(Config::default(), &[]);
    let key = c.open(req(&block, b"")).expect("open");
    feed(&mut c, &answer, 50).expect("1.5 KB is fine by default");
    assert!(c.take(&key).is_none(), "head read, body to come");
}

/// Arbitrary frames (any type, flags, stream, payload of any length up to 64 bytes) after the
/// handshake, on a connection with requests open: a stream error, a connection error or
/// nothing, never a panic; the output stays bounded. A cheap fuzz, seeded.
#[test]
fn arbitrary_frames_never_panic() {
    let block = get();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..20_000 {
        let mut c = ready(Config::default(), &[]);
        let keys: Vec<_> = (0..3)
            .map(|_| c.open(req(&block, b"body")).expect("open"))
            .collect();
        written(&mut c);
        let mut bytes = Vec::new();
        for _ in 0..(next() % 6 + 1) {
            let kind = (next() % 12) as u8;
            let flags = next() as u8;
            let stream = (next() % 8) as u32;
            let len = (next() % 65) as usize;
            let payload: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            bytes.extend(frame_bytes(kind, flags, stream, &payload));
        }
        let step = (next() % 20 + 1) as usize;
        let mut buf = BytesMut::new();
        for piece in bytes.chunks(step) {
            buf.extend_from_slice(piece);
            if c.recv(&mut buf).is_err() {
                break;
            }
        }
        let mut out = Vec::new();
        c.swap_out(&mut out);
        assert!(out.len() < 64 * 1024);
        for k in &keys {
            let _ = c.take(k);
        }
    }
}
