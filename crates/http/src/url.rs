//! Target URLs, checked strictly: the `http` crate accepts authorities such as `host:99999` or
//! `host:8080x` and then reports no port, which a client would quietly turn into port 80. A load
//! tester that sends its load somewhere else than the report says is worse than one that refuses,
//! so every part a user can get wrong is checked here and named in the message.

use std::net::Ipv6Addr;

use http::Uri;

use crate::HttpConfigError;

/// What is wrong with a target URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlProblem {
    /// Nothing was given.
    #[error("the URL is empty")]
    Empty,
    /// No `scheme://` in front.
    #[error("not an http:// or https:// URL (write e.g. http://127.0.0.1:8080/)")]
    NoScheme,
    /// A scheme other than http or https.
    #[error("not an http:// or https:// URL: the scheme is `{0}`")]
    Scheme(String),
    /// A space or control character, which no URL may hold.
    #[error("a URL cannot hold spaces or control characters (write a space as %20)")]
    Space,
    /// The host part is empty.
    #[error("the host is empty (write e.g. http://127.0.0.1:8080/)")]
    EmptyHost,
    /// A `:` with no port after it.
    #[error("the port after `:` is empty (leave out the `:` for the scheme's default port)")]
    EmptyPort,
    /// The port is not a number from 1 to 65535.
    #[error("the port `{0}` is not a number from 1 to 65535")]
    Port(String),
    /// An IPv6 address without brackets, or a bracketed one that does not parse.
    #[error("`{0}` is not a host: an IPv6 address goes in brackets, e.g. http://[::1]:8080/")]
    Ipv6(String),
    /// A host with characters no host name or address has.
    #[error("`{0}` is not a host name or an IP address")]
    Host(String),
    /// `user:password@` in the authority: throng would not send it.
    #[error("credentials in a URL are not sent; drop `USER:PASSWORD@` and send an `authorization` header")]
    UserInfo,
    /// Any other syntax error, in the words of the `http` crate.
    #[error("not a valid URL ({0})")]
    Syntax(String),
}

/// Parses a target URL: `http` or `https`, a host, an optional port from 1 to 65535, no
/// credentials.
pub fn parse_url(url: &str) -> Result<Uri, HttpConfigError> {
    let bad = |problem| HttpConfigError::BadUrl {
        url: throng_core::redact(url),
        problem,
    };
    if url.trim().is_empty() {
        return Err(bad(UrlProblem::Empty));
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(bad(UrlProblem::NoScheme));
    };
    let web = |s: &str| s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https");
    if !web(scheme) && !web(scheme.trim()) {
        return Err(bad(UrlProblem::Scheme(scheme.to_string())));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(UrlProblem::Space));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(bad(UrlProblem::UserInfo));
    }
    check_authority(authority).map_err(bad)?;
    let uri: Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| bad(UrlProblem::Syntax(e.to_string())))?;
    // The checks above read the text; this one makes sure the `http` crate read the same.
    if uri.host().is_none_or(str::is_empty) {
        return Err(bad(UrlProblem::EmptyHost));
    }
    Ok(uri)
}

fn check_authority(authority: &str) -> Result<(), UrlProblem> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (addr, after) = rest
            .split_once(']')
            .ok_or_else(|| UrlProblem::Ipv6(authority.to_string()))?;
        if addr.parse::<Ipv6Addr>().is_err() {
            return Err(UrlProblem::Ipv6(format!("[{addr}]")));
        }
        match after {
            "" => (addr, None),
            p => match p.strip_prefix(':') {
                Some(port) => (addr, Some(port)),
                None => return Err(UrlProblem::Host(authority.to_string())),
            },
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) if port.contains(':') => {
                return Err(UrlProblem::Ipv6(format!("{host}:{port}")))
            }
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(UrlProblem::EmptyHost);
    }
    // Letters, digits, `-`, `.` and `_` (container names) cover host names and IPv4; a `%`
    // would be an encoded host, which nobody means in a load test.
    if !authority.starts_with('[')
        && !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
    {
        return Err(UrlProblem::Host(host.to_string()));
    }
    match port {
        None => Ok(()),
        Some("") => Err(UrlProblem::EmptyPort),
        Some(p) if p.bytes().all(|b| b.is_ascii_digit()) && matches!(p.parse::<u16>(), Ok(1..)) => {
            Ok(())
        }
        Some(p) => Err(UrlProblem::Port(p.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(url: &str) -> UrlProblem {
        match parse_url(url) {
            Err(HttpConfigError::BadUrl { problem, .. }) => problem,
            other => panic!("{url}: expected a URL problem, got {other:?}"),
        }
    }

    #[test]
    fn a_port_that_does_not_parse_is_refused_not_turned_into_80() {
        for (url, port) in [
            ("http://127.0.0.1:99999/", "99999"),
            ("http://127.0.0.1:65536/", "65536"),
            ("http://127.0.0.1:8080x/", "8080x"),
            ("http://127.0.0.1:-1/", "-1"),
            ("http://127.0.0.1:0/", "0"),
            ("http://127.0.0.1:+80/", "+80"),
            ("http://[::1]:70000/", "70000"),
            ("https://example.com:1e3", "1e3"),
        ] {
            assert_eq!(problem(url), UrlProblem::Port(port.into()), "{url}");
        }
        let e = parse_url("http://127.0.0.1:99999/")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "URL `http://127.0.0.1:99999/`: the port `99999` is not a number from 1 to 65535"
        );
    }

    #[test]
    fn each_wrong_part_is_named() {
        assert_eq!(problem(""), UrlProblem::Empty);
        assert_eq!(problem("127.0.0.1:8080"), UrlProblem::NoScheme);
        assert_eq!(problem("not a url"), UrlProblem::NoScheme);
        assert_eq!(problem("htp://x/"), UrlProblem::Scheme("htp".into()));
        assert_eq!(problem("ftp://x/"), UrlProblem::Scheme("ftp".into()));
        assert_eq!(problem("http://:8080/"), UrlProblem::EmptyHost);
        assert_eq!(problem("http:///"), UrlProblem::EmptyHost);
        assert_eq!(problem("http://"), UrlProblem::EmptyHost);
        assert_eq!(problem("http://a b/"), UrlProblem::Space);
        assert_eq!(problem("http://h/a b"), UrlProblem::Space);
        assert_eq!(problem(" http://h/"), UrlProblem::Space);
        assert_eq!(problem("http://127.0.0.1:/"), UrlProblem::EmptyPort);
        assert_eq!(problem("http://u:pw@127.0.0.1/"), UrlProblem::UserInfo);
        assert_eq!(problem("http://@127.0.0.1/"), UrlProblem::UserInfo);
        assert!(matches!(problem("http://::1/"), UrlProblem::Ipv6(_)));
        assert!(matches!(problem("http://[::g]/"), UrlProblem::Ipv6(_)));
        assert!(matches!(problem("http://[::1/"), UrlProblem::Ipv6(_)));
        assert!(matches!(problem("http://h%41/"), UrlProblem::Host(_)));
    }

    #[test]
    fn credentials_never_reach_the_message() {
        let e = parse_url("http://alice:s3cret@h/").unwrap_err().to_string();
        assert!(
            !e.contains("s3cret") && e.contains("http://alice:***@h/"),
            "{e}"
        );
    }

    #[test]
    fn accepts_the_usual_forms() {
        for (url, port) in [
            ("http://127.0.0.1:8080/", Some(8080)),
            ("https://example.com/a?b=c", None),
            ("HTTP://localhost:1", Some(1)),
            ("http://[::1]:65535/", Some(65535)),
            ("http://[::1]", None),
            ("http://my_container:80", Some(80)),
            ("http://127.0.0.1:00080/", Some(80)),
        ] {
            let u = parse_url(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(u.port_u16(), port, "{url}");
        }
    }
}
