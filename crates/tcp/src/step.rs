//! Raw TCP as a scenario protocol: `tcp:` steps on `tcp://HOST:PORT` and `tcps://HOST:PORT`
//! targets.
//!
//! ```yaml
//! tcp:
//!   send: "GET {{ key }}"   # text (a template), or `hex: "de ad"` or `base64: "..."`
//!   frame: len4             # this step's framing, both ways; the target's by default
//!   expect: "VALUE 42"      # the reply's payload must be exactly this, else class `check`
//! ```
//!
//! A step may also be a string, the text to send: `tcp: PING`.

use base64::Engine as _;
use bytes::Bytes;

use throng_core::step::{
    ClientOptions, Node, NodeValue, Protocol, StepError, TemplateCompiler, Text,
};
use throng_core::Status;

use crate::client::TcpClient;
use crate::frame::{from_hex, Framing};
use crate::status::{CLOSED, OK};

/// The raw TCP protocol of scenarios.
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpProtocol;

/// What a step sends: text (a template or not) or bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// Text, rendered per call when it is a template.
    Text(Text),
    /// Bytes as given (hex, base64, a file, text with escapes decoded).
    Bytes(Bytes),
}

impl Payload {
    /// Text as written, no template.
    pub fn text(s: impl Into<String>) -> Self {
        Payload::Text(Text::Static(s.into()))
    }

    /// Text with C's escapes decoded (`PING\n`, `\x1e`): the command line's `-d`.
    pub fn escaped(s: &str) -> Result<Self, String> {
        Ok(Payload::Bytes(crate::frame::unescape(s)?.into()))
    }

    /// Bytes written in hex (`de ad be ef`).
    pub fn hex(s: &str) -> Result<Self, String> {
        Ok(Payload::Bytes(from_hex(s)?.into()))
    }

    /// Bytes written in standard base64.
    pub fn base64(s: &str) -> Result<Self, String> {
        base64::engine::general_purpose::STANDARD
            .decode(s.trim())
            .map(|b| Payload::Bytes(b.into()))
            .map_err(|e| format!("base64 `{s}`: {e}"))
    }

    /// As a label shows it: escaped, at most 40 characters.
    pub(crate) fn label(&self) -> String {
        let s = match self {
            Payload::Text(Text::Static(s) | Text::Template(s)) => {
                crate::frame::escape(s.as_bytes())
            }
            Payload::Bytes(b) => crate::frame::escape(b),
        };
        match s.char_indices().nth(40) {
            Some((at, _)) => format!("{}…", &s[..at]),
            None => s,
        }
    }
}

/// A compiled `tcp:` step.
#[derive(Debug, Clone)]
pub struct TcpStep {
    pub(crate) send: Payload,
    /// This step's framing, when not the target's.
    pub(crate) frame: Option<Framing>,
    /// The payload the reply must be.
    pub(crate) expect: Option<Text>,
}

impl TcpStep {
    /// A step sending `send` in the target's framing.
    pub fn new(send: Payload) -> Self {
        TcpStep {
            send,
            frame: None,
            expect: None,
        }
    }

    /// The same step in its own framing.
    pub fn framed(mut self, framing: Framing) -> Self {
        self.frame = Some(framing);
        self
    }

    /// The same step, failing with class `check` unless the reply's payload is `expect`.
    pub fn expecting(mut self, expect: Text) -> Self {
        self.expect = Some(expect);
        self
    }
}

const FIELDS: &[&str] = &["send", "hex", "base64", "frame", "expect"];

impl Protocol for TcpProtocol {
    type Client = TcpClient;

    fn name(&self) -> &'static str {
        "tcp"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["tcp", "tcps"]
    }

    const TLS_SCHEMES: &'static [&'static str] = &["tcps"];

    fn key(&self) -> &'static str {
        "tcp"
    }

    fn step_help(&self) -> &'static str {
        "send (or hex or base64), frame and expect; or the text to send"
    }

    fn check_target(&self, url: &str) -> Result<(), String> {
        crate::client::address(url).map(|_| ())
    }

    fn compile(&self, node: &Node, t: &mut dyn TemplateCompiler) -> Result<TcpStep, StepError> {
        if let NodeValue::String(s) = &node.value {
            return Ok(TcpStep::new(Payload::Text(t.text(s, node.at)?)));
        }
        if !matches!(node.value, NodeValue::Map(_)) {
            return Err(StepError::at(
                node.at,
                format!(
                    "tcp takes the text to send or a map with `send`, `hex` or `base64`, not {}",
                    node.kind()
                ),
            ));
        }
        let f = node.fields("tcp", FIELDS)?;
        let given: Vec<&str> = ["send", "hex", "base64"]
            .into_iter()
            .filter(|k| f.get(k).is_some())
            .collect();
        let send = match given.as_slice() {
            [] => {
                return Err(StepError::at(
                    f.at,
                    "a tcp step needs what to send: `send` (text), `hex` or `base64`",
                ))
            }
            [one] => *one,
            [_, second, ..] => {
                let at = f.get(second).map_or(f.at, |n| n.at);
                return Err(StepError::at(
                    at,
                    format!(
                        "give one of `send`, `hex` or `base64`, not {}",
                        given.join(" and ")
                    ),
                ));
            }
        };
        let n = f.require(send, "a tcp step")?;
        let text = n.text(send)?;
        let send = match send {
            "hex" => Payload::hex(&text),
            "base64" => Payload::base64(&text),
            _ => Ok(Payload::Text(t.text(&text, n.at)?)),
        }
        .map_err(|e| StepError::at(n.at, e))?;
        let frame = match f.get("frame") {
            None => None,
            Some(fr) => Some(
                fr.text("frame")?
                    .parse::<Framing>()
                    .map_err(|e| StepError::at(fr.at, format!("frame: {e}")))?,
            ),
        };
        let expect = match f.get("expect") {
            None => None,
            Some(e) => Some(t.text(&e.text("expect")?, e.at)?),
        };
        Ok(TcpStep {
            send,
            frame,
            expect,
        })
    }

    fn status(&self, expected: &Node) -> Result<Status, StepError> {
        let word = match &expected.value {
            NodeValue::String(s) => s.trim().to_ascii_lowercase(),
            NodeValue::Number(n) => n.to_string(),
            _ => String::new(),
        };
        match word.trim_start_matches("tcp ") {
            "ok" | "0" => Ok(OK),
            "closed" | "1" => Ok(CLOSED),
            _ => Err(StepError::at(
                expected.at,
                "a tcp status is ok (a whole reply came) or closed (the peer closed first)",
            )),
        }
    }

    fn client(&self, url: &str, options: &ClientOptions) -> Result<TcpClient, String> {
        let own = options
            .of::<crate::TcpOptions>()
            .cloned()
            .unwrap_or_default();
        TcpClient::new(url, own, options)
    }
}

/// Checks the step's framing against the client's limit before any load.
pub(crate) fn check(client: &TcpClient, step: &TcpStep) -> Result<(), StepError> {
    let framing = step.frame.as_ref().unwrap_or(&client.options.framing);
    if let Framing::Fixed(n) = framing {
        if *n > client.options.max_reply {
            return Err(StepError::at(
                Default::default(),
                format!(
                    "a fixed-size reply of {n} bytes is over the reply limit of {} bytes",
                    client.options.max_reply
                ),
            ));
        }
    }
    if let (Payload::Bytes(b), Framing::Length { .. }) = (&step.send, framing) {
        if client.options.frame_request {
            framing
                .encode(b, &mut Vec::new())
                .map_err(|e| StepError::at(Default::default(), e))?;
        }
    }
    Ok(())
}

impl TcpClient {
    /// `throng run tcp://HOST:PORT -d ...`: `request` as the one step of a client of its own,
    /// in the framing of `options` (see [`crate::url_steps`]).
    pub fn one_step(
        url: &str,
        request: Payload,
        options: &crate::TcpOptions,
        client_options: &ClientOptions,
    ) -> Result<throng_core::steps::Steps<TcpClient>, String> {
        let client = TcpClient::new(url, options.clone(), client_options)?;
        let label = request.label();
        throng_core::steps::Steps::new(client, TcpStep::new(request), label).map_err(|e| e.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use throng_core::step::Place;

    use throng_core::step::Uncompiled as Plain;

    fn node(v: serde_json::Value) -> Node {
        Node::from_json(&v, Place { line: 4, column: 9 })
    }

    #[test]
    fn compiles_steps_and_refuses_bad_ones_at_their_place() {
        let p = TcpProtocol;
        let s = p
            .compile(&node(serde_json::json!("PING")), &mut Plain)
            .unwrap();
        assert_eq!(s.send, Payload::text("PING"));
        let s = p
            .compile(
                &node(
                    serde_json::json!({"hex": "00 01 ff", "frame": "len2le", "expect": "{{ v }}"}),
                ),
                &mut Plain,
            )
            .unwrap();
        assert_eq!(s.send, Payload::Bytes(Bytes::from_static(&[0, 1, 0xff])));
        assert_eq!(s.frame, Some("len2le".parse().unwrap()));
        assert_eq!(s.expect, Some(Text::Template("{{ v }}".into())));
        let s = p
            .compile(&node(serde_json::json!({"base64": "aGk="})), &mut Plain)
            .unwrap();
        assert_eq!(s.send, Payload::Bytes(Bytes::from_static(b"hi")));
        for (bad, says) in [
            (
                serde_json::json!({"send": "a", "hex": "00"}),
                "not send and hex",
            ),
            (serde_json::json!({"frame": "line"}), "needs what to send"),
            (
                serde_json::json!({"send": "a", "frame": "len3"}),
                "`len3` is not a framing",
            ),
            (serde_json::json!({"hex": "0g"}), "not a hex digit"),
            (serde_json::json!({"base64": "@@"}), "base64"),
            (serde_json::json!({"sned": "a"}), "unknown field `sned`"),
            (serde_json::json!([1]), "not a list"),
        ] {
            let e = p.compile(&node(bad), &mut Plain).unwrap_err();
            assert!(e.message.contains(says), "{}", e.message);
            assert_eq!(e.at.line, 4);
        }
    }

    #[test]
    fn statuses_are_ok_or_closed() {
        let p = TcpProtocol;
        assert_eq!(p.status(&node(serde_json::json!("OK"))).unwrap(), OK);
        assert_eq!(
            p.status(&node(serde_json::json!("tcp closed"))).unwrap(),
            CLOSED
        );
        assert_eq!(p.status(&node(serde_json::json!(1))).unwrap(), CLOSED);
        assert!(p.status(&node(serde_json::json!(200))).is_err());
    }

    #[test]
    fn targets_are_tcp_host_port() {
        let p = TcpProtocol;
        assert!(p.check_target("tcp://127.0.0.1:9000").is_ok());
        assert!(p.check_target("tcp://[::1]:9000/").is_ok());
        assert!(p.check_target("tcp://localhost:1").is_ok());
        assert!(p.check_target("tcps://localhost:1").is_ok());
        for bad in [
            "tcp://127.0.0.1",
            "tcp://127.0.0.1:0",
            "tcp://:80",
            "tcp://h:1/x",
            "tcps://h",
            "http://h:1",
        ] {
            assert!(p.check_target(bad).is_err(), "{bad}");
        }
    }
}
