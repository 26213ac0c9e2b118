//! The client's certificate (mutual TLS): files that cannot be used are named before any
//! connection, and a server that requires a certificate signed by its CA accepts the one
//! `client_config` presents and refuses a handshake without one or with another CA's.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::path::{Path, PathBuf};
use std::sync::Arc;

use throng_core::step::{ClientOptions, Identity};
use throng_net::{client_config, trust, TestCa, TlsError, TlsOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A directory of its own under the system's temporary one, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("throng-net-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn options(cacert: Option<&Path>, cert: &Path, key: &Path) -> TlsOptions {
    TlsOptions {
        cacert: cacert.map(Path::to_path_buf),
        identity: Some(Identity {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
        }),
        ..TlsOptions::default()
    }
}

/// The refusal of `cert` and `key`: which file, and why.
fn refusal(cert: &Path, key: &Path) -> (&'static str, PathBuf, String) {
    match client_config(&options(None, cert, key)) {
        Err(TlsError::Identity { what, path, reason }) => (what, path, reason),
        other => panic!("{cert:?} {key:?}: {other:?}"),
    }
}

#[test]
fn a_client_certificate_that_cannot_be_used_names_its_file() {
    let dir = Dir::new("refusals");
    let ca = TestCa::new("test CA").unwrap();
    let (cert, key) = ca.issue("client").unwrap();
    let (_, other_key) = ca.issue("other").unwrap();
    let (cert, key, other_key) = (
        dir.write("cert.pem", &cert),
        dir.write("key.pem", &key),
        dir.write("other.key", &other_key),
    );
    assert!(client_config(&options(None, &cert, &key)).is_ok());
    let missing = dir.0.join("missing.pem");
    let (what, path, reason) = refusal(&cert, &missing);
    assert_eq!((what, path), ("key", missing.clone()));
    assert!(reason.contains("No such file"), "{reason}");
    let (what, path, _) = refusal(&missing, &key);
    assert_eq!((what, path), ("certificate", missing));
    // A key file in the certificate's place holds no certificate, and the other way round.
    let (what, path, reason) = refusal(&key, &key);
    assert_eq!(
        (what, &path, reason.as_str()),
        ("certificate", &key, "no PEM certificate in the file")
    );
    let (what, path, reason) = refusal(&cert, &cert);
    assert_eq!((what, &path), ("key", &cert));
    assert!(reason.starts_with("no PEM private key"), "{reason}");
    // Another certificate's key: said now, not at every handshake.
    let (what, path, reason) = refusal(&cert, &other_key);
    assert_eq!((what, &path), ("key", &other_key));
    assert_eq!(
        reason,
        format!(
            "not the private key of the certificate in {}",
            cert.display()
        )
    );
    let e = client_config(&options(None, &cert, &other_key)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "cannot use client key {}: not the private key of the certificate in {}",
            other_key.display(),
            cert.display()
        )
    );
}

#[test]
fn a_plain_target_refuses_a_client_certificate() {
    let o = ClientOptions {
        identity: Some(Identity {
            cert: "c.pem".into(),
            key: "k.pem".into(),
        }),
        ..ClientOptions::default()
    };
    let e = trust(false, &o, || "x:// targets; y is plain".into()).unwrap_err();
    assert_eq!(e, "--cert and --key apply to x:// targets; y is plain");
    let o = ClientOptions {
        cacert: Some("ca.pem".into()),
        ..o
    };
    let e = trust(false, &o, || "x:// targets; y is plain".into()).unwrap_err();
    assert_eq!(
        e,
        "--cacert, --cert and --key apply to x:// targets; y is plain"
    );
    assert!(trust(false, &ClientOptions::default(), String::new)
        .unwrap()
        .is_none());
}

/// One exchange with a server requiring a certificate of `ca`: the client writes `ping`, the
/// server answers `pong`; what the client read, or its error.
async fn exchange(ca: &TestCa, client: Arc<rustls::ClientConfig>) -> Result<Vec<u8>, String> {
    let (acceptor, _) = throng_net::self_signed_requiring(&[], Some(&ca.pem())).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut tls = acceptor.accept(tcp).await.map_err(|e| e.to_string())?;
        let mut buf = [0; 4];
        tls.read_exact(&mut buf).await.map_err(|e| e.to_string())?;
        tls.write_all(b"pong").await.map_err(|e| e.to_string())?;
        tls.shutdown().await.map_err(|e| e.to_string())
    });
    let connector = tokio_rustls::TlsConnector::from(client);
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = throng_net::server_name("localhost").unwrap();
    let read = async {
        let mut tls = connector.connect(name, tcp).await?;
        tls.write_all(b"ping").await?;
        let mut answer = Vec::new();
        tls.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    let answer = tokio::time::timeout(std::time::Duration::from_secs(5), read)
        .await
        .expect("no hang");
    let served = server.await.unwrap();
    match (answer, served) {
        (Ok(a), Ok(())) => Ok(a),
        (a, s) => Err(format!("client {a:?}, server {s:?}")),
    }
}

#[tokio::test]
async fn a_server_requiring_a_certificate_takes_the_one_its_ca_signed() {
    let dir = Dir::new("handshakes");
    let ca = TestCa::new("test CA").unwrap();
    let other = TestCa::new("another CA").unwrap();
    let (cert, key) = ca.issue("client").unwrap();
    let (cert, key) = (dir.write("cert.pem", &cert), dir.write("key.pem", &key));
    let (stranger, stranger_key) = other.issue("client").unwrap();
    let (stranger, stranger_key) = (
        dir.write("stranger.pem", &stranger),
        dir.write("stranger.key", &stranger_key),
    );
    let insecure = |identity: Option<(&Path, &Path)>| {
        let mut o = TlsOptions {
            insecure: true,
            ..TlsOptions::default()
        };
        o.identity = identity.map(|(c, k)| Identity {
            cert: c.to_path_buf(),
            key: k.to_path_buf(),
        });
        client_config(&o).unwrap()
    };
    let ok = exchange(&ca, insecure(Some((&cert, &key)))).await;
    assert_eq!(ok, Ok(b"pong".to_vec()));
    let none = exchange(&ca, insecure(None)).await.unwrap_err();
    assert!(none.contains("CertificateRequired"), "{none}");
    let foreign = exchange(&ca, insecure(Some((&stranger, &stranger_key))))
        .await
        .unwrap_err();
    assert!(
        foreign.contains("UnknownIssuer") || foreign.contains("UnknownCA"),
        "{foreign}"
    );
}
