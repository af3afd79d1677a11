//! The ant target (see `ede_fuzz::run`; `fuzz/run.sh ant`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("ant", data);
});
