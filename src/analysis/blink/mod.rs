//! Blink-removal jobs: the EEG of a recording taken in (`EegData`), cleaned window by window
//! with FastICA or JADE on the CPU or the GPU (`Deblinker`), written back in the input's own
//! format. The measurements (simulated blinks and their score, the effect of a cleaning on a
//! real recording) are in `measure`.

pub mod families;
pub mod measure;

use std::time::Instant;

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use super::Backend;
use super::xapen::{RanOn, cpu_name};
pub use measure::*;

use crate::dsp::blink::classify::EventClass;
use crate::dsp::blink::simulate::microvolts_per_unit;
use crate::dsp::blink::{self, BlinkError, BlinkParams, Channels, Deblinked};
use crate::dsp::ica::{self, Algorithm, Approach, FastIcaParams, Ica, IcaError, Observations};
use crate::gpu::GpuContext;
use crate::gpu::ica::GpuFastIca;
use crate::recording::{ChannelType, ReadError, Recording, convert, edf_write, most_common_rate};

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

/// FastICA iterations per window in the pipeline (half of sklearn's and MNE's 200; FastICA's
/// own default is the thesis's 1000). Windows whose ICA does not converge within it are
/// reported; the blink component, the most non-Gaussian, converges long before the rest. A
/// third of the windows of the EEGLAB sample with simulated blinks every 4 s ran to 200, and
/// took 60 % of the iterations; at 100 the removal's measures did not move beyond their
/// seed-to-seed spread (BENCHMARKS) and the whole process takes a third less.
pub const PIPELINE_MAX_ITER: usize = 100;

/// FastICA's tolerance in the pipeline: every unmixing vector within 1 - cos = 1e-3 (2.6
/// degrees) of its last value. sklearn's 1e-4 took a third more iterations on the EEGLAB
/// sample with blinks every 4 s, and the removal's measures moved within their seed-to-seed
/// spread (BENCHMARKS).
pub const PIPELINE_TOL: f64 = 1e-3;

impl Default for DeblinkOptions {
    fn default() -> Self {
        DeblinkOptions {
            params: BlinkParams::default(),
            algorithm: Algorithm::Fastica,
            fastica: FastIcaParams {
                max_iter: PIPELINE_MAX_ITER,
                tol: PIPELINE_TOL,
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
    /// Each channel's samples times `scale`: voltages in microvolts, MEG in fT and fT/cm,
    /// so that ICA sees EEG and MEG rows of comparable size.
    pub data: Observations,
    /// Units of `data` per unit of the recording's signal (1 for a signal in microvolts).
    pub scale: Vec<f64>,
    /// Each channel's position where the file gives one (scalp maps).
    pub positions: Vec<Option<[f64; 3]>>,
}

/// The unit of a blink removal's rows for a signal's unit, and how many of them one of the
/// signal's units is: microvolts for voltages, fT for T, fT/cm for T/m; `None` for others.
pub fn row_unit(unit: &str) -> Option<(&'static str, f64)> {
    match unit.trim() {
        "T" => Some(("fT", 1e15)),
        "T/m" => Some(("fT/cm", 1e13)),
        u => microvolts_per_unit(u).map(|k| ("uV", k)),
    }
}

impl EegData {
    pub fn load(rec: &Recording, opts: &DeblinkOptions) -> Result<Self, BlinkJobError> {
        let eeg = |i: usize| {
            let s = &rec.signals[i];
            let kinds = [
                ChannelType::Eeg,
                ChannelType::Eog,
                ChannelType::Mag,
                ChannelType::Grad,
            ];
            row_unit(&s.unit).is_some() && kinds.contains(&s.kind) && !s.bad && s.samples > 0
        };
        let candidates: Vec<usize> = (0..rec.signals.len()).filter(|&i| eeg(i)).collect();
        let Some(fs) = most_common_rate(candidates.iter().map(|&i| rec.signals[i].fs)) else {
            return Err(BlinkJobError::Selection(
                "the recording has no EEG or MEG channels in a voltage or MEG unit (uV, mV, V, \
                 T, T/m)"
                    .into(),
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
        let eog: Vec<bool> = (signals.iter())
            .map(|&i| rec.signals[i].kind == ChannelType::Eog)
            .collect();
        let channels = Channels::resolve(
            &labels,
            Some(&eog),
            opts.detect.as_deref(),
            opts.keep.as_deref(),
        )?;
        let scale: Vec<f64> = (signals.iter())
            .map(|&i| row_unit(&rec.signals[i].unit).map_or(1.0, |u| u.1))
            .collect();
        let mut data = vec![0.0f32; signals.len() * samples];
        for ((row, &i), &k) in data
            .chunks_exact_mut(samples.max(1))
            .zip(&signals)
            .zip(&scale)
        {
            rec.read(i, 0, row)?;
            if k != 1.0 {
                row.iter_mut().for_each(|v| *v = (*v as f64 * k) as f32);
            }
        }
        Ok(EegData {
            positions: signals.iter().map(|&i| rec.signals[i].position).collect(),
            signals,
            fs,
            channels,
            data: Observations::new(labels.len(), samples, data),
            scale,
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
            scale: self.scale.clone(),
            positions: self.positions.clone(),
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
/// (issue 26's kernels) the GPU takes 0.12 s for 200 iterations at 64 x 5000 against 16 CPU
/// threads' 0.20 s, and 0.022-0.03 s at 32 x 5000 against 0.012-0.02 s. `Deblinker::forced`
/// lifts the rule.
pub const MIN_GPU_CHANNELS: usize = 48;

/// Whether ICA with `opts` on `channels` channels runs on a GPU where there is one (at least
/// `min_channels`: `MIN_GPU_CHANNELS`, or 0 where the GPU is asked for). A batch command opens
/// the GPU only where this holds: opening Vulkan costs a process 0.25-0.35 s, as long as the
/// whole blink removal of the EEGLAB sample.
pub fn runs_on_gpu(opts: &DeblinkOptions, channels: usize, min_channels: usize) -> bool {
    opts.algorithm == Algorithm::Fastica
        && opts.fastica.approach == Approach::Symmetric
        && channels >= min_channels
}

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
        let fits = runs_on_gpu(opts, channels, self.min_gpu_channels);
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
            // FastICA unmixes the whole window as it finishes (the GPU's without computing the
            // subsample's sources).
            (Algorithm::Fastica, Some(g)) if stride > 1 => {
                return g.fastica_with_sources_of(fit, Some((x, rows)), &opts.fastica, warm);
            }
            (Algorithm::Fastica, Some(g)) => g.fastica(fit, &opts.fastica, warm),
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
    /// The length of the data cleaned, seconds (blinks per minute are `blinks` over it).
    pub duration_s: f64,
    pub blinks: Vec<BlinkTimes>,
    /// Every candidate of the detector with its class (`classify`): what was removed and
    /// what was left alone.
    pub events: Vec<EventTimes>,
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
            duration_s: data.data.cols as f64 / data.fs,
            blinks: blink_times(&result.blinks, data.fs),
            events: event_times(&result.events, data.fs),
            windows: (result.windows.iter())
                .map(|w| WindowReport {
                    start_s: w.start as f64 / data.fs,
                    components_removed: w.removed.clone(),
                    iterations: w.iterations(),
                    converged: w.converged(),
                    candidates: w.events.len(),
                })
                .collect(),
            elapsed_s,
            ran_on,
        }
    }
}

/// A candidate as the report gives it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EventTimes {
    #[serde(flatten)]
    pub times: BlinkTimes,
    pub class: EventClass,
}

pub fn event_times(events: &[blink::EyeEvent], fs: f64) -> Vec<EventTimes> {
    (events.iter())
        .map(|e| EventTimes {
            times: times_of(&e.span, fs),
            class: e.class,
        })
        .collect()
}

pub fn blink_times(blinks: &[blink::Blink], fs: f64) -> Vec<BlinkTimes> {
    blinks.iter().map(|b| times_of(b, fs)).collect()
}

fn times_of(b: &blink::Blink, fs: f64) -> BlinkTimes {
    BlinkTimes {
        peak_s: b.peak as f64 / fs,
        onset_s: b.start as f64 / fs,
        duration_s: (b.end - b.start) as f64 / fs,
    }
}

/// Writes `rec` with the cleaned channels of `data` replaced by `cleaned`: EDF and BDF in
/// their own format (everything else as it was), other formats converted to BDF+ (EDF+ for an
/// `.edf` name).
pub fn write_cleaned(
    rec: &Recording,
    data: &EegData,
    cleaned: &Observations,
    out: &std::path::Path,
) -> Result<(), ReadError> {
    // Back in the signals' own units.
    let unscaled: Vec<(usize, Vec<f32>)> = (data.signals.iter().enumerate())
        .filter(|(k, _)| !data.channels.keep[*k])
        .map(|(k, &i)| {
            let s = data.scale[k];
            let row = cleaned.row(k);
            (i, row.iter().map(|&v| (v as f64 / s) as f32).collect())
        })
        .collect();
    let replaced: Vec<(usize, &[f32])> = unscaled.iter().map(|(i, r)| (*i, &r[..])).collect();
    match rec.format.edf_family() {
        Some(_) => edf_write::write_replacing(rec, out, &replaced),
        None => convert::write_converted(rec, out, &replaced),
    }
}

/// Runs a whole blink removal of a recording: (data, result, seconds, where it ran).
pub fn deblink_recording(
    rec: &Recording,
    opts: &DeblinkOptions,
    gpu: Option<&GpuContext>,
    force_gpu: bool,
) -> Result<(EegData, Deblinked, f64, RanOn), BlinkJobError> {
    let data = EegData::load(rec, opts)?;
    let (result, elapsed, ran_on) = deblink_data(&data, opts, gpu, force_gpu)?;
    Ok((data, result, elapsed, ran_on))
}

/// `deblink_recording` of EEG already taken in.
pub fn deblink_data(
    data: &EegData,
    opts: &DeblinkOptions,
    gpu: Option<&GpuContext>,
    force_gpu: bool,
) -> Result<(Deblinked, f64, RanOn), BlinkJobError> {
    let mut d = Deblinker::new(gpu);
    if force_gpu {
        d = d.forced();
    }
    let t0 = Instant::now();
    let result = d.run(data, opts, &mut |_, _| true)?;
    let ran_on = d.ran_on(opts, data.data.rows);
    Ok((result, t0.elapsed().as_secs_f64(), ran_on))
}
