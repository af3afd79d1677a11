//! Writes any recording as a new EDF+ or BDF+ file: what ede saves from formats it cannot write
//! back (FIF, BrainVision, EEGLAB), a cleaned recording among them. EDF and BDF inputs are
//! copied byte for byte instead (`edf_write`).

use std::path::Path;

use super::edf_record::{EdfRecorder, RecordHeader, SignalSpec};
use super::{ReadError, Recording};

/// Samples converted per step: bounded memory for recordings of any length.
const CHUNK: usize = 1 << 16;

/// EDF header fields hold 8 characters: MEG's tesla and volts are written in the units EDF
/// files use (fT, fT/cm, uV) so that their ranges fit.
fn edf_unit(unit: &str) -> (f64, &str) {
    match unit.trim() {
        "T" => (1e15, "fT"),
        "T/m" => (1e13, "fT/cm"),
        "V" => (1e6, "uV"),
        u => (1.0, u),
    }
}

/// Writes `rec` to `out`, BDF+ (24-bit) unless `out` ends in `.edf`: every signal, with the
/// signals in `replaced` (index, all samples) carrying new values, and the annotations. Every
/// signal must share one rate. Written beside `out` and renamed, so a failure leaves no
/// partial file.
pub fn write_converted(
    rec: &Recording,
    out: &Path,
    replaced: &[(usize, &[f32])],
) -> Result<(), ReadError> {
    let bad = |m: String| ReadError::invalid(out, m);
    let Some(first) = rec.signals.first() else {
        return Err(bad("the recording has no signals to write".into()));
    };
    if let Some(s) = rec.signals.iter().find(|s| (s.fs - first.fs).abs() > 1e-9) {
        return Err(bad(format!(
            "{} ({} Hz) and {} ({} Hz) differ in rate: EDF+ of one rate only",
            first.label, first.fs, s.label, s.fs
        )));
    }
    if let Some(src) = &rec.path
        && let (Ok(a), Ok(b)) = (src.canonicalize(), out.canonicalize())
        && a == b
    {
        return Err(bad(
            "the copy must not replace the original recording".into()
        ));
    }
    let n = rec.signals.iter().map(|s| s.samples).min().unwrap_or(0);
    let new = |i: usize| replaced.iter().find(|r| r.0 == i).map(|r| r.1);
    let read = |at: usize, len: usize| -> Result<Vec<Vec<f32>>, ReadError> {
        (0..rec.signals.len())
            .map(|i| match new(i) {
                Some(v) => Ok(v[at..at + len].to_vec()),
                None => {
                    let mut buf = vec![0f32; len];
                    rec.read(i, at, &mut buf).map(|()| buf)
                }
            })
            .collect()
    };
    let header = NewFile {
        patient: rec.patient.clone(),
        recording: format!("Converted by ede from {}", rec.display_name()),
        start: rec.start,
        fs: first.fs,
        signals: rec
            .signals
            .iter()
            .map(|s| {
                (
                    s.label.clone(),
                    s.unit.clone(),
                    s.transducer.clone(),
                    s.prefilter.clone(),
                )
            })
            .collect(),
        source: rec.path.clone(),
    };
    write_samples(out, &header, n, read, &rec.annotations)
}

/// What a new EDF+/BDF+ file says of itself; signals as (label, unit, transducer, prefilter).
pub struct NewFile {
    pub patient: String,
    pub recording: String,
    pub start: chrono::NaiveDateTime,
    pub fs: f64,
    pub signals: Vec<(String, String, String, String)>,
    /// The file it derives from (its header's format details are kept where they fit).
    pub source: Option<std::path::PathBuf>,
}

/// Writes `n` samples of every signal of `file` to `out` (BDF+ unless `out` ends in `.edf`),
/// `read(at, len)` giving each signal's samples `at..at + len` (called twice per stretch: the
/// physical ranges come from a first pass, so nothing clips), with `annotations`. Written
/// beside `out` and renamed, so a failure leaves no partial file.
pub fn write_samples(
    out: &Path,
    file: &NewFile,
    n: usize,
    read: impl Fn(usize, usize) -> Result<Vec<Vec<f32>>, ReadError>,
    annotations: &[super::Annotation],
) -> Result<(), ReadError> {
    let mut ranges = vec![(f64::INFINITY, f64::NEG_INFINITY); file.signals.len()];
    let mut at = 0;
    while at < n {
        let len = CHUNK.min(n - at);
        for (range, x) in ranges.iter_mut().zip(read(at, len)?) {
            for &v in x.iter().filter(|v| v.is_finite()) {
                range.0 = range.0.min(v as f64);
                range.1 = range.1.max(v as f64);
            }
        }
        at += len;
    }
    let bdf = !out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("edf"));
    let signals = (file.signals.iter().zip(&ranges))
        .map(|((label, unit, transducer, prefilter), &(lo, hi))| {
            let (k, unit) = edf_unit(unit);
            let (lo, hi) = if lo < hi {
                (lo, hi)
            } else {
                (lo - 1.0, lo + 1.0)
            };
            let (lo, hi) = if lo.is_finite() {
                (lo, hi)
            } else {
                (-1.0, 1.0)
            };
            let margin = (hi - lo) * 0.01;
            SignalSpec {
                label: label.clone(),
                unit: unit.to_string(),
                transducer: transducer.clone(),
                prefilter: prefilter.clone(),
                physical: ((lo - margin) * k, (hi + margin) * k),
            }
        })
        .collect();
    let header = RecordHeader {
        bdf,
        patient: file.patient.clone(),
        recording: file.recording.clone(),
        start: file.start,
        fs: file.fs,
        signals,
    };
    let partial = out.with_extension("partial");
    let written = (|| {
        let mut w = EdfRecorder::create(&partial, &header, file.source.as_deref())?;
        for a in annotations {
            w.annotate(a.onset, a.duration, &a.text);
        }
        let scale: Vec<f32> = (file.signals.iter())
            .map(|s| edf_unit(&s.1).0 as f32)
            .collect();
        let mut at = 0;
        while at < n {
            let len = CHUNK.min(n - at);
            let mut chunk = read(at, len)?;
            for (c, &k) in chunk.iter_mut().zip(&scale) {
                if k != 1.0 {
                    c.iter_mut().for_each(|v| *v *= k);
                }
            }
            let rows: Vec<&[f32]> = chunk.iter().map(|c| c.as_slice()).collect();
            w.push(&rows)?;
            at += len;
        }
        w.finish()?;
        std::fs::rename(&partial, out).map_err(|e| ReadError::write(out, e))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}
