//! A target's URL (`nats://[USER:PASS@]HOST[:PORT]/SUBJECT`, `tls://` the same over TLS),
//! subjects and header names as NATS takes them, and how a failed connect is classified.

use async_nats::ConnectErrorKind;
use throng_core::ErrorClass;

/// A `nats://` or `tls://` URL, checked: the server, the credentials it carries and the
/// subject; and, for `tls://`, how the server is trusted ([`Target::trusting`]).
#[derive(Clone)]
pub(crate) struct Target {
    /// `nats://host:port`, or `tls://host:port` (async-nats then requires TLS).
    pub(crate) server: String,
    /// Whether the URL is `tls://`.
    pub(crate) tls: bool,
    /// The TLS configuration of a `tls://` target, once made.
    tls_config: Option<std::sync::Arc<async_nats::rustls::ClientConfig>>,
    /// `USER:PASS@` (user and password) or `TOKEN@` (a token), percent-decoded: async-nats
    /// reads a URL's credentials only from its options.
    pub(crate) auth: Option<(String, Option<String>)>,
    /// `host:port`, for messages (no credentials).
    pub(crate) shown: String,
    pub(crate) subject: String,
}

impl Target {
    /// The target of `url`, or what is wrong with it.
    pub(crate) fn parse(url: &str) -> Result<Target, String> {
        let (rest, tls) = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("nats") => (rest, false),
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("tls") => (rest, true),
            _ => {
                return Err(format!(
                    "{url}: a NATS URL is nats://HOST[:PORT]/SUBJECT (e.g. \
                     nats://127.0.0.1:4222/greeter), or tls://HOST[:PORT]/SUBJECT over TLS"
                ))
            }
        };
        let (authority, subject) = rest.split_once('/').unwrap_or((rest, ""));
        let (auth, host_port) = match authority.rsplit_once('@') {
            Some((auth, hp)) => (Some(auth), hp),
            None => (None, authority),
        };
        let decode = |v: &str| {
            percent_encoding::percent_decode_str(v)
                .decode_utf8_lossy()
                .into_owned()
        };
        let auth = auth.map(|a| match a.split_once(':') {
            Some((user, pass)) => (decode(user), Some(decode(pass))),
            None => (decode(a), None),
        });
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
        let scheme = if tls { "tls" } else { "nats" };
        Ok(Target {
            server: format!("{scheme}://{host_port}"),
            tls,
            tls_config: None,
            auth,
            shown,
            subject: subject.to_string(),
        })
    }
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the credentials.
        f.debug_struct("Target")
            .field("server", &self.server)
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

impl Target {
    /// The URL as throng shows it (labels, the plan): its password, or its token, as `***`.
    pub(crate) fn shown_url(&self) -> String {
        let auth = match &self.auth {
            Some((user, Some(_))) => format!("{user}:***@"),
            Some((_, None)) => "***@".to_string(),
            None => String::new(),
        };
        let scheme = if self.tls { "tls" } else { "nats" };
        format!("{scheme}://{auth}{}/{}", self.shown, self.subject)
    }

    /// The target trusting servers as `options`' `cacert` and `insecure` say (throng-net's
    /// rustls configuration: a CA file, the web roots, or no verification) and presenting its
    /// `identity` (in the rustls configuration async-nats is given, so its own client
    /// certificate option is not needed), made now so that a file that cannot be used is said
    /// before any load; `--cacert` or `--cert` on `nats://` is an error.
    pub(crate) fn trusting(
        mut self,
        options: &throng_core::step::ClientOptions,
    ) -> Result<Target, String> {
        self.tls_config = throng_net::trust(self.tls, options, || {
            format!("tls:// targets; {} is plain NATS", self.shown_url())
        })?;
        Ok(self)
    }

    /// The options every connection to it starts from: its credentials, the connect timeout,
    /// no retries of the first connect (a server that is down fails it, and the engine backs
    /// off; once made, async-nats connects again by itself after the server went away).
    pub(crate) fn options(
        &self,
        connect_timeout: std::time::Duration,
    ) -> async_nats::ConnectOptions {
        let o = match &self.auth {
            Some((user, Some(pass))) => {
                async_nats::ConnectOptions::with_user_and_password(user.clone(), pass.clone())
            }
            Some((token, None)) => async_nats::ConnectOptions::with_token(token.clone()),
            None => async_nats::ConnectOptions::new(),
        };
        let o = o.connection_timeout(connect_timeout).request_timeout(None);
        match &self.tls_config {
            // The server's INFO first, then the handshake, as NATS's own clients do.
            Some(config) => o.require_tls(true).tls_client_config((**config).clone()),
            None => o,
        }
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
        // async-nats says a failed TLS handshake (an untrusted certificate, a server that does
        // not speak TLS) is I/O: rustls' error in the chain tells.
        ConnectErrorKind::Io if throng_net::classify_io(e) == Some(ErrorClass::Tls) => {
            ErrorClass::Tls
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
        .trim_start_matches("nats://")
        .trim_start_matches("tls://");
    (class, format!("connecting to NATS at {server}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_taken_out_of_the_url_and_never_shown() {
        let t = Target::parse("nats://me:p%40ss@127.0.0.1:4222/a.b").unwrap();
        assert_eq!(t.server, "nats://127.0.0.1:4222");
        assert_eq!(t.auth, Some(("me".into(), Some("p@ss".into()))));
        assert_eq!(t.shown, "127.0.0.1:4222");
        assert!(!format!("{t:?}").contains("p@ss"));
        assert_eq!(t.shown_url(), "nats://me:***@127.0.0.1:4222/a.b");
        let token = Target::parse("nats://s3cr3t@host/x").unwrap();
        assert_eq!(token.auth, Some(("s3cr3t".into(), None)));
        assert_eq!(token.shown, "host:4222");
        assert_eq!(token.shown_url(), "nats://***@host:4222/x");
        assert_eq!(Target::parse("nats://host:1/x").unwrap().auth, None);
        let tls = Target::parse("TLS://me:pw@host:1/x").unwrap();
        assert!(tls.tls);
        assert_eq!(tls.server, "tls://host:1");
        assert_eq!(tls.shown_url(), "tls://me:***@host:1/x");
    }
}
