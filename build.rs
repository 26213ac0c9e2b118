//! Sets `THRONG_COMMIT`, the commit `throng --version` prints: `git rev-parse --short HEAD` in
//! a clone, the commit cargo recorded in `.cargo_vcs_info.json` in a published crate, else
//! "unknown" (a tarball, no git).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let commit = from_git(&dir)
        .or_else(|| from_vcs_info(&dir))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=THRONG_COMMIT={commit}");
}

/// `git` with `args` in `dir`: its trimmed output, or what went wrong.
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("git: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    match out.status.success() && !text.is_empty() {
        true => Ok(text),
        false => Err(String::from_utf8_lossy(&out.stderr).trim().to_string()),
    }
}

/// The commit of the clone this package is the root of (a package vendored inside someone
/// else's repository has no `.git` of its own: its parent's commit would be a lie).
fn from_git(dir: &Path) -> Option<String> {
    let dot_git = dir.join(".git");
    if !dot_git.exists() {
        return None;
    }
    // Build again when HEAD moves: HEAD itself (a checkout), the branch it names (a commit) and
    // packed-refs (a gc); watched even when git fails below, so a failure is not kept. A path
    // that does not exist would make cargo run this at every build.
    let mut watched = vec![dot_git.join("HEAD"), dot_git.join("packed-refs")];
    if let Ok(common) = git(dir, &["rev-parse", "--git-common-dir"]) {
        let common = dir.join(common);
        watched.push(common.join("packed-refs"));
        if let Ok(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
            watched.push(common.join(branch));
        }
    }
    if let Ok(git_dir) = git(dir, &["rev-parse", "--absolute-git-dir"]) {
        watched.push(PathBuf::from(git_dir).join("HEAD"));
    }
    watched.sort();
    watched.dedup();
    for path in watched.iter().filter(|p| p.is_file()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    match git(dir, &["rev-parse", "--short", "HEAD"]) {
        Ok(commit) => Some(commit),
        Err(e) => {
            println!("cargo:warning=throng --version will say `commit unknown`: {e}");
            None
        }
    }
}

/// The commit `cargo package` recorded: `{"git": {"sha1": "..."}}`, read without a JSON
/// parser (a build dependency for one field would be built by every user).
fn from_vcs_info(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(".cargo_vcs_info.json")).ok()?;
    let after = &text[text.find("\"sha1\"")? + "\"sha1\"".len()..];
    let sha: String = after
        .trim_start_matches([' ', ':', '"', '\n', '\t'])
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    (sha.len() >= 7).then(|| sha[..7].to_string())
}
