//! Morlet scalogram jobs: |W| of a stretch of signals (`ede cwt`), band power in blocks over
//! whole recordings, streamed in overlapping segments (`ede cwt --band-power`), and the
//! colour-mapped image the scalogram view draws (a texture on the device, or its CPU twin).

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use serde::Serialize;

use super::Backend;
use super::xapen::{RanOn, cpu_name};
use crate::dsp::cwt::{self, CwtError, CwtParams, CwtPlan, PaintSpec};
use crate::gpu::GpuContext;
pub use crate::gpu::cwt::Painted;
use crate::gpu::cwt::{CwtKernels, GpuCwtError, PendingRows, Spectra};
use crate::recording::{ReadError, Recording};

#[derive(Debug, thiserror::Error)]
pub enum CwtJobError {
    #[error(transparent)]
    Cwt(#[from] CwtError),
    #[error(transparent)]
    Gpu(#[from] GpuCwtError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{0}")]
    Selection(String),
    #[error("cannot write the band power: {0}")]
    Write(#[from] std::io::Error),
}

/// The scales of a transform and what they mean.
#[derive(Debug, Clone, Serialize)]
pub struct Axes {
    pub scales: Vec<f64>,
    pub frequencies_hz: Vec<f64>,
}

impl Axes {
    pub fn new(params: &CwtParams, fs: f64) -> Result<Self, CwtError> {
        let scales = params.scales(1.0 / fs)?;
        let frequencies_hz = scales.iter().map(|&s| params.frequency(s)).collect();
        Ok(Axes {
            scales,
            frequencies_hz,
        })
    }
}

/// |W| of `signals` (one length, sampled at `fs`), `[signal][scale][n]`, on the GPU when
/// `gpu` is given.
pub fn magnitude(
    signals: &[&[f32]],
    fs: f64,
    params: &CwtParams,
    gpu: Option<&mut CwtKernels>,
) -> Result<(Axes, Vec<f32>, RanOn), CwtJobError> {
    let axes = Axes::new(params, fs)?;
    let n = signals.first().map_or(0, |s| s.len());
    let dt = 1.0 / fs;
    match gpu {
        Some(k) => {
            let sp = k.spectra(signals, None)?;
            let mag = k.magnitude(&sp, dt, &axes.scales, params.omega0)?;
            let on = (Backend::Gpu, k.context().describe());
            Ok((axes, mag, on))
        }
        None => {
            let plan = CwtPlan::new(n, dt, &axes.scales, params.omega0)?;
            let mag = signals.iter().flat_map(|x| plan.magnitude(x)).collect();
            Ok((axes, mag, (Backend::Cpu, cpu_name())))
        }
    }
}

/// A scalogram image: painted on the device (the GUI with a GPU) or on the CPU.
pub enum Image {
    Device(Painted),
    Cpu(PaintedCpu),
}

/// The CPU twin of `gpu::cwt::Painted`.
pub struct PaintedCpu {
    pub width: usize,
    pub height: usize,
    /// RGBA pixels, row-major.
    pub rgba: Vec<[u8; 4]>,
    /// The value behind each pixel.
    pub values: Vec<f32>,
}

/// A painted scalogram and what it shows.
pub struct Painting {
    pub axes: Axes,
    pub image: Image,
    pub width: usize,
    pub height: usize,
    /// Each signal's top (`PaintSpec::range` makes the colour ranges of them).
    pub tops: Vec<f32>,
    pub ran_on: RanOn,
}

/// Paints scalograms again and again, as a view does while its controls move: the signals'
/// spectra stay on the GPU while only the wavelet or the look changes. `K` names the signals:
/// an equal key promises equal samples.
pub struct Painter<K> {
    kernels: Option<CwtKernels>,
    spectra: Option<(K, Spectra)>,
}

impl<K: PartialEq + Clone> Painter<K> {
    pub fn new(gpu: Option<&GpuContext>) -> Self {
        Painter {
            kernels: gpu.map(CwtKernels::new),
            spectra: None,
        }
    }

    /// The device it paints on, if any.
    pub fn context(&self) -> Option<&GpuContext> {
        self.kernels.as_ref().map(CwtKernels::context)
    }

    /// Paints `signals` (rows: signal by signal, smallest scale first) with the colour map
    /// `lut`, on the GPU when there is one and `backend` asks for it.
    #[allow(clippy::too_many_arguments)]
    pub fn paint(
        &mut self,
        key: &K,
        signals: &[&[f32]],
        fs: f64,
        params: &CwtParams,
        spec: &PaintSpec,
        lut: &[u32; 256],
        backend: Backend,
    ) -> Result<Painting, CwtJobError> {
        let axes = Axes::new(params, fs)?;
        let dt = 1.0 / fs;
        let n = signals.first().map_or(0, |s| s.len());
        let Some(k) = self.kernels.as_mut().filter(|_| backend == Backend::Gpu) else {
            let plan = CwtPlan::new(n, dt, &axes.scales, params.omega0)?;
            let (width, values, tops) = cwt::pixel_values(&plan, signals, spec);
            let rgba = cwt::colour_pixels(&values, &tops, spec, lut);
            let height = values.len() / width;
            return Ok(Painting {
                axes,
                image: Image::Cpu(PaintedCpu {
                    width,
                    height,
                    rgba,
                    values,
                }),
                width,
                height,
                tops,
                ran_on: (Backend::Cpu, cpu_name()),
            });
        };
        if self.spectra.as_ref().is_none_or(|(k, _)| k != key) {
            self.spectra = None;
            self.spectra = Some((key.clone(), k.spectra(signals, None)?));
        }
        let (_, sp) = self.spectra.as_ref().expect("just made");
        let painted = k.paint(sp, dt, &axes.scales, params.omega0, spec, lut)?;
        let tops = painted.tops(k.context(), spec).map_err(GpuCwtError::from)?;
        Ok(Painting {
            axes,
            width: painted.width,
            height: painted.height,
            image: Image::Device(painted),
            tops,
            ran_on: (Backend::Gpu, k.context().describe()),
        })
    }

    /// A device image's pixels and values read back, for a device egui does not draw with.
    pub fn read_back(&self, painted: &Painted) -> Result<PaintedCpu, CwtJobError> {
        let k = self
            .kernels
            .as_ref()
            .expect("device images come from a painter with a GPU");
        let rgba = k.read_texture(painted).map_err(GpuCwtError::from)?;
        let values = painted.values(k.context()).map_err(GpuCwtError::from)?;
        Ok(PaintedCpu {
            width: painted.width,
            height: painted.height,
            rgba,
            values,
        })
    }
}

/// What `ede cwt` writes (the JSON fields, plus where it ran).
#[derive(Debug, Serialize)]
pub struct CwtReport {
    pub file: String,
    pub channel: String,
    pub fs: f64,
    pub start_s: f64,
    pub n: usize,
    pub omega0: f64,
    pub scales: Vec<f64>,
    pub frequencies_hz: Vec<f64>,
    /// Per sample, the longest Fourier period (s) outside the cone of influence.
    pub coi_s: Vec<f64>,
    /// |W|, one row per scale.
    pub magnitude: Vec<Vec<f32>>,
    pub backend: Backend,
    pub adapter: String,
    pub elapsed_s: f64,
}

/// Band power in blocks for a whole recording, streamed: which signals, the wavelet, blocks.
#[derive(Debug, Clone)]
pub struct BandPowerJob {
    /// Signal indices, all of one sampling rate.
    pub channels: Vec<usize>,
    pub params: CwtParams,
    pub block_s: f64,
    /// Padded segment length (a power of two); 0 picks one.
    pub segment: usize,
}

impl BandPowerJob {
    /// Samples in a block at rate `fs` (0: the job refuses it).
    pub fn block_samples(&self, fs: f64) -> usize {
        (self.block_s * fs).round() as usize
    }
}

/// How a recording is cut into segments: each transforms `margin` samples on either side of its
/// `core` (samples outside the recording are the mean, i.e. zero after its removal), and keeps
/// block power of the core only. The margin is where the widest wavelet's Gaussian falls below
/// 1e-16 of its peak, so each core's values equal the whole transform's (with the recording
/// padded by zeros) to rounding.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segmentation {
    pub block: usize,
    pub margin: usize,
    pub core: usize,
    pub m: usize,
}

impl Segmentation {
    pub fn new(
        n: usize,
        block: usize,
        largest_scale_samples: f64,
        m: usize,
    ) -> Result<Self, CwtJobError> {
        let margin = (8.6 * largest_scale_samples).ceil() as usize;
        // Big enough that the margins cost at most about a third, and no longer than needed.
        let m = if m == 0 {
            let want = (3 * (2 * margin + block)).max(1 << 16);
            want.min(n + 2 * margin).next_power_of_two()
        } else {
            m
        };
        let core = (m.saturating_sub(2 * margin) / block) * block;
        if !m.is_power_of_two() || core == 0 {
            return Err(CwtJobError::Selection(format!(
                "segments of {m} samples cannot hold one block of {block} samples between \
                 margins of {margin}: use longer segments, shorter blocks or higher frequencies"
            )));
        }
        Ok(Segmentation {
            block,
            margin,
            core,
            m,
        })
    }
}

fn widen(v: Vec<f32>) -> Vec<f64> {
    v.into_iter().map(f64::from).collect()
}

/// Reads a recording's channels segment by segment as `band_power` transforms them: each
/// segment `[channel][len]` in one vector, its margins outside the recording filled with the
/// channel's mean.
struct SegmentReader<'a> {
    rec: &'a Recording,
    channels: &'a [usize],
    /// The channels' sampling rate, and samples a block.
    fs: f64,
    block: usize,
    seg: Segmentation,
    n: usize,
    /// Samples a segment holds per channel: its core and both margins.
    len: usize,
    /// The whole recording's mean per channel.
    means: Vec<f64>,
}

impl<'a> SegmentReader<'a> {
    /// The segments of `job` over `rec`, checked, with the scales; reads the whole recording
    /// once for its means (a first, cheap pass).
    fn for_job(rec: &'a Recording, job: &'a BandPowerJob) -> Result<(Self, Axes), CwtJobError> {
        let first = *job
            .channels
            .first()
            .ok_or_else(|| CwtJobError::Selection("no channels are selected".into()))?;
        let fs = rec.signals[first].fs;
        if let Some(&c) = job.channels.iter().find(|&&c| rec.signals[c].fs != fs) {
            return Err(CwtJobError::Selection(format!(
                "channels must share one sampling rate: {} has {} Hz, {} has {} Hz",
                rec.signals[first].label, fs, rec.signals[c].label, rec.signals[c].fs
            )));
        }
        let n = job
            .channels
            .iter()
            .map(|&c| rec.signals[c].samples)
            .min()
            .unwrap_or(0);
        let axes = Axes::new(&job.params, fs)?;
        let block = job.block_samples(fs);
        if !(job.block_s.is_finite() && block >= 1) {
            return Err(CwtJobError::Selection(format!(
                "blocks of {} s hold no sample at {fs} Hz",
                job.block_s
            )));
        }
        if n < cwt::MIN_SAMPLES {
            return Err(CwtError::TooShort { n }.into());
        }
        let largest = axes.scales.last().copied().unwrap_or(0.0) * fs;
        let seg = Segmentation::new(n, block, largest, job.segment)?;
        let channels = &job.channels;
        let means = channels
            .par_iter()
            .map(|&c| Ok(rec.sum(c, 0, n)? / n as f64))
            .collect::<Result<_, ReadError>>()?;
        let reader = SegmentReader {
            rec,
            channels,
            fs,
            block,
            seg,
            n,
            len: seg.core + 2 * seg.margin,
            means,
        };
        Ok((reader, axes))
    }

    /// The segment whose core starts at `core_start`, into `flat` (every value written).
    fn read(&self, core_start: usize, flat: &mut [f32]) -> Result<(), ReadError> {
        let (n, len, margin) = (self.n, self.len, self.seg.margin);
        let core_len = self.seg.core.min(n - core_start);
        let from = core_start.saturating_sub(margin);
        let to = (core_start + core_len + margin).min(n);
        let offset = from + margin - core_start;
        (flat.par_chunks_mut(len).zip(self.channels).zip(&self.means)).try_for_each(
            |((x, &c), &mu)| {
                x[..offset].fill(mu as f32);
                x[offset + (to - from)..].fill(mu as f32);
                self.rec.read(c, from, &mut x[offset..offset + (to - from)])
            },
        )
    }

    /// Calls `each(core start, segment)` for every segment in order, the next one read on
    /// another thread meanwhile; `cancel` stops between segments.
    fn each(
        &self,
        cancel: &AtomicBool,
        mut each: impl FnMut(usize, &[f32]) -> Result<(), CwtJobError>,
    ) -> Result<(), CwtJobError> {
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            // Segments' buffers come back to be read into again: fresh pages cost their faults
            // (the batch scalogram's 55 segments of 33 MB).
            let (give_back, given) = std::sync::mpsc::channel::<Vec<f32>>();
            let size = self.channels.len() * self.len;
            let reader = scope.spawn(move || {
                for core_start in (0..self.n).step_by(self.seg.core) {
                    let mut flat = given.try_recv().unwrap_or_else(|_| vec![0f32; size]);
                    let read = self.read(core_start, &mut flat).map(|()| flat);
                    if cancel.load(Ordering::Relaxed) || tx.send((core_start, read)).is_err() {
                        break;
                    }
                }
            });
            for (core_start, flat) in rx.iter() {
                let flat = flat?;
                each(core_start, &flat)?;
                // The reader may have finished: then the buffer is not needed.
                let _ = give_back.send(flat);
            }
            reader.join().map_err(|_| {
                CwtJobError::Selection("the reading thread stopped unexpectedly".into())
            })
        })
    }

    /// As `each`, with each segment passed through `stage` on a thread of its own first (the
    /// GPU's upload into mapped memory), so that `each(core start, staged)` finds it ready;
    /// `stage` gets a flag that is set when `each` stops, and gives `None` when it cannot go
    /// on.
    fn each_staged<T: Send>(
        &self,
        cancel: &AtomicBool,
        stage: impl Fn(&[f32], &AtomicBool) -> Option<T> + Sync,
        mut each: impl FnMut(usize, T) -> Result<(), CwtJobError>,
    ) -> Result<(), CwtJobError> {
        let stop = AtomicBool::new(false);
        let (stop, stage) = (&stop, &stage);
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel(0);
            let stager = scope.spawn(move || {
                self.each(cancel, |core_start, flat| {
                    let staged = stage(flat, stop).ok_or_else(|| {
                        CwtJobError::Selection("the GPU could not take the next segment".into())
                    })?;
                    tx.send((core_start, staged)).map_err(|_| {
                        CwtJobError::Selection("the segments' consumer stopped".into())
                    })
                })
            });
            let mut done = Ok(());
            for (core_start, staged) in rx.iter() {
                done = each(core_start, staged);
                if done.is_err() {
                    break;
                }
            }
            stop.store(true, Ordering::Relaxed);
            drop(rx);
            let staged = stager.join().map_err(|_| {
                CwtJobError::Selection("the staging thread stopped unexpectedly".into())
            })?;
            // A stage stopped by an error here has nothing more to say.
            done.and(staged)
        })
    }
}

/// Reads every segment `band_power` would read and computes nothing: the host's share of a
/// band power job, for benchmarks.
pub fn band_power_reads(rec: &Recording, job: &BandPowerJob) -> Result<usize, CwtJobError> {
    let (reader, _) = SegmentReader::for_job(rec, job)?;
    let mut count = 0;
    reader.each(&AtomicBool::new(false), |_, flat| {
        count += std::hint::black_box(flat).len();
        Ok(())
    })?;
    Ok(count)
}

/// Streams band power over `rec`: for each segment, `emit(first block index, [channel][scale]
/// [block] mean power)`. Never holds more than one segment's transform. `progress(done, total)`
/// is called per segment; `cancel` stops between segments.
pub fn band_power(
    rec: &Recording,
    job: &BandPowerJob,
    gpu: Option<&mut CwtKernels>,
    cancel: &AtomicBool,
    mut progress: impl FnMut(usize, usize),
    mut emit: impl FnMut(usize, &[f64]) -> Result<(), CwtJobError>,
) -> Result<(Axes, RanOn), CwtJobError> {
    let (reader, axes) = SegmentReader::for_job(rec, job)?;
    let (fs, block, seg, n) = (reader.fs, reader.block, reader.seg, reader.n);
    let dt = 1.0 / fs;
    let plan = match gpu {
        Some(_) => None,
        None => Some(CwtPlan::new(
            reader.len,
            dt,
            &axes.scales,
            job.params.omega0,
        )?),
    };
    let segments = n.div_ceil(seg.core);
    let mut ran_on = (Backend::Cpu, cpu_name());
    let mut done = 0;
    let mut emit_segment = |core_start: usize, power: &[f64]| {
        debug_assert_eq!(
            power.len(),
            job.channels.len() * axes.scales.len() * seg.core.min(n - core_start).div_ceil(block)
        );
        emit(core_start / block, power)?;
        done += 1;
        progress(done, segments);
        Ok::<_, CwtJobError>(())
    };
    let means = &reader.means;
    let omega0 = job.params.omega0;
    let core = |core_start: usize| seg.margin..seg.margin + seg.core.min(n - core_start);
    match (gpu, &plan) {
        (Some(kernels), _) => {
            // One segment computes on the GPU while the next is copied into mapped memory (on
            // a thread of its own), the one after it read, and the last read back.
            ran_on = (Backend::Gpu, kernels.context().describe());
            let ring = kernels.upload_ring(job.channels.len(), reader.len);
            let mut pending: Option<(usize, PendingRows)> = None;
            let stage = |flat: &[f32], stop: &AtomicBool| ring.fill(flat, stop);
            reader.each_staged(cancel, stage, |core_start, filled| {
                let sp = kernels.spectra_from_ring(filled, reader.len, means)?;
                let rows = kernels.block_power_start(
                    &sp,
                    dt,
                    &axes.scales,
                    omega0,
                    core(core_start),
                    block,
                );
                kernels.recycle(sp);
                if let Some((start, last)) = pending.replace((core_start, rows?)) {
                    emit_segment(start, &widen(kernels.finish(last)?))?;
                }
                Ok(())
            })?;
            if let Some((start, last)) = pending {
                emit_segment(start, &widen(kernels.finish(last)?))?;
            }
        }
        (None, Some(plan)) => reader.each(cancel, |core_start, flat| {
            let power: Vec<f64> = (flat.chunks(reader.len).zip(means))
                .flat_map(|(x, &mu)| plan.block_power(x, mu, core(core_start), block))
                .collect();
            emit_segment(core_start, &power)
        })?,
        (None, None) => unreachable!("a CPU plan is made when there is no GPU"),
    }
    Ok((axes, ran_on))
}
