//! From Python's values to ede's: numpy arrays as in-memory recordings (their one conversion,
//! to f32), option strings, and progress reported to a Python callable while ede computes
//! without the GIL.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use ede::cli::BackendChoice;
use ede::recording::{Annotation, ChannelType, Format, Recording, in_memory};
use numpy::PyReadonlyArray2;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

pub fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

pub fn backend(name: &str) -> PyResult<BackendChoice> {
    match name {
        "auto" => Ok(BackendChoice::Auto),
        "gpu" => Ok(BackendChoice::Gpu),
        "cpu" => Ok(BackendChoice::Cpu),
        other => Err(PyValueError::new_err(format!(
            "backend must be \"auto\", \"gpu\" or \"cpu\", got {other:?}"
        ))),
    }
}

pub fn positive(name: &str, v: f64) -> PyResult<f64> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(PyValueError::new_err(format!(
            "{name} must be positive, got {v}"
        )))
    }
}

/// What an array's rows are, where the caller knows (an MNE Raw's channels): names, MNE
/// types and the bad ones. Without it rows are named by their index and typed by ede's
/// guess from that name (EEG).
#[derive(Default)]
pub struct Rows {
    pub names: Vec<String>,
    pub types: Vec<String>,
    pub bads: Vec<String>,
    /// Voltages are held in microvolts rather than volts. A row read from a file in
    /// microvolts (EDF, BDF) then holds, after its round trip through float64 volts, the very
    /// f32 samples ede reads from the file itself: what a blink removal, whose ICA amplifies
    /// rounding, needs to equal `ede deblink` on that file.
    pub microvolts: bool,
}

/// The unit of an SI array row of type `kind` in the recording, and that unit per SI unit.
fn unit_of(kind: ChannelType, microvolts: bool) -> (&'static str, f64) {
    match kind {
        ChannelType::Mag | ChannelType::RefMeg => ("T", 1.0),
        ChannelType::Grad => ("T/m", 1.0),
        ChannelType::Eeg | ChannelType::Eog | ChannelType::Ecg | ChannelType::Emg => {
            match microvolts {
                true => ("uV", 1e6),
                false => ("V", 1.0),
            }
        }
        _ => ("", 1.0),
    }
}

/// The rows of `data` `[channel, sample]` as f32, each times its `scale` (all 1 when empty):
/// the one conversion of a call's input. Empty or non-finite data is refused.
pub fn f32_rows(data: &PyReadonlyArray2<'_, f64>, scale: &[f64]) -> PyResult<Vec<Vec<f32>>> {
    let a = data.as_array();
    let (n_rows, n) = a.dim();
    if n_rows == 0 || n == 0 {
        return Err(PyValueError::new_err(format!(
            "data must hold channels and samples, got shape ({n_rows}, {n})"
        )));
    }
    if let Some((c, _)) = a.indexed_iter().find(|(_, v)| !v.is_finite()) {
        return Err(PyValueError::new_err(format!(
            "data holds a NaN or infinite value (channel {}, sample {})",
            c.0, c.1
        )));
    }
    let rows = a.rows().into_iter().enumerate();
    Ok(rows
        .map(|(c, r)| {
            let k = scale.get(c).copied().unwrap_or(1.0);
            r.iter().map(|&v| (v * k) as f32).collect()
        })
        .collect())
}

/// An in-memory recording of `data` `[channel, sample]` at `sfreq` with `annotations`.
pub fn array_recording(
    data: &PyReadonlyArray2<'_, f64>,
    sfreq: f64,
    rows: &Rows,
    annotations: Vec<Annotation>,
) -> PyResult<Recording> {
    positive("sfreq", sfreq)?;
    let n_rows = data.as_array().nrows();
    let named = !rows.names.is_empty();
    if named && (rows.names.len() != n_rows || rows.types.len() != n_rows) {
        return Err(PyValueError::new_err(format!(
            "{} names and {} types for {n_rows} rows",
            rows.names.len(),
            rows.types.len()
        )));
    }
    let kinds: Vec<Option<ChannelType>> = (0..n_rows)
        .map(|c| match named {
            // MNE types ede has no name for (bio, chpi, syst ...) are not EEG.
            true => Some(ChannelType::from_mne_name(&rows.types[c]).unwrap_or(ChannelType::Misc)),
            false => None,
        })
        .collect();
    let units: Vec<(&str, f64)> = (kinds.iter())
        .map(|k| k.map_or(("", 1.0), |k| unit_of(k, rows.microvolts)))
        .collect();
    let scale: Vec<f64> = units.iter().map(|&(_, k)| k).collect();
    let channels = f32_rows(data, &scale)?;
    let signals = (0..n_rows)
        .map(|c| match named {
            true => (rows.names[c].clone(), units[c].0.to_string(), sfreq),
            false => (format!("{c}"), String::new(), sfreq),
        })
        .collect();
    let mut rec = in_memory(
        None,
        Format::Array,
        chrono::NaiveDateTime::default(),
        signals,
        channels,
        annotations,
        Vec::new(),
    );
    for (s, kind) in rec.signals.iter_mut().zip(kinds) {
        if let Some(kind) = kind {
            s.kind = kind;
        }
        s.bad = rows.bads.contains(&s.label);
    }
    Ok(rec)
}

/// Progress of a computation running without the GIL, told to an optional Python callable
/// `(done, total)`. Each report also checks for Ctrl-C; an exception (the callable's, or
/// KeyboardInterrupt) stops the computation at its next report and is raised when it returns.
pub struct Progress {
    callback: Option<Py<PyAny>>,
    error: Mutex<Option<PyErr>>,
    pub cancel: AtomicBool,
}

impl Progress {
    pub fn new(callback: Option<Py<PyAny>>) -> Self {
        Progress {
            callback,
            error: Mutex::new(None),
            cancel: AtomicBool::new(false),
        }
    }

    /// Reports `done` of `total`; false once the computation is to stop.
    pub fn report(&self, done: usize, total: usize) -> bool {
        if self.cancel.load(Ordering::Relaxed) {
            return false;
        }
        let told = Python::attach(|py| {
            py.check_signals()?;
            match &self.callback {
                Some(f) => f.call1(py, (done, total)).map(drop),
                None => Ok(()),
            }
        });
        match told {
            Ok(()) => true,
            Err(e) => {
                *self.error.lock().unwrap() = Some(e);
                self.cancel.store(true, Ordering::Relaxed);
                false
            }
        }
    }

    /// Runs `work` on a thread of its own, reporting `done` of `total` every 100 ms meanwhile
    /// (and no later than it ends):
    /// for jobs that count their progress in an atomic rather than call back.
    pub fn poll<T: Send>(
        &self,
        done: &AtomicUsize,
        total: usize,
        work: impl FnOnce() -> T + Send,
    ) -> T {
        std::thread::scope(|s| {
            let (sender, ended) = std::sync::mpsc::channel();
            s.spawn(move || sender.send(work()));
            loop {
                self.report(done.load(Ordering::Relaxed), total);
                match ended.recv_timeout(Duration::from_millis(100)) {
                    Ok(result) => {
                        self.report(done.load(Ordering::Relaxed), total);
                        return result;
                    }
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => panic!("the computation panicked"),
                }
            }
        })
    }

    /// `result`, unless a report's exception stopped the computation: then that exception.
    pub fn finish<T>(self, result: PyResult<T>) -> PyResult<T> {
        match self.error.into_inner().unwrap() {
            Some(e) => Err(e),
            None => result,
        }
    }
}
