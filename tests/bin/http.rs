//! Integration tests, one binary per theme (one link each, not one per file). The command line and HTTP: flags, the book's commands, what installs beside the binary, faults, conformance, scenarios, the dashboard, the schema, shards.

#[path = "../amqp.rs"]
mod amqp;
#[path = "../arrivals.rs"]
mod arrivals;
#[path = "../book.rs"]
mod book;
#[path = "../branches.rs"]
mod branches;
#[path = "../cli.rs"]
mod cli;
#[path = "../cli_faults.rs"]
mod cli_faults;
#[path = "../common/mod.rs"]
mod common;
#[path = "../engine_http.rs"]
mod engine_http;
#[path = "../fault_matrix.rs"]
mod fault_matrix;
#[path = "../faults.rs"]
mod faults;
#[path = "../flows.rs"]
mod flows;
#[path = "../h1_conformance.rs"]
mod h1_conformance;
#[path = "../install.rs"]
mod install;
#[path = "../library.rs"]
mod library;
#[path = "../live.rs"]
mod live;
#[path = "../llm.rs"]
mod llm;
#[path = "../mtls.rs"]
mod mtls;
#[path = "../nats.rs"]
mod nats;
#[path = "../open_protocols.rs"]
mod open_protocols;
#[path = "../phases.rs"]
mod phases;
#[path = "../scenarios.rs"]
mod scenarios;
#[path = "../schema.rs"]
mod schema;
#[path = "../shards.rs"]
mod shards;
#[path = "../streams.rs"]
mod streams;
#[path = "../transports.rs"]
mod transports;
#[path = "../url_templates.rs"]
mod url_templates;
