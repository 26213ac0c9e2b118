//! A target's URL (`nats://[USER:PASS@]HOST[:PORT]/SUBJECT`), subjects and header names as
//! NATS takes them, and how a failed connect is classified.

use async_nats::ConnectErrorKind;
use throng_core::ErrorClass;

/// A `nats://` URL, checked: the server (as async-nats takes it, credentials included) and the
/// subject.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// `nats://[user:pass@]host:port`.
    pub(crate) server: String,
    /// `host:port`, for messages (no credentials).
    pub(crate) shown: String,
    pub(crate) subject: String,
}

impl Target {
    /// The target of `url`, or what is wrong with it.
    pub(crate) fn parse(url: &str) -> Result<Target, String> {
        let rest = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("nats") => rest,
            _ => {
                return Err(format!(
                    "{url}: a NATS URL is nats://HOST[:PORT]/SUBJECT (e.g. \
                     nats://127.0.0.1:4222/greeter)"
                ))
            }
        };
        let (authority, subject) = rest.split_once('/').unwrap_or((rest, ""));
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
        if host_port.is_empty() || host_port.starts_with(':') {
            return Err(format!("{url}: no host"));
        }
        if subject.is_empty() {
            return Err(format!(
                "{url}: no subject: write it as the URL's path, nats://HOST:PORT/SUBJECT"
            ));
        }
        check_subject(subject).map_err(|e| format!("{url}: {e}"))?;
        let shown = match host_port.contains(':') && !host_port.ends_with(']') {
            true => host_port.to_string(),
            false => format!("{host_port}:4222"),
        };
        Ok(Target {
            server: format!("nats://{authority}"),
            shown,
            subject: subject.to_string(),
        })
    }
}

/// A subject a message can be sent to: tokens separated by dots, no spaces, no wildcards.
pub(crate) fn check_subject(s: &str) -> Result<(), String> {
    if s.is_empty() || s.starts_with('.') || s.ends_with('.') || s.contains("..") {
        return Err(format!("{s:?} is not a subject (tokens separated by dots)"));
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{s:?} is not a subject: it holds a space"));
    }
    if s.split('.').any(|t| t == "*" || t == ">") {
        return Err(format!(
            "{s:?} holds a wildcard: a message is sent to one subject"
        ));
    }
    Ok(())
}

/// A header name NATS carries: printable ASCII without `:` or spaces.
pub(crate) fn check_header_name(name: &str) -> Result<(), String> {
    match !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
        true => Ok(()),
        false => Err(format!("{name:?} is not a header name")),
    }
}

/// A connect failure's class and message.
pub(crate) fn connect_error(server: &str, e: &async_nats::ConnectError) -> (ErrorClass, String) {
    let class = match e.kind() {
        ConnectErrorKind::TimedOut => ErrorClass::Timeout,
        ConnectErrorKind::Tls => ErrorClass::Tls,
        ConnectErrorKind::Authentication | ConnectErrorKind::AuthorizationViolation => {
            ErrorClass::Status
        }
        ConnectErrorKind::Io => {
            // A server that answers something other than NATS's INFO line: async-nats says
            // "invalid server operation" (or that it expected INFO) with the line it read.
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text.push_str(&s.to_string());
                source = s.source();
            }
            match text.contains("invalid server operation") || text.contains("INFO") {
                true => ErrorClass::Protocol,
                false => ErrorClass::Connect,
            }
        }
        _ => ErrorClass::Connect,
    };
    let server = server
        .rsplit_once('@')
        .map_or(server.trim_start_matches("nats://"), |(_, hp)| hp);
    (class, format!("connecting to NATS at {server}: {e}"))
}
