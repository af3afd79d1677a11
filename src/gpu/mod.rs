//! GPU compute: the shared device context and one file per kernel family.

mod binds;
pub mod context;
pub mod cwt;
pub mod fft;
pub mod hermite;
pub mod ica;
pub mod peak;
pub mod picard;
mod pipeline_cache;
mod prepared;
mod profile;
pub mod saxpy;
pub mod trend;
pub mod upload;
#[cfg(test)]
mod wgsl_grammar;
pub mod whiten;

pub use context::{GpuContext, GpuError};
pub mod xapen;
