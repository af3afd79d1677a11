//! The eeglab target (see `ede_fuzz::run`; `fuzz/run.sh eeglab`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("eeglab", data);
});
