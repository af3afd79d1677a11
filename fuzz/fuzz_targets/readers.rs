//! Every reader on arbitrary bytes: opening either fails with an error or gives a recording
//! whose every sample decodes. From `fuzz/`:
//! `cargo +nightly fuzz run readers corpus/readers seeds --fuzz-dir .`
//! (new inputs go to the ignored `corpus/readers`; `seeds` holds one small file per reader, and
//! the first byte of an input picks the reader).
#![no_main]

use std::io::Write;

use ede::recording::{OpenOptions, Recording};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, bytes)) = data.split_first() else {
        return;
    };
    // The readers memory-map files, so the input goes through one.
    let dir = std::env::temp_dir().join(format!("ede-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let name = match kind % 9 {
        0 => "f.edf",
        1 => "f.bdf",
        2 => "f.hea",
        3 => "f.vhdr",
        4 => "f.set",
        5 => "f.fif",
        6 => "f.xdf",
        7 => "c,rfDC",
        _ => "f.csv",
    };
    if name == "c,rfDC" {
        // A 4D data file reads its system's config beside it: the fixture's.
        let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/bti_short/config");
        std::fs::copy(config, dir.join("config")).unwrap();
    }
    if name == "f.vhdr" {
        // The header's data file: a few samples of the fixture's 6 int16 channels.
        std::fs::write(dir.join("bv_int16.eeg"), [1u8; 6 * 2 * 40]).unwrap();
    }
    let path = dir.join(name);
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(bytes))
        .unwrap();
    let options = OpenOptions {
        csv_fs: Some(100.0),
        ..Default::default()
    };
    if let Ok(rec) = Recording::open(&path, &options) {
        for i in 0..rec.signals.len() {
            // Headers may promise billions of samples of a file that is not there; reading a
            // bounded prefix exercises the same decoder.
            let n = rec.signals[i].samples.min(1 << 16);
            let mut buf = vec![0f32; n];
            let _ = rec.read(i, 0, &mut buf);
        }
    }
});
