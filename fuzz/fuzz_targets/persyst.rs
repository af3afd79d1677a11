//! The persyst target (see `ede_fuzz::run`; `fuzz/run.sh persyst`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("persyst", data);
});
