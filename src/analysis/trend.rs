//! Whole-recording trends, read once from start to end in chunks (the next chunk read on its
//! own thread while this one is computed, channels and segments on all cores):
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

use crate::dsp::aeeg::{Aeeg, AeegParams, LANES};
use crate::dsp::montage::Derivation;
use crate::dsp::montage::apply::derive;
use crate::dsp::spectrum::{Welch, WelchParams};
use crate::recording::{ReadError, Recording, volts_per_unit};

#[derive(Debug, thiserror::Error)]
pub enum TrendError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{0}")]
    Params(String),
}

/// Seconds read per chunk: at 256 Hz a channel's is 120 KB, which the allocator keeps and
/// hands out again (chunks of 600 s were fresh pages each time, zeroed by the kernel: a
/// quarter of a trend's time).
const CHUNK_S: f64 = 120.0;

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
    /// `10 log10` of the density, re 1 unit^2/Hz.
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

/// Per CDSA row: its Welch plan, the unfinished segment's samples per trace, and the spectra.
struct CdsaRow {
    traces: Vec<usize>,
    pending: Vec<Vec<f32>>,
    power: Vec<Vec<f32>>,
}

impl CdsaRow {
    /// Appends a chunk (indexed by trace) and computes every segment it completes.
    fn push(&mut self, chunk: &[Vec<f32>], welch: &Welch, segment: usize) {
        for (p, &t) in self.pending.iter_mut().zip(&self.traces) {
            p.extend_from_slice(&chunk[t]);
        }
        let whole = self.pending[0].len() / segment;
        let spectra: Vec<Vec<f32>> = (0..whole)
            .into_par_iter()
            .map(|s| {
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
                sum.iter()
                    .map(|v| (10.0 * (v / k).log10()) as f32)
                    .collect()
            })
            .collect();
        self.power.extend(spectra);
        for p in &mut self.pending {
            p.drain(..whole * segment);
        }
    }
}

/// Runs `job` over `rec`; `done` counts the seconds read so far (of `span_s(rec, job)`).
/// `Ok(None)` when cancelled.
pub fn run(
    rec: &Recording,
    job: &TrendJob,
    cancel: &AtomicBool,
    done: &AtomicUsize,
) -> Result<Option<Trends>, TrendError> {
    let started = Instant::now();
    let (fs, n) = rate_and_length(rec, job)?;
    let cdsa_welch = match job.cdsa_groups.is_empty() {
        true => None,
        false => Some(cdsa_plan(&job.cdsa, fs)?),
    };
    let mut rows: Vec<CdsaRow> = (job.cdsa_groups.iter())
        .map(|g| CdsaRow {
            traces: g.traces.clone(),
            pending: vec![Vec::new(); g.traces.len()],
            power: Vec::new(),
        })
        .collect();
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
    // Traces in banks filtered together: `LANES` wide, narrower where that leaves threads idle
    // (64 channels in banks of 8 kept 8 of 16 threads busy).
    let width = (job.aeeg_traces.len())
        .div_ceil(rayon::current_num_threads())
        .clamp(1, LANES);
    let banks: Vec<&[usize]> = job.aeeg_traces.chunks(width).collect();
    let mut aeeg: Vec<Aeeg> = (banks.iter().zip(scales.chunks(width)))
        .map(|(_, k)| Aeeg::new(fs, job.aeeg, k))
        .collect::<Result<_, _>>()
        .map_err(TrendError::Params)?;
    let group: Vec<usize> = (0..job.derivations.len()).collect();
    let chunk = ((CHUNK_S * fs).round() as usize).max(1);
    let finished = std::thread::scope(|scope| -> Result<bool, TrendError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        scope.spawn(move || {
            for start in (0..n).step_by(chunk) {
                let len = chunk.min(n - start);
                let data = derive(rec, &job.derivations, &group, start, len);
                if cancel.load(Ordering::Relaxed) || tx.send((start + len, data)).is_err() {
                    break;
                }
            }
        });
        for (end, data) in rx {
            let data = data?;
            if cancel.load(Ordering::Relaxed) {
                return Ok(false);
            }
            if let Some((welch, segment)) = &cdsa_welch {
                rows.par_iter_mut()
                    .for_each(|r| r.push(&data, welch, *segment));
            }
            (aeeg.par_iter_mut().zip(&banks)).for_each(|(a, traces)| {
                let channels: Vec<&[f32]> = traces.iter().map(|&t| &data[t][..]).collect();
                a.push(&channels);
            });
            done.store((end as f64 / fs) as usize, Ordering::Relaxed);
        }
        Ok(!cancel.load(Ordering::Relaxed))
    })?;
    if !finished {
        return Ok(None);
    }
    let label = |t: usize| job.derivations[t].label.trim().to_string();
    let cdsa = cdsa_welch.map(|(welch, _)| CdsaTrend {
        segment_s: job.cdsa.segment_s,
        block_s: job.cdsa.block_s,
        overlap: job.cdsa.overlap,
        channels: job.cdsa_groups.iter().map(|g| g.name.clone()).collect(),
        frequencies_hz: welch.frequencies(),
        unit: format!(
            "dB re 1 {}^2/Hz",
            rec.signals[job.derivations[job.cdsa_groups[0].traces[0]].plus]
                .unit
                .trim()
        ),
        power: rows.into_iter().map(|r| r.power).collect(),
    });
    let aeeg = (!job.aeeg_traces.is_empty()).then(|| {
        let margins: Vec<Vec<(f32, f32)>> = (aeeg.iter())
            .flat_map(|a| (0..a.edges.len()).map(|c| a.margins(c)))
            .collect();
        let edges: Vec<&Vec<(f32, f32)>> = aeeg.iter().flat_map(|a| &a.edges).collect();
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
    Ok(Some(Trends {
        fs,
        cdsa,
        aeeg,
        seconds: started.elapsed().as_secs_f64(),
    }))
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
        psd,
        unit: format!("{}^2/Hz", signal.unit.trim()),
    })
}

/// Reads and derives every chunk `run` would and computes nothing: the host's share, for
/// benchmarks.
pub fn read_only(rec: &Recording, job: &TrendJob) -> Result<usize, TrendError> {
    let (_, n) = rate_and_length(rec, job)?;
    let fs = rec.signals[job.derivations[0].plus].fs;
    let chunk = ((CHUNK_S * fs).round() as usize).max(1);
    let group: Vec<usize> = (0..job.derivations.len()).collect();
    let mut count = 0;
    for start in (0..n).step_by(chunk) {
        let data = derive(rec, &job.derivations, &group, start, chunk.min(n - start))?;
        count += std::hint::black_box(data).len();
    }
    Ok(count)
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
