//! The blocks of the book and the README marked ```` ```sh runnable ````: each runs, as a
//! reader would paste it, with the built `throng` first on the PATH, in a temporary directory
//! that sees the repository's scenarios, and must succeed. (Every other `throng` command of
//! theirs is parsed and validated by the library's unit tests, `src/cli/examples.rs`.)
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::said;

/// Each runnable block of the README and the book: where it is, and its text.
fn runnable_blocks() -> Vec<(String, String)> {
    fn pages(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pages(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    pages(&root.join("docs/book/src"), &mut files);
    let mut blocks = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut block: Option<(usize, String)> = None;
        for (n, line) in text.lines().enumerate() {
            match &mut block {
                None if line.trim() == "```sh runnable" => block = Some((n + 1, String::new())),
                None => {}
                Some((at, body)) if line.trim() == "```" => {
                    let place = format!("{}:{at}", file.strip_prefix(root).unwrap().display());
                    blocks.push((place, std::mem::take(body)));
                    block = None;
                }
                Some((_, body)) => {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    blocks
}

#[test]
fn runnable_blocks_run() {
    let blocks = runnable_blocks();
    assert!(blocks.len() >= 4, "only {} runnable blocks", blocks.len());
    let bin = Path::new(env!("CARGO_BIN_EXE_throng")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (place, script) in blocks {
        let dir = tempfile::tempdir().unwrap();
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        for shared in ["scenarios", "testdata"] {
            std::os::unix::fs::symlink(root.join(shared), dir.path().join(shared)).unwrap();
        }
        // A block is a reader's minute at most: one that hangs fails here (coreutils'
        // timeout ends it), not the suite.
        let out = Command::new("timeout")
            .args(["120", "bash", "-euo", "pipefail", "-c", &script])
            .current_dir(dir.path())
            .env("PATH", &path)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{place} failed ({:?}):\n{script}\n{}",
            out.status,
            said(&out)
        );
    }
}
