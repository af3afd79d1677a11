//! Blink removal scored on families of simulated blinks it was not designed on (issue 43,
//! `dsp::blink::families`), over an independent clean base: a recording cleaned of its own
//! blinks by another tool (MNE-Python's ICA, held as the affine map it is:
//! `docs/scripts/blink_base_mne.py`), its EOG channels replaced by the cleaned frontopolar
//! channel plus independent noise, and independent sensor noise on every channel (full rank).
//! Each case is scored against that base over -0.3..+0.6 s of every true blink on the EEG
//! channels, beside the floor: the residual the minimum-variance spatial filter with the true
//! topography leaves (`measure::spatial_floor_pct`).

use serde::{Deserialize, Serialize};

use super::measure::{Compared, Residuals, matched, residuals};
use super::{BlinkJobError, DeblinkOptions, EegData, deblink_data};
use crate::dsp::blink::Blink;
use crate::dsp::blink::families::{self, Draw, Family};
use crate::dsp::blink::pooled::SETTLED_BLINKS;
use crate::dsp::ica::Observations;
use crate::gpu::GpuContext;
use crate::recording::demo::SplitMix;

/// A cleaning by another tool as the affine map it is on the recording's channels:
/// clean = projection x + offset (microvolts).
#[derive(Debug, Clone, Deserialize)]
pub struct AffineCleaning {
    /// Who made it and how.
    pub source: String,
    pub channels: Vec<String>,
    pub projection: Vec<Vec<f64>>,
    pub offset_uv: Vec<f64>,
}

/// The EOG channels' independent noise, as a fraction of the frontopolar channel's SD.
pub const EOG_NOISE: f64 = 0.3;
/// Independent sensor noise on every channel, microvolts RMS.
pub const SENSOR_NOISE_UV: f64 = 1.5;
/// The scored stretch of each true blink, seconds from its peak.
pub const SCORED_S: (f64, f64) = (-0.3, 0.6);
/// Samples within this many seconds of a blink's 3 SD reach are neither inside nor outside.
const MARGIN_S: f64 = 0.5;

/// The clean base from `data` (the recording the cleaning was fitted on) with sensor noise of
/// `seed`.
pub fn independent_base(
    data: &EegData,
    cleaning: &AffineCleaning,
    seed: u64,
) -> Result<EegData, BlinkJobError> {
    let labels = &data.channels.labels;
    let n = data.data.cols;
    if cleaning.channels.len() != labels.len()
        || (cleaning.channels.iter().zip(labels)).any(|(a, b)| a.trim() != b.trim())
        || cleaning.projection.len() != labels.len()
        || cleaning.offset_uv.len() != labels.len()
        || (cleaning.projection.iter()).any(|r| r.len() != labels.len())
    {
        return Err(BlinkJobError::Selection(format!(
            "the cleaning ({}) is for channels {:?}, the recording has {:?}",
            cleaning.source, cleaning.channels, labels
        )));
    }
    let x = &data.data;
    let mut clean = vec![0.0f64; labels.len() * n];
    for (i, row) in clean.chunks_exact_mut(n).enumerate() {
        row.fill(cleaning.offset_uv[i]);
        for (j, &p) in cleaning.projection[i].iter().enumerate() {
            if p != 0.0 {
                for (v, &u) in row.iter_mut().zip(x.row(j)) {
                    *v += p * u as f64;
                }
            }
        }
    }
    let frontal = ["FPz", "Fp1", "Fp2", "AF3", "AF4"]
        .iter()
        .find_map(|f| labels.iter().position(|l| l.trim().eq_ignore_ascii_case(f)))
        .ok_or_else(|| BlinkJobError::Selection("no frontopolar channel (FPz, Fp1, Fp2)".into()))?;
    let fp: Vec<f64> = clean[frontal * n..(frontal + 1) * n].to_vec();
    let sd = crate::dsp::stats::mean_sd(fp.iter().copied()).1;
    let mut rng = SplitMix(seed ^ 0xba5e_0f43);
    for (i, row) in clean.chunks_exact_mut(n).enumerate() {
        if data.channels.eog[i] {
            for (v, &f) in row.iter_mut().zip(&fp) {
                *v = f + EOG_NOISE * sd * rng.gauss();
            }
        }
        row.iter_mut()
            .for_each(|v| *v += SENSOR_NOISE_UV * rng.gauss());
    }
    let mut base = data.clone();
    base.data.data = clean.into_iter().map(|v| v as f32).collect();
    Ok(base)
}

/// One case's score.
#[derive(Debug, Clone, Serialize)]
pub struct CaseScore {
    pub family: Family,
    pub amplitude_uv: f64,
    pub seed: u64,
    pub blinks_true: usize,
    pub blinks_found: usize,
    pub f1: f64,
    /// RMS of (cleaned - base) over RMS of the blinks, over `SCORED_S` of each, %.
    pub residual_pct: f64,
    /// The minimum-variance spatial filter's residual there, %.
    pub floor_pct: Option<f64>,
    /// `residual_pct` over `floor_pct`.
    pub ratio: Option<f64>,
    /// The same ratio over the blinks after the first minute (`SETTLED_S`): where a stream's
    /// field holds a dozen blinks or more (its first ones leave 22-29 % at 200 uV against
    /// 4-7 % later, as any topography from a handful of blinks does).
    pub ratio_after_first_minute: Option<f64>,
    /// The same ratio over the true blinks from the `pooled::SETTLED_BLINKS`-th on: where a
    /// stream's field is settled.
    pub ratio_settled: Option<f64>,
    /// RMS of (cleaned - base) away from the blinks over the base's RMS there, %.
    pub change_outside_pct: f64,
    /// The residual at the frontopolar channel inside blinks, microvolts RMS.
    pub frontal_residual_uv: f64,
    pub elapsed_s: f64,
}

/// `base` with `draw`'s blinks (and alpha) added: (recording with blinks, clean with alpha,
/// blinks added).
pub fn with_blinks(base: &EegData, draw: &Draw) -> (EegData, EegData, Vec<Vec<f32>>) {
    let n = base.data.cols;
    let blink = draw.waveform(base.fs, n);
    let alpha = draw.alpha_waveform(base.fs, n);
    let mut clean = base.clone();
    let mut simulated = base.clone();
    let mut added = Vec::with_capacity(base.data.rows);
    for (i, &factor) in draw.factors.iter().enumerate() {
        let (label, eog) = (&base.channels.labels[i], base.channels.eog[i]);
        let a = families::alpha_factor(label, eog);
        let row: Vec<f32> = blink.iter().map(|&b| (factor * b) as f32).collect();
        let range = i * n..(i + 1) * n;
        for ((c, s), (&al, &b)) in (clean.data.data[range.clone()].iter_mut())
            .zip(&mut simulated.data.data[range])
            .zip(alpha.iter().zip(&row))
        {
            *c += (a * al) as f32;
            *s = *c + b;
        }
        added.push(row);
    }
    (simulated, clean, added)
}

/// How a case is cleaned: the batch with these options, or a stream at full speed with live
/// mode's (`LiveOptions::default`, its detection and kept channels from the options).
#[derive(Debug, Clone)]
pub enum Cleaner {
    Batch(DeblinkOptions),
    Live(DeblinkOptions),
}

/// What a cleaner gave: the cleaned channels, the blinks removed and the seconds it took.
fn clean(
    data: &EegData,
    cleaner: &Cleaner,
    gpu: Option<&GpuContext>,
) -> Result<Cleaned, BlinkJobError> {
    match cleaner {
        Cleaner::Batch(opts) => {
            let (result, elapsed_s, _) = deblink_data(data, opts, gpu, false)?;
            Ok(Cleaned {
                cleaned: result.cleaned,
                blinks: result.blinks,
                elapsed_s,
            })
        }
        Cleaner::Live(opts) => {
            use crate::analysis::live::{LiveOptions, play, source::FileSource};
            let mut live = LiveOptions::default();
            live.deblink.detect = opts.detect.clone();
            live.deblink.keep = opts.keep.clone();
            let mut source = FileSource::new(data, None, &live);
            let mut d = super::Deblinker::new(None);
            let t0 = std::time::Instant::now();
            let session = play(&mut source, &live, &mut d, &mut |_, _| true)?;
            Ok(Cleaned {
                cleaned: session.cleaned,
                blinks: session.blinks,
                elapsed_s: t0.elapsed().as_secs_f64(),
            })
        }
    }
}

/// Runs `cleaner` on `draw` over `base` and scores it.
pub fn score_case(
    base: &EegData,
    draw: &Draw,
    cleaner: &Cleaner,
    gpu: Option<&GpuContext>,
) -> Result<CaseScore, BlinkJobError> {
    let (simulated, clean, added) = with_blinks(base, draw);
    let result = self::clean(&simulated, cleaner, gpu)?;
    let elapsed_s = result.elapsed_s;
    let fs = base.fs;
    let found: Vec<f64> = (result.blinks.iter()).map(|b| b.peak as f64 / fs).collect();
    let truth: Vec<f64> = draw.events.iter().map(|e| e.peak_s).collect();
    let tp = matched(&truth, &found);
    let f1 = if truth.len() + found.len() == 0 {
        1.0
    } else {
        2.0 * tp as f64 / (truth.len() + found.len()) as f64
    };
    let n = base.data.cols;
    let (mut inside, mut near) = (vec![false; n], vec![false; n]);
    let span =
        |a: f64, z: f64| ((a * fs).floor().max(0.0) as usize)..((z * fs).ceil() as usize).min(n);
    for e in &draw.events {
        let (before, after) = e.pulse.reach();
        let sds = 3.0 / 4.3;
        inside[span(e.peak_s + SCORED_S.0, e.peak_s + SCORED_S.1)].fill(true);
        near[span(
            e.peak_s - before * sds - MARGIN_S,
            e.peak_s + after * sds + MARGIN_S,
        )]
        .fill(true);
    }
    let rows = base.data.rows;
    let added_obs = Observations::new(rows, n, added.concat());
    let scored: Vec<bool> = (0..rows)
        .map(|i| !base.channels.keep[i] && !base.channels.eog[i])
        .collect();
    let c = Compared {
        clean: &clean.data,
        added: &added_obs,
        cleaned: &result.cleaned,
        scored: &scored,
    };
    let blink = draw.waveform(fs, n);
    let r = residuals(&c, &blink, &inside, &near);
    let settled = ((SETTLED_S * fs) as usize).min(n);
    let mut later = inside.clone();
    later[..settled].fill(false);
    let late = residuals(&c, &blink, &later, &near);
    let mut peaks: Vec<f64> = draw.events.iter().map(|e| e.peak_s).collect();
    peaks.sort_by(f64::total_cmp);
    let mut settled_field = vec![false; n];
    for &p in peaks.iter().skip(SETTLED_BLINKS - 1) {
        settled_field[span(p + SCORED_S.0, p + SCORED_S.1)].fill(true);
    }
    let settled_field = residuals(&c, &blink, &settled_field, &near);
    let ratio = |r: &Residuals| r.floor_pct.filter(|&f| f > 0.0).map(|f| r.inside_pct / f);
    let frontal = (0..rows)
        .filter(|&i| scored[i])
        .max_by(|&a, &b| draw.factors[a].total_cmp(&draw.factors[b]))
        .unwrap_or(0);
    let (mut e, mut k) = (0.0, 0usize);
    for t in (0..n).filter(|&t| inside[t]) {
        e += ((result.cleaned.row(frontal)[t] - clean.data.row(frontal)[t]) as f64).powi(2);
        k += 1;
    }
    Ok(CaseScore {
        family: draw.family,
        amplitude_uv: draw.amplitude_uv,
        seed: draw.seed,
        blinks_true: truth.len(),
        blinks_found: found.len(),
        f1,
        residual_pct: r.inside_pct,
        floor_pct: r.floor_pct,
        ratio: ratio(&r),
        ratio_after_first_minute: ratio(&late),
        ratio_settled: ratio(&settled_field),
        change_outside_pct: r.outside_pct,
        frontal_residual_uv: (e / k.max(1) as f64).sqrt(),
        elapsed_s,
    })
}

/// See `CaseScore::ratio_after_first_minute`.
pub const SETTLED_S: f64 = 60.0;

struct Cleaned {
    cleaned: Observations,
    blinks: Vec<Blink>,
    elapsed_s: f64,
}

/// Every case of `families` x `amplitudes` x `seeds` on `data` cleaned by `cleaning`.
pub fn score_families(
    data: &EegData,
    cleaning: &AffineCleaning,
    (list, amplitudes, seeds): (&[Family], &[f64], &[u64]),
    cleaner: &Cleaner,
    gpu: Option<&GpuContext>,
) -> Result<Vec<CaseScore>, BlinkJobError> {
    let mut out = Vec::new();
    for &seed in seeds {
        let base = independent_base(data, cleaning, seed)?;
        for &family in list {
            for &a in amplitudes {
                let labels = &base.channels.labels;
                let d = families::draw(
                    family,
                    a,
                    seed,
                    base.duration_s(),
                    labels,
                    &base.channels.eog,
                );
                out.push(score_case(&base, &d, cleaner, gpu)?);
            }
        }
    }
    Ok(out)
}
