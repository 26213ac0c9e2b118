//! The scenario file as written: YAML shapes, with the location of every value a later check
//! may need to point at. Unknown fields are errors.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::Spanned;

/// A whole scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    /// Named base URLs.
    #[serde(default)]
    pub targets: BTreeMap<String, Spanned<String>>,
    /// Variables every user starts with.
    #[serde(default)]
    pub variables: BTreeMap<String, serde_json::Value>,
    /// Named CSV data sources.
    #[serde(default)]
    pub data: BTreeMap<String, Spanned<DataSource>>,
    /// The load model, with the place of each value (checked into a [`Load`] when compiled).
    #[serde(default)]
    pub load: LoadSection,
    /// Pass/fail conditions, as on the command line.
    #[serde(default)]
    pub thresholds: Vec<Spanned<String>>,
    /// Goodput's objectives (`ttft<200ms,tpot<50ms`), as `--goodput` writes them.
    pub goodput: Option<Spanned<String>>,
    /// What a failed check or request does to the rest of the iteration.
    #[serde(default)]
    pub on_failure: OnFailure,
    /// The steps of one iteration (spanned, so an empty list can be pointed at); or `flows`.
    #[serde(default, deserialize_with = "present")]
    pub steps: Option<Spanned<Vec<Spanned<Item>>>>,
    /// Several flows of steps, one picked by weight for each iteration; or `steps`.
    #[serde(default, deserialize_with = "present")]
    pub flows: Option<Spanned<Vec<Spanned<Flow>>>>,
    /// Seeds the picks of flows, so that a run can be repeated (user `u` of a run with seed `s`
    /// picks the same flows every time), and an open loop's random arrivals (Poisson, gamma);
    /// `--seed` overrides it.
    pub seed: Option<u64>,
    /// Docker containers to watch (used when container stats are available).
    #[serde(default)]
    pub containers: Vec<String>,
}

/// A key that may be left out, but not left empty (`steps:` with nothing is an error there).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A flow: steps (and groups) of their own, picked for an iteration in proportion to `weight`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    /// Its row label (a row timing each pass through it, as a group's).
    pub flow: Spanned<String>,
    /// Its share of the iterations: weight over the sum of the weights.
    pub weight: Spanned<YamlNode>,
    /// Its steps and groups.
    pub steps: Spanned<Vec<Spanned<Item>>>,
}

/// What a failure does to the rest of the iteration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// Skip the rest of this iteration (the default).
    #[default]
    SkipIteration,
    /// Go on with the next step.
    Continue,
}

/// A CSV file feeding rows to users.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataSource {
    /// The CSV file, relative to the scenario file; its first line names the columns.
    pub file: String,
    /// How rows are handed out.
    #[serde(default)]
    pub mode: DataMode,
    /// What happens when the rows run out.
    pub on_exhausted: Option<Exhausted>,
}

/// How rows are handed out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataMode {
    /// Each iteration of any user takes the next row.
    #[default]
    Sequential,
    /// Each iteration takes a random row.
    Random,
    /// Each user takes one row of its own for all its iterations.
    Unique,
}

/// What happens when the rows run out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exhausted {
    /// Start again from the first row.
    Wrap,
    /// The user that finds no row stops.
    StopUser,
}

/// The load section as written, each value with its place, so a bad value is blamed on the
/// file and line rather than on the flag it stands in for.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSection {
    /// Closed loop: virtual users.
    pub users: Option<Spanned<u32>>,
    /// Closed loop: users ramping, `DURATION:USERS,...`.
    pub user_stages: Option<Spanned<String>>,
    /// Stop after this many iterations' requests in all (open loop: arrivals).
    pub requests: Option<Spanned<u64>>,
    /// Closed loop: iterations per user.
    pub iterations: Option<Spanned<u64>>,
    /// How long to run (`30s`, `2m`).
    pub duration: Option<Spanned<String>>,
    /// Closed loop: pause after each iteration.
    pub think_time: Option<Spanned<String>>,
    /// Open loop: iterations started per second.
    pub rate: Option<Spanned<f64>>,
    /// Open loop: rate ramping, `DURATION:RATE,...`.
    pub rate_stages: Option<Spanned<String>>,
    /// Open loop: `even`, `poisson` or `gamma:SHAPE`.
    pub arrivals: Option<Spanned<String>>,
    /// Open loop: at most this many iterations at once.
    pub max_in_flight: Option<Spanned<u32>>,
    /// Open loop: queue of waiting arrivals.
    pub queue: Option<Spanned<u32>>,
    /// Run the load this long before measuring, recording nothing.
    pub warmup: Option<Spanned<String>>,
    /// Start the load this long after the run starts (a workload of several, as k6's
    /// `startTime`).
    pub start: Option<Spanned<String>>,
    /// Levels to run one after the other as one grid, as `--sweep` does (the flag wins).
    pub sweep: Option<Spanned<SweepSection>>,
}

/// A sweep's levels as written: a ladder of users, of rates, or both paired rung by rung
/// (`users: [300, 500]` with `rate: [2000, 3000]`: 300 users at 2,000/s, then 500 at 3,000/s).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSection {
    /// Closed loop (or, with `rate`, the in-flight bound of each rung): users at each level.
    pub users: Option<Spanned<Vec<Spanned<u32>>>>,
    /// Open loop: arrivals per second at each level.
    pub rate: Option<Spanned<Vec<Spanned<f64>>>>,
}

/// The load section, checked (every value parses and is in range, and the section does not mix
/// the open and the closed loop); flags on the command line go over it
/// ([`throng_core::LoadSpec::over`]).
pub type Load = throng_core::LoadSpec;

/// A step (`label` and a request under its protocol's key: `request` for HTTP, `grpc`, `sql`),
/// or a group of steps measured as one transaction (`group` and `steps`). One shape for both, so
/// every field keeps its location; the compiler checks that an item is one or the other,
/// and that each other key is a registered protocol's.
#[derive(Debug, Default)]
pub struct Item {
    /// A step's row label.
    pub label: Option<Spanned<String>>,
    /// The keys that are not the fields below, each with its value: a step's request under its
    /// protocol's key (more than one is an error, and so is a key no protocol has).
    pub requests: Vec<(Spanned<String>, Spanned<YamlNode>)>,
    /// Variables to take from the response.
    pub extract: BTreeMap<String, Spanned<Extract>>,
    /// Conditions on the response.
    pub checks: Vec<Spanned<Check>>,
    /// A pause after the step: `100ms`, or a uniform range `50ms..200ms`.
    pub think_time: Option<Spanned<String>>,
    /// A group's row label.
    pub group: Option<Spanned<String>>,
    /// A group's steps.
    pub steps: Option<Vec<Spanned<Item>>>,
    /// Run the step or group only when this condition renders `true`.
    pub when: Option<Spanned<String>>,
    /// Run the step or group this many times (with `until`: at most).
    pub repeat: Option<Spanned<YamlNode>>,
    /// Run the step or group again until this condition renders `true` (bounded by `repeat`).
    pub until: Option<Spanned<String>>,
    /// What a failure of this step (of each step of this group) does, over the file's.
    pub on_failure: Option<Spanned<OnFailure>>,
}

/// The fields of an item besides its request.
pub const ITEM_FIELDS: &[&str] = &[
    "label",
    "extract",
    "checks",
    "think_time",
    "group",
    "steps",
    "when",
    "repeat",
    "until",
    "on_failure",
];

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Item;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a step (label and request) or a group (group and steps)")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Item, A::Error> {
                let mut item = Item::default();
                while let Some(key) = m.next_key::<Spanned<String>>()? {
                    match key.value.as_str() {
                        "label" => item.label = Some(m.next_value()?),
                        "extract" => item.extract = m.next_value()?,
                        "checks" => item.checks = m.next_value()?,
                        "think_time" => item.think_time = Some(m.next_value()?),
                        "group" => item.group = Some(m.next_value()?),
                        "steps" => item.steps = Some(m.next_value()?),
                        "when" => item.when = Some(m.next_value()?),
                        "repeat" => item.repeat = Some(m.next_value()?),
                        "until" => item.until = Some(m.next_value()?),
                        "on_failure" => item.on_failure = Some(m.next_value()?),
                        _ => item.requests.push((key, m.next_value()?)),
                    }
                }
                Ok(item)
            }
        }
        d.deserialize_map(V)
    }
}

/// Any YAML value with the place of each part (a step's request, a status), read by the
/// protocol that owns it.
#[derive(Debug, Clone, PartialEq)]
pub enum YamlNode {
    /// `null` or nothing.
    Null,
    /// A boolean.
    Bool(bool),
    /// A number.
    Number(serde_json::Number),
    /// A string.
    String(String),
    /// A list.
    List(Vec<Spanned<YamlNode>>),
    /// A map, in the order written.
    Map(Vec<(String, Spanned<YamlNode>)>),
}

impl<'de> Deserialize<'de> for YamlNode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = YamlNode;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<YamlNode, E> {
                Ok(YamlNode::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<YamlNode, E> {
                Ok(YamlNode::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<YamlNode, E> {
                Ok(YamlNode::Number(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<YamlNode, E> {
                Ok(serde_json::Number::from_f64(v).map_or(YamlNode::Null, YamlNode::Number))
            }
            fn visit_str<E>(self, v: &str) -> Result<YamlNode, E> {
                Ok(YamlNode::String(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<YamlNode, E> {
                Ok(YamlNode::String(v))
            }
            fn visit_unit<E>(self) -> Result<YamlNode, E> {
                Ok(YamlNode::Null)
            }
            fn visit_none<E>(self) -> Result<YamlNode, E> {
                Ok(YamlNode::Null)
            }
            fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<YamlNode, D::Error> {
                YamlNode::deserialize(d)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<YamlNode, A::Error> {
                let mut items = Vec::new();
                while let Some(x) = s.next_element()? {
                    items.push(x);
                }
                Ok(YamlNode::List(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<YamlNode, A::Error> {
                let mut members = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    members.push((k, m.next_value()?));
                }
                Ok(YamlNode::Map(members))
            }
        }
        d.deserialize_any(V)
    }
}

/// A place in the file as the protocols see it.
pub fn place(loc: serde_saphyr::Location) -> throng_core::step::Place {
    throng_core::step::Place {
        line: loc.line(),
        column: loc.column(),
    }
}

/// A spanned YAML value as a protocol reads it.
pub fn node(n: &Spanned<YamlNode>) -> throng_core::step::Node {
    use throng_core::step::{Node, NodeValue};
    let value = match &n.value {
        YamlNode::Null => NodeValue::Null,
        YamlNode::Bool(b) => NodeValue::Bool(*b),
        YamlNode::Number(x) => NodeValue::Number(x.clone()),
        YamlNode::String(s) => NodeValue::String(s.clone()),
        YamlNode::List(l) => NodeValue::List(l.iter().map(node).collect()),
        YamlNode::Map(m) => NodeValue::Map(m.iter().map(|(k, v)| (k.clone(), node(v))).collect()),
    };
    Node {
        value,
        at: place(n.referenced),
    }
}

/// A value built in Rust (no place) as a spanned YAML value.
pub fn from_json(v: &serde_json::Value) -> Spanned<YamlNode> {
    let value = match v {
        serde_json::Value::Null => YamlNode::Null,
        serde_json::Value::Bool(b) => YamlNode::Bool(*b),
        serde_json::Value::Number(n) => YamlNode::Number(n.clone()),
        serde_json::Value::String(s) => YamlNode::String(s.clone()),
        serde_json::Value::Array(a) => YamlNode::List(a.iter().map(from_json).collect()),
        serde_json::Value::Object(m) => {
            YamlNode::Map(m.iter().map(|(k, x)| (k.clone(), from_json(x))).collect())
        }
    };
    Spanned::new(
        value,
        serde_saphyr::Location::UNKNOWN,
        serde_saphyr::Location::UNKNOWN,
    )
}

/// Where a variable comes from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Extract {
    /// The first match of a JSONPath on the JSON body.
    Jsonpath(String),
    /// A response header (gRPC: metadata; case-insensitive).
    Header(String),
    /// The same as `header`, in gRPC's word.
    Metadata(String),
    /// The first capture group (or the whole match) of a regex on the body.
    Regex(String),
}

/// A condition on a response.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// The status must be this (in the step's protocol's terms: `200`, `UNAVAILABLE`).
    pub status: Option<Spanned<YamlNode>>,
    /// A JSONPath on the body, with `equals` or `exists`.
    pub jsonpath: Option<String>,
    /// The JSONPath's first match must equal this.
    pub equals: Option<serde_json::Value>,
    /// The JSONPath must (or must not) match.
    pub exists: Option<bool>,
    /// The body must contain this text.
    pub body_contains: Option<String>,
    /// The step must finish within this long (`50ms`).
    pub latency_under: Option<String>,
}
