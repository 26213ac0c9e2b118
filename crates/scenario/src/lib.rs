//! Scenario files: multi-step flows in YAML, compiled once into a [`ScenarioDriver`].
//!
//! A scenario names its targets, variables and CSV data, then lists steps (a request of the
//! target's protocol, with extraction and checks, and an optional think time) and groups of
//! steps measured as one transaction. This crate knows no protocol: each registers a
//! [`throng_core::step::StepProtocol`] (HTTP's `request:`, gRPC's `grpc:`), which compiles its
//! steps and makes a client per target; checks and extraction read the protocol's common
//! [`throng_core::step::Reply`]. Everything is validated before any load starts: unknown fields, unknown
//! variables in templates, bad JSONPaths and regexes, missing data files and unknown targets
//! are errors that name their place as `file:line:column`. Templates are minijinja, compiled
//! once; text without `{{` is never rendered. Library users can build the same flow in Rust
//! with [`Builder`] and add custom steps (async closures) that the engine times like any other.
#![deny(missing_docs)]

mod builder;
mod compile;
pub mod control;
pub mod data;
pub mod file;
mod load;
mod mix;
mod scenario;
pub use throng_template as template;
mod yaml;

pub use builder::{Builder, StepBuilder};
pub use compile::{compile_str, load, ScenarioError};
pub use load::Sweep;
pub use mix::load_mix;
pub use scenario::{
    Check, CustomFn, Expected, Extract, ProtocolStep, Scenario, ScenarioDriver, ScenarioSession,
    Step, StepKind, Target, Vars,
};
pub use throng_core::step::{ClientOptions, Protocols};
