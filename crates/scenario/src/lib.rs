//! Scenario files: multi-step flows in YAML, compiled once into a [`ScenarioDriver`].
//!
//! A scenario names its targets, variables and CSV data, then lists steps (an HTTP request
//! with extraction and checks, and an optional think time) and groups of steps measured as one
//! transaction. Everything is validated before any load starts: unknown fields, unknown
//! variables in templates, bad JSONPaths and regexes, missing data files and unknown targets
//! are errors that name their place as `file:line:column`. Templates are minijinja, compiled
//! once; text without `{{` is never rendered. Library users can build the same flow in Rust
//! with [`Builder`] and add custom steps (async closures) that the engine times like any other.
#![deny(missing_docs)]

mod builder;
mod compile;
pub mod data;
pub mod file;
mod load;
mod scenario;
pub mod template;
mod yaml;

pub use builder::{Builder, StepBuilder};
pub use compile::{compile_str, load, ScenarioError};
pub use scenario::{
    Body, Check, CustomFn, Expected, Extract, HttpStep, JsonKey, Scenario, ScenarioDriver,
    ScenarioSession, Step, StepKind, Vars,
};
