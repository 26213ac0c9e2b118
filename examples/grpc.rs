//! gRPC driven from the library, with no command line: the testbed's greeter started
//! in-process, `helloworld.Greeter/SayHello` as a one-step plan (its descriptors from the
//! server's reflection, its message encoded once, before the load), 2,000 calls by 20 users
//! through `Run` with thresholds, the summary and a JSON result, and the exit code.
//!
//!     cargo run --example grpc [RESULT.json]

use std::sync::Arc;

use throng::core::LoadSpec;
use throng::grpc::{GrpcClient, GrpcConfig};
use throng::testbed::GrpcTarget;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let greeter = GrpcTarget::default().start().await?;
    let mut cfg = GrpcConfig::new(&greeter.url(), "helloworld.Greeter/SayHello")?;
    cfg.data = Some(r#"{"name": "throng"}"#.into());
    let driver = Arc::new(GrpcClient::one_step(cfg).await?);
    let spec = LoadSpec {
        users: Some(20),
        requests: Some(2_000),
        ..LoadSpec::default()
    };
    let plan = spec.plan(&greeter.url(), &throng::core::spec::keys)?;
    let mut run = throng::Run::new(plan, driver)
        .thresholds(["p99<1s".parse()?, "error_rate<1%".parse()?])
        .summary(true);
    if let Some(path) = std::env::args().nth(1) {
        run = run.json(path);
    }
    let finished = run.execute().await?;
    println!("the greeter answered {} calls", greeter.calls());
    std::process::exit(finished.exit_code().into());
}
