//! ede's analyses on numpy arrays: each converts, calls the job the command line calls, and
//! hands back arrays. No algorithm is written here.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use ede::analysis::blink::{DeblinkReport, Deblinker, EegData, MIN_GPU_CHANNELS, runs_on_gpu};
use ede::analysis::cwt::{self as cwt_job, BandPowerJob};
use ede::analysis::hermite::{EcgBeats, EcgFilter, Fitter, HermiteReport};
use ede::analysis::xapen::{self as xapen_job, EpochCount, XapenJob};
use ede::cli::BackendChoice;
use ede::dsp::cwt::{CwtParams, ScaleSpec};
use ede::dsp::hermite::HermiteParams;
use ede::dsp::xapen::{Correction, XapenParams};
use ede::gpu::cwt::CwtKernels;
use ede::gpu::xapen::XapenKernels;
use ede::recording::{Annotation, si_per_unit};
use numpy::{PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrays::{Progress, Rows, array_recording, backend, f32_rows, positive, value_error};
use crate::gpu::{Kept, context};

/// The Cross-ApEn matrix (row u, column v: Cross-ApEn(u||v), the mean over epochs; NaN where
/// a channel is flat) of `data` `[channel, sample]` at `sfreq`, as `ede xapen` computes it.
#[pyfunction]
#[pyo3(signature = (data, sfreq, *, m=1, r=0.2, epoch_len=1024, epochs=None, start=0.0,
                    correction="max", backend="auto", progress=None, _timing=None))]
#[allow(clippy::too_many_arguments)]
pub fn xapen<'py>(
    py: Python<'py>,
    data: PyReadonlyArray2<'py, f64>,
    sfreq: f64,
    m: usize,
    r: f32,
    epoch_len: usize,
    epochs: Option<usize>,
    start: f64,
    correction: &str,
    backend: &str,
    progress: Option<Py<PyAny>>,
    _timing: Option<Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let correction = match correction {
        "max" => Correction::Max,
        "zero" => Correction::Zero,
        other => {
            return Err(PyValueError::new_err(format!(
                "correction must be \"max\" or \"zero\", got {other:?}"
            )));
        }
    };
    let choice = self::backend(backend)?;
    if !(start.is_finite() && start >= 0.0) {
        return Err(PyValueError::new_err(format!(
            "start must be >= 0 s, got {start}"
        )));
    }
    if epochs == Some(0) {
        return Err(PyValueError::new_err("epochs must be positive (None: all)"));
    }
    let rec = array_recording(&data, sfreq, &Rows::default(), Vec::new())?;
    let job = XapenJob {
        channels: (0..rec.signals.len()).collect(),
        epoch_len,
        epochs: epochs.map_or(EpochCount::All, EpochCount::Count),
        start_sample: (start * sfreq).round() as usize,
        params: XapenParams { m, r, correction },
        per_epoch: false,
    };
    let total = job.epoch_count(&rec).map_err(value_error)?;
    let progress = Progress::new(progress);
    let report = py.detach(|| {
        XAPEN.with(choice, XapenKernels::new, |gpu| {
            let done = AtomicUsize::new(0);
            let run = || xapen_job::run(&rec, &job, gpu, Some(&progress.cancel), Some(&done));
            progress.poll(&done, total, run)
        })
    });
    let report = progress.finish(report.map_err(value_error))?;
    let report = report.ok_or_else(|| PyValueError::new_err("cancelled"))?;
    // The job's own time, for the benchmark of what a call costs beyond it.
    if let Some(timing) = _timing {
        timing.set_item("analysis_s", report.elapsed_s)?;
    }
    let n = report.matrix.len();
    let flat: Vec<f64> = report.matrix.into_iter().flatten().collect();
    PyArray1::from_vec(py, flat).reshape([n, n])
}

fn cwt_params(fmin: f64, fmax: f64, voices: usize, omega0: f64) -> CwtParams {
    CwtParams {
        omega0,
        scales: ScaleSpec::Frequencies { fmin, fmax, voices },
    }
}

static XAPEN: Kept<XapenKernels> = Kept::new();
static CWT: Kept<CwtKernels> = Kept::new();
static HERMITE: Kept<Fitter<u64>> = Kept::new();

/// `(|W| [channel, scale, sample] float32, frequencies [scale] Hz)`: the Morlet scalogram of
/// each row of `data`, smallest scale (highest frequency) first, as `ede cwt` computes it.
#[pyfunction]
#[pyo3(signature = (data, sfreq, *, fmin=1.0, fmax=40.0, voices=8, omega0=6.0, backend="auto"))]
#[allow(clippy::too_many_arguments)]
#[allow(clippy::type_complexity)]
pub fn cwt<'py>(
    py: Python<'py>,
    data: PyReadonlyArray2<'py, f64>,
    sfreq: f64,
    fmin: f64,
    fmax: f64,
    voices: usize,
    omega0: f64,
    backend: &str,
) -> PyResult<(Bound<'py, PyArray3<f32>>, Bound<'py, PyArray1<f64>>)> {
    let choice = self::backend(backend)?;
    positive("sfreq", sfreq)?;
    let x = f32_rows(&data, &[])?;
    let params = cwt_params(fmin, fmax, voices, omega0);
    let (rows, n) = (x.len(), x[0].len());
    let (axes, mag, _) = py
        .detach(|| {
            let refs: Vec<&[f32]> = x.iter().map(Vec::as_slice).collect();
            CWT.with(choice, CwtKernels::new, |gpu| {
                cwt_job::magnitude(&refs, sfreq, &params, gpu)
            })
        })
        .map_err(value_error)?;
    let s = axes.scales.len();
    let mag = PyArray1::from_vec(py, mag).reshape([rows, s, n])?;
    Ok((mag, PyArray1::from_vec(py, axes.frequencies_hz)))
}

/// `(power [channel, scale, block] float64, frequencies [scale] Hz, block starts [block] s)`:
/// the mean Morlet power of each scale in blocks of `block_s`, as `ede cwt --band-power`
/// streams it over a whole recording.
#[pyfunction]
#[pyo3(signature = (data, sfreq, *, fmin=1.0, fmax=40.0, voices=8, omega0=6.0, block_s=1.0,
                    backend="auto", progress=None))]
#[allow(clippy::too_many_arguments)]
#[allow(clippy::type_complexity)]
pub fn band_power<'py>(
    py: Python<'py>,
    data: PyReadonlyArray2<'py, f64>,
    sfreq: f64,
    fmin: f64,
    fmax: f64,
    voices: usize,
    omega0: f64,
    block_s: f64,
    backend: &str,
    progress: Option<Py<PyAny>>,
) -> PyResult<(
    Bound<'py, PyArray3<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
)> {
    let choice = self::backend(backend)?;
    positive("block_s", block_s)?;
    let rec = array_recording(&data, sfreq, &Rows::default(), Vec::new())?;
    let rows = rec.signals.len();
    let job = BandPowerJob {
        channels: (0..rows).collect(),
        params: cwt_params(fmin, fmax, voices, omega0),
        block_s,
        segment: 0,
    };
    let progress = Progress::new(progress);
    let mut pieces: Vec<(usize, Vec<f64>)> = Vec::new();
    let axes = py.detach(|| {
        let report = |done, total| {
            progress.report(done, total);
        };
        let keep = |first: usize, power: &[f64]| {
            pieces.push((first, power.to_vec()));
            Ok(())
        };
        let cancel = &progress.cancel;
        CWT.with(choice, CwtKernels::new, |gpu| {
            cwt_job::band_power(&rec, &job, gpu, cancel, report, keep).map(|(a, _)| a)
        })
    });
    let axes = progress.finish(axes.map_err(value_error))?;
    // Each segment's power is [channel][scale][its blocks]; the whole is [channel][scale][block].
    let s = axes.scales.len();
    let blocks = |p: &Vec<f64>| p.len() / (rows * s);
    let total = pieces.iter().map(|(f, p)| f + blocks(p)).max().unwrap_or(0);
    let mut power = vec![0f64; rows * s * total];
    for (first, p) in &pieces {
        let b = blocks(p);
        for (row, values) in p.chunks_exact(b).enumerate() {
            power[row * total + first..][..b].copy_from_slice(values);
        }
    }
    let block = job.block_samples(sfreq) as f64;
    let starts: Vec<f64> = (0..total).map(|k| k as f64 * block / sfreq).collect();
    Ok((
        PyArray1::from_vec(py, power).reshape([rows, s, total])?,
        PyArray1::from_vec(py, axes.frequencies_hz),
        PyArray1::from_vec(py, starts),
    ))
}

/// The Hermite fit of every beat of the ECG `data` (one row) as `ede hermite` makes it: a dict
/// of `sample`, `time_s`, `label`, `sigma`, `mse`, `coefficients [beat, order]` and the
/// report's other fields. The beats are `given` samples, or those of `annotations` (`onset`
/// s, `description` a beat label such as N or V), or the QRS detector's (`detect`, or no beat
/// annotation).
#[pyfunction]
#[pyo3(signature = (data, sfreq, *, order=6, sigmas=100, sigma_min=None, sigma_max=None,
                    filter="default", detect=false, given=None, onsets=Vec::new(),
                    descriptions=Vec::new(), backend="auto"))]
#[allow(clippy::too_many_arguments)]
pub fn hermite<'py>(
    py: Python<'py>,
    data: PyReadonlyArray2<'py, f64>,
    sfreq: f64,
    order: usize,
    sigmas: usize,
    sigma_min: Option<f64>,
    sigma_max: Option<f64>,
    filter: &str,
    detect: bool,
    given: Option<Vec<usize>>,
    onsets: Vec<f64>,
    descriptions: Vec<String>,
    backend: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let choice = self::backend(backend)?;
    let filter = match filter {
        "default" => EcgFilter::Default,
        "none" => EcgFilter::None,
        other => {
            return Err(PyValueError::new_err(format!(
                "filter must be \"default\" or \"none\", got {other:?}"
            )));
        }
    };
    let params = HermiteParams {
        order,
        sigmas,
        sigma_min,
        sigma_max,
    };
    params.sigma_grid().map_err(value_error)?;
    if data.as_array().nrows() != 1 {
        return Err(PyValueError::new_err("hermite takes one ECG channel"));
    }
    let annotations = (onsets.into_iter().zip(descriptions))
        .map(|(onset, text)| Annotation {
            onset,
            duration: 0.0,
            text,
        })
        .collect();
    let rows = Rows {
        names: vec!["ECG".into()],
        types: vec!["ecg".into()],
        bads: Vec::new(),
        microvolts: false,
    };
    let rec = array_recording(&data, sfreq, &rows, annotations)?;
    let report = py
        .detach(|| {
            let beats = match &given {
                Some(samples) => EcgBeats::prepare_given(&rec, 0, filter, samples)?,
                None => EcgBeats::prepare(&rec, 0, filter, detect)?,
            };
            // The fitter keeps the last beats on the device under their key: a new key each call.
            static CALLS: AtomicU64 = AtomicU64::new(0);
            let key = CALLS.fetch_add(1, Ordering::Relaxed);
            let t = std::time::Instant::now();
            let fit = |f: &mut Fitter<u64>| f.fit(&key, &beats.windows, sfreq, &params, None);
            let fitted = HERMITE.with(
                choice,
                |c| Fitter::new(Some(c)),
                |kept| match kept {
                    Some(fitter) => fit(fitter),
                    None => fit(&mut Fitter::new(None)),
                },
            );
            let (fits, (_, ran_on)) = fitted?;
            let elapsed = t.elapsed().as_secs_f64();
            let unit = rec.signals[0].unit.clone();
            HermiteReport::new(
                "array".into(),
                unit,
                &beats,
                &params,
                &fits,
                (elapsed, ran_on),
            )
        })
        .map_err(value_error)?;
    let b = &report.beats;
    let out = PyDict::new(py);
    out.set_item(
        "sample",
        PyArray1::from_iter(py, b.iter().map(|x| x.sample)),
    )?;
    out.set_item(
        "time_s",
        PyArray1::from_iter(py, b.iter().map(|x| x.time_s)),
    )?;
    out.set_item(
        "label",
        b.iter().map(|x| x.label.clone()).collect::<Vec<_>>(),
    )?;
    out.set_item("sigma", PyArray1::from_iter(py, b.iter().map(|x| x.sigma)))?;
    out.set_item("mse", PyArray1::from_iter(py, b.iter().map(|x| x.mse)))?;
    let coefficients = b.iter().flat_map(|x| x.coefficients.iter().copied());
    let coefficients = PyArray1::from_iter(py, coefficients).reshape([b.len(), order])?;
    out.set_item("coefficients", coefficients)?;
    out.set_item("sigmas", PyArray1::from_slice(py, &report.sigmas))?;
    let skipped: Vec<(usize, Option<String>, &str)> = (report.skipped.iter())
        .map(|s| (s.sample, s.label.clone(), s.reason))
        .collect();
    out.set_item("skipped", skipped)?;
    let source = serde_json::to_value(report.beat_source).map_err(value_error)?;
    out.set_item("beat_source", source.as_str())?;
    out.set_item("ran_on", report.ran_on)?;
    Ok(out)
}

/// Eye blinks removed from the EEG rows of `data` as `ede deblink` removes them, with its
/// options given as its flags (`["--window", "20"]`): `(rows cleaned, their cleaned samples
/// [row, sample] in the input's units, the report as JSON)`.
#[pyfunction]
#[pyo3(signature = (data, sfreq, ch_names, ch_types, bads, flags, progress=None))]
#[allow(clippy::too_many_arguments)]
#[allow(clippy::type_complexity)]
pub fn deblink<'py>(
    py: Python<'py>,
    data: PyReadonlyArray2<'py, f64>,
    sfreq: f64,
    ch_names: Vec<String>,
    ch_types: Vec<String>,
    bads: Vec<String>,
    flags: Vec<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<(Vec<usize>, Bound<'py, PyArray2<f64>>, String)> {
    let (opts, choice) = ede::cli::deblink::pipeline_from_flags(&flags)
        .map_err(|e| PyValueError::new_err(e.render().to_string().trim().to_string()))?;
    opts.fastica.validate().map_err(value_error)?;
    let rows = Rows {
        names: ch_names,
        types: ch_types,
        bads,
        microvolts: true,
    };
    let rec = array_recording(&data, sfreq, &rows, Vec::new())?;
    let progress = Progress::new(progress);
    let done = py.detach(|| {
        let eeg = EegData::load(&rec, &opts)?;
        let forced = choice == BackendChoice::Gpu;
        let min_channels = if forced { 0 } else { MIN_GPU_CHANNELS };
        let gpu = context(choice).filter(|_| runs_on_gpu(&opts, eeg.data.rows, min_channels));
        let mut deblinker = Deblinker::new(gpu);
        if forced {
            deblinker = deblinker.forced();
        }
        let t = std::time::Instant::now();
        let result = deblinker.run(&eeg, &opts, &mut |done, total| progress.report(done, total))?;
        let ran_on = deblinker.ran_on(&opts, eeg.data.rows);
        let report = DeblinkReport::new(
            "array".into(),
            &eeg,
            &opts,
            &result,
            t.elapsed().as_secs_f64(),
            ran_on,
        );
        Ok::<_, ede::analysis::blink::BlinkJobError>((eeg, result, report))
    });
    let (eeg, result, report) = progress.finish(done.map_err(value_error))?;
    // Back in SI units, the rows left unchanged left out.
    let cleaned_rows: Vec<usize> = (0..eeg.signals.len())
        .filter(|&k| !eeg.channels.keep[k])
        .collect();
    let n = result.cleaned.cols;
    let mut cleaned = Vec::with_capacity(cleaned_rows.len() * n);
    for &k in &cleaned_rows {
        let unit = &rec.signals[eeg.signals[k]].unit;
        let si = si_per_unit(unit).map_or(1.0, |(_, si)| si) / eeg.scale[k];
        cleaned.extend(result.cleaned.row(k).iter().map(|&v| v as f64 * si));
    }
    let signals = cleaned_rows.iter().map(|&k| eeg.signals[k]).collect();
    let json = serde_json::to_string(&report).map_err(value_error)?;
    let cleaned = PyArray1::from_vec(py, cleaned).reshape([cleaned_rows.len(), n])?;
    Ok((signals, cleaned, json))
}
