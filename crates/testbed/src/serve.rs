//! `throng serve`: a testbed target on a port of its own until the caller says stop (the
//! command line: Ctrl-C or SIGTERM), with its flags as a clap struct (the `clap` feature). It
//! depends on no run machinery: the caller hands it what to wait for.

use std::time::Duration;

use clap::{Args, ValueEnum};
use std::future::Future;
use throng_core::stages::parse_duration;

use crate::{Delay, Fault, HttpTarget};

/// Why `throng serve` could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A bad flag (exit code 2).
    #[error("{0}")]
    Usage(String),
    /// The target could not start.
    #[error("{0}")]
    Start(String),
}

/// Flags of `throng serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Which target: the subcommand's name (`throng serve http`).
    #[arg(skip = ServeTarget::Http)]
    pub target: ServeTarget,
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// bank: keep the data in this database instead of SQLite in memory: postgres://... or
    /// mysql://... (its tables made if missing; read its counters with throng run --db-stats),
    /// or sqlite://FILE.
    #[arg(long, value_name = "URL")]
    pub db: Option<String>,
    /// Delay before each answer (e.g. 2ms).
    #[arg(long)]
    pub delay: Option<String>,
    /// With --delay, a random delay uniformly between --delay and this.
    #[arg(long, requires = "delay")]
    pub delay_max: Option<String>,
    /// Status code of each answer.
    #[arg(long, default_value_t = 200)]
    pub status: u16,
    /// Answer nothing from second A to second B after start, as A..B (e.g. 5s..8s).
    #[arg(long)]
    pub stall: Option<String>,
    /// A connection fault on every connection.
    #[arg(long, value_enum)]
    pub fault: Option<FaultArg>,
    /// Serve TLS with a self-signed certificate (printed on start).
    #[arg(long)]
    pub tls: bool,
    /// http: serve at most N requests at once, the others waiting their turn (a known
    /// capacity: N / --delay requests a second).
    #[arg(long, value_name = "N", value_parser = throng_core::at_least_one::<usize>)]
    pub capacity: Option<usize>,
}

/// Testbed targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServeTarget {
    /// The HTTP target.
    Http,
    /// The demo's bank: clients, transfers, orders and assets over JSON, in an in-memory SQLite;
    /// on the same port, clients and transfers over gRPC (bank.Bank, with reflection).
    Bank,
    /// A gRPC greeter (unary, server-streaming, client-streaming and bidi) with reflection and
    /// health; --status is a gRPC code (0-16).
    Grpc,
}

/// Connection faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FaultArg {
    /// Reset each connection after reading the request.
    Reset,
    /// Answer bytes that are not HTTP.
    Garbage,
    /// Never answer.
    Hang,
}

impl ServeArgs {
    /// Serves the target until `stop` is ready (the command line's: Ctrl-C or SIGTERM),
    /// saying where on standard output.
    pub async fn run(self, stop: impl Future<Output = ()>) -> Result<(), ServeError> {
        serve(self, stop).await
    }
}

fn parse_stall(v: &str) -> Result<(Duration, Duration), ServeError> {
    let bad = || ServeError::Usage(format!("--stall {v:?}: write FROM..TO, e.g. 5s..8s"));
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
    fn of(a: &ServeArgs) -> Result<Shaping, ServeError> {
        let d = |flag: &str, v: &str| {
            parse_duration(v).map_err(|e| ServeError::Usage(format!("{flag} {v:?}: {e}")))
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
async fn listen(a: &ServeArgs) -> Result<tokio::net::TcpListener, ServeError> {
    tokio::net::TcpListener::bind((a.host.as_str(), a.port))
        .await
        .map_err(|e| ServeError::Usage(format!("cannot listen on {}:{}: {e}", a.host, a.port)))
}

async fn serve(a: ServeArgs, stop: impl Future<Output = ()>) -> Result<(), ServeError> {
    if a.target == ServeTarget::Bank {
        return serve_bank(a, stop).await;
    }
    if a.db.is_some() {
        return Err(ServeError::Usage("--db applies to the bank only".into()));
    }
    if a.target == ServeTarget::Grpc {
        return serve_grpc(a, stop).await;
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
        .map_err(|e| ServeError::Start(format!("starting the target: {e}")))?;
    if let Some(pem) = &running.cert_pem {
        println!("{pem}");
    }
    println!("serving on {}", running.url());
    stop.await;
    eprintln!("served {} requests", running.requests());
    Ok(())
}

async fn serve_bank(a: ServeArgs, stop: impl Future<Output = ()>) -> Result<(), ServeError> {
    let shaping = a.delay.is_some() || a.stall.is_some() || a.fault.is_some() || a.tls;
    if shaping || a.status != 200 {
        return Err(ServeError::Usage(
            "--delay, --status, --stall, --fault and --tls apply to the http target only".into(),
        ));
    }
    let listener = listen(&a).await?;
    let storage = match a.db.as_deref() {
        None => crate::Storage::Memory,
        Some(url) => match url.split_once("://") {
            Some(("sqlite", file)) => crate::Storage::File(file.into()),
            Some(("postgres" | "postgresql" | "mysql" | "mariadb", _)) => {
                crate::Storage::Server(url.to_string())
            }
            _ => {
                return Err(ServeError::Usage(format!(
                    "--db {}: not a database URL (postgres://, mysql://, sqlite://FILE)",
                    throng_core::redact(url)
                )))
            }
        },
    };
    let shown =
        a.db.as_deref()
            .map_or("SQLite in memory".into(), throng_core::redact);
    let running = crate::BankService {
        storage,
        ..crate::BankService::default()
    }
    .serve(listener)
    .await
    .map_err(|e| ServeError::Start(format!("starting the bank on {shown}: {e}")))?;
    println!("serving the bank on {} ({shown})", running.url());
    stop.await;
    eprintln!(
        "served {} requests ({} server errors)",
        running.requests(),
        running.server_errors()
    );
    Ok(())
}

/// `throng serve grpc`: the testbed's greeter, with reflection and health.
async fn serve_grpc(a: ServeArgs, stop: impl Future<Output = ()>) -> Result<(), ServeError> {
    use crate::GrpcTarget;
    let shape = Shaping::of(&a)?;
    // `--status` is HTTP's 200 by default; for gRPC it is a code from 0 (OK) to 16.
    let status = match a.status {
        200 => 0,
        c @ 0..=16 => c as u8,
        c => {
            return Err(ServeError::Usage(format!(
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
        .map_err(|e| ServeError::Start(format!("starting the gRPC target: {e}")))?;
    if let Some(pem) = &running.cert_pem {
        println!("{pem}");
    }
    println!("serving gRPC on {}", running.url());
    stop.await;
    eprintln!("served {} calls", running.calls());
    Ok(())
}
