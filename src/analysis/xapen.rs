//! The Cross-ApEn job: which channels and epochs of a recording, the statistic's parameters,
//! and the backend. The GUI and `ede xapen` both run it through here.

use rayon::prelude::*;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use serde::Serialize;

use super::Backend;
use crate::dsp::xapen::{
    self, Cancel, Correction, CpuMethod, Epochs, XapenError, XapenMatrices, XapenParams,
};
use crate::gpu::xapen::{Readback, XapenKernels};
use crate::recording::Recording;

/// What a result was computed on: the backend and the device's name.
pub type RanOn = (Backend, String);

/// The most memory one piece of a job's samples may take (raw and normalized together).
const MAX_INPUT_BYTES: f64 = 4e9;
/// Jobs larger than this are not kept whole in memory (the view reruns them from the file).
pub const BLOCK_BYTES: f64 = 1e9;
/// `run` reads and computes a job in consecutive blocks of epochs of this size, each read while
/// the one before is computed. A whole night (3.8 GB of samples) took 4.0 s in blocks of 1 GB
/// and 2.3-2.5 s in blocks of 64-250 MB (warm cache, H100): the first block, read with nothing
/// to overlap it, and each block's copy into the upload buffer, are smaller.
pub const STREAM_BLOCK_BYTES: f64 = 250e6;

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

/// The epoch length a recording's channels of `samples` samples take by default: 1024 (the
/// paper's), or the longest power of two from 16 up that fits once in shorter runs (a 10 s MEG
/// run of 900 samples: 512).
pub fn default_epoch_len(samples: usize) -> usize {
    let mut len = 1024;
    while len > 16 && len > samples {
        len /= 2;
    }
    len
}

impl XapenJob {
    /// How many epochs the job covers, after checking the channels and parameters.
    pub fn epoch_count(&self, rec: &Recording) -> Result<usize, JobError> {
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
            let asked = match self.epochs {
                EpochCount::All => "at least 1 epoch".to_string(),
                EpochCount::Count(k) => format!("{k} epoch(s)"),
            };
            return Err(JobError::Selection(format!(
                "{asked} of {} samples from sample {} asked for; the channels hold {} samples \
                 from there ({available} whole epoch(s)): choose an epoch of at most {} samples",
                self.epoch_len,
                self.start_sample,
                samples.saturating_sub(self.start_sample),
                default_epoch_len(samples.saturating_sub(self.start_sample)),
            )));
        }
        Ok(count)
    }

    /// Bytes the job's samples take in memory (raw and normalized copies).
    fn input_bytes(&self, count: usize) -> f64 {
        (count * self.channels.len() * self.epoch_len) as f64 * 8.0
    }

    /// The job cut into consecutive jobs of whole epochs, each needing at most `block_bytes`
    /// of memory for its samples (at least one epoch each).
    pub fn blocks(&self, rec: &Recording, block_bytes: f64) -> Result<Vec<XapenJob>, JobError> {
        let count = self.epoch_count(rec)?;
        let per_block = ((block_bytes / self.input_bytes(1)) as usize).clamp(1, count);
        Ok((0..count)
            .step_by(per_block)
            .map(|k| XapenJob {
                start_sample: self.start_sample + k * self.epoch_len,
                epochs: EpochCount::Count(per_block.min(count - k)),
                ..self.clone()
            })
            .collect())
    }

    /// Whether the job is small enough to read in one piece.
    pub fn fits_in_one_block(&self, rec: &Recording) -> Result<bool, JobError> {
        Ok(self.input_bytes(self.epoch_count(rec)?) <= BLOCK_BYTES)
    }

    /// Reads and normalizes the job's epochs.
    pub fn input(&self, rec: &Recording) -> Result<Epochs, JobError> {
        let count = self.epoch_count(rec)?;
        let (n, b) = (self.epoch_len, self.channels.len());
        // Raw and normalized copies are held at once; past this, ask for less rather than
        // take the machine's memory.
        let bytes = self.input_bytes(count);
        if bytes > MAX_INPUT_BYTES {
            return Err(JobError::Selection(format!(
                "{count} epochs x {b} channels x {n} samples need {:.1} GB in memory (at most {:.0} GB): \
                 choose fewer epochs or channels",
                bytes / 1e9,
                MAX_INPUT_BYTES / 1e9
            )));
        }
        // One read per channel, on every core (decoding a night took longer than counting it),
        // then scattered into [epoch][channel][sample].
        let channels: Vec<Vec<f32>> = self
            .channels
            .par_iter()
            .map(|&signal| {
                let mut all = vec![0f32; count * n];
                rec.read(signal, self.start_sample, &mut all)?;
                Ok(all)
            })
            .collect::<Result<_, JobError>>()?;
        let mut raw = vec![0f32; count * b * n];
        raw.par_chunks_mut(b * n)
            .enumerate()
            .for_each(|(e, epoch)| {
                for (c, all) in channels.iter().enumerate() {
                    epoch[c * n..][..n].copy_from_slice(&all[e * n..][..n]);
                }
            });
        // Two copies at most, as `input_bytes` counts: these, or raw and normalized.
        drop(channels);
        Ok(Epochs::normalize(&raw, n, b)?)
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
    /// Channels flat in some epochs: (label, number of epochs).
    #[serde(skip)]
    pub flat: Vec<(String, usize)>,
}

impl XapenReport {
    /// The report of `job` on `rec`; `mean` is row-major, NaN where no epoch was valid.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        rec: &Recording,
        job: &XapenJob,
        epochs: usize,
        mean: &[f64],
        per_epoch: Option<Vec<Vec<Vec<f64>>>>,
        (backend, adapter): RanOn,
        elapsed_s: f64,
        flat_epochs: &[usize],
    ) -> Self {
        let b = job.channels.len();
        let channels: Vec<String> = job
            .channels
            .iter()
            .map(|&c| rec.signals[c].label.clone())
            .collect();
        let flat: Vec<(String, usize)> = channels
            .iter()
            .zip(flat_epochs)
            .filter(|&(_, &k)| k > 0)
            .map(|(l, &k)| (l.clone(), k))
            .collect();
        let warnings = flat
            .iter()
            .map(|(label, k)| {
                format!(
                    "{label} is flat in {k} of {epochs} epoch(s): its entropy is undefined there \
                     (NaN), and the mean leaves those epochs out"
                )
            })
            .collect();
        XapenReport {
            file: rec
                .path
                .as_ref()
                .map_or_else(|| rec.display_name(), |p| p.display().to_string()),
            channels,
            m: job.params.m,
            r: job.params.r,
            correction: job.params.correction,
            epoch_len: job.epoch_len,
            epochs,
            start_sample: job.start_sample,
            matrix: rows(mean, b),
            per_epoch,
            backend,
            adapter,
            elapsed_s,
            warnings,
            flat,
        }
    }

    /// The mean matrix, row-major.
    pub fn mean(&self) -> Vec<f64> {
        self.matrix.concat()
    }
}

/// Runs a job on the given backend (the GPU when `kernels` is given, else the CPU fast path),
/// in blocks of epochs when it is large. `Ok(None)` when cancelled.
pub fn run(
    rec: &Recording,
    job: &XapenJob,
    kernels: Option<&mut XapenKernels>,
    cancel: Cancel,
    done: Option<&AtomicUsize>,
) -> Result<Option<XapenReport>, JobError> {
    run_in_blocks(rec, job, kernels, cancel, done, STREAM_BLOCK_BYTES)
}

/// `run` with the block size given (tests use small ones).
pub fn run_in_blocks(
    rec: &Recording,
    job: &XapenJob,
    mut kernels: Option<&mut XapenKernels>,
    cancel: Cancel,
    done: Option<&AtomicUsize>,
    block_bytes: f64,
) -> Result<Option<XapenReport>, JobError> {
    let t = Instant::now();
    let b = job.channels.len();
    // Per cell, the sum of epoch values and their number, over all blocks, in f64.
    let mut sums = vec![[0f64; 2]; b * b];
    let mut per_epoch: Option<Vec<Vec<Vec<f64>>>> = job.per_epoch.then(Vec::new);
    let mut flat = vec![0usize; b];
    let mut epochs = 0;
    let mut ran_on = (Backend::Cpu, cpu_name());
    let blocks = job.blocks(rec, block_bytes)?;
    let finished = std::thread::scope(|scope| -> Result<bool, JobError> {
        // The next block is read, decoded and normalized on its own thread while this one is
        // computed (a rendezvous channel: two blocks in memory at most). Whole nights spent
        // a quarter of their time here with the GPU idle.
        let (tx, rx) = std::sync::mpsc::sync_channel(0);
        scope.spawn(move || {
            for block in &blocks {
                // An error on the other side (or a cancel) drops the receiver: stop reading.
                if xapen::cancelled(cancel) || tx.send(block.input(rec)).is_err() {
                    break;
                }
            }
        });
        for ep in rx {
            let ep = ep?;
            let Some((matrices, on)) = compute(
                &ep,
                &job.params,
                job.per_epoch,
                kernels.as_deref_mut(),
                cancel,
                done,
            )?
            else {
                return Ok(false);
            };
            ran_on = on;
            for ((sum, mean), valid) in sums
                .iter_mut()
                .zip(&matrices.mean)
                .zip(ep.valid_pair_epochs())
            {
                if valid > 0 {
                    sum[0] += mean * valid as f64;
                    sum[1] += valid as f64;
                }
            }
            if let (Some(all), Some(p)) = (per_epoch.as_mut(), &matrices.per_epoch) {
                all.extend(p.chunks(b * b).map(|m| rows(m, b)));
            }
            for (f, k) in flat.iter_mut().zip(ep.flat_epochs()) {
                *f += k;
            }
            epochs += ep.epochs;
        }
        Ok(true)
    });
    // The blocks shared the GPU buffers; a whole night's are too large to keep idle.
    if let Some(k) = kernels {
        k.trim_spare();
    }
    if !finished? {
        return Ok(None);
    }
    let mean: Vec<f64> = sums.iter().map(|&[s, c]| xapen::mean_of(s, c)).collect();
    Ok(Some(XapenReport::new(
        rec,
        job,
        epochs,
        &mean,
        per_epoch,
        ran_on,
        t.elapsed().as_secs_f64(),
        &flat,
    )))
}

/// The matrices of normalized epochs on the GPU when `kernels` is given, else on the CPU fast
/// path, and what they ran on. `Ok(None)` when cancelled.
pub fn compute(
    ep: &Epochs,
    params: &XapenParams,
    per_epoch: bool,
    kernels: Option<&mut XapenKernels>,
    cancel: Cancel,
    done: Option<&AtomicUsize>,
) -> Result<Option<(XapenMatrices, RanOn)>, JobError> {
    Ok(match kernels {
        Some(k) => {
            let readback = Readback {
                per_epoch,
                totals: false,
            };
            k.matrices(ep, params, readback, cancel, done)?
                .map(|res| (res.matrices, (Backend::Gpu, k.context().describe())))
        }
        None => xapen::cpu_matrices(ep, params, CpuMethod::Fast, cancel, done)?.map(|mut res| {
            if !per_epoch {
                res.per_epoch = None;
            }
            (res, (Backend::Cpu, cpu_name()))
        }),
    })
}

/// A row-major square matrix as rows.
fn rows(m: &[f64], b: usize) -> Vec<Vec<f64>> {
    m.chunks(b).map(<[f64]>::to_vec).collect()
}

/// "CPU (N threads)" for reports.
pub fn cpu_name() -> String {
    format!("CPU ({} threads)", rayon::current_num_threads())
}
