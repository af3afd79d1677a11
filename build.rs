//! Records the commit ede is built from, for `ede --version` and every report's provenance.
//!
//! From a checkout it asks git; a source distribution has no `.git`, so `packaging/sdist.sh`
//! writes the commit into `build-support/commit`, which is read first. A tarball from neither
//! says "unknown". Written by hand rather than with `vergen`: it is one git call and one file,
//! and the file is what the source distribution needs.

use std::path::Path;
use std::process::Command;

fn main() {
    // A path named to rerun-if-changed that does not exist reruns the script, and rebuilds
    // the crate, at every build: name the file only where it is.
    let recorded = Path::new("build-support/commit");
    let commit = match std::fs::read_to_string(recorded) {
        Ok(text) => {
            println!("cargo:rerun-if-changed={}", recorded.display());
            text.trim().to_string()
        }
        Err(_) => from_git().unwrap_or_else(|| "unknown".into()),
    };
    println!("cargo:rustc-env=EDE_COMMIT={commit}");
}

/// `<short hash> <commit date>`, rebuilt when HEAD moves.
fn from_git() -> Option<String> {
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    // Only a repository whose top is this crate: an unpacked tarball inside another checkout
    // must not take that checkout's commit.
    let top = git(&["rev-parse", "--show-toplevel"])?;
    let here = std::env::var("CARGO_MANIFEST_DIR").ok()?;
    if Path::new(&top).canonicalize().ok()? != Path::new(&here).canonicalize().ok()? {
        return None;
    }
    for path in ["HEAD", "logs/HEAD"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]).filter(|p| Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    git(&["log", "-1", "--format=%h %cs", "--abbrev=10"])
}
