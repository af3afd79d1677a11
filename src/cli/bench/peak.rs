//! `ede bench peak`: the FP32 multiply-add rate WGSL reaches on this GPU (`gpu::peak`), for 1
//! to 16 independent vec4 chains a thread: the ceiling the arithmetic-bound kernels (Hermite's
//! fits) are reported against.

use serde::Serialize;

use crate::cli::write_json;
use crate::gpu::GpuContext;
use crate::gpu::peak::{PeakRun, fma_rate};

#[derive(Debug, clap::Args)]
pub struct PeakArgs {
    /// Workgroups of 256 threads (enough to fill every SM many times over).
    #[arg(long, default_value_t = 8192)]
    pub workgroups: u32,
    /// Loop iterations of each run (16 FMAs a chain each).
    #[arg(long, default_value_t = 256)]
    pub iterations: u32,
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
}

#[derive(Debug, Serialize)]
struct Report {
    adapter: String,
    software: bool,
    runs: Vec<PeakRun>,
    /// The best of the runs, FLOP/s (an FMA counts two).
    peak_flops_per_s: f64,
}

pub fn run(args: &PeakArgs) -> anyhow::Result<()> {
    let ctx = GpuContext::headless()?;
    let mut runs = Vec::new();
    for vec4s in [1, 2, 4, 8, 16] {
        let r = fma_rate(&ctx, vec4s, args.workgroups, args.iterations, args.repeats)?;
        eprintln!(
            "{vec4s:2} vec4 chains a thread: {:.1} TFLOP/s ({:.2} ms)",
            r.flops_per_s / 1e12,
            r.seconds * 1e3
        );
        runs.push(r);
    }
    let peak_flops_per_s = runs.iter().map(|r| r.flops_per_s).fold(0.0, f64::max);
    let report = Report {
        adapter: ctx.describe(),
        software: ctx.is_software(),
        runs,
        peak_flops_per_s,
    };
    write_json(&report, args.out.as_deref())
}
