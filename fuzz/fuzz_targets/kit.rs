//! The kit target (see `ede_fuzz::run`; `fuzz/run.sh kit`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("kit", data);
});
