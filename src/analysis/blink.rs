//! Blink-removal jobs: the EEG of a recording taken in (`EegData`), cleaned window by window
//! with FastICA or JADE on the CPU or the GPU (`Deblinker`), written back in the input's own
//! format; and the measurements: simulated blinks with their truth, the score against it, and
//! the effect of a cleaning on real blinks.

use std::time::Instant;

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use super::Backend;
use super::xapen::{RanOn, cpu_name};
use crate::dsp::blink::simulate::{self, SimBlink, microvolts_per_unit, propagation};
use crate::dsp::blink::{self, BlinkError, BlinkParams, Channels, Deblinked, dwt, is_eog};
use crate::dsp::ica::{self, Algorithm, Approach, FastIcaParams, Ica, IcaError, Observations};
use crate::dsp::montage::is_eeg;
use crate::gpu::GpuContext;
use crate::gpu::ica::GpuFastIca;
use crate::recording::{ReadError, Recording, edf_write, most_common_rate};

#[derive(Debug, thiserror::Error)]
pub enum BlinkJobError {
    #[error(transparent)]
    Blink(#[from] BlinkError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{0}")]
    Selection(String),
}

/// Everything a blink removal is run with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeblinkOptions {
    pub params: BlinkParams,
    pub algorithm: Algorithm,
    pub fastica: FastIcaParams,
    /// Detection channels or "A-B" pairs; `None` for the frontal pairs.
    pub detect: Option<Vec<String>>,
    /// Channels left unchanged; `None` for the EOG channels.
    pub keep: Option<Vec<String>>,
    /// Fit the unmixing on at most this many of a window's samples (every k-th), then unmix
    /// all of them. ICA uses only the samples' joint distribution, not their order, and
    /// neighbouring samples of a fast-sampled window add little to it: live mode caps this so
    /// that a 512 Hz stream costs about what a 128 Hz one does.
    #[serde(default)]
    pub fit_samples: Option<usize>,
    /// Where the unmixing is fitted on a subsample (`fit_samples`), keep the sources of only
    /// this many leading components; the pipeline computes those of any other component it
    /// tests. `None` keeps all. Live mode keeps none: a hop's finishing unmixes those its view
    /// draws (`StreamParams::shown_sources`) beside the next hop's fit.
    #[serde(default)]
    pub source_rows: Option<usize>,
}

/// Components a window's view draws (its first, largest): those live mode unmixes the whole
/// window of (`StreamParams::shown_sources`).
pub const SHOWN_COMPONENTS: usize = 12;

/// FastICA iterations per window in the pipeline (sklearn's and MNE's default; FastICA's own
/// default is the thesis's 1000). Windows whose ICA does not converge within it are reported;
/// the blink component, the most non-Gaussian, converges long before the rest.
pub const PIPELINE_MAX_ITER: usize = 200;

impl Default for DeblinkOptions {
    fn default() -> Self {
        DeblinkOptions {
            params: BlinkParams::default(),
            algorithm: Algorithm::Fastica,
            fastica: FastIcaParams {
                max_iter: PIPELINE_MAX_ITER,
                ..FastIcaParams::default()
            },
            detect: None,
            keep: None,
            fit_samples: None,
            source_rows: None,
        }
    }
}

/// The channels blink removal works on, read whole: EEG and EOG signals in a voltage unit at
/// the rate most of them share. Other signals (ECG, triggers, other rates) are not touched.
#[derive(Debug, Clone)]
pub struct EegData {
    /// Indices in `Recording::signals`.
    pub signals: Vec<usize>,
    pub fs: f64,
    pub channels: Channels,
    pub data: Observations,
}

impl EegData {
    pub fn load(rec: &Recording, opts: &DeblinkOptions) -> Result<Self, BlinkJobError> {
        let eeg = |i: usize| {
            let s = &rec.signals[i];
            microvolts_per_unit(&s.unit).is_some()
                && (is_eeg(&s.label, &s.unit) || is_eog(&s.label))
                && s.samples > 0
        };
        let candidates: Vec<usize> = (0..rec.signals.len()).filter(|&i| eeg(i)).collect();
        let Some(fs) = most_common_rate(candidates.iter().map(|&i| rec.signals[i].fs)) else {
            return Err(BlinkJobError::Selection(
                "the recording has no EEG channels in a voltage unit (uV, mV, V)".into(),
            ));
        };
        let signals: Vec<usize> = (candidates.into_iter())
            .filter(|&i| (rec.signals[i].fs - fs).abs() < 1e-9)
            .collect();
        let samples = signals
            .iter()
            .map(|&i| rec.signals[i].samples)
            .min()
            .unwrap_or(0);
        let labels: Vec<String> = signals
            .iter()
            .map(|&i| rec.signals[i].label.clone())
            .collect();
        let channels = Channels::resolve(&labels, opts.detect.as_deref(), opts.keep.as_deref())?;
        let mut data = vec![0.0f32; signals.len() * samples];
        for (row, &i) in data.chunks_exact_mut(samples.max(1)).zip(&signals) {
            rec.read(i, 0, row)?;
        }
        Ok(EegData {
            signals,
            fs,
            channels,
            data: Observations::new(labels.len(), samples, data),
        })
    }

    pub fn duration_s(&self) -> f64 {
        self.data.cols as f64 / self.fs
    }

    /// Samples `from..to` of every channel (clamped to the data).
    pub fn stretch(&self, from: usize, to: usize) -> EegData {
        let to = to.min(self.data.cols);
        EegData {
            signals: self.signals.clone(),
            fs: self.fs,
            channels: self.channels.clone(),
            data: self.data.block(self.data.rows, from.min(to)..to),
        }
    }

    /// The frontal candidate blinks of every window (the detector before any ICA), samples,
    /// at least the minimum blink separation apart.
    pub fn candidates(&self, params: &BlinkParams) -> Vec<usize> {
        let (x, fs) = (&self.data, self.fs);
        let window = params.window_samples(x.rows, fs, x.cols).min(x.cols);
        let gap = (params.min_separation_s * fs) as usize;
        let mut peaks: Vec<usize> = Vec::new();
        for s in blink::window_starts(x.cols, window, params.hop_samples(window, fs)) {
            let obs = x.block(x.rows, s..s + window);
            for c in blink::candidate_peaks(&obs, fs, &self.channels, params) {
                if peaks.last().is_none_or(|&l| s + c > l + gap) {
                    peaks.push(s + c);
                }
            }
        }
        peaks
    }
}

/// Runs ICA as the options say, on the GPU when one is given (FastICA only: JADE runs on
/// the CPU), remembering where it ran.
pub struct Deblinker<'a> {
    gpu: Option<GpuFastIca<'a>>,
    min_gpu_channels: usize,
}

/// Below this many channels FastICA runs on the CPU even where a GPU is given: on the H100
/// the GPU took 0.42 s for 200 iterations at 64 x 5000 against the CPU's 0.30 s, and won
/// from 128 channels on (2.3x; 7x at 256). `Deblinker::forced` lifts the rule.
pub const MIN_GPU_CHANNELS: usize = 96;

impl<'a> Deblinker<'a> {
    pub fn new(gpu: Option<&'a GpuContext>) -> Self {
        Deblinker {
            gpu: gpu.map(GpuFastIca::new),
            min_gpu_channels: MIN_GPU_CHANNELS,
        }
    }

    /// Runs on the given GPU whatever the channel count (`--backend gpu`).
    pub fn forced(mut self) -> Self {
        self.min_gpu_channels = 0;
        self
    }

    fn gpu_for(&self, opts: &DeblinkOptions, channels: usize) -> Option<&GpuFastIca<'a>> {
        let fits = opts.algorithm == Algorithm::Fastica
            && opts.fastica.approach == Approach::Symmetric
            && channels >= self.min_gpu_channels;
        self.gpu.as_ref().filter(|_| fits)
    }

    /// Where `opts` run for `channels` channels: symmetric FastICA on the GPU when there is
    /// one and the channels are many enough; JADE and deflation on the CPU.
    pub fn ran_on(&self, opts: &DeblinkOptions, channels: usize) -> RanOn {
        match self.gpu_for(opts, channels) {
            Some(g) => (Backend::Gpu, g.context().describe()),
            None => (Backend::Cpu, cpu_name()),
        }
    }

    /// One ICA of `x`, warm-started from `warm` where it fits.
    pub fn ica(
        &mut self,
        opts: &DeblinkOptions,
        x: &Observations,
        warm: Option<&DMatrix<f64>>,
    ) -> Result<Ica, IcaError> {
        let stride = opts.fit_samples.map_or(1, |n| x.cols.div_ceil(n.max(1)));
        let sub;
        let fit = if stride > 1 {
            sub = x.strided(stride);
            &sub
        } else {
            x
        };
        let rows = opts.source_rows.unwrap_or(x.rows);
        let ica = match (opts.algorithm, self.gpu_for(opts, x.rows)) {
            (Algorithm::Jade, _) => ica::jade(fit, opts.fastica.components),
            (Algorithm::Fastica, Some(g)) => g.fastica(fit, &opts.fastica, warm),
            // The CPU's FastICA unmixes the whole window as it finishes.
            (Algorithm::Fastica, None) if stride > 1 => {
                let data = Some((x, rows));
                return ica::fastica::fastica_with_sources_of(fit, data, &opts.fastica, warm);
            }
            (Algorithm::Fastica, None) => ica::fastica(fit, &opts.fastica, warm),
        }?;
        Ok(if stride > 1 {
            ica.with_sources_of(x, rows)
        } else {
            ica
        })
    }

    /// The whole of `data`, cleaned. `progress` hears (windows done, windows) and stops the
    /// job by returning false.
    pub fn run(
        &mut self,
        data: &EegData,
        opts: &DeblinkOptions,
        progress: &mut dyn FnMut(usize, usize) -> bool,
    ) -> Result<Deblinked, BlinkError> {
        let mut f = |x: &Observations, warm: Option<&DMatrix<f64>>| self.ica(opts, x, warm);
        blink::deblink(
            &data.data,
            data.fs,
            &data.channels,
            &opts.params,
            &mut f,
            progress,
        )
    }
}

/// A blink as the report gives it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BlinkTimes {
    pub peak_s: f64,
    pub onset_s: f64,
    pub duration_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct WindowReport {
    pub start_s: f64,
    pub components_removed: Vec<usize>,
    pub iterations: usize,
    pub converged: bool,
    /// Candidate blinks the frontal derivations showed.
    pub candidates: usize,
}

/// What `ede deblink` writes.
#[derive(Debug, Clone, Serialize)]
pub struct DeblinkReport {
    pub file: String,
    pub channels: Vec<String>,
    pub detection: Vec<String>,
    pub keep: Vec<String>,
    pub options: DeblinkOptions,
    pub blinks: Vec<BlinkTimes>,
    pub windows: Vec<WindowReport>,
    pub elapsed_s: f64,
    pub ran_on: RanOn,
}

impl DeblinkReport {
    pub fn new(
        file: String,
        data: &EegData,
        opts: &DeblinkOptions,
        result: &Deblinked,
        elapsed_s: f64,
        ran_on: RanOn,
    ) -> Self {
        let ch = &data.channels;
        DeblinkReport {
            file,
            channels: ch.labels.clone(),
            detection: ch.derivation_names(),
            keep: (ch.labels.iter().zip(&ch.keep))
                .filter(|(_, k)| **k)
                .map(|(l, _)| l.clone())
                .collect(),
            options: opts.clone(),
            blinks: blink_times(&result.blinks, data.fs),
            windows: (result.windows.iter())
                .map(|w| WindowReport {
                    start_s: w.start as f64 / data.fs,
                    components_removed: w.removed.clone(),
                    iterations: w.iterations(),
                    converged: w.converged(),
                    candidates: w.candidates.len(),
                })
                .collect(),
            elapsed_s,
            ran_on,
        }
    }
}

pub fn blink_times(blinks: &[blink::Blink], fs: f64) -> Vec<BlinkTimes> {
    (blinks.iter())
        .map(|b| BlinkTimes {
            peak_s: b.peak as f64 / fs,
            onset_s: b.start as f64 / fs,
            duration_s: (b.end - b.start) as f64 / fs,
        })
        .collect()
}

/// Writes `rec` with the cleaned channels of `data` replaced by `cleaned` (same format,
/// everything else as it was).
pub fn write_cleaned(
    rec: &Recording,
    data: &EegData,
    cleaned: &Observations,
    out: &std::path::Path,
) -> Result<(), ReadError> {
    let replaced: Vec<(usize, &[f32])> = (data.signals.iter().enumerate())
        .filter(|(k, _)| !data.channels.keep[*k])
        .map(|(k, &i)| (i, cleaned.row(k)))
        .collect();
    edf_write::write_replacing(rec, out, &replaced)
}

/// Runs a whole blink removal of a recording: (data, result, seconds, where it ran).
pub fn deblink_recording(
    rec: &Recording,
    opts: &DeblinkOptions,
    gpu: Option<&GpuContext>,
    force_gpu: bool,
) -> Result<(EegData, Deblinked, f64, RanOn), BlinkJobError> {
    let data = EegData::load(rec, opts)?;
    let mut d = Deblinker::new(gpu);
    if force_gpu {
        d = d.forced();
    }
    let t0 = Instant::now();
    let result = d.run(&data, opts, &mut |_, _| true)?;
    let ran_on = d.ran_on(opts, data.data.rows);
    Ok((data, result, t0.elapsed().as_secs_f64(), ran_on))
}

/// The ground truth `ede blinks simulate` writes beside the recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Truth {
    pub seed: u64,
    pub rate_per_min: f64,
    pub amplitude_uv: f64,
    pub blinks: Vec<SimBlink>,
    /// Each channel that received blinks and its propagation factor.
    pub channels: Vec<(String, f64)>,
    /// Peaks (seconds) of blinks the recording already had (`base_blinks`): simulated blinks
    /// keep 1 s away from them, and the score leaves out 0.5 s around each, since removing
    /// a real blink is no error.
    #[serde(default)]
    pub base_blinks: Vec<f64>,
}

/// The blinks a recording already has, for simulation on real EEG: excursions of the EOG
/// channels (both polarities; EOG montages differ) band-passed to 1-8 Hz above 5 robust SDs,
/// and the candidates of the blink detector on the frontal derivations (before any ICA).
/// Both err towards too many: a stretch left out of the score costs nothing, a real blink
/// scored as a false detection misleads. Peaks in seconds.
pub fn base_blinks(rec: &Recording) -> Result<Vec<f64>, BlinkJobError> {
    let params = BlinkParams::default();
    let gap_s = params.min_separation_s;
    let mut peaks: Vec<f64> = Vec::new();
    let eog: Vec<usize> = (0..rec.signals.len())
        .filter(|&i| is_eog(&rec.signals[i].label) && rec.signals[i].samples > 0)
        .collect();
    for &i in &eog {
        let fs = rec.signals[i].fs;
        let levels = dwt::levels_in_band(fs, params.band_hz);
        let b = dwt::band(&rec.read_all(i)?, &levels);
        let sigma = crate::dsp::blink::detect::robust_sigma(&b);
        let gap = (gap_s * fs) as usize;
        let half = (0.5 * fs) as usize;
        for sign in [1.0f32, -1.0] {
            let signed: Vec<f32> = b.iter().map(|v| sign * v).collect();
            let found = crate::dsp::blink::detect::peaks(&signed, 5.0 * sigma, gap, 0.2, half);
            peaks.extend(found.iter().map(|p| p.peak as f64 / fs));
        }
    }
    if let Ok(data) = EegData::load(rec, &DeblinkOptions::default()) {
        let c = data.candidates(&params);
        peaks.extend(c.iter().map(|&p| p as f64 / data.fs));
    }
    peaks.sort_by(f64::total_cmp);
    peaks.dedup_by(|a, b| (*a - *b).abs() < gap_s);
    Ok(peaks)
}

impl Truth {
    /// The added blinks of signal `i` of `rec`, in its physical unit (zeros if none).
    pub fn added(&self, rec: &Recording, i: usize) -> Vec<f32> {
        let s = &rec.signals[i];
        let factor = (self.channels.iter())
            .find(|(l, _)| *l == s.label)
            .map_or(0.0, |c| c.1);
        let per_unit = microvolts_per_unit(&s.unit).unwrap_or(1.0);
        if factor == 0.0 {
            return vec![0.0; s.samples];
        }
        (simulate::waveform(&self.blinks, s.fs, s.samples).into_iter())
            .map(|v| (v * factor / per_unit) as f32)
            .collect()
    }
}

/// Whole signals to write in place of the recording's: (signal index, samples).
pub type NewSamples = Vec<(usize, Vec<f32>)>;

/// Adds simulated blinks to every channel with a propagation factor: the new samples of each
/// such signal and the truth.
pub fn simulate_blinks(
    rec: &Recording,
    seed: u64,
    rate_per_min: f64,
    amplitude_uv: f64,
) -> Result<(NewSamples, Truth), BlinkJobError> {
    if !(rate_per_min > 0.0 && rate_per_min <= 120.0) {
        return Err(BlinkJobError::Selection(format!(
            "the rate must be within (0, 120] blinks per minute, got {rate_per_min}"
        )));
    }
    if !(amplitude_uv > 0.0 && amplitude_uv.is_finite()) {
        return Err(BlinkJobError::Selection(format!(
            "the amplitude must be positive (microvolts), got {amplitude_uv}"
        )));
    }
    let channels: Vec<(String, f64)> = (rec.signals.iter())
        .filter(|s| microvolts_per_unit(&s.unit).is_some())
        .filter_map(|s| Some((s.label.clone(), propagation(&s.label)?)))
        .collect();
    if channels.is_empty() {
        return Err(BlinkJobError::Selection(
            "no channel has a known 10-20/10-10 position or an EOG label to put blinks on".into(),
        ));
    }
    let base = base_blinks(rec)?;
    let near_base = |b: &SimBlink| {
        (base.iter()).any(|&p| p > b.onset_s - 1.0 && p < b.onset_s + b.duration_s + 1.0)
    };
    let truth = Truth {
        seed,
        rate_per_min,
        amplitude_uv,
        blinks: simulate::schedule(rec.duration_s(), rate_per_min, amplitude_uv, seed)
            .into_iter()
            .filter(|b| !near_base(b))
            .collect(),
        channels,
        base_blinks: base,
    };
    let mut out = Vec::new();
    for (i, s) in rec.signals.iter().enumerate() {
        if !truth.channels.iter().any(|(l, _)| *l == s.label) {
            continue;
        }
        let mut x = rec.read_all(i)?;
        x.iter_mut()
            .zip(truth.added(rec, i))
            .for_each(|(v, a)| *v += a);
        out.push((i, x));
    }
    Ok((out, truth))
}

/// How a cleaning did against the truth.
#[derive(Debug, Clone, Serialize)]
pub struct Score {
    pub blinks_true: usize,
    pub blinks_found: usize,
    pub true_positives: usize,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// RMS of (cleaned - clean) inside the true blinks over RMS of the added blinks there, %,
    /// over the cleaned EEG channels that received blinks.
    pub residual_inside_pct: f64,
    /// RMS of (cleaned - clean) outside the blinks (0.5 s margins) over the clean signal's
    /// RMS there, %, same channels.
    pub change_outside_pct: f64,
    pub rmse_inside: f64,
    pub rmse_outside: f64,
    /// The residual inside blinks that removing the ideal spatial filter's output would leave:
    /// see `spatial_floor_pct`. `None` when it cannot be computed (no blink added, or a
    /// singular covariance).
    pub spatial_floor_pct: Option<f64>,
    pub elapsed_s: f64,
}

/// A hit is a found blink within this many seconds of a true one (one-to-one).
pub const HIT_S: f64 = 0.15;

/// The channels a score compares: without blinks, the blinks added, after cleaning, and
/// which channels count.
pub struct Compared<'a> {
    pub clean: &'a Observations,
    pub added: &'a Observations,
    pub cleaned: &'a Observations,
    pub scored: &'a [bool],
}

/// Scores found blink peaks (seconds) and a cleaning against the truth.
pub fn score(truth: &Truth, found_s: &[f64], fs: f64, c: &Compared<'_>, elapsed_s: f64) -> Score {
    let real = |t: f64| truth.base_blinks.iter().any(|&p| (p - t).abs() < 0.5);
    let found_s: Vec<f64> = found_s.iter().copied().filter(|&t| !real(t)).collect();
    let found_s = found_s.as_slice();
    let Compared {
        clean,
        added,
        cleaned,
        scored,
    } = *c;
    let mut used = vec![false; found_s.len()];
    let mut tp = 0;
    for b in &truth.blinks {
        let best = (0..found_s.len())
            .filter(|&k| !used[k] && (found_s[k] - b.peak_s).abs() <= HIT_S)
            .min_by(|&a, &c| {
                (found_s[a] - b.peak_s)
                    .abs()
                    .total_cmp(&(found_s[c] - b.peak_s).abs())
            });
        if let Some(k) = best {
            used[k] = true;
            tp += 1;
        }
    }
    let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    let precision = ratio(tp, found_s.len());
    let recall = ratio(tp, truth.blinks.len());
    let f1 = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    let n = clean.cols;
    let mut inside = vec![false; n];
    let mut near = vec![false; n];
    for b in &truth.blinks {
        let span = |a: f64, z: f64| {
            ((a * fs).floor().max(0.0) as usize)..((z * fs).ceil() as usize).min(n)
        };
        inside[span(b.onset_s, b.onset_s + b.duration_s)].fill(true);
        near[span(b.onset_s - 0.5, b.onset_s + b.duration_s + 0.5)].fill(true);
    }
    for &p in &truth.base_blinks {
        let lo = ((p - 0.5) * fs).floor().max(0.0) as usize;
        near[lo.min(n)..(((p + 0.5) * fs).ceil() as usize).min(n)].fill(true);
    }
    let (mut err_in, mut blink_in, mut err_out, mut sig_out) = (0.0, 0.0, 0.0, 0.0);
    let (mut n_in, mut n_out) = (0usize, 0usize);
    for i in (0..clean.rows).filter(|&i| scored[i]) {
        let (c, a, y) = (clean.row(i), added.row(i), cleaned.row(i));
        let mean_out = {
            let (s, k) = (0..n)
                .filter(|&t| !near[t])
                .fold((0.0, 0usize), |(s, k), t| (s + c[t] as f64, k + 1));
            s / k.max(1) as f64
        };
        for t in 0..n {
            let e = (y[t] - c[t]) as f64;
            if inside[t] {
                err_in += e * e;
                blink_in += (a[t] as f64).powi(2);
                n_in += 1;
            } else if !near[t] {
                err_out += e * e;
                sig_out += (c[t] as f64 - mean_out).powi(2);
                n_out += 1;
            }
        }
    }
    let pct = |e: f64, s: f64| if s > 0.0 { 100.0 * (e / s).sqrt() } else { 0.0 };
    let blink = simulate::waveform(&truth.blinks, fs, n);
    let spatial_floor_pct = spatial_floor_pct(c, &blink, &inside, &near);
    Score {
        blinks_true: truth.blinks.len(),
        blinks_found: found_s.len(),
        true_positives: tp,
        precision,
        recall,
        f1,
        residual_inside_pct: pct(err_in, blink_in),
        change_outside_pct: pct(err_out, sig_out),
        rmse_inside: (err_in / n_in.max(1) as f64).sqrt(),
        rmse_outside: (err_out / n_out.max(1) as f64).sqrt(),
        spatial_floor_pct,
        elapsed_s,
    }
}

/// A reference for the residual inside blinks: any removal that subtracts the blink
/// topography a times a spatially filtered trace w^T x (ICA's A_c s_c is one) also subtracts
/// w^T times the EEG, a (w^T e(t)), inside the blinks. Over filters that pass the blink whole
/// (w^T a = 1), the minimum-variance one, w = C^-1 a / (a^T C^-1 a) with C the clean signal's
/// covariance outside blinks, leaves the least; this is its residual, % of the added blinks,
/// with the true topography (`blink` is the added waveform at factor 1, per sample). It
/// depends on the recording, not the method: frontal EEG the blink's topography cannot tell
/// apart stays in any spatial estimate of the blink.
fn spatial_floor_pct(
    c: &Compared<'_>,
    blink: &[f64],
    inside: &[bool],
    near: &[bool],
) -> Option<f64> {
    let rows: Vec<usize> = (0..c.clean.rows).filter(|&i| c.scored[i]).collect();
    let bb: f64 = blink.iter().map(|v| v * v).sum();
    if rows.len() < 2 || bb <= 0.0 {
        return None;
    }
    // Each channel's factor: the least-squares gain of its added blinks on the waveform.
    let a = nalgebra::DVector::from_iterator(
        rows.len(),
        rows.iter().map(|&i| {
            let added = c.added.row(i);
            blink
                .iter()
                .zip(added)
                .map(|(b, &v)| b * v as f64)
                .sum::<f64>()
                / bb
        }),
    );
    let out: Vec<usize> = (0..c.clean.cols).filter(|&t| !near[t]).collect();
    let centred: Vec<Vec<f64>> = (rows.iter())
        .map(|&i| {
            let x = c.clean.row(i);
            let mean = out.iter().map(|&t| x[t] as f64).sum::<f64>() / out.len().max(1) as f64;
            x.iter().map(|&v| v as f64 - mean).collect()
        })
        .collect();
    let cov = DMatrix::from_fn(rows.len(), rows.len(), |i, j| {
        out.iter()
            .map(|&t| centred[i][t] * centred[j][t])
            .sum::<f64>()
            / out.len().max(1) as f64
    });
    let ca = cov.cholesky()?.solve(&a);
    let w = &ca / a.dot(&ca);
    let (mut leak, mut held) = (0.0, 0.0);
    for t in (0..blink.len()).filter(|&t| inside[t]) {
        let l: f64 = (0..rows.len()).map(|k| w[k] * centred[k][t]).sum();
        leak += l * l;
        held += blink[t] * blink[t];
    }
    (held > 0.0).then(|| 100.0 * (leak / held).sqrt())
}

/// The clean channels of a simulated recording (`data` minus the truth's blinks) and the
/// blinks added to each.
pub fn unblinked(rec: &Recording, data: &EegData, truth: &Truth) -> (Observations, Observations) {
    let n = data.data.cols;
    let mut clean = data.data.clone();
    let mut added = Observations::new(data.data.rows, n, vec![0.0; data.data.rows * n]);
    for (k, &i) in data.signals.iter().enumerate() {
        let a = truth.added(rec, i);
        let row = k * n..(k + 1) * n;
        clean.data[row.clone()]
            .iter_mut()
            .zip(&a)
            .for_each(|(v, a)| *v -= a);
        added.data[row].copy_from_slice(&a[..n]);
    }
    (clean, added)
}

/// The effect of a cleaning on real blinks: the blinks are the frontal derivations'
/// candidates in the original (every window, as the detector finds them before ICA).
#[derive(Debug, Clone, Serialize)]
pub struct RealBlinkEffect {
    pub blinks: usize,
    pub frontal: String,
    /// Median over blinks of the band-passed (1-8 Hz) height left at the blink peak on the
    /// frontal channel, % of the original's.
    pub frontal_residual_pct: f64,
    pub posterior: Vec<String>,
    /// RMS of the change over RMS of the original, outside blinks (0.5 s either side of each
    /// peak), averaged over the posterior channels, %.
    pub posterior_change_pct: f64,
    /// The same for channels in the keep list (0 when they are left unchanged).
    pub kept_change_pct: f64,
}

pub fn real_blink_effect(
    original: &EegData,
    cleaned: &Observations,
    params: &BlinkParams,
    frontal: &str,
    posterior: &[String],
) -> Result<RealBlinkEffect, BlinkJobError> {
    let find = |name: &str| {
        (original.channels.labels.iter())
            .position(|l| l.eq_ignore_ascii_case(name))
            .ok_or_else(|| BlinkJobError::Selection(format!("no channel named {name:?}")))
    };
    let f = find(frontal)?;
    let post: Vec<usize> = posterior
        .iter()
        .map(|p| find(p))
        .collect::<Result<_, _>>()?;
    let fs = original.fs;
    let x = &original.data;
    let n = x.cols;
    let peaks = original.candidates(params);
    let levels = dwt::levels_in_band(fs, params.band_hz);
    let before = dwt::band(x.row(f), &levels);
    let after = dwt::band(cleaned.row(f), &levels);
    let mut ratios: Vec<f64> = (peaks.iter())
        .filter(|&&p| before[p] > 0.0)
        .map(|&p| (after[p] / before[p]).abs() as f64)
        .collect();
    ratios.sort_by(f64::total_cmp);
    let median = ratios.get(ratios.len() / 2).copied().unwrap_or(0.0);
    let margin = (0.5 * fs) as usize;
    let mut near = vec![false; n];
    for &p in &peaks {
        near[p.saturating_sub(margin)..(p + margin).min(n)].fill(true);
    }
    let change = |rows: &[usize]| -> f64 {
        let per: Vec<f64> = (rows.iter())
            .map(|&i| {
                let (o, c) = (x.row(i), cleaned.row(i));
                let out: Vec<usize> = (0..n).filter(|&t| !near[t]).collect();
                let mean = out.iter().map(|&t| o[t] as f64).sum::<f64>() / out.len().max(1) as f64;
                let e: f64 = out.iter().map(|&t| ((c[t] - o[t]) as f64).powi(2)).sum();
                let s: f64 = out.iter().map(|&t| (o[t] as f64 - mean).powi(2)).sum();
                if s > 0.0 { 100.0 * (e / s).sqrt() } else { 0.0 }
            })
            .collect();
        per.iter().sum::<f64>() / per.len().max(1) as f64
    };
    let kept: Vec<usize> = (0..x.rows).filter(|&i| original.channels.keep[i]).collect();
    Ok(RealBlinkEffect {
        blinks: peaks.len(),
        frontal: original.channels.labels[f].clone(),
        frontal_residual_pct: 100.0 * median,
        posterior: post
            .iter()
            .map(|&i| original.channels.labels[i].clone())
            .collect(),
        posterior_change_pct: change(&post),
        kept_change_pct: change(&kept),
    })
}

/// The score of a cleaning of a simulated recording `rec` (whose truth is `truth`).
pub fn score_cleaning(
    rec: &Recording,
    data: &EegData,
    truth: &Truth,
    cleaned: &Observations,
    blinks: &[blink::Blink],
    elapsed_s: f64,
) -> Score {
    let (clean, added) = unblinked(rec, data, truth);
    let scored: Vec<bool> = (0..data.data.rows)
        .map(|k| !data.channels.keep[k] && added.row(k).iter().any(|&v| v != 0.0))
        .collect();
    let found: Vec<f64> = blinks.iter().map(|b| b.peak as f64 / data.fs).collect();
    let compared = Compared {
        clean: &clean,
        added: &added,
        cleaned,
        scored: &scored,
    };
    score(truth, &found, data.fs, &compared, elapsed_s)
}
