//! What every fuzz target does: write the input as one file (or a bundle of files, for formats
//! that read several) into a fresh folder, open it as the app opens a file, check what a
//! recording promises everything downstream, and decode every signal at both ends.
//!
//! A bundle is files one after another, each after a line `--8<-- NAME` (the first one opens;
//! NAME keeps to `[A-Za-z0-9._,-]`, anything else is skipped), so that a WFDB header and its
//! signal file, or a 4D data file and its `config`, are mutated together. `seeds/make.py` builds
//! the seeds from the test fixtures.

use std::path::{Path, PathBuf};

use ede::recording::{OpenOptions, Recording, bids};

/// Every target: its name, and how it opens an input.
pub const TARGETS: [&str; 20] = [
    "edf",
    "bdf",
    "wfdb",
    "brainvision",
    "eeglab",
    "eeglab_v73",
    "fif",
    "xdf",
    "bti",
    "csv",
    "bids",
    "nihon_kohden",
    "neuroscan",
    "mff",
    "egi_raw",
    "ctf",
    "persyst",
    "curry",
    "ant",
    "kit",
];

/// Runs target `target` on one input (the fuzz targets and `tests/fuzz_regressions.rs`):
/// whether it opened.
pub fn run(target: &str, data: &[u8]) -> bool {
    match target {
        "edf" | "bdf" | "fif" | "xdf" | "csv" => open_one(&format!("f.{target}"), data),
        // A BIDS run with its sidecars, opened as the app opens one.
        "bids" => open_bundle("sub-01/eeg", data, true),
        // Formats that are folders: the bundle's files inside one, the first of them opened.
        "ctf" => open_bundle("r.ds", data, false),
        "mff" => open_bundle("r.mff", data, false),
        _ => open_bundle("", data, false),
    }
}

/// The line that starts each file of a bundle.
pub const MARK: &[u8] = b"--8<-- ";

/// The files of a bundle: (name, bytes) in order; empty when the input is not one.
pub fn files(data: &[u8]) -> Vec<(String, &[u8])> {
    let mut out = Vec::new();
    let mut rest = match data.strip_prefix(MARK) {
        Some(r) => r,
        None => return out,
    };
    loop {
        let Some(eol) = rest.iter().position(|&b| b == b'\n') else {
            return out;
        };
        let name = &rest[..eol];
        let body = &rest[eol + 1..];
        let (bytes, next) = match find(body, b"\n--8<-- ") {
            Some(at) => (&body[..at], Some(&body[at + 1 + MARK.len()..])),
            None => (body, None),
        };
        let ok = !name.is_empty()
            && name.len() <= 64
            && name != b"."
            && name != b".."
            && (name.iter()).all(|&b| b.is_ascii_alphanumeric() || b"._,-".contains(&b));
        if ok {
            out.push((String::from_utf8_lossy(name).into_owned(), bytes));
        }
        match next {
            Some(n) => rest = n,
            None => return out,
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A folder of this process's own, emptied: the readers memory-map files, so inputs go through
/// the file system (`/dev/shm` where there is one, to stay off the disk).
fn scratch(sub: &str) -> PathBuf {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    // Tests run inputs on several threads of one process.
    let thread =
        format!("{:?}", std::thread::current().id()).replace(|c: char| !c.is_ascii_digit(), "");
    let root = base.join(format!("ede-fuzz-{}-{thread}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let dir = root.join(sub);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Opens `data` as one file named `name`.
fn open_one(name: &str, data: &[u8]) -> bool {
    let dir = scratch("");
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    check(&path, false)
}

/// Opens the first file of the bundle `data`, written with the others into `sub` of a fresh
/// folder (`sub-01/eeg` for a BIDS run); `bids`: through the BIDS sidecars, as the app opens.
fn open_bundle(sub: &str, data: &[u8], bids: bool) -> bool {
    let files = files(data);
    let Some((first, _)) = files.first() else {
        return false;
    };
    let dir = scratch(sub);
    for (name, bytes) in &files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    check(&dir.join(first), bids)
}

/// Opening either fails with an error or gives a recording that keeps its promises: positive
/// finite rates, finite times, and samples that decode at both ends of every signal.
fn check(path: &Path, through_bids: bool) -> bool {
    let options = OpenOptions {
        csv_fs: Some(100.0),
        ..Default::default()
    };
    let opened = if through_bids {
        bids::open_file(path, &options)
    } else {
        Recording::open(path, &options)
    };
    let Ok(rec) = opened else {
        return false;
    };
    let span = rec.time_span_s();
    assert!(span.is_finite() && span >= 0.0, "time span {span}");
    for a in &rec.annotations {
        assert!(a.onset.is_finite() && a.duration.is_finite(), "event {a:?}");
    }
    for (i, s) in rec.signals.iter().enumerate() {
        assert!(s.fs.is_finite() && s.fs > 0.0, "{}: fs {}", s.label, s.fs);
        // Headers may promise billions of samples of a file that is not there; a bounded read
        // at each end exercises the same decoder.
        let n = s.samples.min(1 << 12);
        let mut buf = vec![0f32; n];
        let _ = rec.read(i, 0, &mut buf);
        let _ = rec.read(i, s.samples - n, &mut buf);
    }
    true
}
