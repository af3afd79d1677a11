//! `ede bench ...`: benchmarks that write their figures as JSON (docs/BENCHMARKS.md has the
//! tables).

pub mod all;
pub mod cwt;
pub mod deblink;
pub mod erp;
pub mod first_call;
mod first_page;
pub mod group;
pub mod hermite;
pub mod ica;
pub mod io;
mod io_formats;
pub mod live;
pub mod peak;
pub mod trend;
pub mod xapen;
pub mod xapen_night;

use serde::Serialize;

#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Open, decode and draw a large generated EDF.
    Io(io::IoArgs),
    /// Every benchmark below, one JSON each, and the summary table of docs/BENCHMARKS.md.
    All(all::AllArgs),
    /// The first Cross-ApEn subject of a new process: compiled, from ede's pipeline cache, and
    /// prepared in the background as the app does.
    FirstCall(first_call::FirstCallArgs),
    /// Cross-ApEn of a paper-sized subject on the GPU and the CPU, and interactive recomputes.
    Xapen(xapen::XapenBenchArgs),
    /// Cross-ApEn of a whole night (64 channels x 16 h) from disk, cold and warm page cache.
    XapenNight(xapen_night::NightArgs),
    /// Morlet scalograms: interactive recompute, CPU path and whole-recording band power.
    Cwt(cwt::CwtBenchArgs),
    /// Hermite beat fits: 1e5 beats at N = 6..30, interactive refits, fidelity, detector.
    Hermite(hermite::HermiteBenchArgs),
    /// Blink removal: FastICA and JADE at 25 x 5000, the EEGLAB sample, GPU crossover.
    Deblink(deblink::DeblinkBenchArgs),
    /// ICA of a whole recording: the EEGLAB sample (fits, a contrast change) and 64 ch x 1 h.
    Ica(ica::IcaBenchArgs),
    /// Epochs and averages: 2,000 epochs of 64 ch x 1 s at 1 kHz, and the EEGLAB sample.
    Erp(erp::ErpBenchArgs),
    /// The group step of a study over 1,000 recordings' generated outputs.
    Group(group::GroupBenchArgs),
    /// Whole-recording trends: CDSA and aEEG of 64 channels x 16 h from disk.
    Trend(trend::TrendBenchArgs),
    /// The FP32 multiply-add rate WGSL reaches on this GPU: the arithmetic ceiling.
    Peak(peak::PeakArgs),
    /// Live mode: processing per hop, real-time factor and latency, 32 x 128 Hz and 64 x 512 Hz.
    Live(live::LiveBenchArgs),
}

pub fn run(cmd: &BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Io(args) => io::run(args),
        BenchCommand::All(args) => all::run(args),
        BenchCommand::FirstCall(args) => first_call::run(args),
        BenchCommand::Xapen(args) => xapen::run(args),
        BenchCommand::XapenNight(args) => xapen_night::run(args),
        BenchCommand::Cwt(args) => cwt::run(args),
        BenchCommand::Hermite(args) => hermite::run(args),
        BenchCommand::Deblink(args) => deblink::run(args),
        BenchCommand::Ica(args) => ica::run(args),
        BenchCommand::Erp(args) => erp::run(args),
        BenchCommand::Live(args) => live::run(args),
        BenchCommand::Peak(args) => peak::run(args),
        BenchCommand::Trend(args) => trend::run(args),
        BenchCommand::Group(args) => group::run(args),
    }
}

/// On a profiled device (`EDE_GPU_PROFILE`): one more `call`, then the GPU time of each of its
/// compute passes on stderr under the label it returns. Nothing runs otherwise.
fn profile_one(
    ctx: &crate::gpu::GpuContext,
    call: impl FnOnce() -> anyhow::Result<String>,
) -> anyhow::Result<()> {
    if ctx.profiling() {
        ctx.pass_times()?;
        let what = call()?;
        ctx.report_pass_times(&what)?;
    }
    Ok(())
}

/// Median, extremes and count of repeated timings, in seconds.
#[derive(Debug, Serialize)]
pub struct Stats {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Stats {
    pub fn of(mut v: Vec<f64>) -> Self {
        v.sort_by(f64::total_cmp);
        Stats {
            median: v[v.len() / 2],
            min: v[0],
            max: v[v.len() - 1],
            n: v.len(),
        }
    }
}
