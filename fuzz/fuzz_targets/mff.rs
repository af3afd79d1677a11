//! The mff target (see `ede_fuzz::run`; `fuzz/run.sh mff`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("mff", data);
});
