//! Messages from and to the protobuf JSON mapping (enums by name, int64 as strings, well-known
//! types), by prost-reflect; a message that does not fit its type is refused with the path of
//! the field that does not.

use bytes::Bytes;
use prost::Message as _;
use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MessageDescriptor, SerializeOptions};
use serde_json::Value;

/// Encodes one JSON value as a message of type `desc`.
pub fn encode(desc: &MessageDescriptor, json: &Value) -> Result<Bytes, String> {
    match DynamicMessage::deserialize(desc.clone(), json) {
        Ok(m) => Ok(Bytes::from(m.encode_to_vec())),
        Err(e) => Err(explain(desc, json, "").unwrap_or_else(|| e.to_string())),
    }
}

/// Finds the field that does not fit and says why, with its path (`a.b[2].c`).
fn explain(desc: &MessageDescriptor, json: &Value, path: &str) -> Option<String> {
    let at = |p: &str| {
        if p.is_empty() {
            String::new()
        } else {
            format!("field `{p}`: ")
        }
    };
    let Value::Object(members) = json else {
        return Some(format!(
            "{}expected a JSON object for {}, found {}",
            at(path),
            desc.full_name(),
            kind(json)
        ));
    };
    for (k, v) in members {
        let p = if path.is_empty() {
            k.clone()
        } else {
            format!("{path}.{k}")
        };
        let field = match field(desc, k, &p) {
            Ok(f) => f,
            Err(e) => return Some(e),
        };
        let one = serde_json::json!({ k: v });
        let Err(e) = DynamicMessage::deserialize(desc.clone(), &one) else {
            continue;
        };
        // Look inside a plain message field (or list of them) for the deepest culprit;
        // well-known types have their own JSON forms, which the error describes well.
        if let Kind::Message(inner) = field.kind() {
            if !inner.full_name().starts_with("google.protobuf.") && !field.is_map() {
                let found = match (field.is_list(), v) {
                    (true, Value::Array(items)) => items
                        .iter()
                        .enumerate()
                        .find_map(|(i, x)| explain(&inner, x, &format!("{p}[{i}]"))),
                    (false, _) => explain(&inner, v, &p),
                    _ => None,
                };
                if found.is_some() {
                    return found;
                }
            }
        }
        return Some(format!("field `{p}`: {e}"));
    }
    None
}

/// The field names of a message document whose values are not known yet (a scenario's message
/// with templates), against its type: a field that does not exist is refused before any load,
/// with its path, where every call failed at run time. Values are not looked at (they are
/// rendered per call); a streaming method's document may be an array of messages.
pub fn check_fields(desc: &MessageDescriptor, doc: &Value, streaming: bool) -> Result<(), String> {
    match doc {
        Value::Array(items) if streaming => items.iter().try_for_each(|m| fields(desc, m, "")),
        other => fields(desc, other, ""),
    }
}

fn fields(desc: &MessageDescriptor, doc: &Value, path: &str) -> Result<(), String> {
    let Value::Object(members) = doc else {
        return Ok(());
    };
    for (k, v) in members {
        let p = match path {
            "" => k.clone(),
            _ => format!("{path}.{k}"),
        };
        let field = field(desc, k, &p)?;
        if let Kind::Message(inner) = field.kind() {
            if !inner.full_name().starts_with("google.protobuf.") && !field.is_map() {
                match (field.is_list(), v) {
                    (true, Value::Array(items)) => {
                        for (i, x) in items.iter().enumerate() {
                            fields(&inner, x, &format!("{p}[{i}]"))?;
                        }
                    }
                    (false, _) => fields(&inner, v, &p)?,
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

/// The field a document's key names (by its JSON name or its own), or why there is none; `path`
/// is the key's path in the document, for the message.
fn field(desc: &MessageDescriptor, key: &str, path: &str) -> Result<FieldDescriptor, String> {
    desc.get_field_by_json_name(key)
        .or_else(|| desc.get_field_by_name(key))
        .ok_or_else(|| {
            let known: Vec<_> = desc.fields().map(|f| f.json_name().to_string()).collect();
            format!(
                "unknown field `{path}` in {} (fields: {})",
                desc.full_name(),
                known.join(", ")
            )
        })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The messages a call sends, from `-d` text: one JSON object, or (for client-streaming and
/// bidi methods) a JSON array of objects, or one object per line. Nothing is one empty message.
pub fn messages(
    desc: &MessageDescriptor,
    data: Option<&str>,
    streaming: bool,
) -> Result<Vec<Bytes>, String> {
    let Some(text) = data.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(vec![Bytes::new()]);
    };
    let values: Vec<Value> = match serde_json::from_str::<Value>(text) {
        Ok(v) => return from_value(desc, v, streaming),
        Err(e) if streaming && text.lines().count() > 1 => text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| format!("line {}: not JSON: {e}", i + 1))
            })
            .collect::<Result<_, _>>()
            .map_err(|m| format!("{m} (after trying the whole text: {e})"))?,
        Err(e) => return Err(format!("not JSON: {e}")),
    };
    from_value(desc, Value::Array(values), streaming)
}

/// The messages a call sends, from a JSON value (a scenario's rendered template): an object, or
/// for a streaming method an array of them.
pub fn from_value(
    desc: &MessageDescriptor,
    value: Value,
    streaming: bool,
) -> Result<Vec<Bytes>, String> {
    let values = match value {
        Value::Array(items) if streaming => items,
        Value::Array(_) => {
            return Err(format!(
            "{} takes one message, not an array (arrays are for client-streaming and bidi methods)",
            desc.full_name()
        ))
        }
        v => vec![v],
    };
    if values.is_empty() {
        return Err("an empty array sends no message".into());
    }
    let many = values.len() > 1;
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            encode(desc, v).map_err(|e| match many {
                true => format!("message {}: {e}", i + 1),
                false => e,
            })
        })
        .collect()
}

/// A reply's bytes as JSON (the protobuf JSON mapping), for checks and extraction.
pub fn decode_json(desc: &MessageDescriptor, bytes: &[u8]) -> Result<Value, String> {
    let m = DynamicMessage::decode(desc.clone(), bytes).map_err(|e| e.to_string())?;
    let opts = SerializeOptions::new().skip_default_fields(false);
    m.serialize_with_options(serde_json::value::Serializer, &opts)
        .map_err(|e| e.to_string())
}
