//! Opening a counted connection: TCP to the first address that accepts, then TLS when asked,
//! each within the connect timeout. Every protocol on TCP opens its connections here.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use throng_core::{ErrorClass, Outcome};
use tokio::net::TcpStream;
use tokio::time::timeout;

use crate::{message, CountedTcp, Counters, Stream};

/// A TLS client configuration and the name the server is checked against.
pub type TlsTarget = (Arc<rustls::ClientConfig>, ServerName<'static>);

/// Opens a connection to the first of `addrs` that accepts (`authority` names it in messages),
/// with TLS over it when `tls` is given; the TCP connect and the TLS handshake each within
/// `connect_timeout`. A refusal is class `connect`, a failed handshake `tls`, either running out
/// of time `timeout`. The stream counts its bytes in the returned counters, the handshake's too.
pub async fn open(
    addrs: &[SocketAddr],
    authority: &str,
    tls: Option<&TlsTarget>,
    connect_timeout: Duration,
) -> Result<(Stream, Arc<Counters>), Outcome> {
    let ct = connect_timeout;
    let attempt = async {
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect(addr).await {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no address")))
    };
    let tcp = match timeout(ct, attempt).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let m = format!("connect to {authority}: {e}");
            return Err(Outcome::failed(ErrorClass::Connect, m));
        }
        Err(_) => {
            let m = format!("connect to {authority} timed out after {ct:?}");
            return Err(Outcome::failed(ErrorClass::Timeout, m));
        }
    };
    let _ = tcp.set_nodelay(true);
    let counters = Arc::new(Counters::default());
    let counted = CountedTcp {
        tcp,
        counters: counters.clone(),
    };
    let stream = match tls {
        None => Stream::Plain(counted),
        Some(target) => match timeout(ct, handshake(counted, target)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                let m = format!("TLS handshake: {}", message(&e));
                return Err(Outcome::failed(ErrorClass::Tls, m));
            }
            Err(_) => {
                return Err(Outcome::failed(
                    ErrorClass::Timeout,
                    "TLS handshake timed out",
                ))
            }
        },
    };
    Ok((stream, counters))
}

/// TLS over a connection already open: for protocols that ask for it in their own words first
/// (PostgreSQL's SSLRequest, MySQL's SSL request packet). A failed handshake is an I/O error
/// wrapping rustls' (class `tls` by [`crate::classify_io`]); the caller bounds the time.
pub async fn handshake(tcp: CountedTcp, (config, name): &TlsTarget) -> std::io::Result<Stream> {
    let connector = tokio_rustls::TlsConnector::from(config.clone());
    let s = connector.connect(name.clone(), tcp).await?;
    Ok(Stream::Tls(Box::new(s)))
}
