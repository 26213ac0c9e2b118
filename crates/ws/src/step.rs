//! What a `ws` step is, how it compiles from a scenario, the protocol's registration data
//! (schemes, key, statuses) and the URL run's plan.

use std::time::Duration;

use throng_core::stages::parse_duration;
use throng_core::step::{
    ClientOptions, Node, NodeValue, Place, Protocol, StepError, TemplateCompiler, Text,
};
use throng_core::steps::Steps;
use throng_core::Status;

use crate::client::WsClient;

/// What a step waits for once its messages are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// One message back per message sent (an echo, a request and its answer).
    Replies,
    /// This many messages back (`expect: N`); 0 sends and waits for nothing.
    Count(u32),
    /// Whatever the server pushes for this long (`for: 2s`): the step lasts that long.
    For(Duration),
}

/// A compiled `ws` step: messages to send (text, templated, or the same text as binary
/// frames) and what to wait for.
#[derive(Debug, Clone, PartialEq)]
pub struct WsStep {
    /// The messages, sent in order.
    pub send: Vec<Text>,
    /// Send them as binary messages (their text's bytes) rather than text.
    pub binary: bool,
    /// What the step waits for.
    pub until: Until,
    /// Where it was written.
    pub at: Place,
}

impl WsStep {
    /// A step that sends `messages` as text and waits for one reply to each.
    pub fn text<I: IntoIterator<Item = S>, S: Into<String>>(messages: I) -> Self {
        WsStep {
            send: messages
                .into_iter()
                .map(|m| Text::Static(m.into()))
                .collect(),
            binary: false,
            until: Until::Replies,
            at: Place::default(),
        }
    }

    /// The same step waiting for `until` instead.
    pub fn until(mut self, until: Until) -> Self {
        self.until = until;
        self
    }

    /// The same step sending its messages as binary.
    pub fn binary(mut self, binary: bool) -> Self {
        self.binary = binary;
        self
    }

    /// The messages it waits for, if a count (`None` for `for`).
    pub fn expected(&self) -> Option<u32> {
        match self.until {
            Until::Replies => Some(u32::try_from(self.send.len()).unwrap_or(u32::MAX)),
            Until::Count(n) => Some(n),
            Until::For(_) => None,
        }
    }

    /// A step must send something or wait for something.
    fn check(&self) -> Result<(), StepError> {
        if self.send.is_empty() && self.until == Until::Replies {
            return Err(StepError::at(
                self.at,
                "ws: a step sends a message (`send`), or waits for some (`expect` or `for`)",
            ));
        }
        Ok(())
    }
}

/// The WebSocket protocol's own options, found by [`ClientOptions::of`] (the defaults when
/// none are set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WsOptions {
    /// The largest message (and frame) the client reads, in bytes: a larger one fails its step
    /// with class `protocol` and closes the connection, so that a user holds at most this much.
    pub max_message: usize,
    /// Subprotocols offered in `Sec-WebSocket-Protocol`, in order of preference (none by
    /// default).
    pub subprotocols: Vec<String>,
    /// A URL run's step ([`url_steps`]): wait for this many messages rather than one reply per
    /// message sent.
    pub expect: Option<u32>,
    /// A URL run's step: wait this long for whatever the server pushes instead.
    pub listen: Option<Duration>,
    /// A URL run's step: send the message as binary.
    pub binary: bool,
}

/// 1 MiB: a chat message, a price tick or a JSON document fits many times over, and ten
/// thousand users reading the largest at once hold 10 GiB at worst, not tungstenite's 64 MiB
/// each.
pub const DEFAULT_MAX_MESSAGE: usize = 1 << 20;

impl Default for WsOptions {
    fn default() -> Self {
        WsOptions {
            max_message: DEFAULT_MAX_MESSAGE,
            subprotocols: Vec::new(),
            expect: None,
            listen: None,
            binary: false,
        }
    }
}

/// `throng run ws://…`: one step, labelled with the URL, that sends `message` (if any: a run
/// may only listen) and waits as `options`' [`WsOptions`] say (one reply by default; `expect`
/// messages; or `listen` for a while). The message is sent as written; one with templates is
/// a step compiled through [`WsProtocol`] and rendered by the caller's [`Steps::rendered_by`].
pub fn url_steps(
    url: &str,
    options: &ClientOptions,
    message: Option<&str>,
) -> Result<Steps<WsClient>, String> {
    let own = options.of::<WsOptions>().cloned().unwrap_or_default();
    let until = match (own.expect, own.listen) {
        (Some(_), Some(_)) => {
            return Err(
                "a WebSocket run waits for a count of messages or for a while, not both".into(),
            )
        }
        (Some(n), None) => Until::Count(n),
        (None, Some(d)) => Until::For(d),
        (None, None) => Until::Replies,
    };
    let step = WsStep::text(message).until(until).binary(own.binary);
    step.check().map_err(|_| {
        "a WebSocket run sends a message (-d), or waits for some (a count or a while)".to_string()
    })?;
    let client = WsClient::new(url, options)?;
    Steps::new(client, step, url).map_err(|e| e.message)
}

/// The protocol: `ws://` and `wss://` targets, steps under `ws`.
#[derive(Debug, Clone, Copy, Default)]
pub struct WsProtocol;

/// The fields of a `ws` step written as a map.
const FIELDS: [&str; 4] = ["send", "binary", "expect", "for"];

impl Protocol for WsProtocol {
    type Client = WsClient;

    fn name(&self) -> &'static str {
        "ws"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["ws", "wss"]
    }

    const TLS_SCHEMES: &'static [&'static str] = &["wss"];

    fn key(&self) -> &'static str {
        "ws"
    }

    fn step_help(&self) -> &'static str {
        "a message to send, or `send` (a message or a list), `binary`, `expect` (a count of \
         messages to wait for) or `for` (a duration to listen)"
    }

    fn check_target(&self, url: &str) -> Result<(), String> {
        crate::client::Target::parse(url).map(|_| ())
    }

    fn compile(&self, node: &Node, t: &mut dyn TemplateCompiler) -> Result<WsStep, StepError> {
        let mut step = WsStep {
            send: Vec::new(),
            binary: false,
            until: Until::Replies,
            at: node.at,
        };
        if !matches!(node.value, NodeValue::Map(_)) {
            // `ws: hello`: one message, one reply.
            step.send.push(t.text(&node.text("ws")?, node.at)?);
            return Ok(step);
        }
        let fields = node.fields("ws", &FIELDS)?;
        if let Some(send) = fields.get("send") {
            match &send.value {
                NodeValue::List(items) => {
                    for m in items {
                        step.send.push(t.text(&m.text("ws send")?, m.at)?);
                    }
                }
                _ => step.send.push(t.text(&send.text("ws send")?, send.at)?),
            }
        }
        if let Some(b) = fields.get("binary") {
            step.binary = match b.value {
                NodeValue::Bool(b) => b,
                _ => return Err(StepError::at(b.at, "ws binary: expected true or false")),
            };
        }
        let expect = match fields.get("expect") {
            None => None,
            Some(n) => match &n.value {
                NodeValue::Number(x) => match x.as_u64().and_then(|x| u32::try_from(x).ok()) {
                    Some(x) => Some(x),
                    None => return Err(count_error(n.at)),
                },
                _ => return Err(count_error(n.at)),
            },
        };
        let listen = match fields.get("for") {
            None => None,
            Some(d) => {
                let text = d.text("ws for")?;
                match parse_duration(&text) {
                    Ok(d) if !d.is_zero() => Some(d),
                    Ok(_) => return Err(StepError::at(d.at, "ws for: must be longer than 0")),
                    Err(e) => return Err(StepError::at(d.at, format!("ws for: {e}"))),
                }
            }
        };
        step.until = match (expect, listen) {
            (Some(_), Some(_)) => {
                return Err(StepError::at(
                    node.at,
                    "ws: a step waits for `expect` messages or `for` a while, not both",
                ))
            }
            (Some(n), None) => Until::Count(n),
            (None, Some(d)) => Until::For(d),
            (None, None) => Until::Replies,
        };
        step.check()?;
        Ok(step)
    }

    fn status(&self, expected: &Node) -> Result<Status, StepError> {
        let text = expected.text("status")?;
        crate::status::parse(&text)
            .map(crate::status::status)
            .ok_or_else(|| {
                StepError::at(
                    expected.at,
                    format!(
                        "a ws status is 0 (OK, still open) or a close code of 1000 to 4999, by \
                         number or name (NORMAL_CLOSURE, INTERNAL_ERROR), not {text:?}"
                    ),
                )
            })
    }

    fn client(&self, url: &str, options: &ClientOptions) -> Result<WsClient, String> {
        WsClient::new(url, options)
    }
}

fn count_error(at: Place) -> StepError {
    StepError::at(at, "ws expect: a whole number of messages, 0 or more")
}

#[cfg(test)]
mod tests {
    use super::*;

    use throng_core::step::Uncompiled as Plain;

    fn node(v: serde_json::Value) -> Node {
        Node::from_json(&v, Place { line: 3, column: 7 })
    }

    #[test]
    fn steps_compile_from_a_message_or_a_map() {
        let p = WsProtocol;
        let one = p
            .compile(&node(serde_json::json!("hi {{ user }}")), &mut Plain)
            .unwrap();
        assert_eq!(one.send, vec![Text::Template("hi {{ user }}".into())]);
        assert_eq!((one.until, one.expected()), (Until::Replies, Some(1)));
        let two = p
            .compile(
                &node(serde_json::json!({"send": ["a", "b"], "binary": true, "expect": 5})),
                &mut Plain,
            )
            .unwrap();
        assert_eq!(two.send.len(), 2);
        assert!(two.binary);
        assert_eq!(two.expected(), Some(5));
        let listen = p
            .compile(&node(serde_json::json!({"for": "250ms"})), &mut Plain)
            .unwrap();
        assert_eq!(listen.until, Until::For(Duration::from_millis(250)));
        assert_eq!(listen.expected(), None);
        let just_send = p
            .compile(
                &node(serde_json::json!({"send": "x", "expect": 0})),
                &mut Plain,
            )
            .unwrap();
        assert_eq!(just_send.expected(), Some(0));
    }

    #[test]
    fn bad_steps_are_refused_at_their_place() {
        let p = WsProtocol;
        for (bad, says) in [
            (serde_json::json!({"sned": "x"}), "unknown field `sned`"),
            (serde_json::json!({}), "sends a message"),
            (
                serde_json::json!({"send": "x", "expect": -1}),
                "whole number",
            ),
            (
                serde_json::json!({"send": "x", "expect": "many"}),
                "whole number",
            ),
            (serde_json::json!({"for": "soon"}), "ws for"),
            (serde_json::json!({"for": "0s"}), "longer than 0"),
            (serde_json::json!({"expect": 2, "for": "1s"}), "not both"),
            (
                serde_json::json!({"send": "x", "binary": "yes"}),
                "true or false",
            ),
            (serde_json::json!([1, 2]), "expected a string"),
        ] {
            let e = p.compile(&node(bad.clone()), &mut Plain).unwrap_err();
            assert!(e.message.contains(says), "{bad}: {}", e.message);
            assert_eq!(e.at.line, 3, "{bad}");
        }
    }

    #[test]
    fn statuses_are_close_codes_and_urls_are_ws() {
        let p = WsProtocol;
        assert_eq!(
            p.status(&node(serde_json::json!(1000))).unwrap(),
            crate::status::status(1000)
        );
        assert_eq!(
            p.status(&node(serde_json::json!("OK"))).unwrap(),
            crate::status::OPEN
        );
        assert!(p.status(&node(serde_json::json!(200))).is_err());
        assert!(p.check_target("ws://127.0.0.1:9/chat").is_ok());
        assert!(p.check_target("wss://localhost/").is_ok());
        for bad in ["http://127.0.0.1:9/", "ws://", "ws:///x", "127.0.0.1:9"] {
            assert!(p.check_target(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_url_run_refuses_what_it_cannot_do() {
        let opts = |o: WsOptions| ClientOptions::default().with(o);
        let both = WsOptions {
            expect: Some(2),
            listen: Some(Duration::from_secs(1)),
            ..WsOptions::default()
        };
        assert!(url_steps("ws://127.0.0.1:9/", &opts(both), Some("x"))
            .unwrap_err()
            .contains("not both"));
        assert!(
            url_steps("ws://127.0.0.1:9/", &ClientOptions::default(), None)
                .unwrap_err()
                .contains("-d")
        );
        let s = url_steps("ws://127.0.0.1:9/", &ClientOptions::default(), Some("x")).unwrap();
        assert_eq!(s.labels(), vec!["ws://127.0.0.1:9/".to_string()]);
    }
}
