//! The wfdb target (see `ede_fuzz::run`; `fuzz/run.sh wfdb`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("wfdb", data);
});
