//! The bids target (see `ede_fuzz::run`; `fuzz/run.sh bids`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("bids", data);
});
