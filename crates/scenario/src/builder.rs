//! Building a scenario in Rust: the same steps as a file, plus custom steps.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use serde_saphyr::{Location, Spanned};
use throng_core::step::Protocols;
use throng_core::Outcome;

use crate::compile::{compile_file, ScenarioError};
use crate::file::{self, File, Item, OnFailure};
use crate::scenario::{CustomFn, Scenario, Step, StepKind, Vars};

fn sp<T>(v: T) -> Spanned<T> {
    Spanned::new(v, Location::UNKNOWN, Location::UNKNOWN)
}

/// One step being built: an HTTP request (the shortcuts `get`, `post`, `header`, `json`), or
/// any protocol's request written as JSON under its key ([`StepBuilder::request`]).
#[derive(Debug)]
pub struct StepBuilder {
    item: Item,
    key: String,
    request: serde_json::Map<String, serde_json::Value>,
}

impl StepBuilder {
    /// An HTTP step labelled `label` sending `method` to `path` (both may hold templates).
    pub fn new(label: &str, method: &str, path: &str) -> Self {
        let mut request = serde_json::Map::new();
        request.insert("method".into(), method.into());
        request.insert("path".into(), path.into());
        Self::request(label, "request", request)
    }

    /// A step of the protocol whose key is `key` (`request`, `grpc`, `sql`), its request
    /// written as in a file: `StepBuilder::request("hello", "grpc", json!({"call": "..."}))`.
    pub fn request(
        label: &str,
        key: &str,
        request: serde_json::Map<String, serde_json::Value>,
    ) -> Self {
        StepBuilder {
            item: Item {
                label: Some(sp(label.to_string())),
                ..Item::default()
            },
            key: key.to_string(),
            request,
        }
    }

    /// A GET step.
    pub fn get(label: &str, path: &str) -> Self {
        Self::new(label, "GET", path)
    }

    /// A POST step.
    pub fn post(label: &str, path: &str) -> Self {
        Self::new(label, "POST", path)
    }

    fn into_item(mut self) -> Item {
        let request = file::from_json(&serde_json::Value::Object(self.request));
        self.item.requests.push((sp(self.key), request));
        self.item
    }

    /// Sends to the named target.
    pub fn target(mut self, name: &str) -> Self {
        self.request.insert("target".into(), name.into());
        self
    }

    /// Adds an HTTP header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        let headers = self
            .request
            .entry("headers")
            .or_insert_with(|| serde_json::json!({}));
        if let Some(h) = headers.as_object_mut() {
            h.insert(name.to_string(), value.into());
        }
        self
    }

    /// Sends a text body.
    pub fn body(mut self, body: &str) -> Self {
        self.request.insert("body".into(), body.into());
        self
    }

    /// Sends a JSON body (string values may hold templates).
    pub fn json(mut self, body: serde_json::Value) -> Self {
        self.request.insert("json".into(), body);
        self
    }

    /// Takes a variable from the JSON body.
    pub fn extract_json(mut self, var: &str, path: &str) -> Self {
        self.item.extract.insert(
            var.to_string(),
            sp(file::Extract::Jsonpath(path.to_string())),
        );
        self
    }

    /// Takes a variable from a header.
    pub fn extract_header(mut self, var: &str, header: &str) -> Self {
        self.item.extract.insert(
            var.to_string(),
            sp(file::Extract::Header(header.to_string())),
        );
        self
    }

    fn check(mut self, c: file::Check) -> Self {
        self.item.checks.push(sp(c));
        self
    }

    fn empty_check() -> file::Check {
        file::Check {
            status: None,
            jsonpath: None,
            equals: None,
            exists: None,
            body_contains: None,
            latency_under: None,
        }
    }

    /// Checks the status (an HTTP code; gRPC: a code or its name, as a string).
    pub fn check_status(self, status: impl Into<serde_json::Value>) -> Self {
        self.check(file::Check {
            status: Some(file::from_json(&status.into())),
            ..Self::empty_check()
        })
    }

    /// Checks that a JSONPath's first match equals a value.
    pub fn check_json(self, path: &str, equals: serde_json::Value) -> Self {
        self.check(file::Check {
            jsonpath: Some(path.into()),
            equals: Some(equals),
            ..Self::empty_check()
        })
    }

    /// Checks that the body contains a text.
    pub fn check_body_contains(self, text: &str) -> Self {
        self.check(file::Check {
            body_contains: Some(text.into()),
            ..Self::empty_check()
        })
    }

    /// Pauses after the step (`100ms`, or `50ms..200ms`).
    pub fn think(mut self, time: &str) -> Self {
        self.item.think_time = Some(sp(time.to_string()));
        self
    }
}

enum Entry {
    Step(Box<StepBuilder>),
    Group(String, Vec<StepBuilder>),
    Custom(String, CustomFn),
}

/// Builds a [`Scenario`] in Rust.
#[derive(Default)]
pub struct Builder {
    targets: BTreeMap<String, Spanned<String>>,
    variables: Vars,
    entries: Vec<Entry>,
    on_failure: OnFailure,
}

impl Builder {
    /// An empty scenario.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a named target (a base URL).
    pub fn target(mut self, name: &str, url: &str) -> Self {
        self.targets.insert(name.to_string(), sp(url.to_string()));
        self
    }

    /// Sets a variable every user starts with.
    pub fn variable(mut self, name: &str, value: serde_json::Value) -> Self {
        self.variables.insert(name.to_string(), value);
        self
    }

    /// Lets iterations go on after a failed step (the default skips the rest of the iteration).
    pub fn continue_on_failure(mut self) -> Self {
        self.on_failure = OnFailure::Continue;
        self
    }

    /// Appends an HTTP step.
    pub fn step(mut self, step: StepBuilder) -> Self {
        self.entries.push(Entry::Step(Box::new(step)));
        self
    }

    /// Appends a group of HTTP steps measured as one transaction.
    pub fn group(mut self, label: &str, steps: Vec<StepBuilder>) -> Self {
        self.entries.push(Entry::Group(label.to_string(), steps));
        self
    }

    /// Appends a custom step: an async function of the user's variables returning them and the
    /// step's outcome. The engine times it like any other step.
    pub fn custom<F, Fut>(mut self, label: &str, f: F) -> Self
    where
        F: Fn(Vars) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = (Vars, Outcome)> + 'static,
    {
        let f: CustomFn = Arc::new(move |vars| Box::pin(f(vars)));
        self.entries.push(Entry::Custom(label.to_string(), f));
        self
    }

    /// Validates and compiles the scenario; its targets' schemes pick among `protocols`
    /// (`throng::protocols()` has every protocol throng ships).
    pub fn build(self, protocols: &Protocols) -> Result<Scenario, ScenarioError> {
        let mut items = Vec::new();
        let mut customs = Vec::new();
        let mut count = 0;
        for e in self.entries {
            match e {
                Entry::Step(s) => {
                    items.push(sp(s.into_item()));
                    count += 1;
                }
                Entry::Group(label, steps) => {
                    count += steps.len();
                    items.push(sp(Item {
                        group: Some(sp(label)),
                        steps: Some(steps.into_iter().map(|s| sp(s.into_item())).collect()),
                        ..Item::default()
                    }));
                }
                Entry::Custom(label, f) => {
                    customs.push((count + customs.len(), label, f));
                }
            }
        }
        let file = File {
            targets: self.targets,
            variables: self.variables,
            data: BTreeMap::new(),
            load: file::LoadSection::default(),
            thresholds: Vec::new(),
            goodput: None,
            on_failure: self.on_failure,
            steps: Some(sp(items)),
            flows: None,
            seed: None,
            containers: Vec::new(),
        };
        let proceed = self.on_failure == OnFailure::Continue;
        let mut scenario = if count == 0 {
            compile_file(file, "scenario", Path::new("."), true, protocols)?
        } else {
            compile_file(file, "scenario", Path::new("."), false, protocols)?
        };
        for (pos, label, f) in customs {
            scenario.steps.insert(
                pos,
                Step {
                    label,
                    kind: StepKind::Custom(f),
                    think: None,
                    proceed,
                },
            );
            for g in &mut scenario.groups {
                if g.first >= pos {
                    g.first += 1;
                    g.last += 1;
                }
            }
            for b in &mut scenario.blocks {
                if b.first >= pos {
                    b.first += 1;
                    b.last += 1;
                }
            }
        }
        Ok(scenario)
    }
}
