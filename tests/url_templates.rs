//! `throng run URL` with per-call templates in the path, `-d` and `-H`, against the bank: what
//! the bank holds afterwards says what each call sent.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use throng::testbed::BankService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A GET of the bank's JSON, on a connection of its own.
async fn get(base: &str, path: &str) -> serde_json::Value {
    let addr = base.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.unwrap();
    let text = String::from_utf8(buf).unwrap();
    let body = text.split_once("\r\n\r\n").unwrap().1;
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test]
async fn the_path_is_rendered_per_call() {
    let bank = BankService::default().start().await.unwrap();
    let url = format!("{}/client/new/{{{{ seq() }}}}", bank.url());
    let s = common::run(&["-m", "POST", &url, "-c", "4", "-n", "100"]).await;
    assert_eq!(s.total.samples, 100);
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    assert_eq!(s.labels[0].label, "POST /client/new/{{ seq() }}");
    // One client per call, opened with the balances 0, 1, ..., 99: each number once.
    assert_eq!(get(&bank.url(), "/total").await["total"], 4950);
}

#[tokio::test]
async fn the_body_and_headers_are_rendered_per_call() {
    let bank = BankService::default().start().await.unwrap();
    let url = format!("{}/order", bank.url());
    let body = r#"{"item": "{{ uuid() }}", "quantity": {{ seq() + 1 }}}"#;
    let s = common::run(&[
        "-m",
        "POST",
        &url,
        "-d",
        body,
        "-H",
        "x-n: {{ seq() }}",
        "-c",
        "1",
        "-n",
        "10",
    ])
    .await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    let mut quantities = Vec::new();
    let mut items = std::collections::HashSet::new();
    for id in 1..=10 {
        let order = get(&bank.url(), &format!("/order/{id}")).await;
        quantities.push(order["quantity"].as_i64().unwrap());
        items.insert(order["item"].as_str().unwrap().to_string());
    }
    // One count for the run and every template: each call's header takes 2k, its body 2k + 1.
    quantities.sort();
    assert_eq!(quantities, (1..=10).map(|k| 2 * k).collect::<Vec<i64>>());
    assert_eq!(items.len(), 10, "a fresh uuid() per call");
}

#[tokio::test]
async fn grpc_messages_are_rendered_per_call() {
    let bank = BankService::default().start().await.unwrap();
    let url = bank.url().replace("http://", "grpc://");
    let body = r#"{"balance": {{ seq() }}}"#;
    let call = "bank.Bank/CreateClient";
    let s = common::grpc_run(&[&url, "--call", call, "-d", body, "-c", "4", "-n", "100"]).await;
    assert_eq!(s.total.samples, 100);
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    // The balances 0 to 99, each once (the check before the load counts apart).
    assert_eq!(get(&bank.url(), "/total").await["total"], 4950);
}

#[test]
fn a_template_with_a_variable_is_refused_before_the_load() {
    let argv = [
        "throng",
        "run",
        "http://127.0.0.1:1/",
        "-n",
        "1",
        "-d",
        "{{ user }}",
    ];
    let run = crate::common::parse(argv).unwrap();
    let plan = run.run.plan(&run.url).unwrap();
    let e = run
        .protocols
        .get::<throng::http::flags::HttpFlags>()
        .expect("HTTP's flags")
        .url_driver(&run.url, &run.request, &plan)
        .expect_err("refused")
        .to_string();
    assert!(
        e.contains("-d/--body's template: `user` is not known here"),
        "{e}"
    );
}
