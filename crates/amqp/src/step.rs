//! What an `amqp` step is, how it compiles from a scenario, the protocol's registration data
//! (scheme, key, statuses) and the URL run's plan.

use throng_core::step::{
    message, ClientOptions, Node, Place, Protocol, StepError, TemplateCompiler, Text,
};
use throng_core::steps::Steps;
use throng_core::Status;

use crate::client::AmqpClient;

/// What a step does with its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// RPC: a request published to the exchange and routing key, its reply received on direct
    /// reply-to (`amq.rabbitmq.reply-to`), matched by correlation id.
    #[default]
    Rpc,
    /// A message published to the exchange and routing key, timed to its delivery to
    /// throng's own consumer (publish–consume).
    Publish,
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "rpc" | "request" => Ok(Mode::Rpc),
            "publish" | "pub" => Ok(Mode::Publish),
            _ => Err(format!("{s:?}: write rpc or publish")),
        }
    }
}

/// A compiled `amqp` step: a message (templated payload and header values) sent as an RPC
/// request or published.
#[derive(Debug, Clone, PartialEq)]
pub struct AmqpStep {
    /// RPC or publish.
    pub mode: Mode,
    /// The exchange; the target's (its options', else the default exchange) when `None`.
    pub exchange: Option<String>,
    /// The routing key; the target's when `None`.
    pub routing_key: Option<String>,
    /// The payload.
    pub payload: Text,
    /// Headers (the message's `headers` table, string values), their values templated.
    pub headers: Vec<(String, Text)>,
    /// Where it was written.
    pub at: Place,
}

impl AmqpStep {
    /// An RPC request with `payload`, to the target's exchange and routing key.
    pub fn rpc(payload: impl Into<String>) -> AmqpStep {
        AmqpStep {
            mode: Mode::Rpc,
            exchange: None,
            routing_key: None,
            payload: Text::Static(payload.into()),
            headers: Vec::new(),
            at: Place::default(),
        }
    }

    /// A message with `payload` published to the target's exchange and routing key.
    pub fn publish(payload: impl Into<String>) -> AmqpStep {
        AmqpStep {
            mode: Mode::Publish,
            ..AmqpStep::rpc(payload)
        }
    }

    /// The same step with `routing_key`.
    pub fn key(mut self, routing_key: impl Into<String>) -> AmqpStep {
        self.routing_key = Some(routing_key.into());
        self
    }

    /// The same step with a header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> AmqpStep {
        self.headers.push((name.into(), Text::Static(value.into())));
        self
    }
}

/// AMQP's own options, found by [`ClientOptions::of`] (the defaults when none are set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmqpOptions {
    /// A URL run's step: RPC or publish.
    pub mode: Mode,
    /// The exchange messages are published to; `None` (or empty) is the default exchange,
    /// where the routing key names the queue.
    pub exchange: Option<String>,
    /// The routing key; the URL's `routing_key` when `None`.
    pub routing_key: Option<String>,
    /// Publish–consume: publisher confirms (each publish waits for the broker's ack or nack).
    /// RPC always publishes with confirms, so that an unroutable request is known at once.
    pub confirms: bool,
    /// Publish–consume: throng's consumer acknowledges each delivery (`false`: auto-ack,
    /// the broker forgets a message as it sends it).
    pub ack: bool,
    /// Publish–consume: the consumer's prefetch (`basic.qos`), unacknowledged deliveries the
    /// broker lets it have at once (0: no limit). Applies with `ack` only.
    pub prefetch: u16,
}

impl Default for AmqpOptions {
    fn default() -> Self {
        AmqpOptions {
            mode: Mode::Rpc,
            exchange: None,
            routing_key: None,
            confirms: false,
            ack: true,
            prefetch: 100,
        }
    }
}

/// `throng run amqp://…`: one step, labelled with the URL, sending `payload` (as an RPC
/// request or published, as `options`' [`AmqpOptions`] say) with the options' headers.
pub fn url_steps(
    url: &str,
    options: &ClientOptions,
    payload: Option<&str>,
) -> Result<Steps<AmqpClient>, String> {
    let own = options.of::<AmqpOptions>().cloned().unwrap_or_default();
    let mut step = AmqpStep::rpc(payload.unwrap_or_default());
    step.mode = own.mode;
    let client = AmqpClient::new(url, options)?;
    Steps::new(client, step, url).map_err(|e| e.message)
}

/// The protocol: `amqp://` targets, steps under `amqp`.
#[derive(Debug, Clone, Copy, Default)]
pub struct AmqpProtocol;

/// The fields of an `amqp` step written as a map.
const FIELDS: [&str; 5] = ["rpc", "publish", "exchange", "routing_key", "headers"];

impl Protocol for AmqpProtocol {
    type Client = AmqpClient;

    fn name(&self) -> &'static str {
        "amqp"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["amqp", "amqps"]
    }

    const TLS_SCHEMES: &'static [&'static str] = &["amqps"];

    fn key(&self) -> &'static str {
        "amqp"
    }

    fn step_help(&self) -> &'static str {
        "an RPC request's payload, or `rpc` (a payload published as a request, its reply on \
         direct reply-to timed) or `publish` (a payload published, timed to its delivery to \
         throng's consumer), with `exchange`, `routing_key` and `headers`"
    }

    fn check_target(&self, url: &str) -> Result<(), String> {
        crate::target::Target::parse(url).map(|_| ())
    }

    fn compile(&self, node: &Node, t: &mut dyn TemplateCompiler) -> Result<AmqpStep, StepError> {
        let ways = [
            ("rpc", "a request, its reply timed"),
            ("publish", "timed to its delivery"),
        ];
        let header = |name: &str| crate::target::check_short("a header name", name);
        let m = message(node, "amqp", ways, &FIELDS, t, header)?;
        let mut step = AmqpStep::rpc("");
        step.at = node.at;
        step.mode = [Mode::Rpc, Mode::Publish][m.way];
        step.payload = m.payload;
        step.headers = m.headers;
        let field = |k: &str| m.fields.as_ref().and_then(|f| f.get(k));
        if let Some(e) = field("exchange") {
            let name = e.text("amqp exchange")?;
            crate::target::check_exchange(&name)
                .map_err(|m| StepError::at(e.at, format!("amqp exchange: {m}")))?;
            step.exchange = Some(name);
        }
        if let Some(k) = field("routing_key") {
            let key = k.text("amqp routing_key")?;
            crate::target::check_short("routing_key", &key)
                .map_err(|m| StepError::at(k.at, format!("amqp routing_key: {m}")))?;
            step.routing_key = Some(key);
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
                        "an amqp status is 0 (OK), an AMQP reply code (312, NO_ROUTE) or \
                         NACKED, not {text:?}"
                    ),
                )
            })
    }

    fn client(&self, url: &str, options: &ClientOptions) -> Result<AmqpClient, String> {
        AmqpClient::new(url, options)
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
        let p = AmqpProtocol;
        let one = p
            .compile(&node(serde_json::json!("hi {{ user }}")), &mut Plain)
            .unwrap();
        assert_eq!(one.mode, Mode::Rpc);
        assert_eq!(one.payload, Text::Template("hi {{ user }}".into()));
        let publish = p
            .compile(
                &node(serde_json::json!({"publish": "tick", "exchange": "prices",
                    "routing_key": "eu", "headers": {"k": "v {{ n }}"}})),
                &mut Plain,
            )
            .unwrap();
        assert_eq!(publish.mode, Mode::Publish);
        assert_eq!(publish.exchange.as_deref(), Some("prices"));
        assert_eq!(publish.routing_key.as_deref(), Some("eu"));
        assert_eq!(
            publish.headers,
            vec![("k".to_string(), Text::Template("v {{ n }}".into()))]
        );
    }

    #[test]
    fn bad_steps_are_refused_at_their_place() {
        let p = AmqpProtocol;
        for (bad, says) in [
            (serde_json::json!({"rcp": "x"}), "unknown field `rcp`"),
            (serde_json::json!({}), "sends `rpc` (a request"),
            (serde_json::json!({"rpc": "x", "publish": "y"}), "not both"),
            (
                serde_json::json!({"rpc": "x", "exchange": "a b"}),
                "amqp exchange",
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
        let p = AmqpProtocol;
        assert_eq!(
            p.status(&node(serde_json::json!("NO_ROUTE"))).unwrap(),
            crate::status::NO_ROUTE
        );
        assert!(p.status(&node(serde_json::json!("fine"))).is_err());
        assert!(p
            .check_target("amqp://guest:guest@127.0.0.1:5672/%2f")
            .is_ok());
        assert!(p.check_target("nats://127.0.0.1/x").is_err());
        assert_eq!("publish".parse::<Mode>(), Ok(Mode::Publish));
        assert!("push".parse::<Mode>().is_err());
    }
}
