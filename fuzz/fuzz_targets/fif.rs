//! The fif target (see `ede_fuzz::run`; `fuzz/run.sh fif`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("fif", data);
});
