//! The book's reference pages that are made, not written: every command and flag from the
//! clap definitions, every field of the JSON results from their schemas. A test compares each
//! page with what the code makes now, so the reference cannot drift;
//! `UPDATE_BOOK=1 cargo test --lib book` writes them again.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use serde_json::Value;

/// The book's sources.
pub(super) fn book_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/book/src")
}

/// A table cell: one line, its pipes escaped.
fn cell(text: &str) -> String {
    let paragraphs: Vec<String> = text
        .trim()
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    paragraphs.join("<br><br>").replace('|', "\\|")
}

/// `reference/commands.md`: each command's usage and a row per flag.
fn commands_page() -> String {
    let mut cmd = super::Cli::command();
    cmd.build();
    let mut out = String::from(
        "# Commands and flags\n\n\
         <!-- Made by `UPDATE_BOOK=1 cargo test --lib book` from the clap definitions; \
         a test fails when it drifts. Edit the doc comments in the code, not this page. -->\n\n\
         Every command of `throng` and every flag it takes, as `--help` says it. \
         Every command also takes `-h, --help` (`--help` says more than `-h`) and \
         `-V, --version` (the version and the commit it was built from). \
         [Flags of `throng run`, explained](run-flags.md) says what the flags of a run do \
         together; the man pages (`throng man`) hold the same text.\n\n",
    );
    let mut index = String::new();
    let mut body = String::new();
    walk(&cmd, "throng", 0, &mut index, &mut body);
    out.push_str(&index);
    out.push('\n');
    out.push_str(&body);
    out
}

/// Writes `cmd`'s section and its subcommands', depth first.
fn walk(cmd: &clap::Command, path: &str, depth: usize, index: &mut String, body: &mut String) {
    let about = cmd
        .get_long_about()
        .or(cmd.get_about())
        .map(|a| a.to_string())
        .unwrap_or_default();
    let anchor = path.replace(' ', "-");
    let _ = writeln!(
        index,
        "{}- [`{path}`](#{anchor}): {}",
        "  ".repeat(depth),
        about.lines().next().unwrap_or_default()
    );
    let _ = writeln!(body, "## `{path}`\n");
    if !about.is_empty() {
        let _ = writeln!(body, "{}\n", about.trim());
    }
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage.trim().trim_start_matches("Usage:").trim();
    let _ = writeln!(body, "```text\n{usage}\n```\n");
    let args: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    if !args.is_empty() {
        body.push_str("| flag | meaning |\n|---|---|\n");
        for arg in args {
            let _ = writeln!(body, "| {} | {} |", arg_name(arg), arg_meaning(arg));
        }
        body.push('\n');
    }
    if let Some(after) = cmd.get_after_long_help().or(cmd.get_after_help()) {
        let _ = writeln!(body, "```text\n{}\n```\n", after.to_string().trim_end());
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        walk(
            sub,
            &format!("{path} {}", sub.get_name()),
            depth + 1,
            index,
            body,
        );
    }
}

/// `-c, --users <N>` as the flag is written.
fn arg_name(arg: &clap::Arg) -> String {
    let values = arg
        .get_value_names()
        .map(|v| {
            v.iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| format!("<{}>", arg.get_id().as_str().to_uppercase()));
    let takes = arg.get_action().takes_values();
    if arg.is_positional() {
        return format!("`{values}`");
    }
    let mut names = Vec::new();
    if let Some(s) = arg.get_short() {
        names.push(format!("-{s}"));
    }
    if let Some(l) = arg.get_long() {
        names.push(format!("--{l}"));
    }
    for alias in arg.get_visible_aliases().into_iter().flatten() {
        names.push(format!("--{alias}"));
    }
    let mut name = names.join(", ");
    if takes {
        let _ = write!(name, " {values}");
    }
    format!("`{}`", name.replace('|', "\\|"))
}

/// The flag's help, its values and its default.
fn arg_meaning(arg: &clap::Arg) -> String {
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let mut meaning = help.trim().to_string();
    if !meaning.is_empty() && !meaning.ends_with(['.', ')', ']', ':']) {
        meaning.push('.');
    }
    let possible: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !possible.is_empty() && arg.get_action().takes_values() {
        let _ = write!(meaning, " One of {}.", possible.join(", "));
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|d| format!("`{}`", d.to_string_lossy()))
        .collect();
    if !defaults.is_empty() && arg.get_action().takes_values() && !arg.is_hide_default_value_set() {
        let _ = write!(meaning, " Default: {}.", defaults.join(", "));
    }
    if arg.is_required_set() {
        meaning.push_str(" Required.");
    }
    cell(&meaning)
}

/// A JSON result's page: its top-level fields, then each type it uses.
fn schema_page(title: &str, file: &str, intro: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    let mut out = format!(
        "# {title}\n\n<!-- Made by `UPDATE_BOOK=1 cargo test --lib book` from {file}; a test fails \
         when it drifts. Edit the doc comments of the result's types, then UPDATE_SCHEMA and \
         UPDATE_BOOK. -->\n\n{intro}\n\n"
    );
    if let Some(d) = schema["description"].as_str() {
        let _ = writeln!(out, "{}\n", cell(d));
    }
    fields(&schema, &mut out);
    if let Some(defs) = schema["$defs"].as_object() {
        for (name, def) in defs {
            let _ = writeln!(out, "## `{name}`\n");
            if let Some(d) = def["description"].as_str() {
                let _ = writeln!(out, "{}\n", cell(d));
            }
            if def.get("properties").is_some() {
                fields(def, &mut out);
            }
            if let Some(variants) = def["oneOf"].as_array().or(def["anyOf"].as_array()) {
                out.push_str("One of:\n\n");
                for v in variants {
                    let what = v["description"].as_str().map(cell).unwrap_or_default();
                    let _ = writeln!(out, "- {}: {what}", shape(v));
                }
                out.push('\n');
            }
        }
    }
    out
}

/// A table of an object's fields: name, type, whether it is always there, meaning.
fn fields(object: &Value, out: &mut String) {
    let required: Vec<&str> = object["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    out.push_str("| field | type | meaning |\n|---|---|---|\n");
    for (name, p) in object["properties"].as_object().into_iter().flatten() {
        let optional = match required.contains(&name.as_str()) {
            true => "",
            false => " (may be absent)",
        };
        let what = p["description"].as_str().map(cell).unwrap_or_default();
        let _ = writeln!(out, "| `{name}` | {}{optional} | {what} |", type_of(p));
    }
    out.push('\n');
}

/// A property's type in words, a named type linked to its section.
fn type_of(p: &Value) -> String {
    if let Some(r) = p["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap_or(r);
        return format!("[`{name}`](#{})", name.to_lowercase());
    }
    if let Some(any) = p["anyOf"].as_array().or(p["oneOf"].as_array()) {
        return any.iter().map(type_of).collect::<Vec<_>>().join(" or ");
    }
    if let Some(c) = p.get("const") {
        return format!("`{c}`");
    }
    if let Some(e) = p["enum"].as_array() {
        let values: Vec<String> = e.iter().map(|v| format!("`{v}`")).collect();
        return format!("one of {}", values.join(", "));
    }
    let one = |t: &str| match t {
        "array" => format!(
            "array of {}",
            p.get("items").map(type_of).unwrap_or("values".into())
        ),
        "object" => match p.get("additionalProperties") {
            Some(v) if v.is_object() => format!("map of {}", type_of(v)),
            _ => "object".to_string(),
        },
        "integer" => "integer".to_string(),
        other => other.to_string(),
    };
    match &p["type"] {
        Value::String(t) => one(t),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(one)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".to_string(),
    }
}

/// A variant of a `oneOf`: a tagged object, an object of one key, or a plain type.
fn shape(v: &Value) -> String {
    let mut parts: Vec<String> = v["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, p)| format!("`\"{k}\"`: {}", type_of(p)))
        .collect();
    if let Some(r) = v["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap_or(r);
        parts.push(format!(
            "the fields of [`{name}`](#{})",
            name.to_lowercase()
        ));
    }
    match parts.is_empty() {
        true => type_of(v),
        false => format!("an object of {}", parts.join(", ")),
    }
}

/// Each made page, by its path under the book's sources.
fn made_pages() -> Vec<(&'static str, String)> {
    vec![
        ("reference/commands.md", commands_page()),
        (
            "reference/json.md",
            schema_page(
                "The JSON result",
                "schema.json",
                "What `--json FILE` writes for a run, `throng merge` for shards, and \
                 `throng report --format json` prints: a versioned contract \
                 (`schema_version`), checked against `schema.json` by the tests. A grid's \
                 result (a sweep, A/B sides, rounds, `--with`) is \
                 [another document](json-grid.md) that holds one of these a run.",
            ),
        ),
        (
            "reference/json-grid.md",
            schema_page(
                "The grid's JSON result",
                "schema-grid.json",
                "What `--json FILE` writes for a grid (`--sweep`, two or more `--target \
                 SIDE=URL`, `--rounds`, `--with`): `kind: grid`, every run with its \
                 coordinates, the level table and the capacity, checked against \
                 `schema-grid.json`. Each run is a [JSON result](json.md).",
            ),
        ),
    ]
}

#[test]
fn made_pages_are_current() {
    let update = std::env::var_os("UPDATE_BOOK").is_some();
    let mut stale = Vec::new();
    for (page, made) in made_pages() {
        let path = book_src().join(page);
        let now = std::fs::read_to_string(&path).unwrap_or_default();
        if now != made {
            match update {
                true => std::fs::write(&path, &made).unwrap(),
                false => stale.push(page),
            }
        }
    }
    assert!(
        stale.is_empty(),
        "{stale:?} in docs/book/src drifted from the code: run `UPDATE_BOOK=1 cargo test --lib book` and commit them"
    );
}

/// The Markdown of the book and the README, by path.
pub(super) fn pages() -> Vec<(PathBuf, String)> {
    fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            match path.is_dir() {
                true => collect(&path, out),
                false if path.extension().is_some_and(|e| e == "md") => out.push(path),
                false => {}
            }
        }
    }
    let mut paths = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")];
    collect(&book_src(), &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// The lines outside code blocks (`` ``` `` or `~~~`).
fn outside_code(text: &str) -> Vec<&str> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        match fence {
            Some(f) if t.starts_with(f) => fence = None,
            Some(_) => {}
            None if t.starts_with("```") => fence = Some("```"),
            None if t.starts_with("~~~") => fence = Some("~~~"),
            None => lines.push(line),
        }
    }
    lines
}

/// The text outside code blocks and code spans, line by line (links in code are not links).
fn prose(text: &str) -> Vec<String> {
    outside_code(text)
        .into_iter()
        .map(|line| line.split('`').step_by(2).collect())
        .collect()
}

/// A heading's anchor as mdbook (and GitHub) make it: lower case, letters, digits, `-` and
/// `_` kept, spaces made `-`, the rest dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page: its headings' slugs (a repeated one numbered, `-1`, `-2`), the
/// headings of the files it includes too.
fn anchors(path: &Path, text: &str) -> Vec<String> {
    let mut text = text.to_string();
    while let Some(at) = text.find("{{#include ") {
        let end = at + text[at..].find("}}").unwrap();
        let file = path.parent().unwrap().join(text[at + 11..end].trim());
        let included = std::fs::read_to_string(&file).unwrap_or_else(|e| {
            panic!(
                "{}: {{{{#include}}}} {}: {e}",
                path.display(),
                file.display()
            )
        });
        text.replace_range(at..end + 2, &included);
    }
    let mut seen: Vec<String> = Vec::new();
    for line in outside_code(&text)
        .into_iter()
        .filter(|l| l.starts_with('#'))
    {
        let base = slug(line.trim_start_matches('#').replace('`', "").as_str());
        let n = seen
            .iter()
            .filter(|s| **s == base || s.starts_with(&format!("{base}-")))
            .count();
        seen.push(match n {
            0 => base,
            n => format!("{base}-{n}"),
        });
    }
    seen
}

/// Every link `[text](target)` and image of a line: the targets.
fn links(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].split_whitespace().next().unwrap_or_default();
        out.push(target.to_string());
        rest = &after[end..];
    }
    out
}

/// Every link of the README and the book leads somewhere: a file of the repository, and a
/// heading of it when it names one; every chapter is in SUMMARY.md.
#[test]
fn links_resolve() {
    let pages = pages();
    let mut broken = Vec::new();
    let mut checked = 0;
    for (path, text) in &pages {
        for (n, line) in prose(text).iter().enumerate() {
            for target in links(line) {
                if target.starts_with("http://")
                    || target.starts_with("https://")
                    || target.starts_with("mailto:")
                {
                    continue;
                }
                checked += 1;
                let (file, anchor) = match target.split_once('#') {
                    Some((f, a)) => (f, Some(a)),
                    None => (target.as_str(), None),
                };
                let file = match file.is_empty() {
                    true => path.clone(),
                    false => path.parent().unwrap().join(file),
                };
                let place = format!("{}:{}: {target}", path.display(), n + 1);
                if !file.exists() {
                    broken.push(format!("{place}: no such file"));
                    continue;
                }
                if let Some(anchor) = anchor {
                    let text = std::fs::read_to_string(&file).unwrap_or_default();
                    if !anchors(&file, &text).iter().any(|a| a == anchor) {
                        broken.push(format!("{place}: no such heading"));
                    }
                }
            }
        }
    }
    let summary = std::fs::read_to_string(book_src().join("SUMMARY.md")).unwrap();
    for (path, _) in &pages {
        if let Ok(chapter) = path.strip_prefix(book_src()) {
            let chapter = chapter.to_string_lossy().replace('\\', "/");
            if chapter != "SUMMARY.md" && !summary.contains(&format!("]({chapter})")) {
                broken.push(format!("{chapter}: not in SUMMARY.md, so not in the book"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked > 100, "only {checked} links found");
}

#[test]
fn slugs_are_mdbooks() {
    assert_eq!(slug("Flags of throng run"), "flags-of-throng-run");
    assert_eq!(
        slug("Streams: server-sent events, NDJSON, chunks"),
        "streams-server-sent-events-ndjson-chunks"
    );
    assert_eq!(slug("RabbitMQ (AMQP 0.9.1)"), "rabbitmq-amqp-091");
    assert_eq!(
        slug("throng serve and throng demo"),
        "throng-serve-and-throng-demo"
    );
}

/// The keys the parser takes at one place of a scenario file, read from its error for a key
/// it does not take: "unknown field `bogus`, expected one of `a`, `b`".
fn keys_taken(section: &str, yaml: &str) -> Vec<String> {
    let protocols = crate::protocols();
    let dir = std::env::temp_dir();
    let err = match throng_scenario::compile_str(yaml, "keys.yaml", &dir, &protocols) {
        Ok(_) => panic!("{section}: a key `bogus` was taken:\n{yaml}"),
        Err(e) => e.to_string(),
    };
    // serde's "expected one of `a`, `b`", or the scenario's own "the keys here are a, b".
    let list = [
        "the keys here are",
        "expected one of",
        "is not one of",
        "expected",
    ]
    .iter()
    .find_map(|lead| err.split_once(lead))
    .unwrap_or_else(|| panic!("{section}: no list of keys in {err}"))
    .1;
    list.lines()
        .next()
        .unwrap_or_default()
        .split([',', ' '])
        .map(|w| w.trim_matches(['`', '.', ';', ':']))
        .filter(|w| !w.is_empty() && !matches!(*w, "or" | "and"))
        .filter(|w| {
            w.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .map(str::to_string)
        .collect()
}

/// The keys a section of the scenario reference documents: the first column of the table
/// after its `<!-- keys: NAME -->`.
fn keys_documented(page: &str, section: &str) -> Vec<String> {
    let marker = format!("<!-- keys: {section} -->");
    let at = page
        .find(&marker)
        .unwrap_or_else(|| panic!("reference/scenario.md has no {marker}"));
    page[at + marker.len()..]
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .filter_map(|row| row.split('`').nth(1).map(str::to_string))
        .collect()
}

/// The scenario reference documents every key the parser takes, and no other.
#[test]
fn scenario_keys_are_documented() {
    let page = std::fs::read_to_string(book_src().join("reference/scenario.md")).unwrap();
    let http = "targets: {t: 'http://127.0.0.1:1'}\n";
    let step = "[{label: a, request: {path: /}}]";
    let on = |url: &str, key: &str| {
        format!("targets: {{t: '{url}'}}\nsteps: [{{label: a, {key}: {{bogus: 1}}}}]\n")
    };
    // (section, a file with `bogus` there, whether it is a protocol's request, whose
    // `target` the scenario takes before the protocol reads the rest)
    let sections: Vec<(&str, String, bool)> = vec![
        ("file", format!("{http}bogus: 1\nsteps: {step}\n"), false),
        (
            "load",
            format!("{http}load: {{bogus: 1}}\nsteps: {step}\n"),
            false,
        ),
        (
            "data",
            format!("{http}data: {{d: {{file: x.csv, bogus: 1}}}}\nsteps: {step}\n"),
            false,
        ),
        (
            "flow",
            format!("{http}flows: [{{flow: f, weight: 1, bogus: 1, steps: {step}}}]\n"),
            false,
        ),
        (
            "extract",
            format!(
                "{http}steps: [{{label: a, request: {{path: /}}, extract: {{v: {{bogus: x}}}}}}]\n"
            ),
            false,
        ),
        (
            "check",
            format!("{http}steps: [{{label: a, request: {{path: /}}, checks: [{{bogus: 1}}]}}]\n"),
            false,
        ),
        ("request", on("http://127.0.0.1:1", "request"), true),
        (
            "llm",
            format!("{http}steps: [{{label: a, request: {{path: /, llm: {{bogus: 1}}}}}}]\n"),
            false,
        ),
        ("grpc", on("grpc://127.0.0.1:1", "grpc"), true),
        ("sql", on("postgres://u@127.0.0.1:1/x", "sql"), true),
        ("tcp", on("tcp://127.0.0.1:1", "tcp"), true),
        ("ws", on("ws://127.0.0.1:1/", "ws"), true),
        ("nats", on("nats://127.0.0.1:1/s", "nats"), true),
        ("amqp", on("amqp://u:p@127.0.0.1:1/%2f", "amqp"), true),
    ];
    let mut wrong = Vec::new();
    let mut compare = |section: &str, mut taken: Vec<String>| {
        let mut documented = keys_documented(&page, section);
        taken.sort();
        documented.sort();
        if taken != documented {
            wrong.push(format!(
                "{section}: the parser takes {taken:?}, the page documents {documented:?}"
            ));
        }
    };
    for (section, yaml, request) in sections {
        let mut taken = keys_taken(section, &yaml);
        if request {
            taken.push("target".into());
        }
        compare(section, taken);
    }
    compare(
        "item",
        throng_scenario::file::ITEM_FIELDS
            .iter()
            .map(|k| k.to_string())
            .collect(),
    );
    // Every protocol's key has its section.
    for key in crate::protocols().all().iter().map(|p| p.key()) {
        assert!(
            page.contains(&format!("<!-- keys: {key} -->")),
            "no section for `{key}` steps"
        );
    }
    assert!(
        wrong.is_empty(),
        "docs/book/src/reference/scenario.md drifted from the parser (a key added or gone: give it a row, or drop its row):\n{}",
        wrong.join("\n")
    );
}

/// Every flag that [Flags of `throng run`, explained](reference/run-flags.md) names in its
/// tables' first column is a flag of `throng run`, and it explains every flag of `throng run`.
#[test]
fn explained_flags_exist() {
    let mut cmd = super::Cli::command();
    cmd.build();
    let run = cmd.find_subcommand("run").unwrap();
    let mut known: Vec<String> = Vec::new();
    for arg in run.get_arguments() {
        known.extend(arg.get_long().map(|l| format!("--{l}")));
        known.extend(arg.get_short().map(|s| format!("-{s}")));
        for alias in arg.get_all_aliases().into_iter().flatten() {
            known.push(format!("--{alias}"));
        }
    }
    let page = std::fs::read_to_string(book_src().join("reference/run-flags.md")).unwrap();
    let mut named = Vec::new();
    for row in page.lines().filter(|l| l.starts_with("| `")) {
        let first = row.split(" | ").next().unwrap_or_default();
        for code in first.split('`').skip(1).step_by(2) {
            for word in code.split([' ', ',', '=']).filter(|w| w.starts_with('-')) {
                named.push(word.to_string());
                assert!(
                    known.iter().any(|k| k == word),
                    "docs/book/src/reference/run-flags.md names {word}, which `throng run` \
                     does not take"
                );
            }
        }
    }
    assert!(named.len() > 50, "only {} flags named", named.len());
    // And the other way: every long flag of `throng run` is explained there.
    for arg in run.get_arguments().filter(|a| !a.is_hide_set()) {
        if let Some(long) = arg.get_long().filter(|l| !matches!(*l, "help" | "version")) {
            assert!(
                named.contains(&format!("--{long}")),
                "docs/book/src/reference/run-flags.md does not explain --{long}: give it a row \
                 (a protocol's own flag: in the table of each protocol's flags)"
            );
        }
    }
}
