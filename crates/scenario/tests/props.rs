//! Property tests of scenario compilation: arbitrary YAML-ish text and mutations of the bundled
//! scenarios never panic, and every error names `x.yaml:LINE:COLUMN:` with LINE and COLUMN >= 1.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn bundled() -> Vec<String> {
    let mut texts: Vec<String> = std::fs::read_dir(scenarios_dir())
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
                .filter_map(|p| std::fs::read_to_string(p).ok())
                // HTTP's scenarios: the others' protocols live in crates this one does not
                // depend on (tests/grpc_scenario.rs and tests/sql_scenario.rs compile theirs).
                .filter(|t| !t.contains("grpc://") && !t.contains("postgres://"))
                .collect()
        })
        .unwrap_or_default();
    texts.sort();
    texts
}

/// Compiles `text`; an error must carry a place with line and column of at least 1.
fn check(text: &str) -> Result<(), TestCaseError> {
    if let Err(e) = throng_scenario::compile_str(text, "x.yaml", &scenarios_dir(), &protocols()) {
        let m = e.to_string();
        let place = m
            .strip_prefix("x.yaml:")
            .and_then(|r| r.split_once(": "))
            .map(|(p, _)| p.to_string())
            .unwrap_or_default();
        let nums: Vec<u64> = place.split(':').filter_map(|n| n.parse().ok()).collect();
        prop_assert!(
            nums.len() == 2 && nums[0] >= 1 && nums[1] >= 1,
            "no place in {m:?} for:\n{text}"
        );
        prop_assert!(
            !m.contains("DuplicateKeyPolicy") && !m.contains("invalid u"),
            "{m}"
        );
    }
    Ok(())
}

/// One edit of a text: what a hand at a keyboard does to a YAML file.
#[derive(Debug, Clone)]
enum Edit {
    DeleteLine(usize),
    DuplicateLine(usize),
    Insert(usize, &'static str),
    Truncate(usize),
    Replace(usize, &'static str),
}

fn edit() -> impl Strategy<Value = Edit> {
    let piece = prop::sample::select(vec![
        "\t",
        ":",
        "- ",
        "[",
        "]",
        "{",
        "}",
        "\"",
        "'",
        "#",
        " ",
        "\n",
        "  ",
        "-3",
        "0",
        "x",
        "&a ",
        "*a",
        "!!int ",
        "---\n",
        "? ",
        "|\n",
        "users: 1\n",
        "steps: []\n",
        ".nan",
        "http://127.0.0.1:99999",
        "{{ ",
        "$[",
        "é",
        "\u{feff}",
    ]);
    prop_oneof![
        any::<usize>().prop_map(Edit::DeleteLine),
        any::<usize>().prop_map(Edit::DuplicateLine),
        (any::<usize>(), piece.clone()).prop_map(|(i, p)| Edit::Insert(i, p)),
        any::<usize>().prop_map(Edit::Truncate),
        (any::<usize>(), piece).prop_map(|(i, p)| Edit::Replace(i, p)),
    ]
}

fn apply(text: &str, e: &Edit) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize, n: usize| if n == 0 { 0 } else { i % n };
    match e {
        Edit::DeleteLine(i) if !lines.is_empty() => {
            lines.remove(at(*i, lines.len()));
            lines.join("\n")
        }
        Edit::DuplicateLine(i) if !lines.is_empty() => {
            let i = at(*i, lines.len());
            lines.insert(i, lines[i]);
            lines.join("\n")
        }
        Edit::Insert(i, p) => {
            let i = at(*i, chars.len() + 1);
            chars[..i].iter().collect::<String>() + p + &chars[i..].iter().collect::<String>()
        }
        Edit::Truncate(i) => chars[..at(*i, chars.len() + 1)].iter().collect(),
        Edit::Replace(i, p) if !chars.is_empty() => {
            let i = at(*i, chars.len());
            chars[..i].iter().collect::<String>() + p + &chars[i + 1..].iter().collect::<String>()
        }
        _ => text.to_string(),
    }
}

/// Text made of the format's own keys and YAML's punctuation, so it gets past the first line.
fn yamlish() -> impl Strategy<Value = String> {
    let token = prop::sample::select(vec![
        "targets:",
        "steps:",
        "load:",
        "users:",
        "duration:",
        "rate:",
        "label:",
        "request:",
        "path:",
        "checks:",
        "status:",
        "extract:",
        "group:",
        "data:",
        "file:",
        "thresholds:",
        "variables:",
        "a:",
        " ",
        "  ",
        "\n",
        "\t",
        "- ",
        "[",
        "]",
        "{",
        "}",
        ",",
        "\"",
        "1",
        "-3",
        "30s",
        "/",
        "{{ a }}",
        "http://127.0.0.1:1",
        "p99<1ms",
        "#",
        "&x",
        "*x",
        "~",
        "null",
    ]);
    prop::collection::vec(token, 0..40).prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn yamlish_text_gets_a_placed_answer(text in yamlish()) {
        check(&text)?;
    }

    #[test]
    fn any_text_gets_a_placed_answer(text in "\\PC{0,60}") {
        check(&text)?;
    }

    #[test]
    fn edited_bundled_scenarios_get_a_placed_answer(
        which in any::<prop::sample::Index>(),
        edits in prop::collection::vec(edit(), 1..4),
    ) {
        let all = bundled();
        prop_assert!(!all.is_empty(), "no bundled scenarios found");
        let mut text = which.get(&all).clone();
        for e in &edits {
            text = apply(&text, e);
        }
        check(&text)?;
    }
}

#[test]
fn the_bundled_scenarios_compile_unedited() {
    let all = bundled();
    assert!(all.len() >= 3, "found {} bundled scenarios", all.len());
    for text in all {
        throng_scenario::compile_str(&text, "x.yaml", &scenarios_dir(), &protocols())
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The protocols these tests compile with: HTTP's (the scenario crate itself knows none).
fn protocols() -> throng_scenario::Protocols {
    throng_scenario::Protocols::new().with(throng_http::HttpProtocol)
}
