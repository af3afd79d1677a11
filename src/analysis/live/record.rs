//! A live session saved as it plays (`ede live --record`): every channel as it arrived, then
//! the cleaned channels (those the pipeline may change; kept ones such as EOG would repeat the
//! raw ones), with blinks, gaps and stalls as annotations, to EDF+ (16-bit sources) or BDF+
//! (24-bit and floating-point sources) through `recording::edf_record`.

use std::path::Path;

use serde::Serialize;

use super::Note;
use super::source::StreamMeta;
use crate::dsp::blink::Blink;
use crate::dsp::blink::stream::Hop;
use crate::recording::ReadError;
use crate::recording::channel::unit_from_lsl;
use crate::recording::edf_record::{EdfRecorder, RecordHeader, SignalSpec};

/// What was recorded, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct RecordReport {
    pub path: String,
    pub format: &'static str,
    /// Samples per channel written (every sample the session emitted).
    pub samples: u64,
    /// Samples outside the physical range the file was given, clipped to it.
    pub clipped: u64,
}

pub struct SessionRecorder {
    out: EdfRecorder,
    bdf: bool,
    fs: f64,
    /// Rows of the cleaned signal that are recorded (the channels the pipeline may change).
    cleaned_rows: Vec<usize>,
}

impl SessionRecorder {
    /// Creates the file once the first hop is out: a source that states no physical ranges
    /// (LSL) gets ranges of four times the first hop's largest excursion, so that the file's
    /// resolution suits the signal.
    pub fn create(
        path: &Path,
        meta: &StreamMeta,
        keep: &[bool],
        first: &Hop,
        protect: Option<&Path>,
    ) -> Result<Self, ReadError> {
        let wanted_bdf = match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("bdf") => true,
            Some(e) if e.eq_ignore_ascii_case("edf") => false,
            _ => meta.wide,
        };
        if meta.wide && !wanted_bdf {
            return Err(ReadError::invalid(
                path,
                "the stream has samples wider than 16 bits: record it as .bdf (BDF+) to keep them",
            ));
        }
        let range = |c: usize| -> (f64, f64) {
            if let Some(r) = &meta.ranges {
                return r[c];
            }
            let peak = (first.original.row(c).iter())
                .chain(first.cleaned.row(c))
                .fold(0.0f64, |m, v| m.max(v.abs() as f64));
            let half = nice_ceiling((4.0 * peak).max(100.0));
            (-half, half)
        };
        let spec = |c: usize, label: String| SignalSpec {
            label,
            unit: unit_from_lsl(&meta.units[c]),
            transducer: String::new(),
            prefilter: String::new(),
            physical: range(c),
        };
        let cleaned_rows: Vec<usize> = (0..keep.len()).filter(|&c| !keep[c]).collect();
        let mut signals: Vec<SignalSpec> = (0..meta.labels.len())
            .map(|c| spec(c, meta.labels[c].clone()))
            .collect();
        signals.extend((cleaned_rows.iter()).map(|&c| spec(c, cleaned_label(&meta.labels[c]))));
        let header = RecordHeader {
            bdf: wanted_bdf,
            patient: "X X X X".into(),
            recording: format!(
                "Startdate {} X X ede_live",
                meta.start.format("%d-%b-%Y").to_string().to_uppercase()
            ),
            start: meta.start,
            fs: meta.fs,
            signals,
        };
        let out = EdfRecorder::create(path, &header, protect)?;
        Ok(SessionRecorder {
            out,
            bdf: wanted_bdf,
            fs: meta.fs,
            cleaned_rows,
        })
    }

    /// Appends a hop's samples and blinks, and makes the file whole on disk.
    pub fn hop(&mut self, hop: &Hop) -> Result<(), ReadError> {
        let mut rows: Vec<&[f32]> = (0..hop.original.rows)
            .map(|c| hop.original.row(c))
            .collect();
        rows.extend(self.cleaned_rows.iter().map(|&c| hop.cleaned.row(c)));
        self.out.push(&rows)?;
        for b in &hop.blinks {
            self.blink(b);
        }
        self.out.flush()
    }

    fn blink(&mut self, b: &Blink) {
        let onset = b.start as f64 / self.fs;
        let duration = (b.end.saturating_sub(b.start)) as f64 / self.fs;
        self.out.annotate(onset, duration, "Blink");
    }

    /// A gap or a stall, as an annotation where it began.
    pub fn event(&mut self, note: &Note) {
        let (at, text) = match note {
            Note::Gap { at, samples } => (
                *at,
                format!("Gap: {samples} samples lost (held at the last value)"),
            ),
            Note::Stalled { at } => (*at, "Source stalled".to_string()),
            Note::Resumed | Note::Ended(_) => return,
        };
        self.out.annotate(at as f64 / self.fs, 0.0, &text);
    }

    pub fn finish(self) -> Result<RecordReport, ReadError> {
        let path = self.out.path().display().to_string();
        let (samples, clipped) = self.out.finish()?;
        Ok(RecordReport {
            path,
            format: if self.bdf { "BDF+" } else { "EDF+" },
            samples,
            clipped,
        })
    }
}

/// A cleaned channel's label: the raw one's, shortened to leave room, with " cln".
fn cleaned_label(label: &str) -> String {
    let short: String = label.chars().take(12).collect();
    format!("{short} cln")
}

/// The smallest of 1, 2 or 5 times a power of ten at or above `v`.
fn nice_ceiling(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&c| c >= v)
        .unwrap_or(10.0 * p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_labels() {
        assert_eq!(nice_ceiling(130.0), 200.0);
        assert_eq!(nice_ceiling(500.0), 500.0);
        assert_eq!(nice_ceiling(501.0), 1000.0);
        assert_eq!(cleaned_label("EEG Fp1-REF-long"), "EEG Fp1-REF- cln");
        assert_eq!(unit_from_lsl("microvolts"), "uV");
    }
}
