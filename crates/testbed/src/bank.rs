//! The demo's bank: clients, transfers, orders and an asset catalogue over JSON and HTTP, kept in
//! an embedded SQLite database, or on a PostgreSQL or MySQL/MariaDB server (`server.rs`).

mod server;
pub(crate) mod store;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use store::{Refusal, Store};

/// Request bodies larger than this are refused: every valid body is a few dozen bytes.
const MAX_BODY: usize = 64 * 1024;

/// Where the bank keeps its data.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Storage {
    /// A private in-memory database, gone when the service stops. One connection serves reads
    /// and writes in turn.
    #[default]
    Memory,
    /// A database file, created if missing, in WAL mode: one writing connection and
    /// [`BankService::readers`] reading ones.
    File(PathBuf),
    /// A PostgreSQL or MySQL/MariaDB server (`postgres://...`, `mysql://...`), through a pool
    /// of [`BankService::readers`] connections; the tables are made if missing.
    Server(String),
}

/// The bank service. [`BankService::default`] keeps its data in memory.
///
/// Routes (JSON bodies; every refusal answers `{"error": "..."}`):
///
/// | route | body | answer |
/// | --- | --- | --- |
/// | `POST /client/new/{balance}` | | `{"id": N}`; 400 for a negative balance |
/// | `GET /client/{id}/balance` | | `{"id": N, "balance": B}`; 404 |
/// | `POST /transaction` | `{"from": A, "to": B, "amount": X}` | `{"ok": true}`; 400, 404, 409 for insufficient funds |
/// | `GET /total` | | `{"total": SUM}` of all balances |
/// | `POST /order` | `{"item": "...", "quantity": N}` | `{"order_id": N, "status": "created"}`; 400 |
/// | `GET /order/{id}` | | `{"order_id", "item", "quantity", "status"}`; 404 |
/// | `POST /inventory/allocate` | `{"order_id": N}` | `{"order_id": N, "allocated": true}`; 404, 409 once allocated |
/// | `GET /asset/query` | | `{"count": N, "assets": [{"id", "name", "kind", "value"}]}` |
///
/// A transfer is one database transaction: both balances change or neither, so `GET /total`
/// stays constant under any load of transfers.
#[derive(Debug, Clone)]
pub struct BankService {
    /// Where the data lives.
    pub storage: Storage,
    /// Reading connections for [`Storage::File`].
    pub readers: u32,
}

impl Default for BankService {
    fn default() -> Self {
        BankService {
            storage: Storage::Memory,
            readers: 4,
        }
    }
}

/// Why the bank could not start.
#[derive(Debug, thiserror::Error)]
pub enum BankError {
    /// Binding the listener failed.
    #[error("cannot listen: {0}")]
    Io(#[from] std::io::Error),
    /// The database could not be opened or given its tables. The error is kept but not
    /// chained as a source: sqlx's repeats its message at each level of the chain (and
    /// PostgreSQL's adds the server's source line), so a printed chain said it three times.
    #[error("cannot open the database: {}", db_message(.0))]
    Db(sqlx::Error),
}

impl From<sqlx::Error> for BankError {
    fn from(e: sqlx::Error) -> BankError {
        BankError::Db(e)
    }
}

/// A database's error as its SQLSTATE and message; anything else as sqlx says it.
fn db_message(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(d) => match d.code() {
            Some(code) => format!("{code}: {}", d.message()),
            None => d.message().to_string(),
        },
        sqlx::Error::PoolTimedOut => format!(
            "no connection within {:?}: the database did not answer",
            server::CONNECT_TIMEOUT
        ),
        other => other.to_string(),
    }
}

/// A bank that is serving. Dropping it stops the server.
pub struct RunningService {
    /// Where it listens.
    pub addr: SocketAddr,
    counters: Arc<Counters>,
    shutdown: watch::Sender<bool>,
}

impl RunningService {
    /// `http://addr`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests answered so far, refusals included.
    pub fn requests(&self) -> u64 {
        self.counters.requests.load(Ordering::Relaxed)
    }

    /// Requests answered with a 5xx status so far: a database failure, never a refusal.
    pub fn server_errors(&self) -> u64 {
        self.counters.server_errors.load(Ordering::Relaxed)
    }

    /// Stops accepting and closes connections.
    pub fn stop(&self) {
        let _ = self.shutdown.send(true);
    }
}

impl Drop for RunningService {
    fn drop(&mut self) {
        self.stop();
    }
}

#[derive(Debug, Default)]
struct Counters {
    requests: AtomicU64,
    server_errors: AtomicU64,
}

struct State {
    store: Store,
    assets: Bytes,
    counters: Arc<Counters>,
}

impl BankService {
    /// Opens the database and serves on `127.0.0.1` at a free port.
    pub async fn start(self) -> Result<RunningService, BankError> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        self.serve(listener).await
    }

    /// Opens the database and serves on a bound listener, in a background task of the current
    /// runtime.
    pub async fn serve(self, listener: TcpListener) -> Result<RunningService, BankError> {
        let addr = listener.local_addr()?;
        let store = match &self.storage {
            Storage::Memory => Store::memory().await?,
            Storage::File(path) => Store::file(path, self.readers).await?,
            Storage::Server(url) => Store::server(url, self.readers).await?,
        };
        let counters = Arc::new(Counters::default());
        let state = Arc::new(State {
            store,
            assets: assets(),
            counters: counters.clone(),
        });
        let (shutdown, mut stop_rx) = watch::channel(false);
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = stop_rx.changed() => break,
                };
                let Ok((tcp, _)) = accepted else { continue };
                let _ = tcp.set_nodelay(true);
                let state = state.clone();
                let mut stop = stop_rx.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = connection(tcp, state) => {}
                        _ = stop.changed() => {}
                    }
                });
            }
        });
        Ok(RunningService {
            addr,
            counters,
            shutdown,
        })
    }
}

async fn connection(tcp: TcpStream, state: Arc<State>) {
    // gRPC (`content-type: application/grpc`) goes to the same store through `bank.Bank`.
    let service = service_fn(move |req: Request<Incoming>| {
        let state = state.clone();
        async move {
            if crate::grpc_bank::is_grpc(&req) {
                let resp = crate::grpc_bank::handle(req, &state.store).await;
                state.counters.requests.fetch_add(1, Ordering::Relaxed);
                return Ok::<_, Infallible>(resp.map(http_body_util::Either::Right));
            }
            handle(req, state)
                .await
                .map(|r| r.map(http_body_util::Either::Left))
        }
    });
    let _ = auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(tcp), service)
        .await;
}

/// An answer before it becomes a response: a status and a JSON body.
type Answer = (StatusCode, Bytes);

async fn handle(
    req: Request<Incoming>,
    state: Arc<State>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, body) = match route(req, &state).await {
        Ok(answer) => answer,
        Err(refusal) => refused(&refusal),
    };
    state.counters.requests.fetch_add(1, Ordering::Relaxed);
    if status.is_server_error() {
        state.counters.server_errors.fetch_add(1, Ordering::Relaxed);
    }
    let mut resp = Response::new(Full::new(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}

#[derive(Deserialize)]
struct Transfer {
    from: i64,
    to: i64,
    amount: i64,
}

#[derive(Deserialize)]
struct NewOrder {
    item: String,
    quantity: i64,
}

#[derive(Deserialize)]
struct Allocate {
    order_id: i64,
}

async fn route(req: Request<Incoming>, state: &State) -> Result<Answer, Refusal> {
    let store = &state.store;
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let value = match (&method, segments.as_slice()) {
        (&Method::POST, ["client", "new", balance]) => {
            let id = store.new_client(number("balance", balance)?).await?;
            json!({ "id": id })
        }
        (&Method::GET, ["client", id, "balance"]) => {
            let id = number("client id", id)?;
            json!({ "id": id, "balance": store.balance(id).await? })
        }
        (&Method::POST, ["transaction"]) => {
            let t: Transfer = body(req).await?;
            store.transfer(t.from, t.to, t.amount).await?;
            json!({ "ok": true })
        }
        (&Method::GET, ["total"]) => json!({ "total": store.total().await? }),
        (&Method::POST, ["order"]) => {
            let o: NewOrder = body(req).await?;
            let id = store.new_order(&o.item, o.quantity).await?;
            json!({ "order_id": id, "status": "created" })
        }
        (&Method::GET, ["order", id]) => {
            let order = store.order(number("order id", id)?).await?;
            json!({
                "order_id": order.id,
                "item": order.item,
                "quantity": order.quantity,
                "status": if order.allocated { "allocated" } else { "created" },
            })
        }
        (&Method::POST, ["inventory", "allocate"]) => {
            let a: Allocate = body(req).await?;
            store.allocate(a.order_id).await?;
            json!({ "order_id": a.order_id, "allocated": true })
        }
        (&Method::GET, ["asset", "query"]) => return Ok((StatusCode::OK, state.assets.clone())),
        _ => return Err(Refusal::NotFound(format!("no route for {method} {path}"))),
    };
    Ok((StatusCode::OK, Bytes::from(value.to_string())))
}

fn number(what: &str, s: &str) -> Result<i64, Refusal> {
    s.parse()
        .map_err(|_| Refusal::Invalid(format!("{what} must be an integer, got {s:?}")))
}

async fn body<T: DeserializeOwned>(req: Request<Incoming>) -> Result<T, Refusal> {
    let bytes = Limited::new(req.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| Refusal::Invalid(format!("cannot read the body: {e}")))?
        .to_bytes();
    serde_json::from_slice(&bytes).map_err(|e| Refusal::Invalid(format!("bad JSON body: {e}")))
}

fn refused(refusal: &Refusal) -> Answer {
    let status = match refusal {
        Refusal::Invalid(_) => StatusCode::BAD_REQUEST,
        Refusal::NotFound(_) => StatusCode::NOT_FOUND,
        Refusal::Conflict(_) => StatusCode::CONFLICT,
        Refusal::Db(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let body = json!({ "error": refusal.to_string() }).to_string();
    (status, Bytes::from(body))
}

/// The catalogue `GET /asset/query` answers, serialised once: that route measures the HTTP path
/// at high rates, not SQLite.
fn assets() -> Bytes {
    const ASSETS: [(&str, &str, i64); 8] = [
        ("pump-01", "pump", 12_500),
        ("pump-02", "pump", 12_500),
        ("valve-17", "valve", 830),
        ("valve-18", "valve", 830),
        ("sensor-a3", "sensor", 240),
        ("sensor-b7", "sensor", 260),
        ("tank-north", "tank", 48_000),
        ("tank-south", "tank", 51_000),
    ];
    let list: Vec<Value> = ASSETS
        .iter()
        .enumerate()
        .map(|(i, (name, kind, value))| {
            json!({ "id": i + 1, "name": name, "kind": kind, "value": value })
        })
        .collect();
    Bytes::from(json!({ "count": list.len(), "assets": list }).to_string())
}
