//! A URL as throng shows it: never with its password.

/// The URL with its password replaced by `***`, in the user-info part and in a `password=`
/// query parameter. Everything else is kept, so the message still names the database.
pub fn redact(url: &str) -> String {
    let mut out = match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let (authority, tail) = rest.split_at(end);
            // The last `@` ends the user info (a password may itself hold `@`).
            let authority = match authority.rsplit_once('@') {
                Some((info, host)) => match info.split_once(':') {
                    Some((user, _)) => format!("{user}:***@{host}"),
                    None => format!("{info}@{host}"),
                },
                None => authority.to_string(),
            };
            format!("{scheme}://{authority}{tail}")
        }
        None => url.to_string(),
    };
    // The query runs from the first `?` to a fragment's `#`.
    let query = out.find('?').map(|q| {
        let end = out[q..].find('#').map_or(out.len(), |f| q + f);
        (q + 1, end)
    });
    if let Some((start, end)) = query {
        let params: Vec<String> = out[start..end]
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => kv.to_string(),
            })
            .collect();
        out = format!("{}{}{}", &out[..start], params.join("&"), &out[end..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn a_password_is_hidden_wherever_a_url_gives_it() {
        assert_eq!(redact("postgres://u:p@h/db"), "postgres://u:***@h/db");
        assert_eq!(
            redact("mysql://u:p%40x@h/db?password=y"),
            "mysql://u:***@h/db?password=***"
        );
        assert_eq!(redact("sqlite://file"), "sqlite://file");
        for plain in [
            "postgres://u@h:5432/db?sslmode=disable",
            "http://127.0.0.1:8080/a?x=1#f",
            "sqlite::memory:",
        ] {
            assert_eq!(redact(plain), plain);
        }
        // An `@` in the password: the last one ends the user info.
        assert_eq!(
            redact("http://u:s3cr@t@127.0.0.1:9090/api/v1/write"),
            "http://u:***@127.0.0.1:9090/api/v1/write"
        );
        // A fragment ends the authority too (an `@` after it is not user info).
        assert_eq!(redact("http://h#a:b@c"), "http://h#a:b@c");
        assert_eq!(
            redact("postgres://h/db?PassWord=x&a=1#f"),
            "postgres://h/db?PassWord=***&a=1#f"
        );
    }
}
