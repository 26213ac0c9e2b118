//! What a user installs beside the binary, generated from the clap definitions: `--version`
//! with the commit, the shells' completion scripts, the man pages. The shells and groff are
//! real (scripts/test installs zsh and fish); `cargo install` is checked by scripts/test.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::process::Command;

use crate::common::{said, throng};

/// Runs `program args`; fails loudly when the program is missing (the test needs it, it does not skip).
fn run(program: &str, args: &[&str]) -> std::process::Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} does not run ({e}): scripts/test installs it"))
}

/// `git args` in the repository, its trimmed output.
fn git(args: &[&str]) -> (bool, String) {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git runs (the tests run in a clone)");
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success(), text)
}

#[test]
fn version_names_the_commit() {
    let out = throng(&["--version"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let line = String::from_utf8(out.stdout).unwrap();
    let commit = line
        .trim()
        .strip_prefix(concat!("throng ", env!("CARGO_PKG_VERSION"), " (commit "))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("not `throng VERSION (commit HASH)`: {line}"));
    // The binary was built at HEAD; another commit may have landed since in a shared tree, so
    // the commit is HEAD or one of its ancestors, and a real one (not "unknown").
    let (is_commit, _) = git(&["cat-file", "-e", &format!("{commit}^{{commit}}")]);
    assert!(is_commit, "{commit} is no commit of this repository");
    let (ancestor, _) = git(&["merge-base", "--is-ancestor", commit, "HEAD"]);
    assert!(ancestor, "{commit} is not HEAD or an ancestor of it");
    let (_, head) = git(&["rev-parse", "--short", "HEAD"]);
    assert_eq!(commit.len(), head.len(), "{commit} against HEAD's {head}");

    // Every subcommand says the same, under its own name.
    let sub = throng(&["run", "--version"]);
    let sub = String::from_utf8(sub.stdout).unwrap();
    assert_eq!(sub.replacen("throng-run ", "throng ", 1), line);
}

/// Writes `throng completions SHELL` into `dir` and returns its path and text.
fn completions(shell: &str, dir: &std::path::Path) -> (std::path::PathBuf, String) {
    let out = throng(&["completions", shell]);
    assert_eq!(out.status.code(), Some(0), "{shell}: {}", said(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let path = dir.join(format!("throng.{shell}"));
    std::fs::write(&path, &text).unwrap();
    (path, text)
}

#[test]
fn completions_parse_and_complete() {
    let dir = tempfile::tempdir().unwrap();
    // Each shell reads its script without a syntax error, and the script knows the
    // subcommands and a flag of `run`.
    for (shell, check) in [
        ("bash", ["bash", "-n"]),
        ("zsh", ["zsh", "-n"]),
        ("fish", ["fish", "--no-execute"]),
    ] {
        let (path, text) = completions(shell, dir.path());
        let out = run(check[0], &[check[1], path.to_str().unwrap()]);
        assert!(out.status.success(), "{shell}: {}", said(&out));
        for word in [
            "run",
            "demo",
            "compare",
            "completions",
            "man",
            "max-in-flight",
        ] {
            assert!(text.contains(word), "{shell} script lacks {word}");
        }
    }

    // bash completes for real: `throng com<TAB>` offers compare and completions, and
    // `throng completions <TAB>` the shells.
    let (path, _) = completions("bash", dir.path());
    let script = format!(
        r#"source {}
complete_line() {{ COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${{#COMP_LINE}}; COMPREPLY=(); _throng throng "${{COMP_WORDS[-1]}}" "${{COMP_WORDS[-2]}}"; echo "${{COMPREPLY[*]}}"; }}
complete_line throng com
complete_line throng completions ''
"#,
        path.display()
    );
    let out = run("bash", &["-c", &script]);
    assert!(out.status.success(), "{}", said(&out));
    let lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(lines[0], "compare completions", "{lines:?}");
    for shell in ["bash", "zsh", "fish"] {
        assert!(lines[1].split(' ').any(|w| w == shell), "{lines:?}");
    }

    let out = throng(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("tcsh"), "{}", said(&out));
}

#[test]
fn man_pages_render() {
    let out = throng(&["man"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(
        page.starts_with(".ie"),
        "not roff: {}",
        &page[..80.min(page.len())]
    );
    let dir = tempfile::tempdir().unwrap();

    let out = throng(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    for page in [
        "throng.1",
        "throng-run.1",
        "throng-compare.1",
        "throng-completions.1",
    ] {
        assert!(dir.path().join(page).exists(), "{page} not written");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("throng.1")).unwrap(),
        page,
        "--dir writes the page it prints"
    );

    // man renders them (through groff) without a warning, with what they should say; in UTF-8,
    // as flags' help may hold other scripts (`--rename 'Mean (s)=平均响应时间(s)'`).
    let rendered = |file: &str| {
        let path = dir.path().join(file);
        let out = Command::new("man")
            .args(["-l", "--warnings=all", path.to_str().unwrap()])
            .env("MANWIDTH", "100")
            .env("LC_ALL", "C.UTF-8")
            .env("PAGER", "cat")
            .output()
            .expect("man runs: scripts/test installs man-db");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && err.trim().is_empty(),
            "{file}: {err}"
        );
        // Justified lines stretch their spaces.
        let text = String::from_utf8_lossy(&out.stdout);
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let top = rendered("throng.1");
    for word in [
        "throng",
        "load tester",
        "run",
        "compare",
        "completions",
        "--version",
    ] {
        assert!(top.contains(word), "throng.1 lacks {word}:\n{top}");
    }
    // A --dir that cannot be one is bad input, named.
    let file = dir.path().join("throng.1");
    let out = throng(&["man", "--dir", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("--dir"), "{}", said(&out));

    let run_page = rendered("throng-run.1");
    for word in ["--rate", "--duration", "--threshold", "--json"] {
        assert!(run_page.contains(word), "throng-run.1 lacks {word}");
    }
}
