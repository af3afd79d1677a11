//! The job layer: parameters, a backend, progress and cancellation in; serializable results
//! out. The GUI and the CLI call this, never `dsp` or `gpu` directly.

pub mod blink;
pub mod cwt;
pub mod epochs;
pub mod group;
pub mod heart;
pub mod hermite;
pub mod ica;
pub mod live;
pub mod trend;
pub mod xapen;

use serde::{Deserialize, Serialize};

use crate::gpu::GpuContext;

/// Compiles every analysis's GPU kernels on threads of their own, for the views and jobs that
/// ask for them next (`GpuContext::prepare`): the app calls it as a recording opens, so that
/// opening a tab never waits for the driver's compiler. Hermite's are the default order's.
pub fn prepare_gpu(ctx: &GpuContext) {
    use crate::gpu::{cwt::CwtKernels, hermite::HermiteKernels, ica::FastIcaPipelines};
    ctx.prepare(crate::gpu::xapen::XapenKernels::compile);
    ctx.prepare(CwtKernels::compile);
    let order = crate::dsp::hermite::HermiteParams::default().order;
    ctx.prepare(move |ctx| HermiteKernels::with_pipelines_for(ctx, &[order]));
    ctx.prepare(FastIcaPipelines::compile);
}

/// Where an analysis runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Gpu,
    Cpu,
}
