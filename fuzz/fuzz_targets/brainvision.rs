//! The brainvision target (see `ede_fuzz::run`; `fuzz/run.sh brainvision`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("brainvision", data);
});
