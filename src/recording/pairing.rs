//! Files that belong together: a Sleep-EDF PSG and the hypnogram scored for it.

use std::path::{Path, PathBuf};

/// The Sleep-EDF hypnogram beside a PSG file, if there is one.
pub fn sibling_hypnogram(psg: &Path) -> Option<PathBuf> {
    let name = psg.file_name()?.to_str()?;
    let stem = name.strip_suffix("-PSG.edf")?;
    let prefix = stem.get(..6)?;
    let dir = psg
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with("-Hypnogram.edf"))
        })
        .collect();
    found.sort();
    found.into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_edf_psg_finds_its_hypnogram() {
        let dir = tempfile::tempdir().unwrap();
        let psg = dir.path().join("SC4001E0-PSG.edf");
        std::fs::write(&psg, b"").unwrap();
        assert!(sibling_hypnogram(&psg).is_none());
        std::fs::write(dir.path().join("SC4001EC-Hypnogram.edf"), b"").unwrap();
        std::fs::write(dir.path().join("SC4002EC-Hypnogram.edf"), b"").unwrap();
        assert_eq!(
            sibling_hypnogram(&psg).unwrap().file_name().unwrap(),
            "SC4001EC-Hypnogram.edf"
        );
        assert!(sibling_hypnogram(&dir.path().join("other.edf")).is_none());
    }
}
