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

/// `git` with `args` in `dir`, its trimmed output when it succeeded.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

/// The commit of the clone this package is the root of. A package vendored inside someone
/// else's repository is not: its parent's commit would be a lie.
fn from_git(dir: &Path) -> Option<String> {
    let top = PathBuf::from(git(dir, &["rev-parse", "--show-toplevel"])?);
    if top.canonicalize().ok()? != dir.canonicalize().ok()? {
        return None;
    }
    // Build again when HEAD moves: HEAD itself (a checkout), the branch it names (a commit) and
    // packed-refs (a gc). A path that does not exist would make cargo rerun this every build.
    let git_dir = PathBuf::from(git(dir, &["rev-parse", "--absolute-git-dir"])?);
    let common = git(dir, &["rev-parse", "--git-common-dir"]).map(|c| dir.join(c));
    let mut watched = vec![git_dir.join("HEAD")];
    if let (Some(branch), Some(common)) =
        (git(dir, &["symbolic-ref", "-q", "HEAD"]), common.as_ref())
    {
        watched.push(common.join(branch));
    }
    watched.extend(common.map(|c| c.join("packed-refs")));
    for path in watched.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    git(dir, &["rev-parse", "--short", "HEAD"])
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
