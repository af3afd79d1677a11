//! The ctf target (see `ede_fuzz::run`; `fuzz/run.sh ctf`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("ctf", data);
});
