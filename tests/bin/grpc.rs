//! Integration tests, one binary per theme (one link each, not one per file). gRPC: the testbed and grpc-go, load, scenarios.

#[path = "../common/mod.rs"]
mod common;
#[path = "../grpc.rs"]
mod grpc;
#[path = "../grpc_go.rs"]
mod grpc_go;
#[path = "../grpc_load.rs"]
mod grpc_load;
#[path = "../grpc_scenario.rs"]
mod grpc_scenario;
