//! An answer's body: OpenAI's chunks written on a programmed schedule, polled by hyper
//! itself (no task or channel per stream).

use std::fmt::Write as _;
use std::pin::Pin;
use std::task::{ready, Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use rand::rngs::SmallRng;
use tokio::time::Instant;

use super::clock::Clock;
use super::config::{Fault, Spread};
use crate::Api;

/// How a stream waits for its next token: the server's precise clock, with the deadline and
/// waker it last gave it.
pub(crate) struct Wait {
    pub(crate) clock: Clock,
    pub(crate) given: Option<(Instant, Waker)>,
}

impl Wait {
    fn poll(&mut self, due: Instant, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= due {
            return Poll::Ready(());
        }
        // hyper polls a body again when its connection wakes for other reasons: the clock
        // already holds this deadline for this task, and a second entry would be a second
        // wake-up.
        let known = self
            .given
            .as_ref()
            .is_some_and(|(at, w)| *at == due && w.will_wake(cx.waker()));
        if !known {
            self.clock.wake_at(due.into_std(), cx.waker().clone());
            self.given = Some((due, cx.waker().clone()));
        }
        Poll::Pending
    }
}

/// Words the testbed's tokens are made of.
const WORDS: [&str; 16] = [
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
];

/// The `k`-th token's text (plain ASCII: nothing to escape in JSON).
pub(crate) fn token(k: u32) -> &'static str {
    WORDS[k as usize % WORDS.len()]
}

/// What every chunk of one answer shares.
#[derive(Debug)]
pub(crate) struct Shape {
    pub(crate) api: Api,
    /// `chatcmpl-N` or `cmpl-N`.
    pub(crate) id: String,
    pub(crate) created: u64,
    /// The model as a JSON string, quotes included.
    pub(crate) model: String,
    pub(crate) include_usage: bool,
    pub(crate) prompt_tokens: u64,
    /// `stop`, or `length` when the request's `max_tokens` cut the answer.
    pub(crate) finish: &'static str,
}

impl Shape {
    fn head(&self, out: &mut String) {
        let object = match self.api {
            Api::Chat => "chat.completion.chunk",
            Api::Completions => "text_completion",
        };
        let _ = write!(
            out,
            "data: {{\"id\":\"{}\",\"object\":\"{object}\",\"created\":{},\"model\":{},\"system_fingerprint\":\"fp_throng\",\"choices\":",
            self.id, self.created, self.model
        );
    }

    fn tail(&self, out: &mut String) {
        if self.include_usage {
            out.push_str(",\"usage\":null");
        }
        out.push_str("}\n\n");
    }

    /// A chunk with one choice: a delta (chat: the fields inside `delta`) or a text
    /// (completions), and a finish reason or none.
    fn choice(&self, out: &mut String, delta: &str, text: &str, finish: Option<&str>) {
        self.head(out);
        let finish = finish.map_or_else(|| "null".to_string(), |f| format!("\"{f}\""));
        let _ = match self.api {
            Api::Chat => write!(
                out,
                "[{{\"index\":0,\"delta\":{{{delta}}},\"logprobs\":null,\"finish_reason\":{finish}}}]"
            ),
            Api::Completions => write!(
                out,
                "[{{\"text\":\"{text}\",\"index\":0,\"logprobs\":null,\"finish_reason\":{finish}}}]"
            ),
        };
        self.tail(out);
    }

    /// The end: a chunk with the finish reason, the usage chunk if asked, `[DONE]`.
    fn end(&self, out: &mut String, tokens: u32) {
        self.choice(out, "", "", Some(self.finish));
        if self.include_usage {
            self.head(out);
            let _ = write!(
                out,
                "[],\"usage\":{{\"prompt_tokens\":{p},\"completion_tokens\":{tokens},\"total_tokens\":{t}}}}}\n\n",
                p = self.prompt_tokens,
                t = self.prompt_tokens + u64::from(tokens)
            );
        }
        out.push_str("data: [DONE]\n\n");
    }
}

/// One answer's events with only the token's text left to fill, built once per answer: each
/// token then costs a few copies, not a formatting of its chunk.
pub(crate) struct Frames {
    /// Chat's role chunk, sent with the first token.
    role: Vec<u8>,
    /// A token's chunk before its text, and after it.
    before: Vec<u8>,
    after: Vec<u8>,
    /// The finish chunk, the usage chunk if asked, `[DONE]`.
    end: Vec<u8>,
}

impl Frames {
    /// The frames of `shape`'s answer of `tokens` tokens.
    pub(crate) fn new(shape: &Shape, tokens: u32) -> Frames {
        // A token's chunk made around a mark, and cut there.
        const MARK: &str = "\u{1}";
        let mut chunk = String::new();
        shape.choice(&mut chunk, &format!("\"content\":\"{MARK}\""), MARK, None);
        let (before, after) = chunk.split_once(MARK).unwrap_or((&chunk, ""));
        let mut role = String::new();
        if shape.api == Api::Chat {
            shape.choice(
                &mut role,
                "\"role\":\"assistant\",\"content\":\"\"",
                "",
                None,
            );
        }
        let mut end = String::new();
        shape.end(&mut end, tokens);
        Frames {
            role: role.into_bytes(),
            before: before.as_bytes().to_vec(),
            after: after.as_bytes().to_vec(),
            end: end.into_bytes(),
        }
    }

    /// The bytes of token `k`'s events (and the end's, if `last`).
    pub(crate) fn len(&self, k: u32, last: bool) -> usize {
        let word = token(k).len() + usize::from(k > 0);
        let role = if k == 0 { self.role.len() } else { 0 };
        let end = if last { self.end.len() } else { 0 };
        role + self.before.len() + word + self.after.len() + end
    }

    /// Appends token `k`'s events to `out`, and the end's if `last`.
    pub(crate) fn put(&self, out: &mut Vec<u8>, k: u32, last: bool) {
        if k == 0 {
            out.extend_from_slice(&self.role);
        }
        out.extend_from_slice(&self.before);
        if k > 0 {
            out.push(b' ');
        }
        out.extend_from_slice(token(k).as_bytes());
        out.extend_from_slice(&self.after);
        if last {
            out.extend_from_slice(&self.end);
        }
    }
}

/// A streamed answer: token `k` is due at the request's arrival + TTFT + the gaps drawn for
/// tokens 1..=k (an absolute schedule, so timer lateness never accumulates).
pub(crate) struct TokenBody {
    pub(crate) frames: Frames,
    pub(crate) wait: Wait,
    pub(crate) due: Instant,
    pub(crate) rng: SmallRng,
    pub(crate) itl: Spread<Duration>,
    pub(crate) tokens: u32,
    pub(crate) sent: u32,
    pub(crate) fault: Option<Fault>,
    pub(crate) ended: bool,
    /// The answer's place among those generated at once, given back when it ends.
    pub(crate) slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl http_body::Body for TokenBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let this = &mut *self;
        ready!(this.wait.poll(this.due, cx));
        match this.fault {
            Some(Fault::Cut(n)) if this.sent >= n => {
                this.ended = true;
                this.slot = None;
                return Poll::Ready(Some(Err(std::io::Error::other(
                    "the testbed's fault: the stream cut",
                ))));
            }
            // Never woken: the stream stays open, silent, until a side closes it.
            Some(Fault::Stall(n)) if this.sent >= n => return Poll::Pending,
            _ => {}
        }
        let last = this.sent + 1 >= this.tokens;
        let mut out = Vec::with_capacity(this.frames.len(this.sent, last));
        this.frames.put(&mut out, this.sent, last);
        this.sent += 1;
        if last {
            this.ended = true;
            this.slot = None;
        } else {
            this.due += this.itl.draw(&mut this.rng);
        }
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))))
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }
}
