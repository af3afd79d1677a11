//! The curry target (see `ede_fuzz::run`; `fuzz/run.sh curry`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("curry", data);
});
