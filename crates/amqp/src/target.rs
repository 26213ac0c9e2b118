//! A target's URL (`amqp://[USER:PASS@]HOST[:PORT]/VHOST[?routing_key=K&exchange=E]`) and how a
//! failure of lapin's is classified.

use lapin::ErrorKind;
use percent_encoding::percent_decode_str;
use throng_core::{ErrorClass, Status};

/// An `amqp://` URL, checked.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The URL lapin connects to (`amqp://user:pass@host:port/vhost`, no query).
    pub(crate) uri: String,
    /// `host:port/vhost`, for messages (no credentials).
    pub(crate) shown: String,
    /// The URL's `routing_key`, if any.
    pub(crate) routing_key: Option<String>,
    /// The URL's `exchange`, if any.
    pub(crate) exchange: Option<String>,
}

impl Target {
    /// The target of `url`, or what is wrong with it.
    pub(crate) fn parse(url: &str) -> Result<Target, String> {
        let rest = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("amqp") => rest,
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("amqps") => {
                return Err(format!(
                    "{url}: amqps (AMQP over TLS) is not supported yet; amqp:// is"
                ))
            }
            _ => {
                return Err(format!(
                    "{url}: an AMQP URL is amqp://[USER:PASS@]HOST[:PORT]/VHOST (e.g. \
                     amqp://guest:guest@127.0.0.1:5672/%2f, %2f being the vhost /)"
                ))
            }
        };
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, vhost) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, host_port) = match authority.rsplit_once('@') {
            Some((u, hp)) => (Some(u), hp),
            None => (None, authority),
        };
        if host_port.is_empty() || host_port.starts_with(':') {
            return Err(format!("{url}: no host"));
        }
        let host_port = match host_port.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || host_port.starts_with('[') => {
                match p.parse::<u16>() {
                    Ok(p) if p > 0 => format!("{h}:{p}"),
                    _ => return Err(format!("{url}: {p:?} is not a port")),
                }
            }
            _ => format!("{host_port}:5672"),
        };
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
            routing_key,
            exchange,
        })
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
pub(crate) fn connect_failed(shown: &str, e: &lapin::Error) -> throng_core::Outcome {
    let (class, status) = classify(e);
    let hint = match status.map(|s| s.code()) {
        Some(403) => " (bad credentials, or no access to the vhost)",
        Some(530) => " (the vhost does not exist, or the user may not use it)",
        _ => "",
    };
    let mut o =
        throng_core::Outcome::failed(class, format!("connecting to AMQP at {shown}: {e}{hint}"));
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
        for bad in [
            "http://h/x",
            "amqps://h/x",
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
