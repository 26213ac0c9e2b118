//! The bank service over real HTTP/1.1 connections: routes, refusals, and money conserved under
//! concurrent transfers.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::net::SocketAddr;
use std::path::PathBuf;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rand::Rng;
use serde_json::{json, Value};
use throng_testbed::{BankService, RunningService, Storage};
use tokio::net::TcpStream;

/// One keep-alive HTTP/1.1 connection to the bank.
struct Client {
    sender: SendRequest<Full<Bytes>>,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Client {
        let tcp = TcpStream::connect(addr).await.expect("connect");
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .expect("handshake");
        tokio::spawn(conn);
        Client { sender }
    }

    /// Sends one request and returns the status and the JSON body.
    async fn call(&mut self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let bytes = body.map(|b| b.to_string()).unwrap_or_default();
        self.raw(method, path, bytes).await
    }

    async fn raw(&mut self, method: &str, path: &str, body: String) -> (u16, Value) {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .expect("request");
        self.sender.ready().await.expect("connection ready");
        let resp = self.sender.send_request(req).await.expect("response");
        let status = resp.status().as_u16();
        assert_eq!(
            resp.headers().get("content-type").map(|v| v.as_bytes()),
            Some(&b"application/json"[..])
        );
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("{method} {path}: body is not JSON ({e}): {bytes:?}"));
        (status, value)
    }

    async fn new_client(&mut self, balance: i64) -> i64 {
        let (status, v) = self
            .call("POST", &format!("/client/new/{balance}"), None)
            .await;
        assert_eq!(status, 200, "{v}");
        v["id"].as_i64().expect("id")
    }

    async fn balance(&mut self, id: i64) -> i64 {
        let (status, v) = self
            .call("GET", &format!("/client/{id}/balance"), None)
            .await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["id"], id);
        v["balance"].as_i64().expect("balance")
    }

    async fn transfer(&mut self, from: i64, to: i64, amount: i64) -> (u16, Value) {
        let body = json!({ "from": from, "to": to, "amount": amount });
        self.call("POST", "/transaction", Some(body)).await
    }

    async fn total(&mut self) -> i64 {
        let (status, v) = self.call("GET", "/total", None).await;
        assert_eq!(status, 200, "{v}");
        v["total"].as_i64().expect("total")
    }
}

async fn bank() -> (RunningService, Client) {
    let running = BankService::default().start().await.expect("bank starts");
    let client = Client::connect(running.addr).await;
    (running, client)
}

#[tokio::test]
async fn transfer_moves_money_between_two_clients() {
    let (running, mut c) = bank().await;
    let a = c.new_client(100).await;
    let b = c.new_client(50).await;
    assert_ne!(a, b);
    assert_eq!(c.total().await, 150);

    let (status, v) = c.transfer(a, b, 30).await;
    assert_eq!((status, v), (200, json!({ "ok": true })));
    assert_eq!(c.balance(a).await, 70);
    assert_eq!(c.balance(b).await, 80);
    assert_eq!(c.total().await, 150);

    // Everything down to zero is allowed.
    assert_eq!(c.transfer(a, b, 70).await.0, 200);
    assert_eq!(c.balance(a).await, 0);
    assert_eq!(c.balance(b).await, 150);
    assert_eq!(running.requests(), 10);
    assert_eq!(running.server_errors(), 0);
}

#[tokio::test]
async fn refused_transfers_change_nothing() {
    let (running, mut c) = bank().await;
    let a = c.new_client(100).await;
    let b = c.new_client(0).await;

    let (status, v) = c.transfer(a, b, 101).await;
    assert_eq!(status, 409, "{v}");
    assert!(v["error"].as_str().expect("error").contains("insufficient"));

    // The debit of `a` happens before `to` turns out unknown: it must be rolled back.
    let (status, v) = c.transfer(a, 999_999, 10).await;
    assert_eq!(status, 404, "{v}");
    assert_eq!(v["error"], "unknown client 999999");
    let (status, _) = c.transfer(999_999, a, 10).await;
    assert_eq!(status, 404);

    for (from, to, amount) in [(a, b, 0), (a, b, -5), (a, a, 10)] {
        let (status, v) = c.transfer(from, to, amount).await;
        assert_eq!(status, 400, "{from} -> {to} of {amount}: {v}");
    }
    let (status, v) = c.raw("POST", "/transaction", "{\"from\": 1".into()).await;
    assert_eq!(status, 400, "{v}");
    let (status, _) = c
        .call("POST", "/transaction", Some(json!({ "from": a })))
        .await;
    assert_eq!(status, 400);

    assert_eq!(c.balance(a).await, 100);
    assert_eq!(c.balance(b).await, 0);
    assert_eq!(c.total().await, 100);
    assert_eq!(running.server_errors(), 0);
}

#[tokio::test]
async fn bad_paths_and_unknown_clients() {
    let (_running, mut c) = bank().await;
    assert_eq!(c.call("GET", "/client/42/balance", None).await.0, 404);
    assert_eq!(c.call("GET", "/client/x/balance", None).await.0, 400);
    assert_eq!(c.call("POST", "/client/new/-1", None).await.0, 400);
    assert_eq!(c.call("POST", "/client/new/lots", None).await.0, 400);
    assert_eq!(c.call("GET", "/client/new/5", None).await.0, 404);
    let (status, v) = c.call("GET", "/nowhere", None).await;
    assert_eq!(status, 404);
    assert_eq!(v["error"], "no route for GET /nowhere");
    // Nothing above created a client.
    assert_eq!(c.total().await, 0);
    assert_eq!(c.new_client(7).await, 1);
}

#[tokio::test]
async fn orders_are_allocated_once() {
    let (running, mut c) = bank().await;
    let order = json!({ "item": "widget", "quantity": 3 });
    let (status, v) = c.call("POST", "/order", Some(order)).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["status"], "created");
    let id = v["order_id"].as_i64().expect("order_id");

    let (status, v) = c.call("GET", &format!("/order/{id}"), None).await;
    assert_eq!(status, 200);
    let created = json!({ "order_id": id, "item": "widget", "quantity": 3, "status": "created" });
    assert_eq!(v, created);

    let allocate = json!({ "order_id": id });
    let (status, v) = c
        .call("POST", "/inventory/allocate", Some(allocate.clone()))
        .await;
    assert_eq!(
        (status, v),
        (200, json!({ "order_id": id, "allocated": true }))
    );
    let (status, v) = c.call("POST", "/inventory/allocate", Some(allocate)).await;
    assert_eq!(status, 409, "{v}");
    let (_, v) = c.call("GET", &format!("/order/{id}"), None).await;
    assert_eq!(v["status"], "allocated");

    let unknown = json!({ "order_id": id + 1 });
    assert_eq!(
        c.call("POST", "/inventory/allocate", Some(unknown)).await.0,
        404
    );
    assert_eq!(
        c.call("GET", &format!("/order/{}", id + 1), None).await.0,
        404
    );
    for bad in [
        json!({ "item": "widget", "quantity": 0 }),
        json!({ "item": " ", "quantity": 1 }),
        json!({ "item": "widget" }),
    ] {
        assert_eq!(
            c.call("POST", "/order", Some(bad.clone())).await.0,
            400,
            "{bad}"
        );
    }
    assert_eq!(running.server_errors(), 0);
}

#[tokio::test]
async fn asset_query_lists_the_catalogue() {
    let (_running, mut c) = bank().await;
    let (status, v) = c.call("GET", "/asset/query", None).await;
    assert_eq!(status, 200);
    let assets = v["assets"].as_array().expect("assets");
    assert_eq!(assets.len(), 8);
    assert_eq!(v["count"], 8);
    assert_eq!(assets[0]["id"], 1);
    assert!(assets
        .iter()
        .all(|a| a["name"].is_string() && a["value"].is_i64()));
}

const CLIENTS: usize = 10;
const START: i64 = 1_000;
const TASKS: usize = 20;
const TRANSFERS: usize = 50;

/// Runs `TASKS` connections of `TRANSFERS` random transfers each between `CLIENTS` clients and
/// checks that each was accepted or refused for funds, and that no money was made or lost.
async fn hammer(running: &RunningService) {
    let mut c = Client::connect(running.addr).await;
    let mut ids = Vec::new();
    for _ in 0..CLIENTS {
        ids.push(c.new_client(START).await);
    }
    let initial = c.total().await;
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let ids = ids.clone();
        let addr = running.addr;
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(addr).await;
            let (mut ok, mut refused) = (0, 0);
            for _ in 0..TRANSFERS {
                let (from, to, amount) = {
                    let mut rng = rand::rng();
                    let from = rng.random_range(0..ids.len());
                    let to = (from + rng.random_range(1..ids.len())) % ids.len();
                    (ids[from], ids[to], rng.random_range(1..=400))
                };
                match c.transfer(from, to, amount).await {
                    (200, _) => ok += 1,
                    (409, _) => refused += 1,
                    (status, v) => panic!("transfer {from} -> {to} of {amount}: {status} {v}"),
                }
            }
            (ok, refused)
        }));
    }
    let (mut ok, mut refused) = (0, 0);
    for t in tasks {
        let (o, r) = t.await.expect("transfer task");
        ok += o;
        refused += r;
    }
    assert_eq!(ok + refused, TASKS * TRANSFERS);
    assert!(
        ok > TASKS * TRANSFERS / 2,
        "only {ok} transfers went through"
    );
    assert_eq!(initial, CLIENTS as i64 * START);
    assert_eq!(c.total().await, initial);
    let mut sum = 0;
    for id in ids {
        let balance = c.balance(id).await;
        assert!(balance >= 0);
        sum += balance;
    }
    assert_eq!(sum, initial);
    assert_eq!(running.server_errors(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_transfers_conserve_money_in_memory() {
    let running = BankService::default().start().await.expect("bank starts");
    hammer(&running).await;
    let expected = (CLIENTS + 2 + TASKS * TRANSFERS + CLIENTS) as u64;
    assert_eq!(running.requests(), expected);
}

/// Removes the database file and its WAL companions when the test ends, passed or not.
struct TempDb(PathBuf);

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.0.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_transfers_conserve_money_in_a_wal_file() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .subsec_nanos();
    let name = format!("throng-bank-{}-{nanos}.db", std::process::id());
    let db = TempDb(std::env::temp_dir().join(name));
    let service = BankService {
        storage: Storage::File(db.0.clone()),
        readers: 4,
    };
    let running = service.clone().start().await.expect("bank starts");
    hammer(&running).await;
    let total = Client::connect(running.addr).await.total().await;
    running.stop();
    drop(running);

    // The same file, opened again, holds the same money.
    let again = service.start().await.expect("bank restarts");
    let mut c = Client::connect(again.addr).await;
    assert_eq!(total, CLIENTS as i64 * START);
    assert_eq!(c.total().await, total);
    assert_eq!(c.new_client(1).await, CLIENTS as i64 + 1);
}
