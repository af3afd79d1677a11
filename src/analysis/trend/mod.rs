//! Whole-recording trends, the recording cut in time into pieces computed on all cores, each
//! read in chunks:
//! - CDSA: each segment's Welch spectrum (`dsp::spectrum`) in dB, per trace or averaged over
//!   a group of traces (a hemisphere);
//! - aEEG (`dsp::aeeg`): each segment's lower and upper envelope edges and their margins.
//!
//! Traces are montage derivations (`dsp::montage`), so the trends follow what the browser
//! shows; `ede trend` passes the channels as recorded.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::dsp::aeeg::{Aeeg, AeegParams, LANES, margins};
use crate::dsp::montage::Derivation;
use crate::dsp::montage::apply::{derive, derive_on};
use crate::dsp::spectrum::{Welch, WelchParams};
use crate::recording::{ReadError, Recording, reading_unit, volts_per_unit};

mod gpu;
pub use gpu::{run_growing, run_on};

#[derive(Debug, thiserror::Error)]
pub enum TrendError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{0}")]
    Params(String),
    #[error(transparent)]
    Gpu(#[from] crate::gpu::GpuError),
}

/// Seconds a piece reads at a time: at 256 Hz a channel's is 30 KB, so a chunk of 64
/// channels stays in the core's cache from decoding to the last trend (16 threads: 1.80 s with
/// 30 s chunks, 1.91 s with 120 s). Reused allocations, not fresh pages the kernel zeroes.
const CHUNK_S: f64 = 30.0;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CdsaParams {
    pub segment_s: f64,
    /// Welch's segment within a CDSA segment (its frequency resolution is 1 / block).
    pub block_s: f64,
    pub overlap: f64,
}

impl Default for CdsaParams {
    fn default() -> Self {
        CdsaParams {
            segment_s: 30.0,
            block_s: 2.0,
            overlap: 0.5,
        }
    }
}

/// A named group of traces (indices into the job's derivations) whose spectra are averaged
/// into one CDSA row.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub name: String,
    pub traces: Vec<usize>,
}

pub struct TrendJob {
    pub derivations: Vec<Derivation>,
    /// CDSA rows; none: no CDSA.
    pub cdsa_groups: Vec<Group>,
    pub cdsa: CdsaParams,
    /// Traces whose aEEG is computed; none: no aEEG.
    pub aeeg_traces: Vec<usize>,
    pub aeeg: AeegParams,
}

#[derive(Debug, Clone, Serialize)]
pub struct CdsaTrend {
    pub segment_s: f64,
    pub block_s: f64,
    pub overlap: f64,
    pub channels: Vec<String>,
    pub frequencies_hz: Vec<f64>,
    /// `10 log10` of the density, re 1 (reader's unit)^2/Hz (`reading_unit`: uV, fT, fT/cm).
    pub unit: String,
    /// `[row][segment][frequency]`, segments from the start, the last partial one dropped.
    pub power: Vec<Vec<Vec<f32>>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AeegTrend {
    pub params: AeegParams,
    pub channels: Vec<String>,
    /// `[channel][segment]`, microvolts.
    pub lower_uv: Vec<Vec<f32>>,
    pub upper_uv: Vec<Vec<f32>>,
    /// `[channel][group of margin_segments segments]`, microvolts.
    pub lower_margin_uv: Vec<Vec<f32>>,
    pub upper_margin_uv: Vec<Vec<f32>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Trends {
    pub fs: f64,
    pub cdsa: Option<CdsaTrend>,
    pub aeeg: Option<AeegTrend>,
    pub seconds: f64,
}

/// Seconds each piece's aEEG filters run before its first segment, from rest: the slowest
/// pole (the envelope low-pass's, time constant about 0.8 s) decays by e^-24 meanwhile, so
/// pieces computed apart equal one pass to f32 precision.
const WARM_S: f64 = 20.0;

/// A CDSA row's spectra so far and its unfinished segment's samples per trace.
struct CdsaRow {
    /// Indices into the piece's chunks.
    traces: Vec<usize>,
    pending: Vec<Vec<f32>>,
    power: Vec<Vec<f32>>,
}

impl CdsaRow {
    /// Appends a chunk's samples from `skip` on and computes every segment they complete.
    fn push(&mut self, chunk: &[Vec<f32>], skip: usize, welch: &Welch, segment: usize) {
        for (p, &t) in self.pending.iter_mut().zip(&self.traces) {
            p.extend_from_slice(&chunk[t][skip..]);
        }
        let whole = self.pending[0].len() / segment;
        for s in 0..whole {
            let mut sum: Vec<f64> = Vec::new();
            for p in &self.pending {
                let psd = (welch.psd(&p[s * segment..(s + 1) * segment]))
                    .expect("a segment holds a whole block, checked");
                if sum.is_empty() {
                    sum = psd;
                } else {
                    sum.iter_mut().zip(psd).for_each(|(a, b)| *a += b);
                }
            }
            let k = self.pending.len() as f64;
            (self.power).push(
                sum.iter()
                    .map(|v| (10.0 * (v / k).log10()) as f32)
                    .collect(),
            );
        }
        for p in &mut self.pending {
            p.drain(..whole * segment);
        }
    }
}

/// What one piece of the recording gives: per CDSA row its spectra, per aEEG bank its edges.
struct Piece {
    power: Vec<Vec<Vec<f32>>>,
    edges: Vec<Vec<Vec<(f32, f32)>>>,
}

/// Everything a piece needs, shared by all of them.
struct Plan<'a> {
    rec: &'a Recording,
    job: &'a TrendJob,
    fs: f64,
    /// The traces read, sorted; chunks are indexed by position in it.
    read: Vec<usize>,
    cdsa: Option<(Welch, usize)>,
    /// Per CDSA row, its traces' positions in `read`.
    rows: Vec<Vec<usize>>,
    /// Per bank, positions in `read` and microvolts per unit.
    banks: Vec<(Vec<usize>, Vec<f64>)>,
}

impl Plan<'_> {
    /// Computes `range` (its start on a segment boundary of both trends), reading it in chunks;
    /// `Ok(None)` when cancelled.
    fn piece(
        &self,
        range: std::ops::Range<usize>,
        cancel: &AtomicBool,
        read: &AtomicUsize,
        done: &AtomicUsize,
    ) -> Result<Option<Piece>, TrendError> {
        let mut rows: Vec<CdsaRow> = (self.rows.iter())
            .map(|traces| CdsaRow {
                traces: traces.clone(),
                pending: vec![Vec::new(); traces.len()],
                power: Vec::new(),
            })
            .collect();
        let mut aeeg: Vec<Aeeg> = (self.banks.iter())
            .map(|(_, k)| Aeeg::new(self.fs, self.job.aeeg, k))
            .collect::<Result<_, _>>()
            .map_err(TrendError::Params)?;
        let warm = match aeeg.is_empty() {
            true => 0,
            false => (WARM_S * self.fs).round() as usize,
        };
        let chunk = ((CHUNK_S * self.fs).round() as usize).max(1);
        let from = range.start.saturating_sub(warm);
        for at in (from..range.end).step_by(chunk) {
            if cancel.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let len = chunk.min(range.end - at);
            let data = derive_on(self.rec, &self.job.derivations, &self.read, at, len, false)?;
            let skip = range.start.saturating_sub(at).min(len);
            if let Some((welch, segment)) = &self.cdsa {
                rows.iter_mut()
                    .for_each(|r| r.push(&data, skip, welch, *segment));
            }
            for (a, (traces, _)) in aeeg.iter_mut().zip(&self.banks) {
                let channels: Vec<&[f32]> = traces.iter().map(|&t| &data[t][..]).collect();
                let before: Vec<&[f32]> = channels.iter().map(|c| &c[..skip]).collect();
                let after: Vec<&[f32]> = channels.iter().map(|c| &c[skip..]).collect();
                a.prime(&before);
                a.push(&after);
            }
            let total = read.fetch_add(len - skip, Ordering::Relaxed) + len - skip;
            done.store((total as f64 / self.fs) as usize, Ordering::Relaxed);
        }
        Ok(Some(Piece {
            power: rows.into_iter().map(|r| r.power).collect(),
            edges: aeeg.into_iter().map(|a| a.edges).collect(),
        }))
    }
}

/// `[0, n)` cut into about `count` pieces that start on multiples of `align` (the last one
/// takes the rest).
fn pieces(n: usize, align: usize, count: usize) -> Vec<std::ops::Range<usize>> {
    let units = n / align;
    let mut starts: Vec<usize> = (0..count.max(1))
        .map(|k| units * k / count.max(1) * align)
        .collect();
    starts.dedup();
    (starts.iter().enumerate())
        .map(|(k, &s)| s..starts.get(k + 1).copied().unwrap_or(n))
        .collect()
}

/// What both paths need of a job: the rate and length, the CDSA's Welch plan and segment,
/// the traces read (sorted: the CPU's chunks and the GPU's rows are in this order), the aEEG
/// traces' microvolts per unit, each CDSA row's traces as positions in `read`, and the aEEG
/// segment's samples.
struct Shape {
    fs: f64,
    n: usize,
    cdsa: Option<(Welch, usize)>,
    read: Vec<usize>,
    scales: Vec<f64>,
    rows: Vec<Vec<usize>>,
    aeeg_segment: usize,
}

fn shape(rec: &Recording, job: &TrendJob) -> Result<Shape, TrendError> {
    let (fs, n) = rate_and_length(rec, job)?;
    let cdsa = match job.cdsa_groups.is_empty() {
        true => None,
        false => Some(cdsa_plan(&job.cdsa, fs)?),
    };
    let mut read: Vec<usize> = (job.cdsa_groups.iter())
        .flat_map(|g| g.traces.iter().copied())
        .chain(job.aeeg_traces.iter().copied())
        .collect();
    read.sort_unstable();
    read.dedup();
    let scales: Vec<f64> = (job.aeeg_traces.iter())
        .map(|&t| {
            let d = &job.derivations[t];
            let unit = &rec.signals[d.plus].unit;
            volts_per_unit(unit).map(|v| v / 1e-6).ok_or_else(|| {
                TrendError::Params(format!(
                    "aEEG needs voltages: {} is in {unit:?}",
                    d.label.trim()
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    let position = |t: usize| read.binary_search(&t).expect("read lists every trace");
    let rows: Vec<Vec<usize>> = match cdsa {
        None => Vec::new(),
        Some(_) => (job.cdsa_groups.iter())
            .map(|g| g.traces.iter().map(|&t| position(t)).collect())
            .collect(),
    };
    let aeeg_segment = match job.aeeg_traces.is_empty() {
        true => 1,
        false => job.aeeg.segment_len(fs).map_err(TrendError::Params)?,
    };
    Ok(Shape {
        fs,
        n,
        cdsa,
        read,
        scales,
        rows,
        aeeg_segment,
    })
}

/// Runs `job` over `rec`; `done` counts the seconds computed so far (of `span_s(rec, job)`).
/// `Ok(None)` when cancelled.
///
/// The recording is cut in time into more pieces than there are threads, each read and
/// computed on its own: every core works whatever the channel count, and reading and
/// decoding are shared among them. A piece's aEEG filters start `WARM_S` early.
pub fn run(
    rec: &Recording,
    job: &TrendJob,
    cancel: &AtomicBool,
    done: &AtomicUsize,
) -> Result<Option<Trends>, TrendError> {
    let started = Instant::now();
    let Shape {
        fs,
        n,
        cdsa,
        read,
        scales,
        rows,
        aeeg_segment,
    } = shape(rec, job)?;
    let position = |t: usize| read.binary_search(&t).expect("read lists every trace");
    let banks: Vec<(Vec<usize>, Vec<f64>)> = (job.aeeg_traces.chunks(LANES))
        .zip(scales.chunks(LANES))
        .map(|(t, k)| (t.iter().map(|&t| position(t)).collect(), k.to_vec()))
        .collect();
    let cdsa_segment = cdsa.as_ref().map_or(1, |c| c.1);
    let align = num_integer::lcm(cdsa_segment, aeeg_segment);
    let plan = Plan {
        rec,
        job,
        fs,
        read,
        cdsa,
        rows,
        banks,
    };
    let samples = AtomicUsize::new(0);
    // Twice as many pieces as threads: one slower piece leaves less of the end idle.
    let pieces: Vec<Option<Piece>> = pieces(n, align, 2 * rayon::current_num_threads())
        .into_par_iter()
        .map(|r| plan.piece(r, cancel, &samples, done))
        .collect::<Result<_, _>>()?;
    let Some(pieces) = pieces.into_iter().collect::<Option<Vec<Piece>>>() else {
        return Ok(None);
    };
    let (unit, db) = cdsa_unit(rec, job);
    let power: Vec<Vec<Vec<f32>>> = (0..job.cdsa_groups.len())
        .map(|r| {
            (pieces.iter())
                .flat_map(|p| {
                    p.power[r]
                        .iter()
                        .map(|row| row.iter().map(|v| v + db).collect())
                })
                .collect()
        })
        .collect();
    // Per channel, its edges over every piece in order.
    let edges: Vec<Vec<(f32, f32)>> = (plan.banks.iter().enumerate())
        .flat_map(|(b, (traces, _))| (0..traces.len()).map(move |c| (b, c)))
        .map(|(b, c)| {
            (pieces.iter())
                .flat_map(|p| p.edges[b][c].iter().copied())
                .collect()
        })
        .collect();
    let welch = plan.cdsa.map(|(welch, _)| welch);
    Ok(Some(assemble(
        job,
        fs,
        welch.as_ref(),
        unit,
        power,
        edges,
        started,
    )))
}

/// The CDSA's unit and the dB that carry the file's into it: the reader's unit whatever the
/// file's (dB re 1 uV^2/Hz for EEG, fT^2/Hz for MEG).
fn cdsa_unit(rec: &Recording, job: &TrendJob) -> (String, f32) {
    let file_unit = job.cdsa_groups.first().map_or("", |g| {
        rec.signals[job.derivations[g.traces[0]].plus].unit.as_str()
    });
    let (unit, per_unit) = reading_unit(file_unit);
    (
        format!("dB re 1 {unit}^2/Hz"),
        (20.0 * per_unit.log10()) as f32,
    )
}

/// `Trends` from every CDSA row's spectra (`[row][segment][bin]`, dB in `unit`) and every aEEG
/// trace's edges (`[trace][segment]`), whichever path computed them.
fn assemble(
    job: &TrendJob,
    fs: f64,
    welch: Option<&Welch>,
    unit: String,
    power: Vec<Vec<Vec<f32>>>,
    edges: Vec<Vec<(f32, f32)>>,
    started: Instant,
) -> Trends {
    let label = |t: usize| job.derivations[t].label.trim().to_string();
    let cdsa = welch.map(|welch| CdsaTrend {
        segment_s: job.cdsa.segment_s,
        block_s: job.cdsa.block_s,
        overlap: job.cdsa.overlap,
        channels: job.cdsa_groups.iter().map(|g| g.name.clone()).collect(),
        frequencies_hz: welch.frequencies(),
        unit,
        power,
    });
    let aeeg = (!job.aeeg_traces.is_empty()).then(|| {
        let margins: Vec<Vec<(f32, f32)>> = (edges.iter())
            .map(|e| margins(e, job.aeeg.margin_segments))
            .collect();
        let side = |v: &[(f32, f32)], upper: bool| -> Vec<f32> {
            v.iter().map(|e| if upper { e.1 } else { e.0 }).collect()
        };
        AeegTrend {
            params: job.aeeg,
            channels: job.aeeg_traces.iter().map(|&t| label(t)).collect(),
            lower_uv: edges.iter().map(|e| side(e, false)).collect(),
            upper_uv: edges.iter().map(|e| side(e, true)).collect(),
            lower_margin_uv: margins.iter().map(|m| side(m, false)).collect(),
            upper_margin_uv: margins.iter().map(|m| side(m, true)).collect(),
        }
    });
    Trends {
        fs,
        cdsa,
        aeeg,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Welch densities of some traces over a time range (the browser's spectrum dock).
#[derive(Debug, Clone)]
pub struct PagePsd {
    pub fs: f64,
    pub labels: Vec<String>,
    pub frequencies_hz: Vec<f64>,
    /// Per trace; traces of another rate, unit or type than the first are left out.
    pub psd: Vec<Vec<f64>>,
    pub unit: String,
}

impl PagePsd {
    /// A frequency column and a column per trace.
    pub fn csv(&self) -> String {
        let mut s = String::from("frequency_hz");
        for l in &self.labels {
            s += &format!(",{}", l.replace(',', " "));
        }
        s.push('\n');
        for (k, f) in self.frequencies_hz.iter().enumerate() {
            s += &format!("{f}");
            for p in &self.psd {
                s += &format!(",{:e}", p[k]);
            }
            s.push('\n');
        }
        s
    }
}

/// The densities of `traces` over `(t0, t1)` seconds, Welch segments of `segment_s` (shorter
/// when the range is), half overlapped.
pub fn page_psd(
    rec: &Recording,
    derivations: &[Derivation],
    traces: &[usize],
    (t0, t1): (f64, f64),
    segment_s: f64,
) -> Result<PagePsd, TrendError> {
    let first = *traces
        .first()
        .ok_or_else(|| TrendError::Params("no traces on the page".into()))?;
    let signal = &rec.signals[derivations[first].plus];
    let fs = signal.fs;
    // One axis: the traces of the first one's rate, unit and type.
    let same: Vec<usize> = (traces.iter().copied())
        .filter(|&t| {
            let s = &rec.signals[derivations[t].plus];
            s.fs == fs && s.unit == signal.unit && s.kind == signal.kind
        })
        .collect();
    let start = rec
        .sample_at(derivations[first].plus, t0.max(0.0))
        .unwrap_or(0);
    let len = (((t1 - t0) * fs).round() as usize).min(signal.samples.saturating_sub(start));
    let segment_s = segment_s.min(len as f64 / fs);
    let params = WelchParams::from_seconds(fs, segment_s, 0.5).map_err(TrendError::Params)?;
    let welch = Welch::new(fs, params);
    let data = derive(rec, derivations, &same, start, len)?;
    let (unit, per_unit) = reading_unit(&signal.unit);
    let psd: Vec<Vec<f64>> = data
        .par_iter()
        .map(|x| {
            // A gap's NaN samples would blank every bin: they count as the mean.
            let finite: Vec<f32> = x.iter().copied().filter(|v| v.is_finite()).collect();
            let mean = finite.iter().map(|&v| v as f64).sum::<f64>() / finite.len().max(1) as f64;
            let filled: Vec<f32> = (x.iter())
                .map(|&v| if v.is_finite() { v } else { mean as f32 })
                .collect();
            welch
                .psd(&filled)
                .unwrap_or_else(|| vec![f64::NAN; params.bins()])
        })
        .collect();
    Ok(PagePsd {
        fs,
        labels: same
            .iter()
            .map(|&t| derivations[t].label.trim().to_string())
            .collect(),
        frequencies_hz: welch.frequencies(),
        psd: (psd.into_iter())
            .map(|p| p.into_iter().map(|v| v * per_unit * per_unit).collect())
            .collect(),
        unit: format!("{unit}^2/Hz"),
    })
}

/// Reads and derives every chunk `run` would and computes nothing: the host's share, for
/// benchmarks.
pub fn read_only(rec: &Recording, job: &TrendJob) -> Result<usize, TrendError> {
    let (fs, n) = rate_and_length(rec, job)?;
    let chunk = ((CHUNK_S * fs).round() as usize).max(1);
    let group: Vec<usize> = (0..job.derivations.len()).collect();
    (pieces(n, chunk, 2 * rayon::current_num_threads()).into_par_iter())
        .map(|r| {
            let mut count = 0;
            for at in r.clone().step_by(chunk) {
                let data = derive_on(
                    rec,
                    &job.derivations,
                    &group,
                    at,
                    chunk.min(r.end - at),
                    false,
                )?;
                count += std::hint::black_box(data).len();
            }
            Ok(count)
        })
        .sum()
}

/// The traces' common rate and the samples every one has; an error for mixed rates or
/// groups that name no trace.
pub fn rate_and_length(rec: &Recording, job: &TrendJob) -> Result<(f64, usize), TrendError> {
    let used: Vec<usize> = (job.cdsa_groups.iter())
        .flat_map(|g| g.traces.iter().copied())
        .chain(job.aeeg_traces.iter().copied())
        .collect();
    if used.is_empty() || job.cdsa_groups.iter().any(|g| g.traces.is_empty()) {
        return Err(TrendError::Params(
            "no channels to compute trends of".into(),
        ));
    }
    if let Some(&bad) = used.iter().find(|&&t| t >= job.derivations.len()) {
        return Err(TrendError::Params(format!("no trace {bad}")));
    }
    let first = &rec.signals[job.derivations[used[0]].plus];
    let fs = first.fs;
    let mut n = usize::MAX;
    for &t in &used {
        let s = &rec.signals[job.derivations[t].plus];
        if s.fs != fs {
            return Err(TrendError::Params(format!(
                "trend channels must share one rate: {} has {} Hz, {} has {fs} Hz",
                s.label.trim(),
                s.fs,
                first.label.trim()
            )));
        }
        n = n.min(s.samples);
    }
    Ok((fs, n))
}

/// The seconds `run` reads, for progress.
pub fn span_s(rec: &Recording, job: &TrendJob) -> f64 {
    rate_and_length(rec, job)
        .map(|(fs, n)| n as f64 / fs)
        .unwrap_or(0.0)
}

/// The Welch plan of a CDSA segment and the segment's length in samples.
fn cdsa_plan(p: &CdsaParams, fs: f64) -> Result<(Welch, usize), TrendError> {
    let params = WelchParams::from_seconds(fs, p.block_s, p.overlap)
        .map_err(|e| TrendError::Params(format!("CDSA block: {e}")))?;
    let segment = (p.segment_s * fs).round();
    if !(segment.is_finite() && segment as usize >= params.segment) {
        return Err(TrendError::Params(format!(
            "CDSA segments of {} s must hold a whole {} s block",
            p.segment_s, p.block_s
        )));
    }
    Ok((Welch::new(fs, params), segment as usize))
}

/// Traces of `derivations` on the left (odd 10-20 numbers: Fp1, C3, T7 ...) and the right
/// (even numbers) of the head, as CDSA groups; the midline and unnamed traces join neither.
pub fn hemispheres(derivations: &[Derivation], traces: &[usize]) -> Vec<Group> {
    let side = |label: &str| -> Option<bool> {
        let label = label.trim();
        let name = label
            .strip_prefix("EEG ")
            .unwrap_or(label)
            .split(['-', ' '])
            .next()?;
        let digits: String = name.chars().filter(char::is_ascii_digit).collect();
        let k: u32 = digits.parse().ok()?;
        Some(k % 2 == 1)
    };
    [("left", true), ("right", false)]
        .into_iter()
        .filter_map(|(name, left)| {
            let traces: Vec<usize> = (traces.iter().copied())
                .filter(|&t| side(&derivations[t].label) == Some(left))
                .collect();
            (!traces.is_empty()).then(|| Group {
                name: format!("{name} ({} traces)", traces.len()),
                traces,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::aeeg::aeeg_reference;
    use crate::recording::{Format, in_memory};

    /// Twenty minutes of three channels, in microvolts, with a large offset on one.
    fn recording(fs: f64) -> Recording {
        let n = (20.0 * 60.0 * fs) as usize;
        let mut s = 3u64;
        let data: Vec<Vec<f32>> = (0..3)
            .map(|c| {
                (0..n)
                    .map(|i| {
                        s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                        let t = i as f64 / fs;
                        let level = 10.0 + 30.0 * ((t / 50.0 + c as f64).sin()).abs();
                        let noise = (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                        (level * (2.0 * std::f64::consts::PI * 9.0 * t).sin()
                            + 8.0 * noise
                            + if c == 1 { 2000.0 } else { 0.0 }) as f32
                    })
                    .collect()
            })
            .collect();
        let signals = (0..3)
            .map(|c| (format!("EEG C{c}"), "uV".to_string(), fs))
            .collect();
        let start = chrono::NaiveDateTime::default();
        in_memory(None, Format::Edf, start, signals, data, vec![], vec![])
    }

    #[test]
    fn pieces_on_many_threads_equal_one_pass() {
        let fs = 128.0;
        let rec = recording(fs);
        let derivations: Vec<Derivation> = (0..3).map(|c| Derivation::recorded(&rec, c)).collect();
        let job = TrendJob {
            derivations,
            cdsa_groups: (0..3)
                .map(|t| Group {
                    name: format!("{t}"),
                    traces: vec![t],
                })
                .collect(),
            cdsa: CdsaParams::default(),
            aeeg_traces: vec![0, 1, 2],
            aeeg: AeegParams::default(),
        };
        // 16 pieces of 60-90 s: every boundary a warm-up.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(8)
            .build()
            .unwrap();
        let out = pool
            .install(|| run(&rec, &job, &AtomicBool::new(false), &AtomicUsize::new(0)))
            .unwrap()
            .unwrap();
        let (aeeg, cdsa) = (out.aeeg.unwrap(), out.cdsa.unwrap());
        let (welch, segment) = cdsa_plan(&job.cdsa, fs).unwrap();
        for c in 0..3 {
            let mut x = vec![0.0; rec.signals[c].samples];
            rec.read(c, 0, &mut x).unwrap();
            let want = aeeg_reference(&x, fs, job.aeeg);
            assert_eq!(aeeg.upper_uv[c].len(), want.len());
            for (s, w) in want.iter().enumerate() {
                let (lo, hi) = (aeeg.lower_uv[c][s], aeeg.upper_uv[c][s]);
                assert!(
                    (lo - w.0).abs() <= 1e-4 * w.1 && (hi - w.1).abs() <= 1e-4 * w.1,
                    "channel {c} segment {s}: {lo} {hi} vs {w:?}"
                );
            }
            assert_eq!(cdsa.power[c].len(), x.len() / segment);
            for (s, got) in cdsa.power[c].iter().enumerate() {
                let psd = welch.psd(&x[s * segment..(s + 1) * segment]).unwrap();
                for (g, p) in got.iter().zip(psd) {
                    assert!((*g as f64 - 10.0 * p.log10()).abs() < 1e-4);
                }
            }
        }
    }
}
