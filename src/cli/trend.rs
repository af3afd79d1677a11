//! `ede trend`: a whole recording's CDSA or aEEG (`analysis::trend`), written as JSON.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize};

use anyhow::bail;

use crate::analysis::trend::{self, CdsaParams, Group, TrendJob};
use crate::dsp::aeeg::AeegParams;
use crate::dsp::montage::Derivation;
use crate::gpu::trend::TrendKernels;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("kind").required(true).args(["cdsa", "aeeg"])))]
pub struct TrendArgs {
    pub file: PathBuf,
    /// The compressed spectral array: each segment's Welch spectrum in dB.
    #[arg(long)]
    pub cdsa: bool,
    /// Amplitude-integrated EEG: each segment's envelope edges and their margins.
    #[arg(long)]
    pub aeeg: bool,
    /// Channel labels or types; the EEG (brain) channels of the most common rate when omitted.
    #[arg(long, value_delimiter = ',')]
    pub channels: Vec<String>,
    /// Seconds per segment (CDSA 30, aEEG 15 when omitted).
    #[arg(long)]
    pub segment: Option<f64>,
    /// CDSA: seconds per Welch block within a segment.
    #[arg(long, default_value_t = 2.0)]
    pub block: f64,
    /// CDSA: fraction of a block the next one overlaps.
    #[arg(long, default_value_t = 0.5)]
    pub overlap: f64,
    /// CDSA: one row, the mean spectrum of all the channels, instead of a row per channel.
    #[arg(long)]
    pub average: bool,
    /// CDSA: two rows, the mean spectra of the left (odd 10-20 numbers: Fp1, C3 ...) and the
    /// right hemisphere's channels (even numbers), as the browser's strip shows them.
    #[arg(long, conflicts_with = "average")]
    pub hemispheres: bool,
    /// Output JSON (standard output when omitted).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Sampling rate of a CSV input without a time column.
    #[arg(long)]
    pub fs: Option<f64>,
    /// Where the trends are computed (the same numbers either way: CDSA to 1e-3 dB, aEEG to
    /// 1e-3 uV); the GPU needs f64 in shaders.
    #[arg(long, value_enum, default_value_t = super::BackendChoice::Auto)]
    pub backend: super::BackendChoice,
}

impl TrendArgs {
    pub fn job(&self, rec: &crate::recording::Recording) -> anyhow::Result<TrendJob> {
        let picked = if self.channels.is_empty() {
            rec.brain_signals()
        } else {
            super::export::select_channels(rec, &self.channels)?
        };
        if picked.is_empty() {
            bail!("the recording has no EEG channels: name some with --channels");
        }
        let derivations: Vec<Derivation> = (picked.iter())
            .map(|&c| Derivation::recorded(rec, c))
            .collect();
        let traces: Vec<usize> = (0..picked.len()).collect();
        let cdsa_groups = if !self.cdsa {
            Vec::new()
        } else if self.average {
            vec![Group {
                name: format!("mean of {}", traces.len()),
                traces: traces.clone(),
            }]
        } else if self.hemispheres {
            let sides = trend::hemispheres(&derivations, &traces);
            if sides.is_empty() {
                bail!("no channel names a hemisphere (an odd 10-20 number is left, even is right)");
            }
            sides
        } else {
            (traces.iter())
                .map(|&t| Group {
                    name: derivations[t].label.trim().to_string(),
                    traces: vec![t],
                })
                .collect()
        };
        let cdsa = CdsaParams {
            segment_s: self.segment.unwrap_or(CdsaParams::default().segment_s),
            block_s: self.block,
            overlap: self.overlap,
        };
        let aeeg = AeegParams {
            segment_s: self.segment.unwrap_or(AeegParams::default().segment_s),
            ..AeegParams::default()
        };
        Ok(TrendJob {
            derivations,
            cdsa_groups,
            cdsa,
            aeeg_traces: if self.aeeg { traces } else { Vec::new() },
            aeeg,
        })
    }
}

pub fn run(args: &TrendArgs) -> anyhow::Result<()> {
    let rec = super::open(&args.file, args.fs)?;
    let job = args.job(&rec)?;
    let gpu = super::open_gpu("ede trend", args.backend);
    let mut kernels = gpu.as_ref().and_then(TrendKernels::new);
    if let (Some(g), None) = (&gpu, &kernels) {
        eprintln!(
            "ede trend: {} has no f64 in shaders; running on the CPU",
            g.describe()
        );
    }
    let (stop, done) = (AtomicBool::new(false), AtomicUsize::new(0));
    let (trends, _) =
        trend::run_on(&rec, &job, kernels.as_mut(), &stop, &done)?.expect("nothing cancels");
    match (trends.cdsa, trends.aeeg) {
        (Some(cdsa), _) => super::write_json(&cdsa, args.out.as_deref()),
        (_, Some(aeeg)) => super::write_json(&aeeg, args.out.as_deref()),
        _ => unreachable!("clap requires --cdsa or --aeeg"),
    }
}
