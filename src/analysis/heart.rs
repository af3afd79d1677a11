//! Heart rate and HRV of an ECG channel: its beats (`hermite::find_beats`: the record's beat
//! annotations or the QRS detector), their RR intervals, and the HRV measures (`dsp::hrv`) that
//! `ede hrv` writes and the heart strip draws.

use serde::Serialize;

use super::hermite::{BeatSource, HermiteJobError, beat_label, find_beats};
use crate::dsp::filter::condition_ecg;
use crate::dsp::hrv::{self, Hrv};
use crate::recording::Recording;

/// One RR interval: between a beat and the one before it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RrInterval {
    /// The second beat's time, seconds from the recording's start.
    pub time_s: f64,
    pub rr_ms: f64,
    /// Whether both beats are normal (an NN interval).
    pub normal: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct HeartReport {
    pub channel: String,
    pub source: BeatSource,
    pub hrv: Hrv,
    pub rr: Vec<RrInterval>,
}

impl HeartReport {
    /// Reads channel `signal` whole and measures its beats (see `find_beats`).
    pub fn measure(
        rec: &Recording,
        signal: usize,
        detector: bool,
    ) -> Result<HeartReport, HermiteJobError> {
        let info = rec.signals.get(signal).ok_or_else(|| {
            HermiteJobError::Selection(format!("the recording has no signal {signal}"))
        })?;
        let raw = rec.read_all(signal)?;
        // The detector wants the conditioned channel; annotated beats need no samples.
        let ecg = if detector || !has_beat_annotations(rec) {
            condition_ecg(&raw, info.fs)
        } else {
            raw
        };
        let (source, beats) = find_beats(rec, signal, &ecg, detector);
        let times: Vec<f64> = beats.iter().map(|b| rec.sample_time(signal, b.0)).collect();
        let normal: Vec<bool> = beats
            .iter()
            .map(|b| hrv::is_normal(b.1.as_deref()))
            .collect();
        let hrv = hrv::hrv(&times, &normal, Some(info.fs)).ok_or_else(|| {
            HermiteJobError::Selection(format!(
                "{} has {} beats and fewer than two intervals between normal beats",
                info.label.trim(),
                beats.len()
            ))
        })?;
        let rr = (1..times.len())
            .map(|i| RrInterval {
                time_s: times[i],
                rr_ms: (times[i] - times[i - 1]) * 1e3,
                normal: normal[i - 1] && normal[i],
            })
            .collect();
        Ok(HeartReport {
            channel: info.label.trim().to_string(),
            source,
            hrv,
            rr,
        })
    }

    /// The RR intervals as CSV: time, interval, whether it is an NN interval.
    pub fn rr_csv(&self) -> String {
        let mut s = String::from("time_s,rr_ms,nn\n");
        for r in &self.rr {
            s += &format!("{:.6},{:.3},{}\n", r.time_s, r.rr_ms, r.normal as u8);
        }
        s
    }
}

fn has_beat_annotations(rec: &Recording) -> bool {
    (rec.annotations.iter()).any(|a| beat_label(&a.text).is_some())
}
