//! The Cross-ApEn job: which channels and epochs of a recording, the statistic's parameters,
//! and the backend. The GUI and `ede xapen` both run it through here.

use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use serde::Serialize;

use super::Backend;
use crate::dsp::xapen::{
    self, Cancel, Correction, CpuMethod, Epochs, XapenError, XapenMatrices, XapenParams,
};
use crate::gpu::GpuContext;
use crate::gpu::xapen::{Readback, XapenKernels};
use crate::recording::Recording;

/// The most memory a job's samples may take (raw and normalized together).
const MAX_INPUT_BYTES: f64 = 4e9;

/// Which epochs of the recording: consecutive, non-overlapping, from a start sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpochCount {
    /// As many whole epochs as the recording holds after the start.
    All,
    Count(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub struct XapenJob {
    /// Signal indices in the recording; every one must have the same sampling rate.
    pub channels: Vec<usize>,
    pub epoch_len: usize,
    pub epochs: EpochCount,
    pub start_sample: usize,
    pub params: XapenParams,
    pub per_epoch: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error(transparent)]
    Xapen(#[from] XapenError),
    #[error("{0}")]
    Selection(String),
    #[error(transparent)]
    Read(#[from] crate::recording::ReadError),
    #[error(transparent)]
    Gpu(#[from] crate::gpu::xapen::GpuXapenError),
}

/// The epochs a job covers, read and normalized.
pub struct JobInput {
    pub labels: Vec<String>,
    pub epochs: Epochs,
    /// Channels flat in some epochs: (label, number of epochs).
    pub flat: Vec<(String, usize)>,
}

impl XapenJob {
    /// Reads and normalizes the job's epochs.
    pub fn input(&self, rec: &Recording) -> Result<JobInput, JobError> {
        let first = *self
            .channels
            .first()
            .ok_or_else(|| JobError::Selection("no channels are selected".into()))?;
        let fs = rec.signals[first].fs;
        let mut samples = usize::MAX;
        for &c in &self.channels {
            let s = &rec.signals[c];
            if s.fs != fs {
                return Err(JobError::Selection(format!(
                    "channels must share one sampling rate: {} has {} Hz, {} has {} Hz",
                    rec.signals[first].label, fs, s.label, s.fs
                )));
            }
            samples = samples.min(s.samples);
        }
        self.params.check(self.epoch_len)?;
        let available = samples.saturating_sub(self.start_sample) / self.epoch_len;
        let count = match self.epochs {
            EpochCount::All => available,
            EpochCount::Count(k) => k,
        };
        if count == 0 || count > available {
            return Err(JobError::Selection(format!(
                "{} epoch(s) of {} samples from sample {} are asked for; the recording holds {}",
                count, self.epoch_len, self.start_sample, available
            )));
        }
        let (n, b) = (self.epoch_len, self.channels.len());
        // Raw and normalized copies are held at once; past this, ask for less rather than
        // take the machine's memory.
        let bytes = (count * b * n) as f64 * 8.0;
        if bytes > MAX_INPUT_BYTES {
            return Err(JobError::Selection(format!(
                "{count} epochs x {b} channels x {n} samples need {:.1} GB in memory (at most {:.0} GB): \
                 choose fewer epochs or channels",
                bytes / 1e9,
                MAX_INPUT_BYTES / 1e9
            )));
        }
        let mut raw = vec![0f32; count * b * n];
        for (c, &signal) in self.channels.iter().enumerate() {
            // One read per channel, then scattered into [epoch][channel][sample].
            let mut all = vec![0f32; count * n];
            rec.read(signal, self.start_sample, &mut all)?;
            for e in 0..count {
                raw[(e * b + c) * n..][..n].copy_from_slice(&all[e * n..][..n]);
            }
        }
        let epochs = Epochs::normalize(&raw, n, b)?;
        let labels: Vec<String> = self
            .channels
            .iter()
            .map(|&c| rec.signals[c].label.clone())
            .collect();
        let flat = labels
            .iter()
            .enumerate()
            .filter_map(|(c, l)| {
                let k = (0..count).filter(|&e| !epochs.is_valid(e, c)).count();
                (k > 0).then(|| (l.clone(), k))
            })
            .collect();
        Ok(JobInput {
            labels,
            epochs,
            flat,
        })
    }
}

/// What a finished job gives: the fields of `ede xapen`'s JSON.
#[derive(Debug, Clone, Serialize)]
pub struct XapenReport {
    pub file: String,
    pub channels: Vec<String>,
    pub m: usize,
    pub r: f32,
    pub correction: Correction,
    pub epoch_len: usize,
    pub epochs: usize,
    pub start_sample: usize,
    /// Row u, column v: Cross-ApEn(u||v), the mean over epochs; null where a channel is flat.
    pub matrix: Vec<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_epoch: Option<Vec<Vec<Vec<f64>>>>,
    pub backend: Backend,
    pub adapter: String,
    pub elapsed_s: f64,
    pub warnings: Vec<String>,
}

/// Runs a job on the given backend (the GPU when `kernels` is given, else the CPU fast path).
/// `Ok(None)` when cancelled.
pub fn run(
    rec: &Recording,
    job: &XapenJob,
    kernels: Option<&mut XapenKernels>,
    cancel: Cancel,
    done: Option<&AtomicUsize>,
) -> Result<Option<XapenReport>, JobError> {
    let t = Instant::now();
    let input = job.input(rec)?;
    let ep = &input.epochs;
    let (matrices, backend, adapter): (XapenMatrices, _, _) = match kernels {
        Some(k) => {
            let readback = Readback {
                per_epoch: job.per_epoch,
                totals: false,
            };
            let Some(res) = k.matrices(ep, &job.params, readback, cancel, done)? else {
                return Ok(None);
            };
            (res.matrices, Backend::Gpu, k.context().describe())
        }
        None => {
            let Some(mut res) =
                xapen::cpu_matrices(ep, &job.params, CpuMethod::Fast, cancel, done)?
            else {
                return Ok(None);
            };
            if !job.per_epoch {
                res.per_epoch = None;
            }
            (res, Backend::Cpu, cpu_name())
        }
    };
    let b = ep.channels;
    let rows = |m: &[f64]| m.chunks(b).map(<[f64]>::to_vec).collect::<Vec<_>>();
    let per_epoch = matrices
        .per_epoch
        .as_ref()
        .map(|p| p.chunks(b * b).map(rows).collect());
    let warnings = input
        .flat
        .iter()
        .map(|(label, k)| {
            format!(
                "{label} is flat in {k} of {} epoch(s): its entropy is undefined there (NaN), \
                 and the mean leaves those epochs out",
                ep.epochs
            )
        })
        .collect();
    Ok(Some(XapenReport {
        file: rec
            .path
            .as_ref()
            .map_or_else(|| rec.display_name(), |p| p.display().to_string()),
        channels: input.labels,
        m: job.params.m,
        r: job.params.r,
        correction: job.params.correction,
        epoch_len: job.epoch_len,
        epochs: ep.epochs,
        start_sample: job.start_sample,
        matrix: rows(&matrices.mean),
        per_epoch,
        backend,
        adapter,
        elapsed_s: t.elapsed().as_secs_f64(),
        warnings,
    }))
}

/// "CPU (N threads)" for reports.
pub fn cpu_name() -> String {
    format!("CPU ({} threads)", rayon::current_num_threads())
}

/// A GPU for batch work, or the reason there is none (said once by the caller).
pub fn open_gpu() -> Result<XapenKernels, crate::gpu::GpuError> {
    let ctx = GpuContext::headless()?;
    Ok(XapenKernels::new(&ctx))
}
