//! The csv target (see `ede_fuzz::run`; `fuzz/run.sh csv`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("csv", data);
});
