//! `ede bench trend`: CDSA and aEEG of every channel of a whole night read from disk (the
//! `ede bench io` recording: 64 channels x 256 Hz x 16 h, 1.9 GB of EDF), as the browser's trend
//! strip computes them: both in one pass, each alone, and the reading alone, on all CPU cores.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::time::Instant;

use serde::Serialize;

use super::xapen_night::NightFile;
use crate::analysis::trend::{self, CdsaParams, Group, TrendJob};
use crate::cli::write_json;
use crate::dsp::aeeg::AeegParams;
use crate::dsp::montage::Derivation;
use crate::recording::{OpenOptions, Recording};

#[derive(Debug, clap::Args)]
pub struct TrendBenchArgs {
    #[command(flatten)]
    pub night: NightFile,
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct Report {
    file: PathBuf,
    file_bytes: u64,
    channels: usize,
    hours: f64,
    threads: usize,
    cdsa_segments: usize,
    aeeg_segments: usize,
    /// Both trends in one pass, the file's pages dropped first (when the kernel agreed).
    both_cold_s: f64,
    cache_dropped: bool,
    both_warm_s: f64,
    cdsa_warm_s: f64,
    aeeg_warm_s: f64,
    /// Reading and decoding every chunk, nothing computed (warm).
    read_warm_s: f64,
    /// Samples through the whole pass per second, warm, both trends.
    samples_per_s: f64,
}

pub fn run(args: &TrendBenchArgs) -> anyhow::Result<()> {
    args.night.generate()?;
    let rec = Recording::open(&args.night.file, &OpenOptions::default())?;
    let derivations: Vec<Derivation> = (0..rec.signals.len())
        .map(|c| Derivation::recorded(&rec, c))
        .collect();
    let traces: Vec<usize> = (0..derivations.len()).collect();
    let groups: Vec<Group> = (traces.iter())
        .map(|&t| Group {
            name: derivations[t].label.clone(),
            traces: vec![t],
        })
        .collect();
    let job = |cdsa: bool, aeeg: bool| TrendJob {
        derivations: derivations.clone(),
        cdsa_groups: if cdsa { groups.clone() } else { Vec::new() },
        cdsa: CdsaParams::default(),
        aeeg_traces: if aeeg { traces.clone() } else { Vec::new() },
        aeeg: AeegParams::default(),
    };
    let time = |job: &TrendJob| -> anyhow::Result<(f64, trend::Trends)> {
        let t = Instant::now();
        let out = trend::run(&rec, job, &AtomicBool::new(false), &AtomicUsize::new(0))?
            .expect("nothing cancels");
        Ok((t.elapsed().as_secs_f64(), out))
    };
    let both = job(true, true);
    let cache_dropped = super::xapen_night::drop_cached_pages(&args.night.file);
    let (both_cold_s, out) = time(&both)?;
    let (both_warm_s, _) = time(&both)?;
    let (cdsa_warm_s, _) = time(&job(true, false))?;
    let (aeeg_warm_s, _) = time(&job(false, true))?;
    let t = Instant::now();
    trend::read_only(&rec, &both)?;
    let read_warm_s = t.elapsed().as_secs_f64();
    let samples: usize = rec.signals.iter().map(|s| s.samples).sum();
    let report = Report {
        file_bytes: std::fs::metadata(&args.night.file)?.len(),
        file: args.night.file.clone(),
        channels: rec.signals.len(),
        hours: args.night.hours,
        threads: rayon::current_num_threads(),
        cdsa_segments: out.cdsa.as_ref().map_or(0, |c| c.power[0].len()),
        aeeg_segments: out.aeeg.as_ref().map_or(0, |a| a.upper_uv[0].len()),
        both_cold_s,
        cache_dropped,
        both_warm_s,
        cdsa_warm_s,
        aeeg_warm_s,
        read_warm_s,
        samples_per_s: samples as f64 / both_warm_s,
    };
    eprintln!(
        "trend: {} ch x {} h, CDSA + aEEG {:.2} s cold, {:.2} s warm (CDSA {:.2} s, aEEG {:.2} s, \
         reading {:.2} s) on {} threads",
        report.channels,
        args.night.hours,
        both_cold_s,
        both_warm_s,
        cdsa_warm_s,
        aeeg_warm_s,
        read_warm_s,
        report.threads
    );
    write_json(&report, args.out.as_deref())
}
