//! `ede._ede`: the Python package's extension. It converts numpy arrays and calls ede's
//! `analysis` and `cli`; no algorithm is written here. `ede/__init__.py` adds MNE Raw handling.

use std::path::PathBuf;

use ede::analysis::xapen::{self as xapen_job, EpochCount, XapenJob};
use ede::cli::BackendChoice;
use ede::dsp::xapen::{Correction, XapenParams};
use ede::recording::{Format, OpenOptions, Recording, in_memory, si_per_unit};
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray2};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Runs `ede` with `argv` (the program's name first): the viewer or a subcommand, in this
/// process; the exit status. The `ede` console script.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(move || ede::cli::main_with(argv))
}

/// `(data, info)` of the recording at `path`: samples `[channel, sample]` in SI units (V, T,
/// T/m; other units as recorded), and `sfreq`, `ch_names`, `ch_types` (MNE's names), `units`,
/// `annotations` (onset and duration in seconds, description) and `meas_date`.
#[pyfunction]
fn read_array<'py>(
    py: Python<'py>,
    path: PathBuf,
) -> PyResult<(Bound<'py, PyArray2<f64>>, Bound<'py, PyDict>)> {
    let rec = py
        .detach(|| Recording::open(&path, &OpenOptions::default()))
        .map_err(|e| PyOSError::new_err(e.to_string()))?;
    let first = rec
        .signals
        .first()
        .ok_or_else(|| PyValueError::new_err(format!("{} has no signals", path.display())))?;
    if let Some(other) = rec.signals.iter().find(|s| s.fs != first.fs) {
        return Err(PyValueError::new_err(format!(
            "{} holds channels of several rates ({} at {} Hz, {} at {} Hz); one array needs one",
            path.display(),
            first.label.trim(),
            first.fs,
            other.label.trim(),
            other.fs
        )));
    }
    let n = rec.signals.iter().map(|s| s.samples).max().unwrap_or(0);
    let rows = rec.signals.len();
    let data = py.detach(|| -> Result<Vec<f64>, String> {
        let mut data = vec![f64::NAN; rows * n];
        let mut buf = vec![0f32; n];
        for (c, s) in rec.signals.iter().enumerate() {
            let scale = si_per_unit(&s.unit).map_or(1.0, |(_, k)| k);
            rec.read(c, 0, &mut buf[..s.samples])
                .map_err(|e| e.to_string())?;
            for (d, &v) in data[c * n..].iter_mut().zip(&buf[..s.samples]) {
                *d = v as f64 * scale;
            }
        }
        Ok(data)
    });
    let data = data.map_err(PyOSError::new_err)?;
    let array = PyArray1::from_vec(py, data).reshape([rows, n])?;
    let info = PyDict::new(py);
    info.set_item("sfreq", first.fs)?;
    let labels: Vec<String> = rec
        .signals
        .iter()
        .map(|s| s.label.trim().to_string())
        .collect();
    info.set_item("ch_names", labels)?;
    let types: Vec<&str> = rec.signals.iter().map(|s| s.kind.mne_name()).collect();
    info.set_item("ch_types", types)?;
    let units: Vec<String> = (rec.signals.iter())
        .map(|s| si_per_unit(&s.unit).map_or(s.unit.trim().to_string(), |(u, _)| u.into()))
        .collect();
    info.set_item("units", units)?;
    let annotations = PyDict::new(py);
    let onsets: Vec<f64> = rec.annotations.iter().map(|a| a.onset).collect();
    let durations: Vec<f64> = rec.annotations.iter().map(|a| a.duration).collect();
    let texts: Vec<&str> = rec.annotations.iter().map(|a| a.text.as_str()).collect();
    annotations.set_item("onset", onsets)?;
    annotations.set_item("duration", durations)?;
    annotations.set_item("description", texts)?;
    info.set_item("annotations", annotations)?;
    info.set_item(
        "meas_date",
        rec.start.format("%Y-%m-%dT%H:%M:%S%.f").to_string(),
    )?;
    Ok((array, info))
}

/// The Cross-ApEn matrix (row u, column v: Cross-ApEn(u||v), the mean over epochs; NaN where
/// a channel is flat) of `data` `[channel, sample]` at `sfreq`, as `ede xapen` computes it.
#[pyfunction]
#[pyo3(signature = (data, sfreq, *, m=1, r=0.2, epoch_len=1024, epochs=None, start=0.0,
                    correction="max", backend="auto"))]
#[allow(clippy::too_many_arguments)]
fn xapen<'py>(
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
    let choice = match backend {
        "auto" => BackendChoice::Auto,
        "gpu" => BackendChoice::Gpu,
        "cpu" => BackendChoice::Cpu,
        other => {
            return Err(PyValueError::new_err(format!(
                "backend must be \"auto\", \"gpu\" or \"cpu\", got {other:?}"
            )));
        }
    };
    if !(sfreq.is_finite() && sfreq > 0.0) {
        return Err(PyValueError::new_err(format!(
            "sfreq must be positive, got {sfreq}"
        )));
    }
    if !(start.is_finite() && start >= 0.0) {
        return Err(PyValueError::new_err(format!(
            "start must be >= 0 s, got {start}"
        )));
    }
    if epochs == Some(0) {
        return Err(PyValueError::new_err("epochs must be positive (None: all)"));
    }
    let rec = array_recording(&data, sfreq)?;
    let job = XapenJob {
        channels: (0..rec.signals.len()).collect(),
        epoch_len,
        epochs: epochs.map_or(EpochCount::All, EpochCount::Count),
        start_sample: (start * sfreq).round() as usize,
        params: XapenParams { m, r, correction },
        per_epoch: false,
    };
    let report = py.detach(|| {
        let mut gpu =
            ede::cli::open_gpu("ede.xapen", choice).map(|c| ede::gpu::xapen::XapenKernels::new(&c));
        xapen_job::run(&rec, &job, gpu.as_mut(), None, None)
    });
    let report = report
        .map_err(|e| PyValueError::new_err(e.to_string()))?
        .ok_or_else(|| PyValueError::new_err("cancelled"))?;
    let n = report.matrix.len();
    let flat: Vec<f64> = report.matrix.into_iter().flatten().collect();
    PyArray1::from_vec(py, flat).reshape([n, n])
}

/// An in-memory recording of `data` `[channel, sample]`: its one conversion, to f32.
fn array_recording(data: &PyReadonlyArray2<'_, f64>, sfreq: f64) -> PyResult<Recording> {
    let a = data.as_array();
    let (rows, n) = a.dim();
    if rows == 0 || n == 0 {
        return Err(PyValueError::new_err(format!(
            "data must hold channels and samples, got shape ({rows}, {n})"
        )));
    }
    if let Some((c, _)) = a.indexed_iter().find(|(_, v)| !v.is_finite()) {
        return Err(PyValueError::new_err(format!(
            "data holds a NaN or infinite value (channel {}, sample {})",
            c.0, c.1
        )));
    }
    let channels: Vec<Vec<f32>> = a
        .rows()
        .into_iter()
        .map(|r| r.iter().map(|&v| v as f32).collect())
        .collect();
    let signals = (0..rows)
        .map(|c| (format!("{c}"), String::new(), sfreq))
        .collect();
    Ok(in_memory(
        None,
        Format::Array,
        chrono::NaiveDateTime::default(),
        signals,
        channels,
        Vec::new(),
        Vec::new(),
    ))
}

#[pymodule]
mod _ede {
    #[pymodule_export]
    use super::{main, read_array, xapen};
}
