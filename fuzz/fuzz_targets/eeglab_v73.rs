//! The eeglab_v73 target (see `ede_fuzz::run`; `fuzz/run.sh eeglab_v73`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ede_fuzz::run("eeglab_v73", data);
});
