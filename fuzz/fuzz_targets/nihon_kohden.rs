//! The nihon_kohden target (see `ede_fuzz::run`; `fuzz/run.sh nihon_kohden`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("nihon_kohden", data);
});
