//! Events timed as they arrive: by the slice that completed them, each from the one before.

use std::time::{Duration, Instant};

use throng_stream::{Framing, Parser, Timed};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn each_event_is_timed_by_the_slice_that_completed_it() {
    let start = Instant::now();
    let mut t = Timed::new(Parser::new(Framing::Sse, 1024), start, 100, true);
    let mut seen = 0;
    let mut count = |_: throng_stream::Event<'_>| seen += 1;
    // The first event arrives in two slices: it is timed by the second.
    t.feed(start + ms(5), b"data: a", &mut count).unwrap();
    t.feed(start + ms(30), b"\n\ndata: b\n\ndata: c\n", &mut count)
        .unwrap();
    t.feed(start + ms(42), b"\ndata: [DONE]\n\n", &mut count)
        .unwrap();
    assert!(!t.finish(start + ms(50), &mut count).unwrap().partial);
    assert_eq!(seen, 4, "the callback sees [DONE] too");
    assert_eq!(t.events(), 3);
    assert!(t.done());
    // a at 30 (from the start), b at 30 (0 after a), c at 42; [DONE] is not an event.
    assert_eq!(t.take_parts(), vec![ms(30), ms(0), ms(12)]);
    assert!(t.take_parts().is_empty(), "handed over once");
    assert_eq!(t.last(), Some(&b"c"[..]));
}

#[test]
fn times_past_the_cap_are_counted_not_kept() {
    let start = Instant::now();
    let mut t = Timed::new(Parser::new(Framing::Ndjson, 1024), start, 2, false);
    for i in 1..=5u64 {
        t.feed(
            start + ms(i),
            format!("{{\"n\":{i}}}\n").as_bytes(),
            &mut |_| {},
        )
        .unwrap();
    }
    // A last line without its newline is an event of the end's time.
    t.feed(start + ms(6), b"{\"n\":6}", &mut |_| {}).unwrap();
    t.finish(start + ms(9), &mut |_| {}).unwrap();
    assert_eq!(t.events(), 6);
    assert_eq!(t.take_parts(), vec![ms(1), ms(1)]);
    assert_eq!(t.last(), None, "not kept unless asked");
    assert!(!t.done());
}

#[test]
fn an_event_past_the_reader_cap_fails_the_feed() {
    let start = Instant::now();
    let mut t = Timed::new(Parser::new(Framing::Sse, 4), start, 10, true);
    let err = t.feed(start, b"data: 12345\n\n", &mut |_| {}).unwrap_err();
    assert_eq!(err, throng_stream::StreamError::TooLarge { limit: 4 });
    assert_eq!((t.events(), t.last()), (0, None));
}
