//! The xdf target (see `ede_fuzz::run`; `fuzz/run.sh xdf`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("xdf", data);
});
