//! The readers against the WHATWG standard's examples and edge cases, each case fed whole,
//! byte by byte, and in every split into two and three slices: the events (and the error, or
//! how the stream ended) must be the same every time.

use proptest::prelude::*;
use throng_stream::{Ending, Event, Framing, Parser, StreamError};

/// An event, owned, as the tests compare them: (type, data, id) for SSE, the data otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owned {
    Sse(String, String, String),
    Line(String),
    Chunk(Vec<u8>),
}

type Read = (Vec<Owned>, Result<Ending, StreamError>);

fn own(e: Event<'_>) -> Owned {
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match e {
        Event::Sse(e) => Owned::Sse(s(e.event), s(e.data), s(e.id)),
        Event::Line(l) => Owned::Line(s(l)),
        Event::Chunk(c) => Owned::Chunk(c.to_vec()),
    }
}

/// Reads `input` cut at `cuts` (ascending offsets).
fn read_cut(framing: Framing, max: usize, input: &[u8], cuts: &[usize]) -> Read {
    let mut parser = Parser::new(framing, max);
    let mut events = Vec::new();
    let mut from = 0;
    for &to in cuts.iter().chain([input.len()].iter()) {
        if let Err(e) = parser.feed(&input[from..to], &mut |e| events.push(own(e))) {
            return (events, Err(e));
        }
        from = to;
    }
    let end = parser.finish(&mut |e| events.push(own(e)));
    (events, end)
}

/// Reads `input` whole, then checks that byte by byte and every split into two and three
/// slices read the same; returns the whole read.
fn read_all_splits(framing: Framing, max: usize, input: &[u8]) -> Read {
    let whole = read_cut(framing, max, input, &[]);
    let bytes: Vec<usize> = (1..input.len()).collect();
    assert_eq!(read_cut(framing, max, input, &bytes), whole, "byte by byte");
    for i in 0..=input.len() {
        assert_eq!(read_cut(framing, max, input, &[i]), whole, "split at {i}");
        for j in i..=input.len() {
            assert_eq!(
                read_cut(framing, max, input, &[i, j]),
                whole,
                "split at {i} and {j}"
            );
        }
    }
    whole
}

fn sse(input: &str) -> Read {
    read_all_splits(Framing::Sse, 1024, input.as_bytes())
}

fn ev(event: &str, data: &str, id: &str) -> Owned {
    Owned::Sse(event.into(), data.into(), id.into())
}

fn msg(data: &str) -> Owned {
    ev("message", data, "")
}

const WHOLE: Result<Ending, StreamError> = Ok(Ending { partial: false });
const PARTIAL: Result<Ending, StreamError> = Ok(Ending { partial: true });

#[test]
fn standard_stock_example_joins_data_lines_with_newlines() {
    let (events, end) = sse("data: YHOO\ndata: +2\ndata: 10\n\n");
    assert_eq!(events, vec![msg("YHOO\n+2\n10")]);
    assert_eq!(end, WHOLE);
}

#[test]
fn standard_example_with_comment_ids_and_spaces() {
    let input = ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n";
    let (events, end) = sse(input);
    assert_eq!(
        events,
        vec![
            ev("message", "first event", "1"),
            // `id` with no colon sets the last event ID to empty.
            ev("message", "second event", ""),
        ]
    );
    // The third event has no blank line after it: discarded at the end.
    assert_eq!(end, PARTIAL);
    let (events, end) = sse(&format!("{input}\n"));
    // One leading space stripped, not two.
    assert_eq!(events.last(), Some(&msg(" third event")));
    assert_eq!(end, WHOLE);
}

#[test]
fn standard_example_of_empty_data_and_a_trailing_unfinished_event() {
    let (events, end) = sse("data\n\ndata\ndata\n\ndata:");
    assert_eq!(events, vec![msg(""), msg("\n")]);
    assert_eq!(end, PARTIAL);
}

#[test]
fn standard_example_colon_space_is_optional() {
    let (events, _) = sse("data:test\n\ndata: test\n\n");
    assert_eq!(events, vec![msg("test"), msg("test")]);
}

#[test]
fn event_types_and_ids_last_across_events() {
    let input =
        "event: add\ndata: 73857293\nid: 7\n\nevent: remove\ndata: 2153\n\ndata: 113411\n\n";
    let (events, _) = sse(input);
    assert_eq!(
        events,
        vec![
            ev("add", "73857293", "7"),
            // The ID is the stream's last, not reset by an event without one; the type is.
            ev("remove", "2153", "7"),
            ev("message", "113411", "7"),
        ]
    );
}

#[test]
fn cr_lf_and_crlf_line_ends_read_alike() {
    let lf = sse("event: a\ndata: 1\ndata: 2\n\ndata: 3\n\n");
    let cr = sse("event: a\rdata: 1\rdata: 2\r\rdata: 3\r\r");
    let crlf = sse("event: a\r\ndata: 1\r\ndata: 2\r\n\r\ndata: 3\r\n\r\n");
    let mixed = sse("event: a\r\ndata: 1\rdata: 2\n\r\ndata: 3\r\r\n");
    assert_eq!(lf.0, vec![ev("a", "1\n2", ""), msg("3")]);
    assert_eq!(cr, lf);
    assert_eq!(crlf, lf);
    // The last CR LF is one line end after a CR: two line ends, one blank line.
    assert_eq!(mixed, lf);
}

#[test]
fn a_byte_order_mark_is_ignored_once_at_the_start_only() {
    let (events, end) = sse("\u{feff}data: a\n\n\u{feff}data: b\n\ndata: c\n\n");
    // The second mark starts a line whose field is "\u{feff}data": not a field the standard
    // knows, so ignored.
    assert_eq!(events, vec![msg("a"), msg("c")]);
    assert_eq!(end, WHOLE);
    // The mark's first bytes, then something else: all of it is the stream's.
    let (events, _) = read_all_splits(Framing::Sse, 1024, b"\xEF\xBBdata: x\n\ndata: y\n\n");
    assert_eq!(events, vec![msg("y")]);
    let (events, end) = read_all_splits(Framing::Sse, 1024, b"\xEF");
    assert_eq!((events, end), (vec![], PARTIAL));
}

#[test]
fn fields_unknown_or_without_colon_and_retry() {
    let mut parser = throng_stream::SseParser::new(1024);
    let mut events = Vec::new();
    parser
        .feed(
            b"retry: 1500\nfoo: bar\ndata\nretry: x1\nid: a\0b\n\nretry\n",
            &mut |e| events.push(own(Event::Sse(e))),
        )
        .unwrap();
    assert_eq!(events, vec![msg("")]);
    // `retry: x1` is not digits, `retry` with no value neither: 1500 stays.
    assert_eq!(parser.retry(), Some(1500));
    // An ID with a NUL is ignored.
    parser
        .feed(b"data: z\n\n", &mut |e| events.push(own(Event::Sse(e))))
        .unwrap();
    assert_eq!(events.last(), Some(&msg("z")));
    assert_eq!(parser.events(), 2);
}

#[test]
fn comments_are_counted_not_dispatched() {
    let mut parser = throng_stream::SseParser::default();
    let mut n = 0;
    parser
        .feed(b": ping\n:\n\n: ping\ndata: x\n\n", &mut |_| n += 1)
        .unwrap();
    assert_eq!((n, parser.comments()), (1, 3));
}

#[test]
fn openai_stream_and_its_done_sentinel() {
    let input = concat!(
        "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n",
        ": keep-alive\n\n",
        "data: {\"choices\":[],\"usage\":{\"completion_tokens\":1}}\n\n",
        "data: [DONE]\n\n",
    );
    let whole = sse(input);
    assert_eq!(whole.0.len(), 3);
    let mut parser = Parser::new(Framing::Sse, 1024);
    let mut done = Vec::new();
    parser
        .feed(input.as_bytes(), &mut |e| done.push(e.is_done()))
        .unwrap();
    assert_eq!(done, vec![false, false, true]);
}

#[test]
fn an_event_past_the_cap_is_an_error_in_every_split() {
    // The data buffer holds each line and its newline: 7 bytes of data fit in 8, 8 do not.
    let (events, end) = read_all_splits(Framing::Sse, 8, b"data: 1234567\n\ndata: x\n\n");
    assert_eq!((events, end), (vec![msg("1234567"), msg("x")], WHOLE));
    let (events, end) =
        read_all_splits(Framing::Sse, 8, b"data: a\n\ndata: 12345678\n\ndata: x\n\n");
    assert_eq!(events, vec![msg("a")]);
    assert_eq!(end, Err(StreamError::TooLarge { limit: 8 }));
    // Data of many small lines passes the cap as a whole.
    let (events, end) = read_all_splits(Framing::Sse, 8, b"data: 12\ndata: 34\ndata: 56\n\n");
    assert_eq!(
        (events, end),
        (vec![], Err(StreamError::TooLarge { limit: 8 }))
    );
    // A line longer than the cap and room for a field's name (16), a comment's too: nothing
    // is buffered without bound.
    let (_, end) = read_all_splits(Framing::Sse, 8, b": 1234567890123456789012\n\n");
    assert_eq!(end, Ok(Ending { partial: false }));
    let (_, end) = read_all_splits(Framing::Sse, 8, b": 12345678901234567890123\n\n");
    assert_eq!(end, Err(StreamError::TooLarge { limit: 8 }));
}

#[test]
fn a_failed_reader_stays_failed() {
    let mut parser = Parser::new(Framing::Sse, 4);
    let err = parser.feed(b"data: 12345\n\n", &mut |_| {}).unwrap_err();
    assert_eq!(err, StreamError::TooLarge { limit: 4 });
    assert_eq!(
        parser.feed(b"data: 1\n\n", &mut |_| panic!("read after failing")),
        Err(err.clone())
    );
    assert_eq!(parser.finish(&mut |_| {}), Err(err));
}

#[test]
fn a_long_stream_keeps_its_memory_bounded() {
    // 100,000 events through a 64-byte cap: nothing accumulates.
    let mut parser = Parser::new(Framing::Sse, 64);
    let mut n = 0u64;
    for i in 0..100_000u32 {
        let event = format!("id: {i}\ndata: {{\"n\":{i}}}\n\n");
        parser.feed(event.as_bytes(), &mut |_| n += 1).unwrap();
    }
    assert_eq!(n, 100_000);
}

#[test]
fn ndjson_lines_with_lf_crlf_empty_lines_and_a_last_line_without_newline() {
    let (events, end) = read_all_splits(
        Framing::Ndjson,
        1024,
        b"{\"a\":1}\n\r\n{\"b\":2}\r\n\n{\"c\":\r3}\n[DONE]\n{\"d\":4}",
    );
    let line = |s: &str| Owned::Line(s.into());
    assert_eq!(
        events,
        vec![
            line("{\"a\":1}"),
            line("{\"b\":2}"),
            line("{\"c\":\r3}"),
            line("[DONE]"),
            line("{\"d\":4}")
        ]
    );
    assert_eq!(end, WHOLE);
    let mut parser = Parser::new(Framing::Ndjson, 64);
    let mut done = Vec::new();
    parser
        .feed(b"x\n[DONE]\n", &mut |e| done.push(e.is_done()))
        .unwrap();
    assert_eq!(done, vec![false, true]);
}

#[test]
fn ndjson_cap_counts_the_line_without_its_end() {
    let (events, end) = read_all_splits(Framing::Ndjson, 4, b"1234\r\n5678\n");
    assert_eq!(
        events,
        vec![Owned::Line("1234".into()), Owned::Line("5678".into())]
    );
    assert_eq!(end, WHOLE);
    let (events, end) = read_all_splits(Framing::Ndjson, 4, b"1234\n12345\r\n6\n");
    assert_eq!(events, vec![Owned::Line("1234".into())]);
    assert_eq!(end, Err(StreamError::TooLarge { limit: 4 }));
    let (_, end) = read_all_splits(Framing::Ndjson, 4, b"12345");
    assert_eq!(end, Err(StreamError::TooLarge { limit: 4 }));
}

#[test]
fn chunks_are_the_slices_as_they_came() {
    let mut parser = Parser::new(Framing::Chunks, 1);
    let mut chunks = Vec::new();
    for slice in [&b"abc"[..], b"", b"defgh"] {
        parser.feed(slice, &mut |e| chunks.push(own(e))).unwrap();
    }
    assert_eq!(parser.finish(&mut |_| {}), WHOLE);
    assert_eq!(
        chunks,
        vec![
            Owned::Chunk(b"abc".to_vec()),
            Owned::Chunk(b"defgh".to_vec())
        ]
    );
}

#[test]
fn framing_names_parse_and_print() {
    for f in [Framing::Sse, Framing::Ndjson, Framing::Chunks] {
        assert_eq!(f.to_string().parse::<Framing>(), Ok(f));
        assert_eq!(Parser::new(f, 1).framing(), f);
    }
    let err = "json".parse::<Framing>().unwrap_err();
    assert!(
        err.contains("`json`") && err.contains("sse, ndjson or chunks"),
        "{err}"
    );
}

/// Bytes drawn from what makes SSE and NDJSON interesting.
fn stream_bytes() -> impl Strategy<Value = Vec<u8>> {
    let atoms = prop::sample::select(vec![
        &b"data"[..],
        b"data:",
        b"data: ",
        b"event:",
        b"id:",
        b"retry: 12",
        b":",
        b" ",
        b"\n",
        b"\r",
        b"\r\n",
        b"x",
        b"[DONE]",
        b"\xEF\xBB\xBF",
        b"\xEF",
        b"\0",
    ]);
    prop::collection::vec(atoms, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn any_split_reads_as_the_whole(
        input in stream_bytes(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        max in 4usize..40,
    ) {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
        cuts.sort_unstable();
        for framing in [Framing::Sse, Framing::Ndjson] {
            prop_assert_eq!(
                read_cut(framing, max, &input, &cuts),
                read_cut(framing, max, &input, &[])
            );
        }
    }
}

/// The standard's algorithm read plainly, on a whole stream: the oracle for random streams.
fn reference(input: &[u8]) -> Read {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    let (mut events, mut data, mut event, mut id) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut rest = input;
    while let Some(i) = rest.iter().position(|&b| b == b'\r' || b == b'\n') {
        let line = &rest[..i];
        let end = if rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n') {
            2
        } else {
            1
        };
        rest = &rest[i + end..];
        if line.is_empty() {
            if !data.is_empty() {
                data.pop();
                let kind = if event.is_empty() {
                    b"message".to_vec()
                } else {
                    event.clone()
                };
                let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                events.push(Owned::Sse(s(&kind), s(&data), s(&id)));
            }
            data.clear();
            event.clear();
            continue;
        }
        if line[0] == b':' {
            continue;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(c) => (
                &line[..c],
                line[c + 1..].strip_prefix(b" ").unwrap_or(&line[c + 1..]),
            ),
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                data.extend_from_slice(value);
                data.push(b'\n');
            }
            b"event" => event = value.to_vec(),
            b"id" if !value.contains(&0) => id = value.to_vec(),
            _ => {}
        }
    }
    // What is left: an unfinished line, or an event never dispatched.
    let partial = !rest.is_empty() || !data.is_empty();
    (events, Ok(Ending { partial }))
}

proptest! {
    // Pure calls, a few microseconds each: many cases find the rarer shapes (a second space
    // after a colon, a CR LF split by a mark).
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn random_streams_read_as_the_standard_says(input in stream_bytes()) {
        prop_assert_eq!(read_cut(Framing::Sse, 1 << 20, &input, &[]), reference(&input));
    }
}
