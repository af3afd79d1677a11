//! `ede blinks simulate|score|measure`: ground truth for blink removal. `simulate` adds blinks
//! of a documented shape at known times; `score` runs the pipeline on such a recording and
//! compares with the truth; `measure` compares any cleaned recording (ours, MNE's) with its
//! original on the real blinks.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;

use super::deblink::PipelineArgs;
use crate::analysis::blink::{
    DeblinkOptions, Deblinker, EegData, Truth, real_blink_effect, runs_on_gpu, score_cleaning,
    simulate_blinks,
};
use crate::recording::edf_write;

#[derive(Debug, clap::Subcommand)]
pub enum BlinksCommand {
    /// Add simulated blinks to a clean EDF/BDF recording.
    Simulate(SimulateArgs),
    /// Remove blinks from a simulated recording and score against its truth.
    Score(ScoreArgs),
    /// Compare a cleaned recording with its original on the original's real blinks.
    Measure(MeasureArgs),
    /// Score the removal on families of simulated blinks over an independent clean base
    /// (docs/ANALYSES.md): every family x amplitude x seed, beside the ideal spatial filter.
    Families(FamiliesArgs),
}

#[derive(Debug, clap::Args)]
pub struct FamiliesArgs {
    /// The recording the base's cleaning was fitted on (the EEGLAB sample).
    pub recording: PathBuf,
    /// Another tool's cleaning of it as an affine map (tests/fixtures/blink_base_mne.json,
    /// from docs/scripts/blink_base_mne.py).
    #[arg(long)]
    pub base: PathBuf,
    #[arg(long, value_enum, value_delimiter = ',')]
    pub families: Option<Vec<crate::dsp::blink::families::Family>>,
    /// Blink heights at the frontopolar channel, microvolts.
    #[arg(long, value_delimiter = ',', default_values_t = [50.0, 100.0, 200.0])]
    pub amplitudes: Vec<f64>,
    #[arg(long, value_delimiter = ',', default_values_t = [1u64, 2, 3])]
    pub seeds: Vec<u64>,
    /// Clean as live mode does (a stream at full speed, hop by hop) instead of the batch.
    #[arg(long)]
    pub live: bool,
    #[command(flatten)]
    pub pipeline: PipelineArgs,
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    pub clean: PathBuf,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Blinks per minute.
    #[arg(long, default_value_t = 15.0)]
    pub rate: f64,
    /// Microvolts at the frontopolar sites.
    #[arg(long, default_value_t = 100.0)]
    pub amplitude: f64,
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long)]
    pub truth: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct ScoreArgs {
    pub simulated: PathBuf,
    pub truth: PathBuf,
    #[command(flatten)]
    pub pipeline: PipelineArgs,
    /// Score this cleaning of SIMULATED (another tool's, e.g. MNE's, as EDF/BDF) instead of
    /// running ede's pipeline; with --found, the blink peaks it reported.
    #[arg(long, requires = "found")]
    pub cleaned: Option<PathBuf>,
    /// A JSON array of blink peak times in seconds, found by the tool that cleaned.
    #[arg(long, requires = "cleaned")]
    pub found: Option<PathBuf>,
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct MeasureArgs {
    pub original: PathBuf,
    pub cleaned: PathBuf,
    /// The frontal channel whose blink height is measured (default: the first of FPz, Fp1,
    /// Fp2, AF3, AF4, AF7, AF8 the recording has).
    #[arg(long)]
    pub frontal: Option<String>,
    /// Channels whose change outside blinks is measured (default: those of O1, Oz, O2 the
    /// recording has, else of P3, Pz, P4).
    #[arg(long, value_delimiter = ',')]
    pub posterior: Option<Vec<String>>,
    /// Detection channels (as for deblink).
    #[arg(long, value_delimiter = ',')]
    pub detect_channels: Option<Vec<String>>,
    #[arg(long, value_delimiter = ',')]
    pub keep: Option<Vec<String>>,
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(cmd: &BlinksCommand) -> anyhow::Result<()> {
    match cmd {
        BlinksCommand::Simulate(a) => simulate(a),
        BlinksCommand::Score(a) => run_score(a),
        BlinksCommand::Measure(a) => measure(a),
        BlinksCommand::Families(a) => run_families(a),
    }
}

fn simulate(a: &SimulateArgs) -> anyhow::Result<()> {
    let rec = super::open(&a.clean, None)?;
    if rec.format.edf_family().is_none() {
        anyhow::bail!(
            "{}: simulate writes EDF or BDF; this is {}",
            a.clean.display(),
            rec.format
        );
    }
    let (signals, truth) = simulate_blinks(&rec, a.seed, a.rate, a.amplitude)?;
    let replaced: Vec<(usize, &[f32])> = signals.iter().map(|(i, x)| (*i, x.as_slice())).collect();
    edf_write::write_replacing(&rec, &a.out, &replaced)?;
    let json = serde_json::to_string_pretty(&truth)?;
    std::fs::write(&a.truth, json + "\n").with_context(|| a.truth.display().to_string())?;
    eprintln!(
        "{}: {} blinks of {} uV added to {} channels",
        a.out.display(),
        truth.blinks.len(),
        a.amplitude,
        truth.channels.len()
    );
    Ok(())
}

fn run_score(a: &ScoreArgs) -> anyhow::Result<()> {
    let opts = a.pipeline.options();
    opts.fastica.validate()?;
    let text = std::fs::read_to_string(&a.truth).with_context(|| a.truth.display().to_string())?;
    let truth: Truth = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is no truth file of `ede blinks simulate`",
            a.truth.display()
        )
    })?;
    let rec = super::open(&a.simulated, None)?;
    let data = EegData::load(&rec, &opts)?;
    if let (Some(cleaned), Some(found)) = (&a.cleaned, &a.found) {
        let other = EegData::load(&super::open(cleaned, None)?, &opts)?;
        if other.channels.labels != data.channels.labels || other.data.cols != data.data.cols {
            anyhow::bail!(
                "{} does not have the channels and length of {}",
                cleaned.display(),
                a.simulated.display()
            );
        }
        let text = std::fs::read_to_string(found).with_context(|| found.display().to_string())?;
        let peaks: Vec<f64> = serde_json::from_str(&text)
            .with_context(|| format!("{} is no JSON array of seconds", found.display()))?;
        let blinks: Vec<crate::dsp::blink::Blink> = (peaks.iter())
            .map(|&t| {
                let k = (t * data.fs).round().max(0.0) as usize;
                crate::dsp::blink::Blink {
                    peak: k,
                    start: k,
                    end: k,
                }
            })
            .collect();
        let s = score_cleaning(&rec, &data, &truth, &other.data, &blinks, 0.0);
        return super::write_json(&s, a.out.as_deref());
    }
    let lazy = super::LazyGpu::new("ede blinks score", a.pipeline.backend);
    let gpu = lazy.get(runs_on_gpu(&opts, data.data.rows, lazy.min_channels()));
    let mut d = Deblinker::new(gpu);
    if a.pipeline.backend == super::BackendChoice::Gpu {
        d = d.forced();
    }
    let t0 = Instant::now();
    let result = d.run(&data, &opts, &mut |_, _| true)?;
    let elapsed = t0.elapsed().as_secs_f64();
    let s = score_cleaning(
        &rec,
        &data,
        &truth,
        &result.cleaned,
        &result.blinks,
        elapsed,
    );
    let floor = s.spatial_floor_pct.map_or(String::new(), |f| {
        format!(" (ideal spatial filter: {f:.1} %)")
    });
    eprintln!(
        "{}: F1 {:.3} (precision {:.3}, recall {:.3}), residual in blinks {:.1} %{floor}, \
         change outside {:.2} %, {:.3} s",
        a.simulated.display(),
        s.f1,
        s.precision,
        s.recall,
        s.residual_inside_pct,
        s.change_outside_pct,
        elapsed
    );
    super::write_json(&s, a.out.as_deref())
}

fn measure(a: &MeasureArgs) -> anyhow::Result<()> {
    let opts = DeblinkOptions {
        detect: a.detect_channels.clone(),
        keep: a.keep.clone(),
        ..DeblinkOptions::default()
    };
    let original_rec = super::open(&a.original, None)?;
    let mut cleaned_rec = super::open(&a.cleaned, None)?;
    // The cleaned file may not carry what the original's sidecars said (a BIDS run's types and
    // bad channels): it is measured on the same channels.
    for s in &mut cleaned_rec.signals {
        if let Some(o) = original_rec.signals.iter().find(|o| o.label == s.label) {
            (s.kind, s.bad) = (o.kind, o.bad);
        }
    }
    let original = EegData::load(&original_rec, &opts)?;
    let cleaned = EegData::load(&cleaned_rec, &opts)?;
    if cleaned.channels.labels != original.channels.labels
        || cleaned.data.cols != original.data.cols
    {
        anyhow::bail!(
            "{} does not have the channels and length of {}",
            a.cleaned.display(),
            a.original.display()
        );
    }
    let labels = &original.channels.labels;
    let present = |names: &[&str]| -> Vec<String> {
        (names.iter())
            .filter_map(|n| labels.iter().find(|l| l.trim().eq_ignore_ascii_case(n)))
            .cloned()
            .collect()
    };
    let frontal = match &a.frontal {
        Some(f) => f.clone(),
        None => (present(&["FPz", "Fp1", "Fp2", "AF3", "AF4", "AF7", "AF8"]).into_iter())
            .next()
            .context(
                "no frontopolar channel (FPz, Fp1, Fp2, AF3/4/7/8): name one with --frontal",
            )?,
    };
    let posterior = match &a.posterior {
        Some(p) => p.clone(),
        None => [present(&["O1", "Oz", "O2"]), present(&["P3", "Pz", "P4"])]
            .into_iter()
            .find(|p| !p.is_empty())
            .context(
                "no occipital or parietal channel (O1/Oz/O2, P3/Pz/P4): name them with --posterior",
            )?,
    };
    let effect = real_blink_effect(&original, &cleaned.data, &frontal, &posterior)?;
    eprintln!(
        "{} blinks on {} (of {} eye events): blink-locked residual {:.1} % (its floor, the EEG's \
         own average: {:.1} %); {:.2} % change of {} outside eye events; {} samples of {} \
         changed by more than 20 uV",
        effect.blinks,
        effect.frontal,
        effect.eye_events,
        effect.frontal_residual_pct,
        effect.frontal_floor_pct,
        effect.posterior_change_pct,
        effect.posterior.join("/"),
        effect.samples_changed_over_20uv,
        effect.transient_channels.join("/"),
    );
    super::write_json(&effect, a.out.as_deref())
}

fn run_families(a: &FamiliesArgs) -> anyhow::Result<()> {
    use crate::analysis::blink::families::{AffineCleaning, Cleaner, score_families};
    use crate::dsp::blink::families::Family;
    let opts = a.pipeline.options();
    opts.fastica.validate()?;
    let text = std::fs::read_to_string(&a.base).with_context(|| a.base.display().to_string())?;
    let cleaning: AffineCleaning = serde_json::from_str(&text)
        .with_context(|| format!("{} is no affine cleaning", a.base.display()))?;
    let data = EegData::load(&super::open(&a.recording, None)?, &opts)?;
    let families = a.families.clone().unwrap_or(Family::ALL.to_vec());
    let lazy = super::LazyGpu::new("ede blinks families", a.pipeline.backend);
    let gpu = lazy.get(runs_on_gpu(&opts, data.data.rows, lazy.min_channels()));
    let cases = (&families[..], &a.amplitudes[..], &a.seeds[..]);
    let cleaner = match a.live {
        true => Cleaner::Live(opts),
        false => Cleaner::Batch(opts),
    };
    let scores = score_families(&data, &cleaning, cases, &cleaner, gpu)?;
    eprintln!(
        "family          A uV seed   F1  residual  floor  ratio  after 60 s  from 30th  outside  FPz uV"
    );
    for s in &scores {
        eprintln!(
            "{:<15} {:>4} {:>4} {:>5.3} {:>7.1} % {:>5.1} % {:>5.2} {:>10.2} {:>10.2} {:>6.2} % {:>6.1}",
            s.family.name(),
            s.amplitude_uv,
            s.seed,
            s.f1,
            s.residual_pct,
            s.floor_pct.unwrap_or(f64::NAN),
            s.ratio.unwrap_or(f64::NAN),
            s.ratio_after_first_minute.unwrap_or(f64::NAN),
            s.ratio_settled.unwrap_or(f64::NAN),
            s.change_outside_pct,
            s.frontal_residual_uv
        );
    }
    super::write_json(&scores, a.out.as_deref())
}
