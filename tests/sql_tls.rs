//! PostgreSQL over TLS on throng's own connections (postgres-protocol, throng-net's rustls): a
//! server as Debian ships it (`ssl = on`, SCRAM-SHA-256 logins), every `sslmode`, a CA the test
//! makes, the encrypted bytes counted, and refusals that say what is wrong.

use std::sync::Arc;
use std::time::Duration;

use throng::sql::{Conn, Target, Tls};
use throng::testbed::{Postgres, DB_PASSWORD};

use crate::common::{said as text, throng_bin as throng};

async fn open(url: &str, tls: &Tls) -> Result<Conn, String> {
    let target = Target::new(url, Duration::from_secs(10), 4)?.with_tls(tls)?;
    target
        .connect()
        .await
        .map_err(|o| o.message.unwrap_or_default())
}

/// Bytes sent and received by 50 executions of `sql` (prepared before) with a text of `n`
/// letters as its first parameter and `n` as its second.
async fn fifty(c: &mut Conn, sql: &Arc<str>, n: usize) -> (u64, u64) {
    let args = [
        throng::sql::param::Value::Text("x".repeat(n)),
        throng::sql::param::Value::Int(n as i64),
    ];
    c.run(sql, &args, false).await.expect("prepares");
    c.traffic();
    for _ in 0..50 {
        c.run(sql, &args, false).await.expect("runs");
    }
    c.traffic()
}

/// What the server says of the session: whether it is encrypted.
async fn encrypted(c: &mut Conn) -> bool {
    let d = c
        .run(
            &Arc::from("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"),
            &[],
            true,
        )
        .await
        .expect("runs");
    d.data[0]["ssl"].as_bool().expect("a boolean")
}

/// Each sslmode as libpq means it, against `ssl = on` and SCRAM: disable stays in the clear;
/// prefer (the default), require, verify-ca and verify-full encrypt, log in with SCRAM bound to
/// the TLS channel (SCRAM-SHA-256-PLUS: a wrong `tls-server-end-point` hash would fail the
/// login) and say the TLS version; verify-ca checks the chain and not the name (the certificate
/// is for 127.0.0.1, dialled here as localhost), verify-full both.
#[tokio::test(flavor = "multi_thread")]
async fn every_sslmode_against_postgresql_as_debian_ships_it() {
    let pg = Postgres::start_tls().expect("a PostgreSQL serving TLS");
    let ca = pg.certificate().display().to_string();
    let ip = pg.url();
    let name = ip.replacen("127.0.0.1", "localhost", 1);
    for (url, tls) in [
        (format!("{ip}?sslmode=disable"), false),
        (ip.clone(), true),
        (format!("{ip}?sslmode=prefer"), true),
        (format!("{ip}?sslmode=require"), true),
        (format!("{name}?sslmode=require"), true),
        (format!("{name}?sslmode=verify-ca&sslrootcert={ca}"), true),
        (format!("{ip}?sslmode=verify-full&sslrootcert={ca}"), true),
    ] {
        let mut c = open(&url, &Tls::default())
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(encrypted(&mut c).await, tls, "{url}");
        let path = c.path();
        match tls {
            true => assert_eq!(
                path, "postgres-protocol, TLSv1.3, SCRAM-SHA-256-PLUS",
                "{url}"
            ),
            false => assert_eq!(path, "postgres-protocol, SCRAM-SHA-256", "{url}"),
        }
        c.close().await;
    }
    // The flags: --cacert verifies the name too, --insecure encrypts without checking.
    let flags = [
        Tls {
            insecure: false,
            cacert: Some(pg.certificate()),
            identity: None,
        },
        Tls {
            insecure: true,
            cacert: None,
            identity: None,
        },
    ];
    for tls in &flags {
        let mut c = open(&ip, tls).await.expect("connects");
        assert!(encrypted(&mut c).await, "{tls:?}");
    }
    let e = open(&name, &flags[0]).await.unwrap_err();
    assert!(e.contains("not valid for name \"localhost\""), "{e}");
    // verify-full checks the name: the certificate is for 127.0.0.1 only.
    let url = format!("{name}?sslmode=verify-full&sslrootcert={ca}");
    let e = open(&url, &Tls::default()).await.unwrap_err();
    assert!(
        e.contains("TLS") && e.contains("not valid for name \"localhost\""),
        "{e}"
    );
    // Both verifying modes check the chain: the web's roots do not know the test's CA.
    for mode in ["verify-ca", "verify-full"] {
        let e = open(&format!("{ip}?sslmode={mode}"), &Tls::default())
            .await
            .unwrap_err();
        assert!(e.contains("UnknownIssuer"), "{mode}: {e}");
    }
}

/// Against a server without TLS (the shared one: `ssl = off`), prefer goes on in the clear and
/// require refuses, saying why.
#[tokio::test(flavor = "multi_thread")]
async fn require_refuses_a_server_without_tls_and_prefer_does_not() {
    let url = Postgres::shared().expect("PostgreSQL").url();
    let mut c = open(&format!("{url}?sslmode=prefer"), &Tls::default())
        .await
        .expect("prefer connects");
    assert!(!encrypted(&mut c).await);
    assert_eq!(c.path(), "postgres-protocol, SCRAM-SHA-256");
    for mode in ["require", "verify-ca", "verify-full"] {
        let e = open(&format!("{url}?sslmode={mode}"), &Tls::default())
            .await
            .unwrap_err();
        assert!(
            e.contains(&format!(
                "the server does not offer TLS, and sslmode={mode} needs it"
            )),
            "{e}"
        );
    }
}

/// Bytes over TLS are the encrypted stream's: every statement is one TLS 1.3 record each way,
/// 22 bytes longer than its plaintext (a 5-byte header, the content type, a 16-byte tag), so
/// 50 statements count exactly 50 × 22 bytes more each way than the same in the clear; and a
/// parameter and a column 990 bytes longer grow both by exactly as much as in the clear.
#[tokio::test(flavor = "multi_thread")]
async fn bytes_over_tls_are_the_encrypted_streams() {
    let pg = Postgres::start_tls().expect("a PostgreSQL serving TLS");
    let sql = Arc::<str>::from("SELECT length($1::text) AS n, rpad('x', $2::int) AS v");
    let bytes = |url: String, n: usize| {
        let sql = sql.clone();
        async move {
            let mut c = open(&url, &Tls::default()).await.expect("connects");
            fifty(&mut c, &sql, n).await
        }
    };
    let plain = format!("{}?sslmode=disable", pg.url());
    let tls = format!("{}?sslmode=require", pg.url());
    let (clear_small, tls_small) = (bytes(plain.clone(), 10).await, bytes(tls.clone(), 10).await);
    let (clear_big, tls_big) = (bytes(plain, 1000).await, bytes(tls, 1000).await);
    assert_eq!(tls_small.0 - clear_small.0, 50 * 22, "sent");
    assert_eq!(tls_small.1 - clear_small.1, 50 * 22, "received");
    assert_eq!(tls_big.0 - tls_small.0, 50 * 992);
    assert_eq!(tls_big.1 - tls_small.1, 50 * 992);
    assert_eq!(
        (clear_big.0 - clear_small.0, clear_big.1 - clear_small.1),
        (50 * 992, 50 * 992)
    );
}

/// From the command line, each refusal exits 1 before any load and says what is wrong: a wrong
/// password over TLS (the database's 28P01), a certificate that fails verification, a server
/// that offers no TLS to `sslmode=require`; the good run exits 0 and says how it connected.
#[test]
fn tls_refusals_exit_1_naming_the_problem() {
    let pg = Postgres::start_tls().expect("a PostgreSQL serving TLS");
    let plain = Postgres::shared().expect("PostgreSQL").url();
    let ca = pg.certificate().display().to_string();
    let good = format!("{}?sslmode=verify-full&sslrootcert={ca}", pg.url());
    let wrong = good.replacen(&format!(":{DB_PASSWORD}@"), ":wrong-pw@", 1);
    let unverified = format!("{}?sslmode=verify-full", pg.url());
    let untls = format!("{plain}?sslmode=require");
    for (url, code, said) in [
        (
            good.as_str(),
            0,
            "postgres-protocol, TLSv1.3, SCRAM-SHA-256-PLUS",
        ),
        (wrong.as_str(), 1, "28P01"),
        (unverified.as_str(), 1, "UnknownIssuer"),
        (untls.as_str(), 1, "does not offer TLS"),
    ] {
        let o = throng(&["run", url, "--sql", "SELECT 1", "-n", "3", "--no-tui"]);
        assert_eq!(o.status.code(), Some(code), "{url}: {}", text(&o));
        assert!(text(&o).contains(said), "{url}: {}", text(&o));
        assert!(!text(&o).contains("wrong-pw"), "{}", text(&o));
    }
}

/// A PostgreSQL that requires a client certificate its CA signed (`clientcert=verify-ca`):
/// `--cert` and `--key` (here `Tls::identity`), or the URL's `sslcert` and `sslkey`, log in over
/// TLS; without a certificate the server refuses the login, saying so. From the command line,
/// the flags run 20 statements, none failed, and a key that is not the certificate's exits 2
/// naming it.
#[test]
fn a_client_certificate_logs_in_where_postgresql_requires_one() {
    let pg = Postgres::start_mutual_tls().expect("a PostgreSQL requiring client certificates");
    let (cert, key) = pg.client_identity();
    let ca = pg.certificate();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let identity = Some(throng::core::step::Identity {
        cert: cert.clone(),
        key: key.clone(),
    });
    let verified = |identity| Tls {
        insecure: false,
        cacert: Some(ca.clone()),
        identity,
    };
    rt.block_on(async {
        let mut c = open(&pg.url(), &verified(identity.clone()))
            .await
            .expect("logs in with the certificate");
        assert!(encrypted(&mut c).await);
        c.close().await;
        let e = open(&pg.url(), &verified(None)).await.unwrap_err();
        assert!(e.contains("certificate"), "{e}");
        let url = format!(
            "{}?sslmode=verify-full&sslrootcert={}&sslcert={}&sslkey={}",
            pg.url(),
            ca.display(),
            cert.display(),
            key.display()
        );
        let mut c = open(&url, &Tls::default())
            .await
            .expect("logs in with the URL's certificate");
        assert!(encrypted(&mut c).await);
        c.close().await;
    });
    let (ca, cert, key) = (
        ca.display().to_string(),
        cert.display().to_string(),
        key.display().to_string(),
    );
    let run = |key: &str| {
        let url = pg.url();
        let args = ["run", &url, "--sql", "SELECT 1", "-n", "20", "-c", "2"];
        let tls = ["--cacert", &ca, "--cert", &cert, "--key", key, "--no-tui"];
        throng(&[&args[..], &tls[..]].concat())
    };
    let o = run(&key);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("TLSv1.3"), "{}", text(&o));
    // The server's key is no key of the client's certificate.
    let server_key = pg.certificate().with_file_name("server.key");
    let o = run(&server_key.display().to_string());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("cannot use client key {}", server_key.display())),
        "{}",
        text(&o)
    );
}

/// MariaDB over TLS (`require_secure_transport`): a parameter and a column 990 bytes longer
/// grow what crosses the socket by exactly as much as in the clear (MariaDB's length prefixes
/// grow by 2 past 250 bytes), 50 statements each way.
#[tokio::test(flavor = "multi_thread")]
async fn mariadb_bytes_over_tls_grow_as_in_the_clear() {
    let my = throng::testbed::MariaDb::start_tls().expect("a MariaDB requiring TLS");
    let sql = Arc::<str>::from("SELECT LENGTH(?) AS n, REPEAT('x', ?) AS v");
    let mut c = open(&my.url(), &Tls::default()).await.expect("connects");
    assert_eq!(c.path(), "mysql wire, TLSv1.3, mysql_native_password");
    let small = fifty(&mut c, &sql, 10).await;
    let big = fifty(&mut c, &sql, 1000).await;
    assert_eq!((big.0 - small.0, big.1 - small.1), (50 * 992, 50 * 992));
}

/// A login plugin throng does not speak (MariaDB's ed25519) is refused before any load with
/// its name, exit 1; so is a wrong password over TLS (the server's 28000).
#[test]
fn mariadb_refusals_exit_1_naming_the_problem() {
    let shared = throng::testbed::MariaDb::shared().expect("MariaDB");
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    rt.block_on(async {
        let mut c = open(&shared.url(), &Tls::default())
            .await
            .expect("connects");
        // A plugin library loaded twice is an error the second time: the tests share the server.
        let _ = c.raw("INSTALL SONAME 'auth_ed25519'").await;
        c.raw("CREATE USER IF NOT EXISTS 'ed'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('ed-pw')")
            .await
            .expect("an ed25519 user");
    });
    let ed = format!("mysql://ed:ed-pw@127.0.0.1:{}/throng", shared.port());
    let tls = throng::testbed::MariaDb::start_tls().expect("a MariaDB requiring TLS");
    let wrong = tls
        .url()
        .replacen(&format!(":{DB_PASSWORD}@"), ":wrong-pw@", 1);
    for (url, said) in [
        (
            ed.as_str(),
            "the login plugin client_ed25519, which throng does not speak",
        ),
        (wrong.as_str(), "28000"),
    ] {
        let o = throng(&["run", url, "--sql", "SELECT 1", "-n", "3", "--no-tui"]);
        assert_eq!(o.status.code(), Some(1), "{url}: {}", text(&o));
        assert!(text(&o).contains(said), "{url}: {}", text(&o));
    }
}
