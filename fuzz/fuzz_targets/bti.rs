//! The bti target (see `ede_fuzz::run`; `fuzz/run.sh bti`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("bti", data);
});
