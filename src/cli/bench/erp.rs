//! `ede bench erp`: epochs and averages (`analysis::epochs`). A generated recording of 64
//! channels (10-10 names) at 1 kHz in memory with `--epochs` events 1.25 s apart: placing the
//! events and reading the traces (`prepare`), and the average a slider's move recomputes
//! (baseline, rejection, mean and SD over the kept epochs); and, given `--sample`, the same on
//! the EEGLAB sample with the ERP tab's settings.

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use super::Stats;
use crate::analysis::epochs::{self, EpochParams};
use crate::cli::write_json;
use crate::dsp::filter::DisplayFilter;
use crate::dsp::montage::{self, Reference};
use crate::recording::{Annotation, ChannelType, Format, Recording, in_memory, unknown_start};

#[derive(Debug, clap::Args)]
pub struct ErpBenchArgs {
    #[arg(long, default_value_t = 2000)]
    pub epochs: usize,
    #[arg(long, default_value_t = 64)]
    pub channels: usize,
    #[arg(long, default_value_t = 1000.0)]
    pub fs: f64,
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// The EEGLAB sample, for the ERP tab's recompute on a real recording.
    #[arg(long)]
    pub sample: Option<PathBuf>,
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct Case {
    what: String,
    channels: usize,
    fs: f64,
    epochs: usize,
    samples_per_epoch: usize,
    kept: usize,
    /// Events placed and traces read (once per window or filter change).
    prepare_s: Stats,
    /// Baseline, rejection and average (every baseline or limit change).
    average_s: Stats,
}

#[derive(Debug, Serialize)]
struct ErpReport {
    threads: usize,
    cases: Vec<Case>,
}

/// The 64 10-10 electrodes of a common cap, cycled where more are asked for.
pub(super) const CAP: [&str; 64] = [
    "Fp1", "Fpz", "Fp2", "AF7", "AF3", "AFz", "AF4", "AF8", "F7", "F5", "F3", "F1", "Fz", "F2",
    "F4", "F6", "F8", "FT7", "FC5", "FC3", "FC1", "FCz", "FC2", "FC4", "FC6", "FT8", "T7", "C5",
    "C3", "C1", "Cz", "C2", "C4", "C6", "T8", "TP7", "CP5", "CP3", "CP1", "CPz", "CP2", "CP4",
    "CP6", "TP8", "P7", "P5", "P3", "P1", "Pz", "P2", "P4", "P6", "P8", "PO7", "PO3", "POz", "PO4",
    "PO8", "O1", "Oz", "O2", "Iz", "TP9", "TP10",
];

/// Noise with a response after each event, in uV.
fn generated(channels: usize, fs: f64, epochs: usize) -> Recording {
    let spacing = 1.25;
    let n = ((epochs as f64 * spacing + 2.0) * fs) as usize;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let data: Vec<Vec<f32>> = (0..channels)
        .map(|c| {
            (0..n)
                .map(|k| {
                    let t = (k as f64 / fs - 1.0).rem_euclid(spacing);
                    let erp = 8.0 * (-((t - 0.3) / 0.05).powi(2)).exp() * (1.0 + c as f64 / 64.0);
                    40.0 * noise() + erp as f32
                })
                .collect()
        })
        .collect();
    let events = (0..epochs)
        .map(|e| Annotation {
            onset: 1.0 + e as f64 * spacing,
            duration: 0.0,
            text: "stim".into(),
        })
        .collect();
    let labels = (0..channels)
        .map(|c| (CAP[c % CAP.len()].to_string(), "uV".to_string(), fs))
        .collect();
    let mut rec = in_memory(
        None,
        Format::Csv,
        unknown_start(),
        labels,
        data,
        events,
        Vec::new(),
    );
    for s in &mut rec.signals {
        s.kind = ChannelType::Eeg;
    }
    rec
}

fn measure(
    what: &str,
    rec: &Recording,
    params: &EpochParams,
    (reference, filter): (Reference, DisplayFilter),
    repeat: usize,
) -> anyhow::Result<Case> {
    let m = epochs::default_montage(rec);
    let derivations = montage::resolve(rec, &m, &reference)
        .map_err(anyhow::Error::msg)?
        .derivations;
    let filter_of = |_| filter;
    let mut prepare = Vec::new();
    let mut average = Vec::new();
    let mut last = None;
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        let p = epochs::prepare(rec, &rec.annotations, &derivations, &filter_of, params)?;
        prepare.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let e = p.average(params)?;
        average.push(t.elapsed().as_secs_f64());
        last = Some(e);
    }
    let e = last.expect("run at least once");
    Ok(Case {
        what: what.into(),
        channels: e.labels.len(),
        fs: e.fs,
        epochs: e.conditions.iter().map(|c| c.events.len()).sum(),
        samples_per_epoch: e.len(),
        kept: e.conditions.iter().map(|c| c.average.n_epochs).sum(),
        prepare_s: Stats::of(prepare),
        average_s: Stats::of(average),
    })
}

pub fn run(args: &ErpBenchArgs) -> anyhow::Result<()> {
    let mut cases = Vec::new();
    if let Some(path) = &args.sample {
        let mut rec = crate::cli::open(path, None)?;
        rec.set_types(&[
            ("EOG1".into(), ChannelType::Eog),
            ("EOG2".into(), ChannelType::Eog),
        ])
        .map_err(anyhow::Error::msg)?;
        let params = EpochParams {
            events: vec!["square".into()],
            tmin: -0.2,
            tmax: 0.8,
            baseline: Some((Some(-0.2), Some(0.0))),
            reject: vec![(ChannelType::Eeg, 150e-6)],
            ..Default::default()
        };
        let filter = DisplayFilter::parse("hp=0.5,lp=35,order=4,zero-phase")?;
        cases.push(measure(
            "EEGLAB sample, square, average reference, 0.5-35 Hz zero-phase",
            &rec,
            &params,
            (Reference::Average, filter),
            args.repeat,
        )?);
    }
    let rec = generated(args.channels, args.fs, args.epochs);
    let params = EpochParams {
        events: vec!["stim".into()],
        tmin: -0.2,
        tmax: 0.8 - 1.0 / args.fs,
        baseline: Some((None, Some(0.0))),
        reject: vec![(ChannelType::Eeg, 150e-6)],
        ..Default::default()
    };
    cases.push(measure(
        &format!(
            "{} epochs of {} ch x 1 s at {} Hz, in memory",
            args.epochs, args.channels, args.fs
        ),
        &rec,
        &params,
        (Reference::AsRecorded, DisplayFilter::default()),
        args.repeat,
    )?);
    for c in &cases {
        eprintln!(
            "{}: prepare {:.2} ms, average {:.2} ms ({} of {} kept)",
            c.what,
            c.prepare_s.median * 1e3,
            c.average_s.median * 1e3,
            c.kept,
            c.epochs
        );
    }
    write_json(
        &ErpReport {
            threads: rayon::current_num_threads(),
            cases,
        },
        args.out.as_deref(),
    )
}
