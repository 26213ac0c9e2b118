//! `throng demo` (the bundled scenario against the embedded bank) and `throng serve` (the
//! testbed's targets on a port of their own).

use std::time::Duration;

use anyhow::Context as _;
use throng_core::stages::parse_duration;
use throng_testbed::{BankService, Delay, Fault, HttpTarget};

use super::args::{DemoArgs, FaultArg, ServeArgs, ServeTarget};
use super::runner::{run_scenario, Outputs};
use super::{CliError, EXIT_OK};
use throng_run::wait_for_signal;

/// The bundled bank-transfer scenario, run by `throng demo`.
pub const DEMO_SCENARIO: &str = include_str!("../../scenarios/bank-transfer.yaml");

pub(crate) async fn demo(a: DemoArgs) -> Result<u8, CliError> {
    let bank = BankService::default()
        .start()
        .await
        .context("starting the demo bank")?;
    eprintln!(
        "demo: the bank service at {} (SQLite in memory), scenarios/bank-transfer.yaml against it",
        bank.url()
    );
    let mut scenario = throng_scenario::compile_str(
        DEMO_SCENARIO,
        "scenarios/bank-transfer.yaml",
        std::path::Path::new("."),
        &crate::protocols(),
    )
    .map_err(|e| CliError::Runtime(anyhow::anyhow!("the bundled scenario: {e}")))?;
    for t in &mut scenario.targets {
        t.url = bank.url();
    }
    // The demo's flags are `throng run`'s: a spec over the file's load section, as there.
    let flags = throng_core::LoadSpec {
        duration: Some(a.duration.clone()),
        rate: a.rate,
        users: a.rate.is_none().then_some(a.users),
        ..throng_core::LoadSpec::default()
    };
    let setup = super::scenario::assemble(
        scenario,
        &flags,
        "scenarios/bank-transfer.yaml",
        &[],
        &throng_core::step::ClientOptions::default(),
        None,
    )?;
    let out = Outputs {
        run: throng_run::flags::Outputs {
            json: a.json,
            show: throng_run::flags::show(a.no_tui, false),
            ..Default::default()
        },
        ..Outputs::default()
    };
    let code = run_scenario(setup, out).await?.exit_code();
    let errors = bank.server_errors();
    drop(bank);
    if errors > 0 {
        eprintln!("demo: the bank answered {errors} requests with a server error");
    }
    Ok(code)
}

fn parse_stall(v: &str) -> Result<(Duration, Duration), CliError> {
    let bad = || CliError::Usage(format!("--stall {v:?}: write FROM..TO, e.g. 5s..8s"));
    let (a, b) = v.split_once("..").ok_or_else(bad)?;
    let (a, b) = (
        parse_duration(a.trim()).map_err(|_| bad())?,
        parse_duration(b.trim()).map_err(|_| bad())?,
    );
    if b <= a {
        return Err(bad());
    }
    Ok((a, b))
}

/// How a testbed target answers: `--delay` (`--delay-max`), `--stall` and `--fault`.
struct Shaping {
    delay: Delay,
    stall: Option<(Duration, Duration)>,
    fault: Option<Fault>,
}

impl Shaping {
    fn of(a: &ServeArgs) -> Result<Shaping, CliError> {
        let d = |flag: &str, v: &str| {
            parse_duration(v).map_err(|e| CliError::Usage(format!("{flag} {v:?}: {e}")))
        };
        Ok(Shaping {
            delay: match (&a.delay, &a.delay_max) {
                (None, _) => Delay::None,
                (Some(x), None) => Delay::Fixed(d("--delay", x)?),
                (Some(x), Some(y)) => Delay::Uniform(d("--delay", x)?, d("--delay-max", y)?),
            },
            stall: a.stall.as_deref().map(parse_stall).transpose()?,
            fault: a.fault.map(|f| match f {
                FaultArg::Reset => Fault::Reset,
                FaultArg::Garbage => Fault::Garbage,
                FaultArg::Hang => Fault::Hang,
            }),
        })
    }
}

/// The listener of `--host` and `--port`.
async fn listen(a: &ServeArgs) -> Result<tokio::net::TcpListener, CliError> {
    tokio::net::TcpListener::bind((a.host.as_str(), a.port))
        .await
        .map_err(|e| CliError::Usage(format!("cannot listen on {}:{}: {e}", a.host, a.port)))
}

pub(crate) async fn serve(a: ServeArgs) -> Result<u8, CliError> {
    if a.target == ServeTarget::Bank {
        return serve_bank(a).await;
    }
    if a.db.is_some() {
        return Err(CliError::Usage("--db applies to the bank only".into()));
    }
    if a.target == ServeTarget::Grpc {
        return serve_grpc(a).await;
    }
    let shape = Shaping::of(&a)?;
    let target = HttpTarget {
        delay: shape.delay,
        status: a.status,
        stall: shape.stall,
        fault: shape.fault,
        tls: a.tls,
        capacity: a.capacity,
        ..HttpTarget::default()
    };
    let listener = listen(&a).await?;
    let running = target
        .serve(listener)
        .await
        .context("starting the target")?;
    if let Some(pem) = &running.cert_pem {
        println!("{pem}");
    }
    println!("serving on {}", running.url());
    wait_for_signal().await;
    eprintln!("served {} requests", running.requests());
    Ok(EXIT_OK)
}

async fn serve_bank(a: ServeArgs) -> Result<u8, CliError> {
    let shaping = a.delay.is_some() || a.stall.is_some() || a.fault.is_some() || a.tls;
    if shaping || a.status != 200 {
        return Err(CliError::Usage(
            "--delay, --status, --stall, --fault and --tls apply to the http target only".into(),
        ));
    }
    let listener = listen(&a).await?;
    let storage = match a.db.as_deref() {
        None => throng_testbed::Storage::Memory,
        Some(url) => match url.split_once("://") {
            Some(("sqlite", file)) => throng_testbed::Storage::File(file.into()),
            Some(("postgres" | "postgresql" | "mysql" | "mariadb", _)) => {
                throng_testbed::Storage::Server(url.to_string())
            }
            _ => {
                return Err(CliError::Usage(format!(
                    "--db {}: not a database URL (postgres://, mysql://, sqlite://FILE)",
                    throng_sql::redact(url)
                )))
            }
        },
    };
    let shown =
        a.db.as_deref()
            .map_or("SQLite in memory".into(), throng_sql::redact);
    let running = BankService {
        storage,
        ..BankService::default()
    }
    .serve(listener)
    .await
    .with_context(|| format!("starting the bank on {shown}"))?;
    println!("serving the bank on {} ({shown})", running.url());
    wait_for_signal().await;
    eprintln!(
        "served {} requests ({} server errors)",
        running.requests(),
        running.server_errors()
    );
    Ok(EXIT_OK)
}

/// `throng serve grpc`: the testbed's greeter, with reflection and health.
async fn serve_grpc(a: ServeArgs) -> Result<u8, CliError> {
    use throng_testbed::GrpcTarget;
    let shape = Shaping::of(&a)?;
    // `--status` is HTTP's 200 by default; for gRPC it is a code from 0 (OK) to 16.
    let status = match a.status {
        200 => 0,
        c @ 0..=16 => c as u8,
        c => {
            return Err(CliError::Usage(format!(
                "--status {c}: a gRPC status is a code from 0 (OK) to 16"
            )))
        }
    };
    let target = GrpcTarget {
        delay: shape.delay,
        status,
        stall: shape.stall,
        fault: shape.fault,
        tls: a.tls,
        ..GrpcTarget::default()
    };
    let listener = listen(&a).await?;
    let running = target
        .serve(listener)
        .await
        .context("starting the gRPC target")?;
    if let Some(pem) = &running.cert_pem {
        println!("{pem}");
    }
    println!("serving gRPC on {}", running.url());
    wait_for_signal().await;
    eprintln!("served {} calls", running.calls());
    Ok(EXIT_OK)
}
