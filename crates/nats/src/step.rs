//! What a `nats` step is, how it compiles from a scenario, the protocol's registration data
//! (scheme, key, statuses) and the URL run's plan.

use throng_core::step::{
    message, ClientOptions, Node, Place, Protocol, StepError, TemplateCompiler, Text,
};
use throng_core::steps::Steps;
use throng_core::Status;

use crate::client::NatsClient;

/// What a step does with its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// A request to the subject: the step ends with its reply (request–reply).
    #[default]
    Request,
    /// A message published on the subject: the step ends when every one of throng's own
    /// subscribers on that subject has received it (publish–consume).
    Publish,
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "request" | "req" => Ok(Mode::Request),
            "publish" | "pub" => Ok(Mode::Publish),
            _ => Err(format!("{s:?}: write request or publish")),
        }
    }
}

/// A compiled `nats` step: a message (templated payload and header values) sent as a request
/// or published.
#[derive(Debug, Clone, PartialEq)]
pub struct NatsStep {
    /// Request or publish.
    pub mode: Mode,
    /// The subject; the target URL's when `None`.
    pub subject: Option<String>,
    /// The payload.
    pub payload: Text,
    /// Headers (NATS headers, `NATS/1.0`), their values templated.
    pub headers: Vec<(String, Text)>,
    /// Where it was written.
    pub at: Place,
}

impl NatsStep {
    /// A request with `payload`, to the target's subject.
    pub fn request(payload: impl Into<String>) -> NatsStep {
        NatsStep {
            mode: Mode::Request,
            subject: None,
            payload: Text::Static(payload.into()),
            headers: Vec::new(),
            at: Place::default(),
        }
    }

    /// A message with `payload` published on the target's subject.
    pub fn publish(payload: impl Into<String>) -> NatsStep {
        NatsStep {
            mode: Mode::Publish,
            ..NatsStep::request(payload)
        }
    }

    /// The same step on `subject`.
    pub fn on(mut self, subject: impl Into<String>) -> NatsStep {
        self.subject = Some(subject.into());
        self
    }

    /// The same step with a header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> NatsStep {
        self.headers.push((name.into(), Text::Static(value.into())));
        self
    }
}

/// NATS's own options, found by [`ClientOptions::of`] (the defaults when none are set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsOptions {
    /// A URL run's step: request or publish.
    pub mode: Mode,
    /// throng's own subscribers on each subject a target's steps publish to: each receives
    /// every message (a fan-out of this many), each on a connection of its own. 1 by default;
    /// at most [`MAX_SUBSCRIBERS`].
    pub subscribers: u32,
    /// Publish–consume through JetStream: each message published to the stream that holds the
    /// subject and its acknowledgement awaited, each subscriber an ordered JetStream consumer
    /// of that stream (from the next message on) rather than a core subscription.
    pub jetstream: bool,
}

/// The most subscribers a target has (a message's deliveries are a 64-bit set).
pub const MAX_SUBSCRIBERS: u32 = 64;

impl Default for NatsOptions {
    fn default() -> Self {
        NatsOptions {
            mode: Mode::Request,
            subscribers: 1,
            jetstream: false,
        }
    }
}

/// `throng run nats://host:port/SUBJECT`: one step, labelled with the URL (its password or token
/// hidden), sending `payload`
/// (as a request or published, as `options`' [`NatsOptions`] say) with the options' headers.
/// The payload is sent as written; one with templates is a step made with [`NatsStep`] and
/// rendered by the caller's [`Steps::rendered_by`].
pub fn url_steps(
    url: &str,
    options: &ClientOptions,
    payload: Option<&str>,
) -> Result<Steps<NatsClient>, String> {
    let own = options.of::<NatsOptions>().cloned().unwrap_or_default();
    let mut step = NatsStep::request(payload.unwrap_or_default());
    step.mode = own.mode;
    let client = NatsClient::new(url, options)?;
    let label = client.shown_url();
    Steps::new(client, step, label).map_err(|e| e.message)
}

/// The protocol: `nats://` targets, steps under `nats`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NatsProtocol;

/// The fields of a `nats` step written as a map.
const FIELDS: [&str; 4] = ["request", "publish", "subject", "headers"];

impl Protocol for NatsProtocol {
    type Client = NatsClient;

    fn name(&self) -> &'static str {
        "nats"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["nats", "tls"]
    }

    const TLS_SCHEMES: &'static [&'static str] = &["tls"];

    fn key(&self) -> &'static str {
        "nats"
    }

    fn step_help(&self) -> &'static str {
        "a request's payload, or `request` (a payload sent as a request, its reply timed) or \
         `publish` (a payload published, timed to its delivery to throng's subscribers), with \
         `subject` and `headers`"
    }

    fn check_target(&self, url: &str) -> Result<(), String> {
        crate::target::Target::parse(url).map(|_| ())
    }

    fn compile(&self, node: &Node, t: &mut dyn TemplateCompiler) -> Result<NatsStep, StepError> {
        let ways = [
            ("request", "its reply timed"),
            ("publish", "timed to its delivery"),
        ];
        let m = message(
            node,
            "nats",
            ways,
            &FIELDS,
            t,
            crate::target::check_header_name,
        )?;
        let mut step = NatsStep::request("");
        step.at = node.at;
        step.mode = [Mode::Request, Mode::Publish][m.way];
        step.payload = m.payload;
        step.headers = m.headers;
        if let Some(s) = m.fields.as_ref().and_then(|f| f.get("subject")) {
            let subject = s.text("nats subject")?;
            crate::target::check_subject(&subject)
                .map_err(|e| StepError::at(s.at, format!("nats subject: {e}")))?;
            step.subject = Some(subject);
        }
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
                        "a nats status is 0 (OK) or a status code below 1000, by number or name \
                         (NO_RESPONDERS), not {text:?}"
                    ),
                )
            })
    }

    fn client(&self, url: &str, options: &ClientOptions) -> Result<NatsClient, String> {
        NatsClient::new(url, options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use throng_core::step::Uncompiled as Plain;

    fn node(v: serde_json::Value) -> Node {
        Node::from_json(&v, Place { line: 3, column: 7 })
    }

    #[test]
    fn steps_compile_from_a_payload_or_a_map() {
        let p = NatsProtocol;
        let one = p
            .compile(&node(serde_json::json!("hi {{ user }}")), &mut Plain)
            .unwrap();
        assert_eq!(one.mode, Mode::Request);
        assert_eq!(one.payload, Text::Template("hi {{ user }}".into()));
        let publish = p
            .compile(
                &node(
                    serde_json::json!({"publish": "tick", "subject": "prices.eu",
                    "headers": {"k": "v {{ n }}"}}),
                ),
                &mut Plain,
            )
            .unwrap();
        assert_eq!(publish.mode, Mode::Publish);
        assert_eq!(publish.subject.as_deref(), Some("prices.eu"));
        assert_eq!(
            publish.headers,
            vec![("k".to_string(), Text::Template("v {{ n }}".into()))]
        );
    }

    #[test]
    fn bad_steps_are_refused_at_their_place() {
        let p = NatsProtocol;
        for (bad, says) in [
            (serde_json::json!({"reqest": "x"}), "unknown field `reqest`"),
            (serde_json::json!({}), "sends `request` (its reply timed)"),
            (
                serde_json::json!({"request": "x", "publish": "y"}),
                "not both",
            ),
            (
                serde_json::json!({"request": "x", "subject": "a b"}),
                "nats subject",
            ),
            (
                serde_json::json!({"publish": "x", "subject": "a.>"}),
                "wildcard",
            ),
            (
                serde_json::json!({"request": "x", "headers": {"a:b": "v"}}),
                "header",
            ),
            (serde_json::json!([1, 2]), "expected a string"),
        ] {
            let e = p.compile(&node(bad.clone()), &mut Plain).unwrap_err();
            assert!(e.message.contains(says), "{bad}: {}", e.message);
            assert_eq!(e.at.line, 3, "{bad}");
        }
    }

    #[test]
    fn statuses_and_urls() {
        let p = NatsProtocol;
        assert_eq!(
            p.status(&node(serde_json::json!("NO_RESPONDERS"))).unwrap(),
            crate::status::NO_RESPONDERS
        );
        assert_eq!(
            p.status(&node(serde_json::json!(0))).unwrap(),
            crate::status::OK
        );
        assert!(p.status(&node(serde_json::json!("fine"))).is_err());
        assert!(p.check_target("nats://127.0.0.1:4222/greeter").is_ok());
        assert!(p.check_target("nats://u:p@localhost/a.b.c").is_ok());
        assert!(p.check_target("tls://localhost:4443/a").is_ok());
        for bad in [
            "http://127.0.0.1:9/x",
            "nats://127.0.0.1:4222",
            "nats://127.0.0.1:4222/",
            "nats:///x",
            "nats://h/a b",
            "nats://h/a.*",
        ] {
            assert!(p.check_target(bad).is_err(), "{bad}");
        }
        assert_eq!("publish".parse::<Mode>(), Ok(Mode::Publish));
        assert!("push".parse::<Mode>().is_err());
    }
}
