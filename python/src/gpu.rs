//! The GPU, opened once per process and kept, with each analysis's kernels: opening the adapter
//! and compiling the pipelines took about 190 ms a call on an H200, ten times the analysis of a
//! 30-channel epoch, and a Python session calls again and again.

use std::sync::{Mutex, OnceLock};

use ede::cli::{BackendChoice, open_gpu};
use ede::gpu::GpuContext;

static CONTEXT: OnceLock<Option<GpuContext>> = OnceLock::new();

/// The device a call with `choice` runs on: none for "cpu", and none for "auto" where the only
/// adapter is a software one (lavapipe), as the command line decides.
pub fn context(choice: BackendChoice) -> Option<&'static GpuContext> {
    if choice == BackendChoice::Cpu {
        return None;
    }
    let ctx = CONTEXT
        .get_or_init(|| open_gpu("ede", BackendChoice::Gpu))
        .as_ref()?;
    match choice == BackendChoice::Auto && ctx.is_software() {
        true => None,
        false => Some(ctx),
    }
}

/// One analysis's kernels, compiled on the kept device the first time a call wants them. Calls
/// from several Python threads take turns on them.
pub struct Kept<K>(Mutex<Option<K>>);

impl<K> Kept<K> {
    pub const fn new() -> Self {
        Kept(Mutex::new(None))
    }

    /// `work` with the kernels on the device `choice` gives, or with none (the CPU path).
    pub fn with<T>(
        &self,
        choice: BackendChoice,
        make: impl FnOnce(&GpuContext) -> K,
        work: impl FnOnce(Option<&mut K>) -> T,
    ) -> T {
        match context(choice) {
            None => work(None),
            Some(ctx) => {
                let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
                work(Some(kept.get_or_insert_with(|| make(ctx))))
            }
        }
    }
}
