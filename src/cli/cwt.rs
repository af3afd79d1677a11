//! `ede cwt FILE... --channel NAME ... --out OUT.json`: the Morlet scalogram of one channel's
//! stretch as JSON; `--all-channels --band-power OUT.csv`: power per scale in blocks over whole
//! recordings, streamed in segments so that no recording's transform is held whole.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Context, bail};

use super::BackendChoice;
use crate::analysis::cwt::{self, BandPowerJob, CwtReport};
use crate::dsp::cwt::{CwtParams, DEFAULT_OMEGA0, ScaleSpec, cone_of_influence};
use crate::gpu::cwt::CwtKernels;
use crate::recording::{Recording, bids};

#[derive(Debug, clap::Args)]
pub struct CwtArgs {
    /// Recordings (any format ede reads) or BIDS dataset roots (band power of each run goes
    /// to the dataset's derivatives/ede/).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub bids: crate::recording::bids::Filter,
    /// The channel to transform (its label).
    #[arg(long, required_unless_present = "all_channels")]
    pub channel: Option<String>,
    /// Every brain channel (scalp electrodes, MEG) of their most common sampling rate (with --band-power).
    #[arg(long, requires = "band_power", conflicts_with = "channel")]
    pub all_channels: bool,
    /// Start of the stretch, seconds from the recording's start.
    #[arg(long, default_value_t = 0.0)]
    pub start: f64,
    /// Length of the stretch in seconds; to the end of the signal when omitted.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Lowest frequency (Hz) of the scales.
    #[arg(long, conflicts_with_all = ["s0", "dj", "j"])]
    pub fmin: Option<f64>,
    /// Highest frequency (Hz) of the scales.
    #[arg(long, conflicts_with_all = ["s0", "dj", "j"])]
    pub fmax: Option<f64>,
    /// Scales per octave.
    #[arg(long, conflicts_with_all = ["s0", "dj", "j"])]
    pub voices: Option<usize>,
    /// Smallest scale in seconds (with --dj and --j).
    #[arg(long, requires_all = ["dj", "j"])]
    pub s0: Option<f64>,
    /// Spacing of the scales in octaves.
    #[arg(long, requires_all = ["s0", "j"])]
    pub dj: Option<f64>,
    /// Number of scales after the first (J + 1 in all).
    #[arg(long, requires_all = ["s0", "dj"])]
    pub j: Option<usize>,
    /// The Morlet wavelet's central angular frequency.
    #[arg(long, default_value_t = DEFAULT_OMEGA0)]
    pub omega0: f64,
    /// Where to run: `auto` takes the GPU unless it is a software adapter.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Output JSON (one object per file; an array for several; stdout when omitted).
    #[arg(long, conflicts_with = "band_power")]
    pub out: Option<PathBuf>,
    /// Write power per scale in blocks as CSV here (a folder when there are several files).
    #[arg(long)]
    pub band_power: Option<PathBuf>,
    /// Block length of the band power, seconds.
    #[arg(long, default_value_t = 1.0)]
    pub block_s: f64,
    /// Sampling rate of CSV files without a time column.
    #[arg(long)]
    pub fs: Option<f64>,
}

impl CwtArgs {
    pub fn params(&self) -> CwtParams {
        let defaults = CwtParams::default();
        let scales = match (self.s0, self.dj, self.j) {
            (Some(s0), Some(dj), Some(j)) => ScaleSpec::Octaves { s0, dj, j },
            _ => match defaults.scales {
                ScaleSpec::Frequencies { fmin, fmax, voices } => ScaleSpec::Frequencies {
                    fmin: self.fmin.unwrap_or(fmin),
                    fmax: self.fmax.unwrap_or(fmax),
                    voices: self.voices.unwrap_or(voices),
                },
                other => other,
            },
        };
        CwtParams {
            omega0: self.omega0,
            scales,
        }
    }
}

/// Values of one JSON report past which `--duration` is asked for instead.
const MAX_JSON_VALUES: usize = 50_000_000;

pub fn run(args: &CwtArgs) -> anyhow::Result<()> {
    let mut gpu = super::open_gpu("ede cwt", args.backend).map(|c| CwtKernels::new(&c));
    let several = args.files.len() > 1 || args.files.iter().any(|f| bids::is_dataset(f));
    if let (true, Some(dir)) = (several, &args.band_power) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    super::study(&args.files, &args.bids, args.out.as_deref(), |item, tag| {
        let rec = item.open(args.fs)?;
        match &args.band_power {
            Some(out) => {
                let out = match item.derivative("bandpower", ".csv")? {
                    Some(p) => p,
                    None if several => out.join(super::out_name(&item.path, "band-power.csv")),
                    None => out.clone(),
                };
                band_power(&rec, args, gpu.as_mut(), &out, tag)?;
                Ok(None)
            }
            None => {
                let report = scalogram(&rec, args, gpu.as_mut())?;
                eprintln!(
                    "{tag}: {} x {} scales in {:.3} s ({})",
                    report.channel,
                    report.scales.len(),
                    report.elapsed_s,
                    report.adapter
                );
                Ok(Some(report))
            }
        }
    })
}

fn scalogram(
    rec: &Recording,
    args: &CwtArgs,
    gpu: Option<&mut CwtKernels>,
) -> anyhow::Result<CwtReport> {
    let t = Instant::now();
    let label = args.channel.as_deref().context("--channel is needed")?;
    let c = rec
        .signal_index(label)
        .with_context(|| format!("no channel {label:?} in {}", rec.display_name()))?;
    let sig = &rec.signals[c];
    if !(args.start.is_finite() && args.start >= 0.0) {
        bail!("--start must be a time in seconds >= 0");
    }
    let first = (args.start * sig.fs).round() as usize;
    let available = sig.samples.saturating_sub(first);
    let n = match args.duration {
        Some(d) if d.is_finite() && d > 0.0 => (d * sig.fs).round() as usize,
        Some(d) => bail!("--duration must be a positive number of seconds, got {d}"),
        None => available,
    };
    if n > available {
        bail!(
            "{label} has {:.3} s after {} s; {:.3} s are asked for",
            available as f64 / sig.fs,
            args.start,
            n as f64 / sig.fs
        );
    }
    let params = args.params();
    let scales = params.scales(1.0 / sig.fs)?.len();
    if n * scales > MAX_JSON_VALUES {
        bail!(
            "{n} samples x {scales} scales is too much for one JSON; choose a shorter --duration \
             or use --band-power"
        );
    }
    let mut x = vec![0f32; n];
    rec.read(c, first, &mut x)?;
    let (axes, mag, (backend, adapter)) = cwt::magnitude(&[&x], sig.fs, &params, gpu)?;
    Ok(CwtReport {
        file: rec
            .path
            .as_ref()
            .map_or_else(|| rec.display_name(), |p| p.display().to_string()),
        channel: sig.label.clone(),
        fs: sig.fs,
        start_s: first as f64 / sig.fs,
        n,
        omega0: params.omega0,
        coi_s: cone_of_influence(n, 1.0 / sig.fs, params.omega0),
        magnitude: mag.chunks(n.max(1)).map(<[f32]>::to_vec).collect(),
        scales: axes.scales,
        frequencies_hz: axes.frequencies_hz,
        backend,
        adapter,
        elapsed_s: t.elapsed().as_secs_f64(),
    })
}

fn band_power(
    rec: &Recording,
    args: &CwtArgs,
    gpu: Option<&mut CwtKernels>,
    out: &Path,
    tag: &str,
) -> anyhow::Result<()> {
    let t = Instant::now();
    let channels: Vec<usize> = match &args.channel {
        Some(label) => vec![
            rec.signal_index(label)
                .with_context(|| format!("no channel {label:?} in {}", rec.display_name()))?,
        ],
        None => rec.brain_signals(),
    };
    if channels.is_empty() {
        bail!("the recording has no signals");
    }
    let job = BandPowerJob {
        channels: channels.clone(),
        params: args.params(),
        block_s: args.block_s,
        segment: 0,
    };
    let fs = rec.signals[channels[0]].fs;
    let block = job.block_samples(fs);
    // Written beside the target and renamed at the end: a failure leaves no partial file.
    let partial = out.with_extension("csv.partial");
    let file = std::fs::File::create(&partial)
        .with_context(|| format!("cannot write {}", partial.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 22, file);
    let labels: Vec<&str> = channels
        .iter()
        .map(|&c| rec.signals[c].label.as_str())
        .collect();
    let mut header_done = false;
    let axes_for_header = cwt::Axes::new(&job.params, fs)?;
    let s = axes_for_header.scales.len();
    let result = cwt::band_power(
        rec,
        &job,
        gpu,
        &AtomicBool::new(false),
        |done, total| eprint!("\r{tag}: segment {done}/{total}"),
        |first_block, power| {
            if !header_done {
                write!(w, "channel,start_s")?;
                for f in &axes_for_header.frequencies_hz {
                    write!(w, ",{f:.4}Hz")?;
                }
                writeln!(w)?;
                header_done = true;
            }
            let blocks = power.len() / (labels.len() * s);
            let mut line = String::new();
            for b in 0..blocks {
                for (c, label) in labels.iter().enumerate() {
                    line.clear();
                    let start = (first_block + b) as f64 * block as f64 / fs;
                    line.push_str(&format!("{label},{start}"));
                    for j in 0..s {
                        line.push_str(&format!(",{:e}", power[(c * s + j) * blocks + b] as f32));
                    }
                    writeln!(w, "{line}")?;
                }
            }
            Ok(())
        },
    );
    eprintln!();
    let (_, (_, adapter)) = match result {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e.into());
        }
    };
    w.flush()?;
    drop(w);
    std::fs::rename(&partial, out).with_context(|| format!("cannot write {}", out.display()))?;
    // The table's description beside it (as BIDS keeps one beside each table): what the
    // columns hold and what made them.
    super::write_json(
        &serde_json::json!({
            "channels": labels,
            "block_s": args.block_s,
            "params": job.params,
            "columns": "channel, start_s (the block's start), then the mean power of each scale \
                        in the block, by the scale's centre frequency",
            "adapter": adapter,
        }),
        Some(&out.with_extension("json")),
    )?;
    eprintln!(
        "{tag}: {} channels x {s} scales, {:.1} s blocks, in {:.3} s ({adapter}) -> {}",
        channels.len(),
        args.block_s,
        t.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(())
}
