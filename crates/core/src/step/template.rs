//! A step's templates: text static or compiled when the scenario loads ([`TemplateCompiler`]),
//! rendered with the user's variables per call ([`Render`]), and JSON documents whose leaves
//! are templates.

use std::sync::Arc;

use super::{Node, NodeValue, Place, StepError};

/// A piece of text of a step, static or a compiled template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Text {
    /// Used as written.
    Static(String),
    /// The name of a compiled template, rendered per request.
    Template(String),
}

impl Text {
    /// The text if it is static.
    pub fn as_static(&self) -> Option<&str> {
        match self {
            Text::Static(s) => Some(s),
            Text::Template(_) => None,
        }
    }
}

/// Compiles a step's templates when the scenario loads (and checks their variables).
pub trait TemplateCompiler {
    /// Compiles `source`; text without `{{` or `{%` stays static.
    fn text(&mut self, source: &str, at: Place) -> Result<Text, StepError>;

    /// The folder a step's relative file paths (a `.proto`, say) are read from: the scenario
    /// file's own, as for its CSV data; empty (the working directory) when there is no file.
    fn dir(&self) -> &std::path::Path {
        std::path::Path::new("")
    }
}

/// A [`TemplateCompiler`] that compiles nothing: a text holding `{{` becomes a template as
/// written, any other stays static. For a protocol's own tests of its steps, and tools that
/// read steps without rendering them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Uncompiled;

impl TemplateCompiler for Uncompiled {
    fn text(&mut self, source: &str, _at: Place) -> Result<Text, StepError> {
        Ok(match source.contains("{{") {
            true => Text::Template(source.into()),
            false => Text::Static(source.into()),
        })
    }
}

/// Renders a step's templates with the user's variables when it runs.
pub trait Render {
    /// The text, rendered.
    fn render(&self, text: &Text) -> Result<String, String>;
}

impl<R: Render + ?Sized> Render for Arc<R> {
    fn render(&self, text: &Text) -> Result<String, String> {
        (**self).render(text)
    }
}

/// Renders static text only: for steps that hold no templates.
#[derive(Debug, Clone, Copy, Default)]
pub struct StaticOnly;

impl Render for StaticOnly {
    fn render(&self, text: &Text) -> Result<String, String> {
        match text {
            Text::Static(s) => Ok(s.clone()),
            Text::Template(name) => Err(format!("template {name} has no variables to render")),
        }
    }
}

/// A JSON document written in a step (an HTTP `json:` body, a gRPC `message:`) whose string
/// leaves may be templates: compiled once, rendered per request. A leaf that renders as JSON (a
/// number, an object) goes in as that value, anything else as a string.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonTemplate {
    doc: serde_json::Value,
    leaves: Vec<(Vec<JsonKey>, Text)>,
}

/// A step into a JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
enum JsonKey {
    Key(String),
    Index(usize),
}

impl JsonTemplate {
    /// The document of `node`, its template leaves compiled through `t`.
    pub fn compile(t: &mut dyn TemplateCompiler, node: &Node) -> Result<Self, StepError> {
        let mut leaves = Vec::new();
        Self::walk(t, node, &mut Vec::new(), &mut leaves)?;
        Ok(JsonTemplate {
            doc: node.to_json(),
            leaves,
        })
    }

    fn walk(
        t: &mut dyn TemplateCompiler,
        node: &Node,
        path: &mut Vec<JsonKey>,
        out: &mut Vec<(Vec<JsonKey>, Text)>,
    ) -> Result<(), StepError> {
        match &node.value {
            NodeValue::String(s) if s.contains("{{") || s.contains("{%") => {
                out.push((path.clone(), t.text(s, node.at)?));
            }
            NodeValue::List(items) => {
                for (i, x) in items.iter().enumerate() {
                    path.push(JsonKey::Index(i));
                    Self::walk(t, x, path, out)?;
                    path.pop();
                }
            }
            NodeValue::Map(members) => {
                for (k, x) in members {
                    path.push(JsonKey::Key(k.clone()));
                    Self::walk(t, x, path, out)?;
                    path.pop();
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The document as written (templates unrendered).
    pub fn document(&self) -> &serde_json::Value {
        &self.doc
    }

    /// How many of its leaves are templates (none: the document is the same every time).
    pub fn templates(&self) -> usize {
        self.leaves.len()
    }

    /// The document with its templates rendered.
    pub fn render(&self, r: &dyn Render) -> Result<serde_json::Value, String> {
        let mut doc = self.doc.clone();
        for (path, text) in &self.leaves {
            let rendered = r.render(text)?;
            let value =
                serde_json::from_str(&rendered).unwrap_or(serde_json::Value::String(rendered));
            let slot = path.iter().try_fold(&mut doc, |cur, k| match (k, cur) {
                (JsonKey::Key(k), serde_json::Value::Object(m)) => m.get_mut(k),
                (JsonKey::Index(i), serde_json::Value::Array(a)) => a.get_mut(*i),
                _ => None,
            });
            if let Some(slot) = slot {
                *slot = value;
            }
        }
        Ok(doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_template_renders_its_leaves_in_place() {
        struct Plain;
        impl TemplateCompiler for Plain {
            fn text(&mut self, source: &str, _at: Place) -> Result<Text, StepError> {
                Ok(Text::Template(source.into()))
            }
        }
        struct Vars;
        impl Render for Vars {
            fn render(&self, text: &Text) -> Result<String, String> {
                match text {
                    Text::Template(t) if t == "{{ n }}" => Ok("3".into()),
                    Text::Template(_) => Ok("abc".into()),
                    Text::Static(s) => Ok(s.clone()),
                }
            }
        }
        let doc = serde_json::json!({"a": [1, {"b": "{{ n }}"}], "c": "{{ s }}", "d": "x"});
        let node = Node::from_json(&doc, Place { line: 1, column: 1 });
        let t = JsonTemplate::compile(&mut Plain, &node).unwrap();
        assert_eq!(t.templates(), 2);
        assert_eq!(t.document(), &doc);
        // A number goes in as a number, other text as a string; the rest is untouched.
        assert_eq!(
            t.render(&Vars).unwrap(),
            serde_json::json!({"a": [1, {"b": 3}], "c": "abc", "d": "x"})
        );
    }
}
