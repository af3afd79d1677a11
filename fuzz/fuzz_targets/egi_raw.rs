//! The egi_raw target (see `ede_fuzz::run`; `fuzz/run.sh egi_raw`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("egi_raw", data);
});
