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

/// How long opening a connection took: the TCP connect (every address tried), and the TLS
/// handshake when there was one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Opened {
    /// The TCP connect.
    pub connect: Duration,
    /// The TLS handshake.
    pub tls: Option<Duration>,
}

impl Opened {
    /// Sets the connection's phases (`connect`, `tls`) in a request's.
    pub fn into_phases(self, phases: &mut throng_core::Phases) {
        phases.set(throng_core::Phase::Connect, self.connect);
        if let Some(tls) = self.tls {
            phases.set(throng_core::Phase::Tls, tls);
        }
    }
}

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
    open_timed(addrs, authority, tls, connect_timeout)
        .await
        .map(|(s, c, _)| (s, c))
}

/// [`open`], timing the TCP connect and the TLS handshake (a request's `connect` and `tls`
/// phases): two reads of the clock more a connection.
pub async fn open_timed(
    addrs: &[SocketAddr],
    authority: &str,
    tls: Option<&TlsTarget>,
    connect_timeout: Duration,
) -> Result<(Stream, Arc<Counters>, Opened), Outcome> {
    let ct = connect_timeout;
    let t0 = std::time::Instant::now();
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
    let t1 = std::time::Instant::now();
    let mut opened = Opened {
        connect: t1 - t0,
        tls: None,
    };
    let _ = tcp.set_nodelay(true);
    let counters = Arc::new(Counters::default());
    let counted = CountedTcp {
        tcp,
        counters: counters.clone(),
    };
    let stream = match tls {
        None => Stream::Plain(counted),
        // Boxed: inline, the handshake's state (1.2 KB) made every connect that large,
        // cleartext too, and a connect burst leaves as many holes in the heap.
        Some(target) => match timeout(ct, Box::pin(handshake(counted, target))).await {
            Ok(Ok(s)) => {
                opened.tls = Some(t1.elapsed());
                s
            }
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
    Ok((stream, counters, opened))
}

/// TLS over a connection already open: for protocols that ask for it in their own words first
/// (PostgreSQL's SSLRequest, MySQL's SSL request packet). A failed handshake is an I/O error
/// wrapping rustls' (class `tls` by [`crate::classify_io`]); the caller bounds the time.
pub async fn handshake(tcp: CountedTcp, (config, name): &TlsTarget) -> std::io::Result<Stream> {
    let connector = tokio_rustls::TlsConnector::from(config.clone());
    let s = connector.connect(name.clone(), tcp).await?;
    Ok(Stream::Tls(Box::new(s)))
}

/// The `host:port` a URL names: its own port, or 443 with TLS and 80 without (the defaults of
/// HTTP's and gRPC's schemes); an IPv6 host in brackets.
pub fn authority(host: &str, port: Option<u16>, tls: bool) -> String {
    let port = port.unwrap_or(if tls { 443 } else { 80 });
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::authority;

    #[test]
    fn an_authority_has_its_port_or_the_schemes_and_an_ipv6_host_in_brackets() {
        assert_eq!(authority("127.0.0.1", Some(8080), false), "127.0.0.1:8080");
        assert_eq!(authority("example.test", None, false), "example.test:80");
        assert_eq!(authority("example.test", None, true), "example.test:443");
        // http::Uri gives an IPv6 host with its brackets; a bare one gets them.
        assert_eq!(authority("[::1]", Some(9), true), "[::1]:9");
        assert_eq!(authority("::1", None, true), "[::1]:443");
    }
}
