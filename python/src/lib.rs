//! `ede._ede`: the Python package's extension. It converts numpy arrays and calls ede's
//! `analysis` and `cli`; no algorithm is written here. `ede/__init__.py` adds MNE Raw handling.

use std::path::PathBuf;

mod analyses;
mod arrays;
mod gpu;

use ede::recording::{OpenOptions, Recording, si_per_unit};
use numpy::{PyArray1, PyArray2, PyArrayMethods};
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
/// `stream`: an XDF file's stream by name or id (its EEG stream by default); `csv_fs`: the rate
/// of a CSV file without a time column.
#[pyfunction]
#[pyo3(signature = (path, *, stream=None, csv_fs=None))]
fn read_array<'py>(
    py: Python<'py>,
    path: PathBuf,
    stream: Option<String>,
    csv_fs: Option<f64>,
) -> PyResult<(Bound<'py, PyArray2<f64>>, Bound<'py, PyDict>)> {
    let options = OpenOptions {
        csv_fs,
        xdf_stream: stream,
    };
    let rec = py
        .detach(|| Recording::open(&path, &options))
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

#[pymodule]
mod _ede {
    #[pymodule_export]
    use super::analyses::{band_power, cwt, deblink, hermite, xapen};
    #[pymodule_export]
    use super::{main, read_array};
    /// The commit the extension was built from, with its date (`ede --version` prints it).
    #[pymodule_export]
    const COMMIT: &str = ede::COMMIT;
}
