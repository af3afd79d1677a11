//! Writing a file whole or not at all.

use std::path::{Path, PathBuf};

/// Writes `bytes` to a file beside `path` and renames it there, so that `path` holds either
/// its earlier content or all of `bytes`: what every writer of ede does.
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(format!(".partial-{}", std::process::id()));
    let partial = PathBuf::from(partial);
    let written = std::fs::write(&partial, bytes).and_then(|()| std::fs::rename(&partial, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}
