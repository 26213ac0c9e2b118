//! A message step as a scenario writes it, for the protocols whose steps send one message a
//! way or another (NATS's `nats:` request or publish, RabbitMQ's `amqp:` rpc or publish): the
//! payload alone (`KEY: text`, sent the first way), or a map with the payload under one of
//! two ways' keys, `headers` (templated values) and the protocol's own fields.

use super::{Fields, Node, NodeValue, StepError, TemplateCompiler, Text};

/// A compiled message step's common part; the protocol reads its own fields from `fields`.
#[derive(Debug)]
pub struct MessageNode<'a> {
    /// The way it is sent: 0 for the first of the two, 1 for the second.
    pub way: usize,
    /// The payload.
    pub payload: Text,
    /// The headers, their values templated.
    pub headers: Vec<(String, Text)>,
    /// The map's fields (`None` for a payload written alone).
    pub fields: Option<Fields<'a>>,
}

/// Compiles `node`, the step under `key`: `ways` are the two keys a map's payload may stand
/// under, each with what it does (said when neither is given), `fields` every key the map
/// may hold, `header` checks a header's name.
pub fn message<'a>(
    node: &'a Node,
    key: &str,
    ways: [(&str, &str); 2],
    fields: &[&str],
    t: &mut dyn TemplateCompiler,
    header: impl Fn(&str) -> Result<(), String>,
) -> Result<MessageNode<'a>, StepError> {
    if !matches!(node.value, NodeValue::Map(_)) {
        return Ok(MessageNode {
            way: 0,
            payload: t.text(&node.text(key)?, node.at)?,
            headers: Vec::new(),
            fields: None,
        });
    }
    let map = node.fields(key, fields)?;
    let [(first, does_first), (second, does_second)] = ways;
    let (way, given) = match (map.get(first), map.get(second)) {
        (Some(_), Some(_)) => {
            let m = format!("{key}: a step sends `{first}` or `{second}`, not both");
            return Err(StepError::at(node.at, m));
        }
        (Some(p), None) => (0, p),
        (None, Some(p)) => (1, p),
        (None, None) => {
            let m = format!(
                "{key}: a step sends `{first}` ({does_first}) or `{second}` ({does_second})"
            );
            return Err(StepError::at(node.at, m));
        }
    };
    let payload = t.text(&given.text(&format!("{key} {}", ways[way].0))?, given.at)?;
    let mut headers = Vec::new();
    if let Some(h) = map.get("headers") {
        for (name, value) in h.map(&format!("{key} headers"))? {
            header(name).map_err(|e| StepError::at(value.at, format!("{key} headers: {e}")))?;
            let text = t.text(&value.text(&format!("{key} header"))?, value.at)?;
            headers.push((name.clone(), text));
        }
    }
    Ok(MessageNode {
        way,
        payload,
        headers,
        fields: Some(map),
    })
}
