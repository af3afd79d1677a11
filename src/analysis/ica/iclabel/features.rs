//! ICLabel's three features of each component, computed as mne-icalabel 0.10 computes them
//! (`mne_icalabel/iclabel/features.py`, itself a port of EEGLAB's ICLabel): the scalp image,
//! the median spectrum and the autocorrelation. Each is scaled to a maximum magnitude of 1,
//! then by 0.99.
//!
//! Activations are `weights x data`, the data in microvolts with no mean removed (MNE's
//! `unmixing_matrix_ @ pca_components_` applied to `inst.get_data() * 1e6`): the spectrum's
//! dB level, and so its shape after scaling, depends on that convention.

use nalgebra::DMatrix;
use rayon::prelude::*;
use realfft::RealFftPlanner;

use super::Features;
use crate::dsp::biharmonic::Biharmonic;
use crate::dsp::ica::Observations;
use crate::dsp::resample_poly::resample_poly;
use crate::recording::electrodes::eeglab_position;

/// The three features of every row of `weights` (components x channels), with `data`
/// (channels x samples, microvolts, sampled at `fs`) and each channel's position (metres,
/// x right, y front, z up).
pub fn features(
    weights: &DMatrix<f64>,
    data: &Observations,
    positions: &[[f64; 3]],
    fs: f64,
) -> Result<Features, String> {
    let per_second = fs as usize;
    if per_second < 100 {
        return Err(format!(
            "ICLabel's autocorrelation feature needs a sampling rate of at least 100 Hz; \
             the data are at {fs} Hz"
        ));
    }
    if data.cols < per_second {
        return Err("ICLabel needs at least one second of data".into());
    }
    let icawinv = pinv(weights);
    let topo = topo_images(&icawinv, positions)?;
    let acts = activations(weights, data);
    let per_component = (0..acts.rows)
        .into_par_iter()
        .map(|k| {
            let x: Vec<f64> = acts.row(k).iter().map(|&v| v as f64).collect();
            Ok((spectrum(&x, fs), autocorrelation(&x, fs)?))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let (psd, autocorr): (Vec<[f32; 100]>, Vec<[f32; 100]>) = per_component.into_iter().unzip();
    // A flat component (or a channel without data) has no spectrum in dB: refused, never NaN.
    let finite = |v: &[f32]| v.iter().all(|x| x.is_finite());
    if let Some(k) =
        (0..topo.len()).find(|&k| !(finite(&topo[k]) && finite(&psd[k]) && finite(&autocorr[k])))
    {
        return Err(format!(
            "component {k}'s ICLabel features are not finite (a flat component or channel)"
        ));
    }
    Ok(Features {
        topo,
        psd,
        autocorr,
    })
}

/// numpy's `pinv`: singular values below 1e-15 of the largest count as zero.
fn pinv(w: &DMatrix<f64>) -> DMatrix<f64> {
    let svd = w.clone().svd(true, true);
    let top = svd.singular_values.max();
    svd.pseudo_inverse(top * 1e-15)
        .expect("SVD computed with both factors")
}

fn activations(weights: &DMatrix<f64>, data: &Observations) -> Observations {
    let (r, c, t) = (weights.nrows(), weights.ncols(), data.cols);
    let w: Vec<f32> = (0..r * c).map(|i| weights[(i / c, i % c)] as f32).collect();
    let mut out = vec![0.0f32; r * t];
    // SAFETY: the dimensions and strides describe `w` (r x c), `data` (c x t) and `out`.
    unsafe {
        matrixmultiply::sgemm(
            r,
            c,
            t,
            1.0,
            w.as_ptr(),
            c as isize,
            1,
            data.data.as_ptr(),
            t as isize,
            1,
            0.0,
            out.as_mut_ptr(),
            t as isize,
            1,
        );
    }
    Observations::new(r, t, out)
}

// ---------------------------------------------------------------------------------------------
// The scalp image: EEGLAB's topoplotFast on a 32 x 32 grid.

/// Each channel in EEGLAB's polar scalp coordinates (angle, radius).
fn eeglab_polar(p: &[f64; 3]) -> (f64, f64) {
    let (_, azimuth, elevation) = eeglab_position(p);
    (
        -azimuth,
        (std::f64::consts::FRAC_PI_2 - elevation) / std::f64::consts::PI,
    )
}

fn linspace(a: f64, b: f64, n: usize) -> Vec<f64> {
    let step = (b - a) / (n - 1) as f64;
    (0..n)
        .map(|i| if i == n - 1 { b } else { a + i as f64 * step })
        .collect()
}

fn topo_images(icawinv: &DMatrix<f64>, positions: &[[f64; 3]]) -> Result<Vec<[f32; 1024]>, String> {
    const RMAX: f64 = 0.5;
    let polar: Vec<(f64, f64)> = positions.iter().map(eeglab_polar).collect();
    let max_rd = polar.iter().map(|p| p.1).fold(f64::MIN, f64::max);
    let plotrad = (max_rd * 1.02).clamp(0.5, 1.0);
    let squeeze = RMAX / plotrad;
    let xy: Vec<(f64, f64)> = (polar.iter())
        .map(|&(th, rd)| (rd * th.cos() * squeeze, rd * th.sin() * squeeze))
        .collect();
    let fold = |f: fn(&(f64, f64)) -> f64, lo: bool| {
        let v = xy.iter().map(f);
        if lo {
            v.fold(-RMAX, f64::min)
        } else {
            v.fold(RMAX, f64::max)
        }
    };
    let xi = linspace(fold(|p| p.0, true), fold(|p| p.0, false), 32);
    let yi = linspace(fold(|p| p.1, true), fold(|p| p.1, false), 32);
    let spline = Biharmonic::new(&xy)
        .ok_or("the electrode positions do not determine a scalp map (coincident or too few)")?;
    Ok((0..icawinv.ncols())
        .map(|k| {
            let values: Vec<f64> = icawinv.column(k).iter().copied().collect();
            let w = spline.weights(&values);
            // mne-icalabel's image: row a, column b holds the spline at (xi[a], yi[b]); its
            // head mask is tested at (xi[b], yi[a]) (a transpose it carries from MATLAB).
            let mut image = [0.0f64; 1024];
            for a in 0..32 {
                for b in 0..32 {
                    if xi[b].hypot(yi[a]) <= RMAX {
                        image[a * 32 + b] = spline.at(&w, xi[a], yi[b]);
                    }
                }
            }
            let top = image.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            std::array::from_fn(|i| scaled(image[i] / top))
        })
        .collect())
}

/// mne-icalabel casts each feature to f32 and then scales it by 0.99 in f32.
fn scaled(v: f64) -> f32 {
    (v as f32) * 0.99f32
}

// ---------------------------------------------------------------------------------------------
// The spectrum and the autocorrelation: half-overlapping segments.

/// The starts of the half-overlapping segments of `n` samples that fit in whole multiples of
/// `n`: ceil(k n / 2) for k = 0 .. 2 floor(len / n) - 2.
fn segment_starts(len: usize, n: usize) -> Vec<usize> {
    let count = (2 * (len / n)).saturating_sub(1);
    (0..count).map(|k| (k * n).div_ceil(2)).collect()
}

/// The median Hamming-window spectrum of one-second segments, in 20 log10 (ICLabel's scale),
/// 1..100 Hz, notches at 50 and 60 Hz filled in, scaled.
fn spectrum(x: &[f64], fs: f64) -> [f32; 100] {
    let nyquist = (fs / 2.0).floor() as usize;
    let nfreqs = nyquist.min(100);
    let n = x.len().min(fs as usize);
    let window: Vec<f64> = if n == 1 {
        vec![1.0]
    } else {
        (0..n)
            .map(|i| 0.54 - 0.46 * (2.0 * std::f64::consts::PI * i as f64 / (n - 1) as f64).cos())
            .collect()
    };
    let denominator = fs * window.iter().map(|w| w * w).sum::<f64>();
    let fft = RealFftPlanner::<f64>::new().plan_fft_forward(n);
    let mut input = fft.make_input_vec();
    let mut output = fft.make_output_vec();
    let starts = segment_starts(x.len(), n);
    let mut power = vec![Vec::with_capacity(starts.len()); nfreqs];
    for &s in &starts {
        for ((v, &xi), w) in input.iter_mut().zip(&x[s..s + n]).zip(&window) {
            *v = xi * w;
        }
        fft.process(&mut input, &mut output)
            .expect("FFT lengths match");
        for (f, p) in power.iter_mut().enumerate() {
            let mut v = output[f + 1].norm_sqr() * 2.0 / denominator;
            if nfreqs == nyquist && f + 1 == nfreqs {
                v /= 2.0;
            }
            p.push(v);
        }
    }
    let mut psd = [0.0f64; 100];
    for (f, p) in power.iter_mut().enumerate() {
        psd[f] = 20.0 * median(p).log10();
    }
    for f in nfreqs..100 {
        psd[f] = psd[nfreqs - 1];
    }
    // A notch filter's dip at 50 or 60 Hz (5 dB below both neighbours) is filled in.
    for line in [49, 59] {
        if psd[line - 1] - psd[line] > 5.0 && psd[line + 1] - psd[line] > 5.0 {
            psd[line] = (psd[line - 1] + psd[line + 1]) / 2.0;
        }
    }
    let top = psd.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    std::array::from_fn(|i| scaled(psd[i] / top))
}

/// numpy's median: the mean of the two middle values of an even count.
fn median(v: &mut [f64]) -> f64 {
    let n = v.len();
    v.sort_unstable_by(|a, b| a.total_cmp(b));
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The autocorrelation over one second, normalised by lag 0, resampled to 100 lags per
/// second (lags 1-100): Welch's average of 3 s segments for data longer than 5 s
/// (`eeg_autocorr_welch`), else of the whole run (`eeg_autocorr`).
fn autocorrelation(x: &[f64], fs: f64) -> Result<[f32; 100], String> {
    let per_second = fs as usize;
    let long = x.len() as f64 / fs > 5.0;
    let n = if long {
        x.len().min((fs * 3.0) as usize)
    } else {
        x.len()
    };
    let nfft = (2 * n - 1).next_power_of_two();
    let mut planner = RealFftPlanner::<f64>::new();
    let fft = planner.plan_fft_forward(nfft);
    let ifft = planner.plan_fft_inverse(nfft);
    let mut input = fft.make_input_vec();
    let mut spectrum = fft.make_output_vec();
    let mut power = vec![0.0f64; spectrum.len()];
    let starts = if long {
        segment_starts(x.len(), n)
    } else {
        vec![0]
    };
    for &s in &starts {
        input[..n].copy_from_slice(&x[s..s + n]);
        input[n..].fill(0.0);
        fft.process(&mut input, &mut spectrum)
            .expect("FFT lengths match");
        for (p, c) in power.iter_mut().zip(&spectrum) {
            *p += c.norm_sqr() / starts.len() as f64;
        }
    }
    for (c, &p) in spectrum.iter_mut().zip(&power) {
        *c = realfft::num_complex::Complex::new(p, 0.0);
    }
    let mut ac = ifft.make_output_vec();
    ifft.process(&mut spectrum, &mut ac)
        .expect("FFT lengths match");
    let lag0 = ac[0];
    let mut lags = vec![0.0f64; per_second + 1];
    for (k, l) in lags.iter_mut().enumerate() {
        if k < n.min(nfft) && (long || k < x.len()) {
            *l = ac[k];
        }
    }
    if long {
        // Each lag's sum has n - k products (at least one past the segment's end).
        for (k, l) in lags.iter_mut().enumerate() {
            let products = if k < per_second {
                n - k
            } else {
                1.max(n.saturating_sub(per_second))
            };
            *l /= lag0 * products as f64 / n as f64;
        }
    } else {
        lags.iter_mut().for_each(|l| *l /= lag0);
    }
    let mut down = per_second;
    if lags.len() as f64 * 100.0 / down as f64 > 101.0 {
        down += 1;
    }
    let resampled = resample_poly(&lags, 100, down);
    if resampled.len() != 101 {
        return Err(format!(
            "ICLabel's autocorrelation at {fs} Hz resamples to {} lags, not 100",
            resampled.len().saturating_sub(1)
        ));
    }
    Ok(std::array::from_fn(|i| scaled(resampled[i + 1])))
}
