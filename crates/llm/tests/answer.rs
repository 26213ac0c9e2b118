//! A streamed answer read whole through the SSE reader and the tracker, in any split.

use std::time::{Duration, Instant};

use throng_llm::{Answer, Api, ChunkError, TokenSource};
use throng_stream::Framing;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A chat answer as OpenAI streams it: the role, three tokens, the finish, usage, [DONE].
const BODY: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}],\"usage\":null}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}],\"usage\":null}\n\n",
    ": keep-alive\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}],\"usage\":null}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"}}],\"usage\":null}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3,\"total_tokens\":7}}\n\n",
    "data: [DONE]\n\n",
);

#[test]
fn every_split_gives_the_same_tokens_and_each_part_its_slice_time() {
    // Where each content event is complete: the end of the blank line after it.
    let ends: Vec<usize> = ["\"Hel\"", "\"lo\"", "\"!\""]
        .iter()
        .map(|c| {
            let at = BODY.find(c).unwrap();
            at + BODY[at..].find("\n\n").unwrap() + 2
        })
        .collect();
    let start = Instant::now();
    for cut in 0..=BODY.len() {
        let mut a = Answer::new(Api::Chat, Framing::Sse, 4096, start, 100);
        a.feed(start + ms(10), &BODY.as_bytes()[..cut]).unwrap();
        a.feed(start + ms(25), &BODY.as_bytes()[cut..]).unwrap();
        assert!(!a.finish().unwrap().partial);
        let f = a.figures();
        assert_eq!(
            (f.output_tokens, f.source, f.content_events),
            (3, TokenSource::Usage, 3)
        );
        assert_eq!((f.prompt_tokens, f.done), (Some(4), true));
        // Each content event is timed by the slice that completed it.
        let times: Vec<Duration> = ends
            .iter()
            .map(|&end| if end <= cut { ms(10) } else { ms(25) })
            .collect();
        let want = vec![times[0], times[1] - times[0], times[2] - times[1]];
        assert_eq!(a.take_parts(), want, "cut at {cut}");
        assert_eq!((f.ttft, f.e2e), (Some(times[0]), times[2]));
    }
}

#[test]
fn parts_past_the_cap_are_counted_not_timed() {
    let start = Instant::now();
    let mut a = Answer::new(Api::Chat, Framing::Sse, 4096, start, 2);
    a.feed(start + ms(7), BODY.as_bytes()).unwrap();
    assert_eq!(a.take_parts(), vec![ms(7), Duration::ZERO]);
    assert_eq!(a.figures().content_events, 3);
}

#[test]
fn an_error_in_the_stream_is_the_failure_and_what_came_before_counts() {
    let start = Instant::now();
    let mut a = Answer::new(Api::Chat, Framing::Sse, 4096, start, 100);
    let body = concat!(
        "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
        "data: {\"error\":{\"message\":\"out of memory\"}}\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n",
    );
    a.feed(start + ms(3), body.as_bytes()).unwrap();
    assert_eq!(
        a.failure(),
        Some(&ChunkError::Server("out of memory".into()))
    );
    assert_eq!(a.figures().content_events, 1);
    assert_eq!(a.take_parts(), vec![ms(3)]);
    // An event over the cap is the reader's error.
    let mut a = Answer::new(Api::Chat, Framing::Sse, 16, start, 100);
    assert!(a.feed(start, BODY.as_bytes()).is_err());
}

#[test]
fn ndjson_framed_chunks_read_alike() {
    let start = Instant::now();
    let mut a = Answer::new(Api::Completions, Framing::Ndjson, 4096, start, 100);
    let body = "{\"choices\":[{\"text\":\"x\"}]}\n{\"choices\":[{\"text\":\"y\"}]}\n";
    a.feed(start + ms(1), body.as_bytes()).unwrap();
    a.finish().unwrap();
    let f = a.figures();
    assert_eq!(
        (f.output_tokens, f.source, f.done),
        (2, TokenSource::Counted, false)
    );
}
