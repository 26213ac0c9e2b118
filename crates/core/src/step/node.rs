//! The node model: a scenario file's values with the place of every part, as a protocol reads
//! them to compile its steps, and the errors it blames on those places.

/// Where a value was written: 1-based line and column; line 0 is no place (a step built in
/// Rust).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Place {
    /// 1-based line, 0 for none.
    pub line: u64,
    /// 1-based column.
    pub column: u64,
}

/// A value of a scenario file, with the place of every part of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: NodeValue,
    /// Where it was written.
    pub at: Place,
}

/// The shapes a [`Node`] takes: YAML's, as JSON sees them.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeValue {
    /// `null` or nothing.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(serde_json::Number),
    /// A string.
    String(String),
    /// A list.
    List(Vec<Node>),
    /// A map, keys in the order written.
    Map(Vec<(String, Node)>),
}

/// A problem with a step, at a place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepError {
    /// Where.
    pub at: Place,
    /// What is wrong.
    pub message: String,
}

impl StepError {
    /// A problem at `at`.
    pub fn at(at: Place, message: impl Into<String>) -> Self {
        StepError {
            at,
            message: message.into(),
        }
    }
}

impl Node {
    /// A node with no place (built in Rust).
    pub fn new(value: NodeValue) -> Self {
        Node {
            value,
            at: Place::default(),
        }
    }

    /// A string node with no place.
    pub fn string(s: impl Into<String>) -> Self {
        Node::new(NodeValue::String(s.into()))
    }

    /// The node as JSON (places dropped).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match &self.value {
            NodeValue::Null => Value::Null,
            NodeValue::Bool(b) => Value::Bool(*b),
            NodeValue::Number(n) => Value::Number(n.clone()),
            NodeValue::String(s) => Value::String(s.clone()),
            NodeValue::List(l) => Value::Array(l.iter().map(Node::to_json).collect()),
            NodeValue::Map(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
        }
    }

    /// A node from JSON, every part at `at`.
    pub fn from_json(v: &serde_json::Value, at: Place) -> Self {
        use serde_json::Value;
        let value = match v {
            Value::Null => NodeValue::Null,
            Value::Bool(b) => NodeValue::Bool(*b),
            Value::Number(n) => NodeValue::Number(n.clone()),
            Value::String(s) => NodeValue::String(s.clone()),
            Value::Array(a) => NodeValue::List(a.iter().map(|x| Node::from_json(x, at)).collect()),
            Value::Object(m) => NodeValue::Map(
                m.iter()
                    .map(|(k, x)| (k.clone(), Node::from_json(x, at)))
                    .collect(),
            ),
        };
        Node { value, at }
    }

    /// What kind of value this is, for messages.
    pub fn kind(&self) -> &'static str {
        match self.value {
            NodeValue::Null => "null",
            NodeValue::Bool(_) => "a boolean",
            NodeValue::Number(_) => "a number",
            NodeValue::String(_) => "a string",
            NodeValue::List(_) => "a list",
            NodeValue::Map(_) => "a map",
        }
    }

    /// The text of a string node; a number or boolean is read as its text too (YAML writes
    /// `method: 1` and `body: true` without quotes); anything else is an error naming `what`.
    pub fn text(&self, what: &str) -> Result<String, StepError> {
        match &self.value {
            NodeValue::String(s) => Ok(s.clone()),
            NodeValue::Number(n) => Ok(n.to_string()),
            NodeValue::Bool(b) => Ok(b.to_string()),
            _ => Err(StepError::at(
                self.at,
                format!("{what}: expected a string, found {}", self.kind()),
            )),
        }
    }

    /// The members of a map node; anything else is an error naming `what`.
    pub fn map(&self, what: &str) -> Result<&[(String, Node)], StepError> {
        match &self.value {
            NodeValue::Map(m) => Ok(m),
            _ => Err(StepError::at(
                self.at,
                format!("{what}: expected a map, found {}", self.kind()),
            )),
        }
    }

    /// The members of a map node, refusing keys not in `known` (named in the message, as a
    /// misspelt field should be).
    pub fn fields(&self, what: &str, known: &[&str]) -> Result<Fields<'_>, StepError> {
        let members = self.map(what)?;
        for (k, v) in members {
            if !known.contains(&k.as_str()) {
                return Err(StepError::at(
                    v.at,
                    format!(
                        "{what}: unknown field `{k}`, expected one of {}",
                        known
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
        Ok(Fields {
            members,
            at: self.at,
        })
    }
}

/// A map's members, checked against the known field names.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    members: &'a [(String, Node)],
    /// Where the map was written.
    pub at: Place,
}

impl<'a> Fields<'a> {
    /// The member named `key`.
    pub fn get(&self, key: &str) -> Option<&'a Node> {
        self.members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The member named `key`, which must be there.
    pub fn require(&self, key: &str, what: &str) -> Result<&'a Node, StepError> {
        self.get(key)
            .ok_or_else(|| StepError::at(self.at, format!("{what} needs `{key}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_refuse_unknown_keys_at_their_place() {
        let at = Place { line: 3, column: 5 };
        let node = Node {
            value: NodeValue::Map(vec![
                ("path".into(), Node::string("/")),
                (
                    "methd".into(),
                    Node {
                        value: NodeValue::String("GET".into()),
                        at,
                    },
                ),
            ]),
            at: Place::default(),
        };
        let e = node.fields("request", &["path", "method"]).unwrap_err();
        assert_eq!(e.at, at);
        assert!(e.message.contains("unknown field `methd`"), "{}", e.message);
        let ok = node.fields("request", &["path", "methd"]).unwrap();
        assert_eq!(ok.get("path").unwrap().text("path").unwrap(), "/");
        assert!(ok.require("body", "request").is_err());
    }

    #[test]
    fn json_round_trip() {
        let v = serde_json::json!({"a": [1, "x", null, true], "b": {"c": 2.5}});
        assert_eq!(Node::from_json(&v, Place::default()).to_json(), v);
    }
}
