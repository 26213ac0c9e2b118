//! Scenario steps from any protocol: the contract between the scenario crate (files, variables,
//! templates, checks, extraction) and the protocol crates (what a step sends, and how).
//!
//! A protocol implements [`Protocol`] and [`Client`], once, and is registered in [`Protocols`]
//! under its URL schemes and its step key (`request` for HTTP, `grpc`, `sql`). When a scenario
//! loads, the protocol compiles each of its steps from the [`Node`] written under that key into
//! its own step type, compiling its templates through [`TemplateCompiler`] and blaming bad
//! values on their [`Place`]. When the run starts it makes one [`Client`] per target. Each call
//! renders its templates through [`Render`] and answers with an [`Outcome`](crate::Outcome)
//! and, when asked, a [`Reply`]: the status, metadata and body that the scenario's checks and
//! extraction read, whatever the protocol.
//!
//! A scenario mixing protocols holds one client of each per target, so core erases their
//! types, once, for every protocol: [`StepProtocol`], [`StepClient`] and [`StepCall`] are
//! derived from the typed traits (workers and sessions as `Box<dyn Any>`, one boxed future per
//! step). The single-URL paths (`throng run URL`) are typed: [`crate::steps::Steps`], a
//! client's steps as a whole plan (HTTP's and gRPC's one step, SQL's statements and
//! transaction), so no protocol writes a [`crate::Driver`] of its own.
//!
//! One file per part, every name re-exported here: `node` (the values a step is written in),
//! `template`, `options`, `protocol` (the typed contract), `erase` (its type-erased form) and
//! `registry`.

mod erase;
mod message;
mod node;
mod options;
mod protocol;
mod registry;
mod template;

pub use erase::{same_protocol, LocalFuture, StepCall, StepClient, StepProtocol};
pub use message::{message, MessageNode};
pub use node::{Fields, Node, NodeValue, Place, StepError};
pub use options::{ClientOptions, Identity, OwnOptions};
pub use protocol::{Client, Protocol, Reply};
pub use registry::Protocols;
pub use template::{JsonTemplate, Render, StaticOnly, TemplateCompiler, Text, Uncompiled};
