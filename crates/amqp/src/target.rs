//! A target's URL (`amqp://[USER:PASS@]HOST[:PORT]/VHOST[?routing_key=K&exchange=E]`, `amqps://`
//! the same over TLS), how a connection to it is opened (TCP, then TLS for `amqps://`, each
//! timed), and how a failure of lapin's is classified.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_rs::traits::{Reactor, RuntimeKit};
use async_rs::Runtime;
use lapin::uri::AMQPUri;
use lapin::{AsyncTcpStream, Connection, ConnectionProperties, ErrorKind};
use percent_encoding::percent_decode_str;
use throng_core::step::ClientOptions;
use throng_core::{ErrorClass, Outcome, Status};
use throng_net::Opened;

/// An `amqp://` or `amqps://` URL, checked.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The URL lapin is given (`amqp://user:pass@host:port/vhost`, no query): its credentials
    /// and vhost; the stream under it is throng's, TLS or not.
    pub(crate) uri: String,
    /// `host:port/vhost`, for messages (no credentials).
    pub(crate) shown: String,
    /// The host, as the URL has it (an IPv6 address in brackets), and the port.
    host: String,
    port: u16,
    /// For `amqps://`: whether it is TLS, and once [`Target::trusting`] made it, the TLS
    /// connector (throng-net's rustls configuration).
    pub(crate) tls: bool,
    connector: Option<tcp_stream::RustlsConnector>,
    /// The URL's `routing_key`, if any.
    pub(crate) routing_key: Option<String>,
    /// The URL's `exchange`, if any.
    pub(crate) exchange: Option<String>,
}

impl Target {
    /// The target of `url`, or what is wrong with it.
    pub(crate) fn parse(url: &str) -> Result<Target, String> {
        let (rest, tls) = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("amqp") => (rest, false),
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("amqps") => (rest, true),
            _ => {
                return Err(format!(
                    "{url}: an AMQP URL is amqp://[USER:PASS@]HOST[:PORT]/VHOST (e.g. \
                     amqp://guest:guest@127.0.0.1:5672/%2f, %2f being the vhost /), or \
                     amqps://... over TLS"
                ))
            }
        };
        let default_port = if tls { 5671 } else { 5672 };
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, vhost) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, host_port) = match authority.rsplit_once('@') {
            Some((u, hp)) => (Some(u), hp),
            None => (None, authority),
        };
        if host_port.is_empty() || host_port.starts_with(':') {
            return Err(format!("{url}: no host"));
        }
        let (host, port) = match host_port.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || host_port.starts_with('[') => {
                match p.parse::<u16>() {
                    Ok(p) if p > 0 => (h.to_string(), p),
                    _ => return Err(format!("{url}: {p:?} is not a port")),
                }
            }
            _ => (host_port.to_string(), default_port),
        };
        let host_port = format!("{host}:{port}");
        if vhost.contains('/') {
            return Err(format!(
                "{url}: the vhost is one path segment (write / as %2f)"
            ));
        }
        let decoded = percent_decode_str(vhost)
            .decode_utf8()
            .map_err(|_| format!("{url}: the vhost is not UTF-8"))?;
        // RabbitMQ's URI spec: no path is the default vhost, /.
        let vhost_shown = if vhost.is_empty() { "/" } else { &decoded };
        let path = if vhost.is_empty() { "%2f" } else { vhost };
        let mut routing_key = None;
        let mut exchange = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = percent_decode_str(v)
                .decode_utf8()
                .map_err(|_| format!("{url}: {k} is not UTF-8"))?
                .into_owned();
            match k {
                "routing_key" => routing_key = Some(v),
                "exchange" => exchange = Some(v),
                _ => {
                    return Err(format!(
                        "{url}: unknown parameter {k:?} (an AMQP target takes routing_key and \
                         exchange)"
                    ))
                }
            }
        }
        if let Some(k) = &routing_key {
            check_short("routing_key", k).map_err(|e| format!("{url}: {e}"))?;
        }
        if let Some(e) = &exchange {
            check_exchange(e).map_err(|e| format!("{url}: {e}"))?;
        }
        let uri = match userinfo {
            Some(u) => format!("amqp://{u}@{host_port}/{path}"),
            None => format!("amqp://{host_port}/{path}"),
        };
        Ok(Target {
            uri,
            shown: format!("{host_port}/{vhost_shown}"),
            host,
            port,
            tls,
            connector: None,
            routing_key,
            exchange,
        })
    }

    /// The target trusting brokers as `options`' `cacert` and `insecure` say (throng-net's
    /// rustls configuration: a CA file, the web roots, or no verification) and presenting its
    /// `identity`, made now so that a file that cannot be used is said before any load;
    /// `--cacert` or `--cert` on `amqp://` is an error.
    pub(crate) fn trusting(mut self, options: &ClientOptions) -> Result<Target, String> {
        let shown = &self.shown;
        let Some(config) = throng_net::trust(self.tls, options, || {
            format!("amqps:// targets; {shown} is plain AMQP")
        })?
        else {
            return Ok(self);
        };
        throng_net::server_name(&self.host).map_err(|e| format!("{}: {e}", self.shown))?;
        self.connector = Some(tcp_stream::RustlsConnector::from(config));
        Ok(self)
    }

    /// An AMQP connection to the broker within `timeout` (lapin's connect has none of its
    /// own), and how long its TCP connect and TLS handshake took.
    pub(crate) async fn connect(&self, timeout: Duration) -> Result<(Connection, Opened), Outcome> {
        let shown = &self.shown;
        let uri: AMQPUri = self.uri.parse().map_err(|e: String| {
            Outcome::failed(ErrorClass::Other, format!("AMQP at {shown}: {e}"))
        })?;
        let props = ConnectionProperties::default().with_connection_name("throng".into());
        let runtime = lapin::runtime::default_runtime()
            .map_err(|e| Outcome::failed(ErrorClass::Other, format!("AMQP at {shown}: {e}")))?;
        // lapin runs the stream on its own I/O thread and opens it there (no retry: its
        // default backoff has none): the opening's times come back through this slot.
        let opened = Arc::new(std::sync::Mutex::new(None));
        let dial = Dial {
            host: self.host.trim_matches(|c| c == '[' || c == ']').to_string(),
            port: self.port,
            connector: self.connector.clone(),
            opened: opened.clone(),
        };
        let connecting = Connection::connector(
            uri,
            runtime,
            async move |_uri, runtime| dial.open(&runtime).await.map_err(lapin::Error::from),
            props,
        );
        match tokio::time::timeout(timeout, connecting).await {
            Ok(Ok(c)) => {
                let times = opened.lock().ok().and_then(|mut o| o.take());
                let times = times.unwrap_or(Opened {
                    connect: Duration::ZERO,
                    tls: None,
                });
                Ok((c, times))
            }
            Ok(Err(e)) => Err(connect_failed(shown, &e)),
            Err(_) => Err(Outcome::failed(
                ErrorClass::Timeout,
                format!("connecting to AMQP at {shown} timed out after {timeout:?}"),
            )),
        }
    }
}

/// What lapin's I/O thread opens a connection with.
struct Dial {
    /// The host without brackets: an address or a name to resolve, and the name the broker's
    /// certificate must carry.
    host: String,
    port: u16,
    connector: Option<tcp_stream::RustlsConnector>,
    opened: Arc<std::sync::Mutex<Option<Opened>>>,
}

impl Dial {
    /// TCP to the broker, then TLS over it for `amqps://`, each timed.
    async fn open<RK: RuntimeKit + Send + Sync>(
        &self,
        runtime: &Runtime<RK>,
    ) -> std::io::Result<AsyncTcpStream<<RK as Reactor>::TcpStream>> {
        let start = Instant::now();
        let addrs = runtime.to_socket_addrs((self.host.clone(), self.port));
        let stream = AsyncTcpStream::connect(runtime, addrs).await?;
        let connected = Instant::now();
        let (stream, tls) = match &self.connector {
            Some(c) => {
                let s = stream.into_rustls(c, &self.host).await?;
                (s, Some(connected.elapsed()))
            }
            None => (stream, None),
        };
        if let Ok(mut o) = self.opened.lock() {
            *o = Some(Opened {
                connect: connected - start,
                tls,
            });
        }
        Ok(stream)
    }
}

/// A routing key or queue name: AMQP's short string, at most 255 bytes.
pub(crate) fn check_short(what: &str, s: &str) -> Result<(), String> {
    match s.len() {
        0..=255 => Ok(()),
        n => Err(format!("{what} is {n} bytes long; AMQP allows 255")),
    }
}

/// An exchange's name: at most 255 bytes of letters, digits, `-`, `_`, `.` and `:`.
pub(crate) fn check_exchange(s: &str) -> Result<(), String> {
    check_short("exchange", s)?;
    match s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
    {
        true => Ok(()),
        false => Err(format!(
            "{s:?} is not an exchange name (letters, digits, -, _, . and :)"
        )),
    }
}

/// The class, AMQP status (a reply code of the broker's, when it gave one) and message of a
/// failure of lapin's.
pub(crate) fn classify(e: &lapin::Error) -> (ErrorClass, Option<Status>) {
    match e.kind() {
        ErrorKind::ProtocolError(amqp) => (
            ErrorClass::Status,
            Some(crate::status::status(amqp.get_id())),
        ),
        // rustls' error inside: an untrusted certificate, a broker that does not speak TLS.
        ErrorKind::IOError(io) if throng_net::classify_io(&**io) == Some(ErrorClass::Tls) => {
            (ErrorClass::Tls, None)
        }
        ErrorKind::IOError(io) => match io.kind() {
            std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::AddrNotAvailable
            | std::io::ErrorKind::HostUnreachable
            | std::io::ErrorKind::NetworkUnreachable
            | std::io::ErrorKind::NotFound => (ErrorClass::Connect, None),
            std::io::ErrorKind::TimedOut => (ErrorClass::Timeout, None),
            _ => (ErrorClass::Reset, None),
        },
        ErrorKind::InvalidProtocolVersion(_) | ErrorKind::ParsingError(_) => {
            (ErrorClass::Protocol, None)
        }
        ErrorKind::MissingHeartbeatError => (ErrorClass::Timeout, None),
        ErrorKind::InvalidConnectionState(_) | ErrorKind::InvalidChannelState(..) => {
            (ErrorClass::Reset, None)
        }
        _ => (ErrorClass::Other, None),
    }
}

/// A connect failure's outcome: classified, the broker's reply code as its status.
pub(crate) fn connect_failed(shown: &str, e: &lapin::Error) -> Outcome {
    let (class, status) = classify(e);
    let hint = match status.map(|s| s.code()) {
        Some(403) => " (bad credentials, or no access to the vhost)",
        Some(530) => " (the vhost does not exist, or the user may not use it)",
        _ => "",
    };
    let mut o = Outcome::failed(class, format!("connecting to AMQP at {shown}: {e}{hint}"));
    if let Some(s) = status {
        o.status = s;
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_lapin_a_vhost_and_throng_its_keys() {
        let t = Target::parse("amqp://u:p@127.0.0.1:5673/%2f?routing_key=greeter").unwrap();
        assert_eq!(t.uri, "amqp://u:p@127.0.0.1:5673/%2f");
        assert_eq!(t.shown, "127.0.0.1:5673//");
        assert_eq!(t.routing_key.as_deref(), Some("greeter"));
        let t = Target::parse("amqp://localhost").unwrap();
        assert_eq!(t.uri, "amqp://localhost:5672/%2f");
        let t = Target::parse("amqp://h/shop?exchange=orders&routing_key=a.b").unwrap();
        assert_eq!(t.shown, "h:5672/shop");
        assert_eq!(t.exchange.as_deref(), Some("orders"));
        let t = Target::parse("AMQPS://u:p@broker/%2f?routing_key=k").unwrap();
        assert!(t.tls);
        assert_eq!(
            t.uri, "amqp://u:p@broker:5671/%2f",
            "TLS is throng's, not lapin's"
        );
        assert_eq!(t.shown, "broker:5671//");
        let trust = |cacert: Option<&str>, identity: bool, insecure| ClientOptions {
            insecure,
            cacert: cacert.map(Into::into),
            identity: identity.then(|| throng_core::step::Identity {
                cert: "c.pem".into(),
                key: "k.pem".into(),
            }),
            ..ClientOptions::default()
        };
        assert!(Target::parse("amqp://h/x")
            .unwrap()
            .trusting(&trust(None, false, true))
            .is_ok());
        let e = Target::parse("amqp://h/x")
            .unwrap()
            .trusting(&trust(Some("ca.pem"), false, false))
            .unwrap_err();
        assert!(e.contains("--cacert applies to amqps://"), "{e}");
        let e = Target::parse("amqp://h/x")
            .unwrap()
            .trusting(&trust(None, true, false))
            .unwrap_err();
        assert!(e.contains("--cert and --key apply to amqps://"), "{e}");
        let e = Target::parse("amqps://h/x")
            .unwrap()
            .trusting(&trust(Some("/nonexistent/ca.pem"), false, false))
            .unwrap_err();
        assert!(e.contains("cannot use CA file /nonexistent/ca.pem"), "{e}");
        for bad in [
            "http://h/x",
            "amqp:///x",
            "amqp://h:port/x",
            "amqp://h/a/b",
            "amqp://h/%2f?queue=x",
            "amqp://h/%2f?exchange=a%20b",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }
}
