//! The neuroscan target (see `ede_fuzz::run`; `fuzz/run.sh neuroscan`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("neuroscan", data);
});
