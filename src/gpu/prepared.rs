//! Kernels compiled ahead of their first use. The app prepares every analysis's kernels on a
//! thread of their own as soon as a recording opens (`analysis::prepare_gpu`); a view that opens
//! later takes them instead of compiling, and one that opens while they compile waits for
//! those rather than compiling the same pipelines a second time beside them.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};

use super::GpuContext;

#[derive(Default)]
pub(crate) struct Prepared {
    slots: Mutex<HashMap<TypeId, Arc<Slot>>>,
}

#[derive(Default)]
struct Slot {
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Default)]
enum State {
    #[default]
    Empty,
    Compiling,
    Ready(Box<dyn Any + Send>),
}

impl Prepared {
    fn slot<T: Any>(&self) -> Option<Arc<Slot>> {
        let mut slots = self.slots.lock().ok()?;
        Some(slots.entry(TypeId::of::<T>()).or_default().clone())
    }
}

impl GpuContext {
    /// Compiles `make`'s kernels on a thread of their own for the next `take_prepared` of their
    /// type, unless some are compiling or waiting already.
    pub fn prepare<T: Any + Send>(&self, make: impl FnOnce(&GpuContext) -> T + Send + 'static) {
        let Some(slot) = self.prepared.slot::<T>() else {
            return;
        };
        {
            let Ok(mut state) = slot.state.lock() else {
                return;
            };
            if !matches!(*state, State::Empty) {
                return;
            }
            *state = State::Compiling;
        }
        let ctx = self.clone();
        let started = std::thread::Builder::new()
            .name("ede prepare".into())
            .spawn({
                let slot = slot.clone();
                move || {
                    // Whatever happens, the slot leaves Compiling, so no one waits forever.
                    let made =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| make(&ctx)));
                    if let Ok(mut state) = slot.state.lock() {
                        *state = match made {
                            Ok(kernels) => State::Ready(Box::new(kernels)),
                            Err(_) => State::Empty,
                        };
                    }
                    slot.ready.notify_all();
                }
            });
        if started.is_err()
            && let Ok(mut state) = slot.state.lock()
        {
            *state = State::Empty;
        }
    }

    /// Waits until nothing `prepare` started is still compiling.
    pub fn wait_prepared(&self) {
        let slots: Vec<Arc<Slot>> = match self.prepared.slots.lock() {
            Ok(slots) => slots.values().cloned().collect(),
            Err(_) => return,
        };
        for slot in slots {
            let Ok(mut state) = slot.state.lock() else {
                continue;
            };
            while matches!(*state, State::Compiling) {
                match slot.ready.wait(state) {
                    Ok(s) => state = s,
                    Err(_) => break,
                }
            }
        }
    }

    /// The kernels `prepare` made, waiting for them while they compile; none where none were
    /// prepared (or another caller took them), and the caller compiles its own.
    pub fn take_prepared<T: Any + Send>(&self) -> Option<T> {
        let slot = self.prepared.slot::<T>()?;
        let mut state = slot.state.lock().ok()?;
        while matches!(*state, State::Compiling) {
            state = slot.ready.wait(state).ok()?;
        }
        match std::mem::take(&mut *state) {
            State::Ready(kernels) => kernels.downcast().ok().map(|k| *k),
            _ => None,
        }
    }
}
