//! Bad scenario files: each message names `file:line:column` and says what is wrong in the
//! user's words.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::path::Path;

/// Compiles `text` as `x.yaml` and returns the error message.
fn error(text: &str) -> String {
    match throng_scenario::compile_str(text, "x.yaml", Path::new(".")) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

const STEP: &str = "steps:\n  - label: x\n    request:\n      path: /\n";

#[test]
fn a_target_with_a_bad_port_is_refused_at_its_place() {
    for (url, port) in [
        ("http://127.0.0.1:99999", "99999"),
        ("http://127.0.0.1:65536/", "65536"),
        ("http://127.0.0.1:8080x", "8080x"),
        ("http://127.0.0.1:-1", "-1"),
    ] {
        let e = error(&format!("targets:\n  a: {url}\n{STEP}"));
        assert_eq!(
            e,
            format!(
                "x.yaml:2:6: target `a`: URL `{url}`: the port `{port}` is not a number from 1 to 65535"
            )
        );
    }
}

#[test]
fn a_target_must_be_a_plain_base_url() {
    let cases = [
        (
            "htp://h",
            "2:6: target `a`: URL `htp://h`: not an http:// or https:// URL",
        ),
        (
            "http://:8080",
            "2:6: target `a`: URL `http://:8080`: the host is empty",
        ),
        (
            "\"http://u:p@h/\"",
            "2:6: target `a`: URL `http://…@h/`: credentials",
        ),
        (
            "http://h/api?key=1",
            "2:6: target `a`: a target is a base URL without `?`",
        ),
    ];
    for (url, want) in cases {
        let e = error(&format!("targets:\n  a: {url}\n{STEP}"));
        assert!(e.starts_with(&format!("x.yaml:{want}")), "{url}: {e}");
    }
}
