//! The browser's view transform: a recording seen through a montage and display filters, cut
//! into per-pixel `[min, max]` columns for a time window. Narrow windows decode samples directly;
//! wide ones read a min/max pyramid built in the background after opening, so opening stays
//! instant and any zoom costs a bounded number of blocks per pixel.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use crate::dsp::decimate::{self, MinMaxPyramid};
use crate::dsp::filter::DisplayFilter;
use crate::dsp::montage::{self, BuiltIn, Derivation, Montage, Reference};
use crate::recording::{ChannelType, Recording};

/// Samples decoded per step when building pyramids.
const CHUNK: usize = 1 << 16;

/// What is shown: the recording, its montage and reference, and its filters.
pub struct TraceSpec {
    pub rec: Arc<Recording>,
    /// The montage shown (as recorded where the one asked for did not fit).
    pub montage: Montage,
    pub reference: Reference,
    pub derivations: Vec<Derivation>,
    /// Why the montage asked for is not shown, or which of its traces were left out.
    pub problem: Option<String>,
    /// The montage's derivations the recording cannot make, each with why.
    pub left_out: Vec<String>,
    /// The display filter of every trace without its own.
    pub filter: DisplayFilter,
    /// Traces' own filters, by derivation index.
    pub channel_filters: HashMap<usize, DisplayFilter>,
    /// The filters of channel types that have their own (EOG, ECG, EMG ...), before `filter`.
    pub type_filters: Vec<(ChannelType, DisplayFilter)>,
}

pub struct Traces {
    pub spec: Arc<TraceSpec>,
    pyramids: Arc<Mutex<Option<Arc<Vec<MinMaxPyramid>>>>>,
    /// Samples processed by the pyramid builder, out of `total_samples`.
    progress: Arc<AtomicUsize>,
    total_samples: usize,
    cancel: CancelOnDrop,
}

/// Stops the background builder when the traces it serves are replaced.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// One screen: per derivation, `[min, max]` per pixel column (NaN where there is no data).
pub struct Screen {
    pub columns: Vec<Vec<[f32; 2]>>,
    /// Whether every column came from exact data (false while the overview is being built and
    /// a wide window is drawn from sampled values).
    pub exact: bool,
    /// Per derivation, the median of the column midpoints: the baseline its trace is centred
    /// on, computed with the screen rather than every frame.
    pub baselines: Vec<f32>,
}

impl Traces {
    /// Applies `montage` under `reference` (falling back to "as recorded", said in
    /// `spec.problem`, when the recording cannot give it) and starts building the overview
    /// pyramids in the background.
    pub fn new(
        rec: Arc<Recording>,
        montage: Montage,
        reference: Reference,
        filter: DisplayFilter,
    ) -> Self {
        Self::with_channel_filters(rec, montage, reference, filter, Vec::new(), HashMap::new())
    }

    /// As `new`, with some channel types (`type_filters`) and some traces (`channel_filters`
    /// by derivation index; ignored when the montage falls back) filtered their own way.
    pub fn with_channel_filters(
        rec: Arc<Recording>,
        montage: Montage,
        reference: Reference,
        filter: DisplayFilter,
        type_filters: Vec<(ChannelType, DisplayFilter)>,
        mut channel_filters: HashMap<usize, DisplayFilter>,
    ) -> Self {
        let (montage, reference, derivations, problem, left_out) =
            match montage::resolve(&rec, &montage, &reference) {
                Ok(r) => {
                    let problem = (!r.skipped.is_empty())
                        .then(|| format!("left out: {}", r.skipped.join("; ")));
                    (montage, reference, r.derivations, problem, r.skipped)
                }
                Err(e) => {
                    channel_filters.clear();
                    let plain = BuiltIn::as_recorded(&rec);
                    let derivations = montage::resolve(&rec, &plain, &Reference::AsRecorded)
                        .map(|r| r.derivations)
                        .unwrap_or_default();
                    (
                        plain,
                        Reference::AsRecorded,
                        derivations,
                        Some(e.to_string()),
                        Vec::new(),
                    )
                }
            };
        let total_samples: usize = derivations
            .iter()
            .map(|d| rec.signals[d.plus].samples)
            .sum();
        let t = Traces {
            spec: Arc::new(TraceSpec {
                rec,
                montage,
                reference,
                derivations,
                problem,
                left_out,
                filter,
                channel_filters,
                type_filters,
            }),
            pyramids: Arc::new(Mutex::new(None)),
            progress: Arc::new(AtomicUsize::new(0)),
            total_samples,
            cancel: CancelOnDrop(Arc::new(AtomicBool::new(false))),
        };
        t.spawn_pyramid_builder();
        t
    }

    /// Builds the pyramids synchronously (tests and benchmarks).
    pub fn new_blocking(
        rec: Arc<Recording>,
        montage: Montage,
        reference: Reference,
        filter: DisplayFilter,
    ) -> Self {
        let t = Self::new(rec, montage, reference, filter);
        while !t.overview_ready() {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        t
    }

    /// Fraction of the overview built, 0..=1.
    pub fn overview_progress(&self) -> f32 {
        if self.total_samples == 0 {
            return 1.0;
        }
        self.progress.load(Ordering::Relaxed) as f32 / self.total_samples as f32
    }

    pub fn overview_ready(&self) -> bool {
        self.pyramids.lock().map(|p| p.is_some()).unwrap_or(false)
    }

    fn spawn_pyramid_builder(&self) {
        let spec = self.spec.clone();
        let slot = self.pyramids.clone();
        let progress = self.progress.clone();
        let cancel = self.cancel.0.clone();
        std::thread::Builder::new()
            .name("overview".into())
            .spawn(move || {
                if let Some(p) = spec.build_pyramids(&progress, &cancel)
                    && let Ok(mut slot) = slot.lock()
                {
                    *slot = Some(Arc::new(p));
                    // The pass touched every page of the file; the pyramids replace them.
                    spec.rec.release_pages();
                }
            })
            .ok();
    }

    /// The columns of the window `t0..t0 + span` seconds over `columns` pixels.
    pub fn screen(&self, t0: f64, span: f64, columns: usize) -> Screen {
        let pyramids = self.pyramids.lock().ok().and_then(|p| p.clone());
        self.spec
            .screen(pyramids.as_deref().map(|p| p.as_slice()), t0, span, columns)
    }
}

impl TraceSpec {
    fn build_pyramids(
        &self,
        progress: &AtomicUsize,
        cancel: &AtomicBool,
    ) -> Option<Vec<MinMaxPyramid>> {
        let mut out: Vec<Option<MinMaxPyramid>> = vec![None; self.derivations.len()];
        for group in self.rate_groups() {
            let n = self.group_len(&group);
            let mut builders: Vec<_> = group.iter().map(|_| MinMaxPyramid::builder(n)).collect();
            let mut chains: Vec<_> = group
                .iter()
                .map(|&d| self.filter_of(d).build(self.fs(d)))
                .collect();
            let mut k = 0;
            while k < n {
                if cancel.load(Ordering::Relaxed) {
                    return None;
                }
                let len = CHUNK.min(n - k);
                let mut data = self.derive(&group, k, len).ok()?;
                if k == 0 {
                    // Started on its first value, a trace's offset leaves no step at the start.
                    for (chain, x) in chains.iter_mut().zip(&data) {
                        chain.settle_on_first(x);
                    }
                }
                data.par_iter_mut()
                    .zip(chains.par_iter_mut())
                    .zip(builders.par_iter_mut())
                    .for_each(|((x, chain), b)| {
                        chain.run(x);
                        b.push(x);
                    });
                k += len;
                progress.fetch_add(len * group.len(), Ordering::Relaxed);
            }
            for (&d, b) in group.iter().zip(builders) {
                out[d] = Some(b.finish());
            }
        }
        out.into_iter().collect()
    }

    /// Derivations grouped by sampling rate (a group shares sample indices).
    fn rate_groups(&self) -> Vec<Vec<usize>> {
        let mut groups: Vec<(f64, Vec<usize>)> = Vec::new();
        for d in 0..self.derivations.len() {
            let fs = self.fs(d);
            match groups.iter_mut().find(|(f, _)| *f == fs) {
                Some((_, g)) => g.push(d),
                None => groups.push((fs, vec![d])),
            }
        }
        groups.into_iter().map(|(_, g)| g).collect()
    }

    /// The display filter trace `d` is drawn with.
    pub fn filter_of(&self, d: usize) -> DisplayFilter {
        let kind = self.rec.signals[self.derivations[d].plus].kind;
        (self.channel_filters.get(&d).copied())
            .or_else(|| {
                self.type_filters
                    .iter()
                    .find(|(k, _)| *k == kind)
                    .map(|(_, f)| *f)
            })
            .unwrap_or(self.filter)
    }

    pub fn fs(&self, d: usize) -> f64 {
        self.rec.signals[self.derivations[d].plus].fs
    }

    fn group_len(&self, group: &[usize]) -> usize {
        group
            .iter()
            .map(|&d| self.rec.signals[self.derivations[d].plus].samples)
            .max()
            .unwrap_or(0)
    }

    /// Samples `start..start + len` of derivations `group` (one rate), unfiltered.
    pub fn derive(
        &self,
        group: &[usize],
        start: usize,
        len: usize,
    ) -> Result<Vec<Vec<f32>>, crate::recording::ReadError> {
        montage::derive(&self.rec, &self.derivations, group, start, len)
    }

    fn screen(
        &self,
        pyramids: Option<&[MinMaxPyramid]>,
        t0: f64,
        span: f64,
        columns: usize,
    ) -> Screen {
        let mut out = vec![vec![[f32::NAN; 2]; columns]; self.derivations.len()];
        let mut exact = true;
        let dt = span / columns.max(1) as f64;
        for group in self.rate_groups() {
            let fs = self.fs(group[0]);
            let spp = dt * fs;
            let signal = self.derivations[group[0]].plus;
            for (seg_t, seg_first, seg_n) in self.rec.signal_segments(signal) {
                let seg_end_t = seg_t + seg_n as f64 / fs;
                if seg_end_t <= t0 || seg_t >= t0 + span || seg_n == 0 {
                    continue;
                }
                // Columns whose start lies in this segment.
                let c0 = (((seg_t - t0) / dt).ceil().max(0.0)) as usize;
                let c1 = ((((seg_end_t - t0) / dt).ceil()) as usize).min(columns);
                if c0 >= c1 {
                    continue;
                }
                let first = seg_first as f64 + (t0 + c0 as f64 * dt - seg_t) * fs;
                let ncols = c1 - c0;
                if spp >= (2 * decimate::BASE) as f64 {
                    if let Some(p) = pyramids {
                        let cols: Vec<_> = group
                            .par_iter()
                            .map(|&d| p[d].columns(first, spp, ncols))
                            .collect();
                        for (&d, cols) in group.iter().zip(cols) {
                            out[d][c0..c1].copy_from_slice(&cols);
                        }
                        continue;
                    }
                    exact = false;
                    self.sampled_columns(
                        &group,
                        first,
                        spp,
                        ncols,
                        seg_first + seg_n,
                        c0,
                        &mut out,
                    );
                    continue;
                }
                // Decode the window (with the filters' margins) and reduce per column.
                let s = first.floor().max(seg_first as f64) as usize;
                let e = ((first + ncols as f64 * spp).ceil() as usize + 1).min(seg_first + seg_n);
                let Ok(data) = montage::derive_filtered(
                    &self.rec,
                    &self.derivations,
                    &group,
                    s,
                    e - s,
                    (seg_first, seg_first + seg_n),
                    |d| self.filter_of(d),
                ) else {
                    continue;
                };
                for (&d, x) in group.iter().zip(&data) {
                    let cols = decimate::raw_columns(x, spp, ncols);
                    out[d][c0..c1].copy_from_slice(&cols);
                }
            }
        }
        Screen {
            baselines: out.iter().map(|cols| median_mid(cols)).collect(),
            columns: out,
            exact,
        }
    }

    /// While the overview is built: a few samples per column (unfiltered).
    #[allow(clippy::too_many_arguments)]
    fn sampled_columns(
        &self,
        group: &[usize],
        first: f64,
        spp: f64,
        ncols: usize,
        end: usize,
        c0: usize,
        out: &mut [Vec<[f32; 2]>],
    ) {
        const PER_COLUMN: usize = 4;
        for c in 0..ncols {
            let mut acc = vec![[f32::NAN; 2]; group.len()];
            for j in 0..PER_COLUMN {
                let k = (first + (c as f64 + j as f64 / PER_COLUMN as f64) * spp) as usize;
                if k >= end {
                    break;
                }
                if let Ok(v) = self.derive(group, k, 1) {
                    for (a, x) in acc.iter_mut().zip(v) {
                        *a = [a[0].min(x[0]), a[1].max(x[0])];
                    }
                }
            }
            for (&d, a) in group.iter().zip(acc) {
                out[d][c0 + c] = a;
            }
        }
    }
}

/// The median of column midpoints: the visible baseline a trace is centred on.
fn median_mid(cols: &[[f32; 2]]) -> f32 {
    let mut mids: Vec<f32> = cols
        .iter()
        .filter(|v| !v[0].is_nan())
        .map(|v| 0.5 * (v[0] + v[1]))
        .collect();
    if mids.is_empty() {
        return 0.0;
    }
    let k = mids.len() / 2;
    *mids.select_nth_unstable_by(k, f32::total_cmp).1
}
