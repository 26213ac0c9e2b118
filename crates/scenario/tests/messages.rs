//! Bad scenario files: each message names `file:line:column` and says what is wrong in the
//! user's words.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::path::Path;

/// Compiles `text` as `x.yaml` and returns the error message.
fn error(text: &str) -> String {
    match throng_scenario::compile_str(text, "x.yaml", Path::new("."), &protocols()) {
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
            "2:6: target `a`: URL `htp://h`: not a URL of a protocol throng loads (http://, https://)",
        ),
        (
            "http://:8080",
            "2:6: target `a`: URL `http://:8080`: the host is empty",
        ),
        (
            "\"http://u:p@h/\"",
            "2:6: target `a`: URL `http://u:***@h/`: credentials",
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

/// A file with one target, the given text in the middle, and one step.
fn with(middle: &str) -> String {
    format!("targets:\n  a: http://127.0.0.1:1\n{middle}{STEP}")
}

#[test]
fn load_values_are_blamed_on_the_file_and_line() {
    for (load, want) in [
        ("  users: -3\n", "4:10: users must be a whole number of at least 1, not -3"),
        ("  users: 0\n", "4:10: users must be a whole number of at least 1, not 0"),
        ("  users: lots\n", "4:10: users must be a whole number of at least 1, not `lots`"),
        ("  requests: 0\n", "4:13: requests must be a whole number of at least 1, not 0"),
        (
            "  duration: ten\n",
            "4:13: duration `ten` is not a duration (expected a number and a unit); write e.g. 30s, 2m, 250ms",
        ),
        (
            "  duration: 1e20\n",
            "4:13: duration `1e20` is not a duration (longer than 100 days, the most throng accepts); write e.g. 30s, 2m, 250ms",
        ),
        ("  duration: 0s\n", "4:13: duration must be longer than zero"),
        ("  rate: .nan\n", "4:9: rate must be a number of iterations per second above 0, not NaN"),
        ("  rate: 0\n", "4:9: rate must be a number of iterations per second above 0, not 0"),
        (
            "  rate: .nan\n  rate_stages: 10s:5\n",
            "4:9: rate must be a number of iterations per second, 0 or more (the start of rate_stages), not NaN",
        ),
        ("  rate_stages: 30s:10,,5s:0\n", "4:16: rate_stages: stage 2 is empty (a doubled or trailing comma?)"),
        ("  user_stages: 10s:2.5\n", "4:16: user_stages: user counts must be whole numbers, not 2.5"),
        ("  arrivals: sometimes\n", "4:13: arrivals must be `even`, `poisson` or `gamma:SHAPE`, not `sometimes`"),
        (
            "  arrivals: gamma\n",
            "4:13: arrivals `gamma` needs a shape: gamma:SHAPE, e.g. gamma:0.5 (burstier than poisson) or gamma:4 (more even)",
        ),
        (
            "  arrivals: gamma:0\n",
            "4:13: arrivals `gamma:0`: the shape must be a number above 0 (1 is poisson, below 1 burstier, above 1 more even), not `0`",
        ),
        (
            "  arrivals: gamma:-0.5\n",
            "4:13: arrivals `gamma:-0.5`: the shape must be a number above 0 (1 is poisson, below 1 burstier, above 1 more even), not `-0.5`",
        ),
        (
            "  rate: 5\n  arrivals: gamma:lots\n",
            "5:13: arrivals `gamma:lots`: the shape must be a number above 0 (1 is poisson, below 1 burstier, above 1 more even), not `lots`",
        ),
        (
            "  rate: 5\n  users: 3\n",
            "5:10: `users` belongs to the closed loop, but `rate` (line 4) makes this an open loop; use max_in_flight to bound concurrency",
        ),
        (
            "  users: 5\n  arrivals: gamma:0.5\n",
            "5:13: `arrivals` belongs to the open loop, but `users` (line 4) makes this a closed loop; give rate or rate_stages to space arrivals",
        ),
        (
            "  users: 5\n  user_stages: 10s:5\n",
            "5:16: give `users` or `user_stages`, not both (user_stages starts from 0 users)",
        ),
    ] {
        let e = error(&with(&format!("load:\n{load}")));
        assert_eq!(e, format!("x.yaml:{want}"), "{load}");
    }
}

#[test]
fn rate_zero_starts_rate_stages() {
    let text = with("load:\n  rate: 0\n  rate_stages: 10s:5\n");
    let s = throng_scenario::compile_str(&text, "x.yaml", Path::new("."), &protocols()).unwrap();
    let stages = vec![throng_core::Stage {
        duration: std::time::Duration::from_secs(10),
        target: 5.0,
    }];
    assert_eq!((s.load.rate, s.load.rate_stages), (Some(0.0), Some(stages)));
}

#[test]
fn gamma_arrivals_carry_their_shape() {
    let text = with("load:\n  rate: 20\n  duration: 1s\n  arrivals: gamma:0.25\n");
    let s = throng_scenario::compile_str(&text, "x.yaml", Path::new("."), &protocols()).unwrap();
    assert_eq!(
        s.load.arrivals,
        Some(throng_core::Arrivals::Gamma { shape: 0.25 })
    );
}

#[test]
fn structure_errors_speak_the_users_language() {
    for (text, want) in [
        (
            "targets:\n  a: http://h\nsteps: []\n".to_string(),
            "x.yaml:3:8: steps: the list is empty; a scenario needs at least one step",
        ),
        (
            "targets:\n  a: http://h\nload:\n  users: 2\n  users: 3\n".to_string() + STEP,
            "x.yaml:5:3: duplicate key `users` (first at line 4)",
        ),
        (
            "laod:\n  users: 1\n".to_string() + STEP,
            "x.yaml:1:1: unknown key `laod` (did you mean `load`?); the keys here are targets, variables, data, load, thresholds, goodput, on_failure, steps, flows, seed, containers",
        ),
        (
            "targets:\n  a: http://h\n".to_string(),
            "x.yaml:1:1: the required key `steps` is missing: it takes a list of steps (- label: ..., request: ...); or give `flows`, several lists picked by weight",
        ),
        (
            "targets:\n\ta: http://h\n".to_string() + STEP,
            "x.yaml:2:2: a tab in the indentation: YAML indents with spaces only",
        ),
        (
            "".to_string(),
            "x.yaml:1:1: the file is empty; a scenario needs at least `targets` and `steps`",
        ),
        (
            "# nothing yet\n\n".to_string(),
            "x.yaml:1:1: the file is empty; a scenario needs at least `targets` and `steps`",
        ),
        (
            "{{{ this is : not [ yaml".to_string(),
            "x.yaml:1:19: not valid YAML: unclosed bracket '['",
        ),
        (
            "just words".to_string(),
            "x.yaml:1:1: a scenario file is a mapping of keys (targets:, steps:, ...), not `just words`",
        ),
        (
            "targets: [a]\n".to_string() + STEP,
            "x.yaml:1:10: targets must be a mapping of names to base URLs (api: http://127.0.0.1:8080), not a list",
        ),
        (
            "targets:\n  a: http://h\nsteps:\n".to_string(),
            "x.yaml:3:6: steps is empty: it takes a list of steps (- label: ..., request: ...)",
        ),
        (
            "on_failure: sometimes\n".to_string() + STEP,
            "x.yaml:1:13: on_failure must be one of `skip_iteration`, `continue`, not `sometimes`",
        ),
    ] {
        assert_eq!(error(&text), want, "{text}");
    }
}

#[test]
fn step_errors_name_their_place() {
    let step = |body: &str| format!("targets:\n  a: http://h\nsteps:\n  - label: x\n{body}");
    for (body, want) in [
        (
            "    request:\n      method: GET\n",
            "x.yaml:6:7: the required key `path` is missing: it takes a path such as /api/items",
        ),
        (
            "    request:\n      path: /\n    checks:\n      - status: ok\n",
            "x.yaml:8:17: status must be an HTTP status code from 100 to 599, not `ok`",
        ),
        (
            "    request:\n      path: /\n    checks:\n      - status: 42\n",
            "x.yaml:8:17: status must be an HTTP status code from 100 to 599, not 42",
        ),
        (
            "    request:\n      path: /\n    extract:\n      v: { xpath: a }\n",
            "x.yaml:8:12: `xpath` is not one of `jsonpath`, `header`, `metadata`, `regex`",
        ),
        (
            "    request:\n      path: /\n    extract:\n      v: { jsonpath: \"$[\" }\n",
            "x.yaml:8:10: bad JSONPath `$[`",
        ),
        (
            "    request:\n      path: /{{ a \n",
            "x.yaml:6:13: bad template: syntax error",
        ),
        (
            "    request:\n      path: /{{ nobody }}\n",
            "x.yaml:6:13: unknown variable `nobody`",
        ),
        (
            "    request:\n      target: b\n      path: /\n",
            "x.yaml:6:15: unknown target `b` (the targets are a)",
        ),
        (
            "    request:\n      path: /\n      path: /y\n",
            "x.yaml:7:7: duplicate key `path` (first at line 6)",
        ),
        (
            "    request:\n      path: /\n  - label: x\n    request:\n      path: /\n",
            "x.yaml:7:12: two steps are labelled `x` (first at line 4): labels name rows, make them unique",
        ),
        (
            "    request: /\n",
            "x.yaml:5:14: request must be a mapping with `path` (and method, headers, body or json), not `/`",
        ),
    ] {
        let e = error(&step(body));
        assert!(e.starts_with(want), "{body}: {e}");
    }
}

#[test]
fn a_missing_data_file_names_the_data_source() {
    let e = error(&format!(
        "targets:\n  a: http://h\ndata:\n  u:\n    file: nope.csv\n{STEP}"
    ));
    assert!(
        e.starts_with("x.yaml:5:5: data `u`: cannot read") && e.contains("nope.csv"),
        "{e}"
    );
}

#[test]
fn a_file_that_is_not_text_is_named_with_the_first_bad_byte() {
    let dir = tempdir();
    let path = dir.join("bin.yaml");
    std::fs::write(&path, b"steps:\n  - \xff\xfe\x00").unwrap();
    let e = throng_scenario::load(&path, &protocols())
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "{}:2:5: not a text file: a scenario is YAML text in UTF-8",
            path.display()
        )
    );
    let e = throng_scenario::load(&dir.join("missing.yaml"), &protocols())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("missing.yaml: cannot read the scenario file"),
        "{e}"
    );
}

/// A fresh directory under the system's temporary directory, removed when dropped (however
/// the test ends).
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn join(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir() -> TempDir {
    let dir = std::env::temp_dir().join(format!(
        "throng-scenario-messages-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// The protocols these tests compile with: HTTP's (the scenario crate itself knows none).
fn protocols() -> throng_scenario::Protocols {
    throng_scenario::Protocols::new().with(throng_http::HttpProtocol)
}
