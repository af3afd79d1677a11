//! Hermite beat-fit jobs: the beats of an ECG channel (from its beat annotations, or from the
//! QRS detector), cut into windows once, then fitted and refitted (`Fitter`) on the GPU or
//! the CPU; the report `ede hermite` writes and the beat explorer exports.

use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use super::Backend;
use super::xapen::{RanOn, cpu_name};
use crate::dsp::filter::condition_ecg;
use crate::dsp::hermite::{Basis, BeatWindow, Fits, HermiteError, HermiteParams};
use crate::dsp::qrs;
pub use crate::dsp::stats::mean_sd;
use crate::gpu::GpuContext;
use crate::gpu::hermite::{GpuBeats, GpuHermiteError, HermiteKernels};
use crate::recording::{ChannelType, ReadError, Recording};

#[derive(Debug, thiserror::Error)]
pub enum HermiteJobError {
    #[error(transparent)]
    Params(#[from] HermiteError),
    #[error(transparent)]
    Gpu(#[from] GpuHermiteError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{0}")]
    Selection(String),
    #[error("cancelled")]
    Cancelled,
}

/// The MIT-BIH beat annotation symbols (normal, bundle branch blocks, premature and escape
/// beats, fusion, paced, unclassifiable).
pub const BEAT_LABELS: [&str; 19] = [
    "N", "L", "R", "B", "A", "a", "J", "S", "V", "r", "F", "e", "j", "n", "E", "/", "f", "Q", "?",
];

/// The beat label an annotation text carries (its first word), if it is one.
pub fn beat_label(text: &str) -> Option<&'static str> {
    let word = text.split_whitespace().next()?;
    BEAT_LABELS.iter().copied().find(|&l| l == word)
}

/// The ECG conditioning before a fit (`dsp::filter::condition_ecg`), or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum EcgFilter {
    /// Baseline removal (200 and 600 ms medians) and a 40 Hz zero-phase low-pass.
    Default,
    None,
}

/// Where the beats came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BeatSource {
    Annotations,
    Detector,
    /// Fiducial samples handed in by the caller (the Python package's `beats=`).
    Given,
}

/// A beat that was not fitted, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkippedBeat {
    pub sample: usize,
    pub label: Option<String>,
    pub reason: &'static str,
}

/// The beats of one ECG channel, ready to fit.
pub struct EcgBeats {
    pub signal: usize,
    pub channel: String,
    pub fs: f64,
    pub filter: EcgFilter,
    pub source: BeatSource,
    pub window: BeatWindow,
    /// The channel as fitted (conditioned unless the filter is `None`), physical units.
    pub ecg: Vec<f32>,
    /// Fiducial sample of each fitted beat, increasing.
    pub samples: Vec<usize>,
    /// Each fitted beat's time in seconds from the recording's start (across EDF+D gaps).
    pub times: Vec<f64>,
    pub labels: Vec<Option<String>>,
    /// `[beat][2h]`: each fitted beat's window, without the zero padding.
    pub windows: Vec<f32>,
    pub skipped: Vec<SkippedBeat>,
}

/// The channel an ECG analysis takes when none is named: the first of type ECG (from the
/// format, or from a label such as ECG, EKG, MLII or a limb or chest lead), `None` where there
/// is none: an EEG channel fitted as an ECG gives numbers that mean nothing.
pub fn default_ecg_channel(rec: &Recording) -> Option<usize> {
    (rec.signals.iter()).position(|s| s.kind == ChannelType::Ecg)
}

/// The error for a recording without an ECG channel: it lists the channels to pick from.
pub fn no_ecg_channel(rec: &Recording) -> String {
    let labels: Vec<String> = (rec.signals.iter())
        .map(|s| format!("{} ({})", s.label.trim(), s.kind.name()))
        .collect();
    format!(
        "{} has no ECG channel; name one with --channel. Its channels: {}",
        rec.display_name(),
        labels.join(", ")
    )
}

/// The beats of channel `signal` (its conditioned samples `ecg`), by sample and label: from
/// the recording's beat annotations, or from the QRS detector when there are none or
/// `detector` is set (then a detected beat takes the label of a beat annotation within 150 ms,
/// if any).
pub fn find_beats(
    rec: &Recording,
    signal: usize,
    ecg: &[f32],
    detector: bool,
) -> (BeatSource, Vec<(usize, Option<String>)>) {
    let fs = rec.signals[signal].fs;
    let annotated: Vec<(usize, &'static str)> = rec
        .annotations
        .iter()
        .filter_map(|a| Some((rec.sample_at(signal, a.onset)?, beat_label(&a.text)?)))
        .collect();
    if annotated.is_empty() || detector {
        let tolerance = (0.15 * fs).round() as usize;
        let found = qrs::detect(ecg, fs)
            .into_iter()
            .map(|d| {
                let label = annotated
                    .iter()
                    .filter(|(a, _)| a.abs_diff(d) <= tolerance)
                    .min_by_key(|(a, _)| a.abs_diff(d))
                    .map(|(_, l)| l.to_string());
                (d, label)
            })
            .collect();
        (BeatSource::Detector, found)
    } else {
        let mut beats: Vec<_> = annotated
            .iter()
            .map(|&(a, l)| (a, Some(l.to_string())))
            .collect();
        beats.sort_by_key(|b| b.0);
        (BeatSource::Annotations, beats)
    }
}

impl EcgBeats {
    /// Reads channel `signal` whole, conditions it, and takes its beats (`find_beats`).
    pub fn prepare(
        rec: &Recording,
        signal: usize,
        filter: EcgFilter,
        detector: bool,
    ) -> Result<Self, HermiteJobError> {
        Self::prepare_with(rec, signal, filter, |ecg| {
            find_beats(rec, signal, ecg, detector)
        })
    }

    /// `prepare` with the beats at the fiducial samples `given` (unlabelled).
    pub fn prepare_given(
        rec: &Recording,
        signal: usize,
        filter: EcgFilter,
        given: &[usize],
    ) -> Result<Self, HermiteJobError> {
        let beats = || given.iter().map(|&s| (s, None)).collect();
        Self::prepare_with(rec, signal, filter, |_| (BeatSource::Given, beats()))
    }

    fn prepare_with(
        rec: &Recording,
        signal: usize,
        filter: EcgFilter,
        beats_of: impl FnOnce(&[f32]) -> (BeatSource, Vec<(usize, Option<String>)>),
    ) -> Result<Self, HermiteJobError> {
        let info = rec.signals.get(signal).ok_or_else(|| {
            HermiteJobError::Selection(format!("the recording has no signal {signal}"))
        })?;
        let fs = info.fs;
        let window = BeatWindow::new(fs)?;
        let raw = rec.read_all(signal)?;
        let ecg = match filter {
            EcgFilter::Default => condition_ecg(&raw, fs),
            EcgFilter::None => raw,
        };
        let (source, beats) = beats_of(&ecg);
        let mut out = EcgBeats {
            signal,
            channel: info.label.trim().to_string(),
            fs,
            filter,
            source,
            window,
            samples: Vec::with_capacity(beats.len()),
            times: Vec::with_capacity(beats.len()),
            labels: Vec::with_capacity(beats.len()),
            windows: Vec::with_capacity(beats.len() * window.width()),
            skipped: Vec::new(),
            ecg,
        };
        for (sample, label) in beats {
            let reason = match window.start(sample, out.ecg.len()) {
                None => Some("too close to either end of the recording for a whole window"),
                Some(first) => {
                    let w = &out.ecg[first..first + window.width()];
                    if w.iter().all(|v| v.is_finite()) {
                        out.windows.extend_from_slice(w);
                        None
                    } else {
                        Some("the window crosses a gap in the recording")
                    }
                }
            };
            match reason {
                None => {
                    out.samples.push(sample);
                    out.times.push(rec.sample_time(signal, sample));
                    out.labels.push(label);
                }
                Some(reason) => out.skipped.push(SkippedBeat {
                    sample,
                    label,
                    reason,
                }),
            }
        }
        Ok(out)
    }

    pub fn len(&self) -> usize {
        self.samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Beat `i`'s window (2h samples).
    pub fn window_of(&self, i: usize) -> &[f32] {
        let w = self.window.width();
        &self.windows[i * w..(i + 1) * w]
    }
}

/// Fits beats again and again, as the explorer does while its sliders move: the beats stay on
/// the GPU while only the order or the sigmas change. `K` names the beats: an equal key
/// promises equal windows.
pub struct Fitter<K> {
    kernels: Option<HermiteKernels>,
    uploaded: Option<(K, GpuBeats)>,
}

impl<K: PartialEq + Clone> Fitter<K> {
    pub fn new(gpu: Option<&GpuContext>) -> Self {
        Fitter {
            kernels: gpu.map(HermiteKernels::new),
            uploaded: None,
        }
    }

    pub fn context(&self) -> Option<&GpuContext> {
        self.kernels.as_ref().map(|k| k.context())
    }

    /// The best fit of every window (`[beat][2h]` at rate `fs`).
    pub fn fit(
        &mut self,
        key: &K,
        windows: &[f32],
        fs: f64,
        params: &HermiteParams,
        cancel: Option<&AtomicBool>,
    ) -> Result<(Fits, RanOn), HermiteJobError> {
        let width = BeatWindow::new(fs)?.width();
        match &mut self.kernels {
            Some(k) => {
                if self.uploaded.as_ref().is_none_or(|(have, _)| have != key) {
                    self.uploaded = None;
                    let up = k.upload(windows, width).map_err(GpuHermiteError::from)?;
                    self.uploaded = Some((key.clone(), up));
                }
                let (_, up) = self.uploaded.as_ref().expect("uploaded above");
                let fits = k.fit(up, fs, params)?;
                Ok((fits, (Backend::Gpu, k.context().describe())))
            }
            None => {
                let basis = Basis::new(fs, params)?;
                let fits = basis
                    .fit(windows, cancel)
                    .ok_or(HermiteJobError::Cancelled)?;
                Ok((fits, (Backend::Cpu, cpu_name())))
            }
        }
    }
}

/// One fitted beat as reported.
#[derive(Debug, Clone, Serialize)]
pub struct BeatFit {
    pub sample: usize,
    /// Seconds from the recording's start.
    pub time_s: f64,
    pub label: Option<String>,
    /// Seconds.
    pub sigma: f64,
    /// Sum of squared errors over the padded window, in the channel's unit squared.
    pub mse: f64,
    pub coefficients: Vec<f32>,
}

/// The fits of one recording's channel (the JSON of `ede hermite`).
#[derive(Debug, Clone, Serialize)]
pub struct HermiteReport {
    pub record: String,
    pub channel: String,
    pub fs: f64,
    pub order: usize,
    /// The sigma grid, seconds.
    pub sigmas: Vec<f64>,
    pub beats: Vec<BeatFit>,
    pub skipped: Vec<SkippedBeat>,
    /// Mean and SD (ddof = 0) of the fitted beats' MSE.
    pub mse_mean: f64,
    pub mse_sd: f64,
    pub elapsed_s: f64,
    pub beat_source: BeatSource,
    pub filter: EcgFilter,
    pub unit: String,
    pub ran_on: String,
}

impl HermiteReport {
    pub fn new(
        record: String,
        unit: String,
        beats: &EcgBeats,
        params: &HermiteParams,
        fits: &Fits,
        (elapsed_s, ran_on): (f64, String),
    ) -> Result<Self, HermiteJobError> {
        let sigmas = params.sigma_grid()?;
        let rows: Vec<BeatFit> = (0..fits.len())
            .map(|i| BeatFit {
                sample: beats.samples[i],
                time_s: beats.times[i],
                label: beats.labels[i].clone(),
                sigma: sigmas[fits.sigma_index[i] as usize],
                mse: fits.mse[i] as f64,
                coefficients: fits.coefficients_of(i).to_vec(),
            })
            .collect();
        let (mse_mean, mse_sd) = mean_sd(rows.iter().map(|b| b.mse));
        Ok(HermiteReport {
            record,
            channel: beats.channel.clone(),
            fs: beats.fs,
            order: params.order,
            sigmas,
            beats: rows,
            skipped: beats.skipped.clone(),
            mse_mean,
            mse_sd,
            elapsed_s,
            beat_source: beats.source,
            filter: beats.filter,
            unit,
            ran_on,
        })
    }

    /// One row per fitted beat: sample, time, label, sigma, MSE, coefficients.
    pub fn csv(&self) -> String {
        let mut out = String::from("sample,time_s,label,sigma_s,mse");
        for n in 0..self.order {
            out += &format!(",c{n}");
        }
        out.push('\n');
        for b in &self.beats {
            out += &format!(
                "{},{},{},{},{}",
                b.sample,
                b.time_s,
                b.label.as_deref().unwrap_or(""),
                b.sigma,
                b.mse
            );
            for c in &b.coefficients {
                out += &format!(",{c}");
            }
            out.push('\n');
        }
        out
    }
}
