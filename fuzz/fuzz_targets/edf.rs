//! The edf target (see `ede_fuzz::run`; `fuzz/run.sh edf`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("edf", data);
});
