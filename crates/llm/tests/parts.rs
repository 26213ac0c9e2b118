//! Request bodies, prompts files, per-request figures and goodput, without a server.
#![allow(clippy::unwrap_used)] // helpers of tests: a failure is the test's

use std::time::{Duration, Instant};

use serde_json::json;
use throng_llm::{
    generated_prompts, read_prompts, Api, Figure, Figures, Goodput, Prompt, PromptError,
    PromptText, RequestSpec, Token, TokenSource, Tracker,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn chat_and_completions_bodies_are_openai_streaming_requests() {
    let mut spec = RequestSpec::new(Api::Chat, "llama");
    spec.max_tokens = Some(128);
    let prompt = Prompt {
        text: PromptText::Text("Say hi".into()),
        max_tokens: None,
    };
    assert_eq!(
        spec.body(&prompt),
        json!({
            "model": "llama",
            "messages": [{"role": "user", "content": "Say hi"}],
            "max_tokens": 128,
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
    let mut spec = RequestSpec::new(Api::Completions, "m");
    spec.include_usage = false;
    spec.extra.insert("temperature".into(), json!(0));
    let own = Prompt {
        text: PromptText::Text("Once".into()),
        max_tokens: Some(7),
    };
    assert_eq!(
        spec.body(&own),
        json!({"model": "m", "prompt": "Once", "max_tokens": 7, "stream": true, "temperature": 0})
    );
    let bodies = spec.bodies(&[own.clone(), own]);
    assert_eq!(bodies.len(), 2);
    let parsed: serde_json::Value = serde_json::from_slice(&bodies[0]).unwrap();
    assert_eq!(parsed["prompt"], "Once");
    assert_eq!(Api::Chat.path(), "/v1/chat/completions");
    assert_eq!(Api::Completions.path(), "/v1/completions");
    assert_eq!("completions".parse(), Ok(Api::Completions));
    assert!("embeddings"
        .parse::<Api>()
        .unwrap_err()
        .contains("chat or completions"));
}

#[test]
fn a_prompts_file_reads_prompt_messages_and_max_tokens() {
    let file = concat!(
        "{\"prompt\": \"a b c\", \"id\": 7}\n",
        "\n",
        "{\"messages\": [{\"role\": \"system\", \"content\": \"x\"}, {\"role\": \"user\", \"content\": \"y\"}], \"max_tokens\": 32}\n",
    );
    let prompts = read_prompts(file.as_bytes(), "p.jsonl", Api::Chat).unwrap();
    assert_eq!(prompts.len(), 2);
    assert_eq!(prompts[0].text, PromptText::Text("a b c".into()));
    assert_eq!(prompts[1].max_tokens, Some(32));
    let body = RequestSpec::new(Api::Chat, "m").body(&prompts[1]);
    assert_eq!(body["messages"][1]["content"], "y");
    assert_eq!(body["max_tokens"], 32);
}

#[test]
fn a_bad_prompts_file_names_its_line() {
    let cases = [
        (
            "{\"prompt\": \"ok\"}\nnot json\n",
            Api::Chat,
            "p.jsonl:2: not JSON",
        ),
        (
            "{\"text\": \"x\"}\n",
            Api::Chat,
            "p.jsonl:1: neither `prompt` nor `messages`",
        ),
        ("{\"prompt\": 3}\n", Api::Chat, "`prompt` is 3"),
        (
            "{\"prompt\": \"x\", \"max_tokens\": 0}\n",
            Api::Chat,
            "positive integer",
        ),
        ("{\"messages\": []}\n", Api::Chat, "non-empty array"),
        (
            "{\"messages\": [{\"role\": \"user\"}]}\n",
            Api::Completions,
            "`messages` is for chat",
        ),
        ("[1]\n", Api::Chat, "expected a JSON object"),
    ];
    for (file, api, want) in cases {
        let err = read_prompts(file.as_bytes(), "p.jsonl", api).unwrap_err();
        assert!(err.to_string().contains(want), "{file:?}: {err}");
    }
    let err = read_prompts("\n\n".as_bytes(), "empty.jsonl", Api::Chat).unwrap_err();
    assert!(matches!(err, PromptError::Empty { .. }), "{err}");
}

#[test]
fn generated_prompts_have_n_words_differ_and_repeat_with_the_seed() {
    let a = generated_prompts(5, 100, 1);
    let b = generated_prompts(5, 100, 1);
    assert_eq!(a, b);
    assert_ne!(a, generated_prompts(5, 100, 2));
    let texts: Vec<&str> = a
        .iter()
        .map(|p| match &p.text {
            PromptText::Text(t) => t.as_str(),
            PromptText::Messages(_) => panic!("a generated prompt is a text"),
        })
        .collect();
    assert!(texts.iter().all(|t| t.split(' ').count() == 100));
    assert_ne!(texts[0], texts[1]);
}

fn chat(content: &str) -> Vec<u8> {
    json!({"choices": [{"index": 0, "delta": {"content": content}}]})
        .to_string()
        .into_bytes()
}

/// A chat stream read at the given milliseconds after the start: the role chunk, tokens,
/// usage, [DONE].
fn read(events: &[(u64, Vec<u8>)]) -> (Vec<Token>, Figures) {
    let start = Instant::now();
    let mut tracker = Tracker::new(Api::Chat, start);
    let tokens = events
        .iter()
        .map(|(at, data)| tracker.event(start + ms(*at), data).unwrap())
        .collect();
    (tokens, tracker.figures())
}

#[test]
fn figures_of_a_chat_stream_with_usage() {
    let role = json!({"choices": [{"delta": {"role": "assistant", "content": ""}}]});
    let usage = json!({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 5}});
    let (tokens, f) = read(&[
        (100, role.to_string().into_bytes()),
        (100, chat("a")),
        (120, chat("b")),
        (150, chat("c")),
        (151, usage.to_string().into_bytes()),
        (152, b"[DONE]".to_vec()),
    ]);
    assert_eq!(
        tokens,
        vec![
            Token::None,
            Token::First(ms(100)),
            Token::Next(ms(20)),
            Token::Next(ms(30)),
            Token::None,
            Token::None
        ]
    );
    assert_eq!(f.ttft, Some(ms(100)));
    assert_eq!(f.e2e, ms(150));
    // The server said 5 tokens in 3 events: its count wins, and TPOT is (150 − 100) / 4.
    assert_eq!((f.output_tokens, f.source), (5, TokenSource::Usage));
    assert_eq!(f.tpot, Some(Duration::from_micros(12_500)));
    assert_eq!(
        (f.prompt_tokens, f.content_events, f.done),
        (Some(9), 3, true)
    );
}

#[test]
fn figures_counted_from_deltas_without_usage() {
    let (_, f) = read(&[(40, chat("a")), (50, chat("b")), (70, chat("c"))]);
    assert_eq!((f.output_tokens, f.source), (3, TokenSource::Counted));
    assert_eq!(f.tpot, Some(ms(15)));
    assert!(!f.done);
    // One token: no TPOT. None: no TTFT either.
    let (_, f) = read(&[(40, chat("a"))]);
    assert_eq!((f.ttft, f.tpot), (Some(ms(40)), None));
    let (_, f) = read(&[(40, b"[DONE]".to_vec())]);
    assert_eq!((f.ttft, f.e2e, f.output_tokens), (None, Duration::ZERO, 0));
}

#[test]
fn completions_read_text_and_reasoning_counts_as_content() {
    let start = Instant::now();
    let mut t = Tracker::new(Api::Completions, start);
    let text = json!({"choices": [{"text": "Hi", "index": 0}]}).to_string();
    assert_eq!(
        t.event(start + ms(5), text.as_bytes()),
        Ok(Token::First(ms(5)))
    );
    // A chat delta in a completions stream is not its content.
    assert_eq!(t.event(start + ms(6), &chat("x")), Ok(Token::None));
    let mut t = Tracker::new(Api::Chat, start);
    let think = json!({"choices": [{"delta": {"reasoning_content": "hmm"}}]}).to_string();
    assert_eq!(
        t.event(start + ms(3), think.as_bytes()),
        Ok(Token::First(ms(3)))
    );
}

#[test]
fn chunks_that_are_not_json_or_carry_an_error_fail() {
    let start = Instant::now();
    let mut t = Tracker::new(Api::Chat, start);
    let err = t.event(start, b"{not json").unwrap_err();
    assert!(err.to_string().contains("{not json"), "{err}");
    let err = t
        .event(
            start,
            br#"{"error": {"message": "overloaded", "code": 503}}"#,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the server's error in the stream: overloaded"
    );
}

fn figures(ttft: u64, tpot: Option<u64>, e2e: u64) -> Figures {
    Figures {
        ttft: Some(ms(ttft)),
        e2e: ms(e2e),
        tpot: tpot.map(ms),
        output_tokens: 10,
        source: TokenSource::Usage,
        prompt_tokens: None,
        content_events: 10,
        done: true,
    }
}

#[test]
fn goodput_objectives_parse_and_judge_each_request() {
    let g: Goodput = "ttft<200ms, tpot<=50ms".parse().unwrap();
    assert_eq!(g.objectives.len(), 2);
    assert_eq!(g.objectives[0].figure, Figure::Ttft);
    assert_eq!(g.objectives[1].to_string(), "tpot<=50ms");
    assert!(figures(199, Some(50), 5000).meets(&g));
    assert!(
        !figures(200, Some(50), 5000).meets(&g),
        "< excludes its bound"
    );
    assert!(!figures(100, Some(51), 5000).meets(&g));
    // Fewer than two tokens: TPOT counts as 0, as in vLLM.
    assert!(figures(100, None, 5000).meets(&g));
    let mut none = figures(0, None, 0);
    none.ttft = None;
    assert!(!none.meets(&g), "a request with no token is never good");
    // vLLM's form: milliseconds, at most.
    let v: Goodput = "ttft:200,e2el:1500".parse().unwrap();
    assert!(figures(200, None, 1500).meets(&v));
    assert!(!figures(200, None, 1501).meets(&v));
    let fine: Goodput = "e2e<1.5s,ttft<800us".parse().unwrap();
    assert_eq!(fine.objectives[0].bound, ms(1500));
    assert_eq!(fine.objectives[1].bound, Duration::from_micros(800));
}

#[test]
fn bad_goodput_names_the_objective() {
    let cases = [
        ("ttft<200", "`ttft<200`: `200` needs a unit"),
        ("ttft<200ms,itl<5ms", "`itl<5ms`: `itl` is not a figure"),
        ("ttft>200ms", "expected FIGURE<DURATION"),
        ("ttft<2h", "`h` is not a unit"),
        ("ttft<1ms,ttft<2ms", "ttft is bounded twice"),
        ("ttft<1ms,", "an empty objective"),
        ("tpot:abc", "`abc` is not milliseconds"),
    ];
    for (s, want) in cases {
        let err = s.parse::<Goodput>().unwrap_err().to_string();
        assert!(err.contains(want), "{s}: {err}");
    }
}
