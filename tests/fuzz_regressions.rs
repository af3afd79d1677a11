//! The fuzz targets' checks (`fuzz/src/lib.rs`, compiled in here as it is) on every input a
//! fuzzer crashed a reader with (`tests/fixtures/fuzz/TARGET/`, see docs/RELIABILITY.md) and on
//! every seed, which must open: a target whose seeds fail to open fuzzes nothing but errors.

#[path = "../fuzz/src/lib.rs"]
mod ede_fuzz;

use std::path::Path;

fn inputs(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn every_seed_opens() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    for target in ede_fuzz::TARGETS {
        let seeds = inputs(&root.join(target));
        assert!(!seeds.is_empty(), "{target} has no seeds");
        for seed in seeds {
            let data = std::fs::read(&seed).unwrap();
            assert!(
                ede_fuzz::run(target, &data),
                "{} does not open",
                seed.display()
            );
        }
    }
}

#[test]
fn what_the_fuzzers_found_fails_cleanly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz");
    for target in ede_fuzz::TARGETS {
        for input in inputs(&root.join(target)) {
            let data = std::fs::read(&input).unwrap();
            // Opening or an error, but no panic; what may open, the checks inside hold.
            ede_fuzz::run(target, &data);
        }
    }
}
