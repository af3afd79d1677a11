//! The bdf target (see `ede_fuzz::run`; `fuzz/run.sh bdf`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("bdf", data);
});
