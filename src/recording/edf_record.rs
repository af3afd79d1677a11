//! Records a stream as a new EDF+ (or BDF+) file while it plays: samples are appended data record
//! by data record, annotations ride in the records' annotation signal, and the header's record
//! count is rewritten after every `flush`, so the file on disk is a valid recording at any
//! moment (a lab session cut short by a crash or Ctrl-C keeps all but its last second).
//!
//! Every signal has the same sampling rate (a live stream's). A record lasts one second where the
//! rate is a whole number of samples per second, else the shortest whole number of seconds
//! (up to 10) that holds a whole number of samples. The last record is completed with zeros and
//! an annotation says where the recorded signal ends.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use chrono::{NaiveDateTime, Timelike};

use super::ReadError;
use super::edf_write::{fmt_onset, padded, signed};

/// Bytes of annotation text each record can carry (whole 2- and 3-byte samples); more wait for
/// the next record.
const ANNOTATION_BYTES: usize = 312;

/// One signal of the new file.
#[derive(Debug, Clone, PartialEq)]
pub struct SignalSpec {
    pub label: String,
    pub unit: String,
    pub transducer: String,
    pub prefilter: String,
    /// The physical range, mapped onto the format's whole digital range; values outside it are
    /// clipped (and counted).
    pub physical: (f64, f64),
}

/// What the new file's header says.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordHeader {
    /// 24-bit BDF+ instead of 16-bit EDF+.
    pub bdf: bool,
    pub patient: String,
    pub recording: String,
    /// Clock time of the first sample.
    pub start: NaiveDateTime,
    pub fs: f64,
    pub signals: Vec<SignalSpec>,
}

pub struct EdfRecorder {
    path: PathBuf,
    out: BufWriter<File>,
    bdf: bool,
    /// Samples per record and seconds per record.
    spr: usize,
    record_s: f64,
    /// Per signal: digital = (physical - bias) / gain, clamped to the digital range.
    scale: Vec<(f64, f64)>,
    pending: Vec<VecDeque<f32>>,
    annotations: VecDeque<Vec<u8>>,
    /// Seconds from the header's whole second to the first sample.
    subsecond: f64,
    records: u64,
    samples: u64,
    clipped: u64,
}

impl EdfRecorder {
    /// Creates `path` (refusing to replace `protect`, the recording being played, if given) and
    /// writes the header.
    pub fn create(
        path: &Path,
        header: &RecordHeader,
        protect: Option<&Path>,
    ) -> Result<Self, ReadError> {
        let bad = |m: String| ReadError::invalid(path, m);
        if header.signals.is_empty() {
            return Err(bad("a recording needs at least one signal".into()));
        }
        if !(header.fs > 0.0 && header.fs.is_finite()) {
            return Err(bad(format!("sampling rate {} Hz", header.fs)));
        }
        if let Some(p) = protect
            && let (Ok(a), Ok(b)) = (p.canonicalize(), path.canonicalize())
            && a == b
        {
            return Err(bad(
                "the recording must not replace the file being played: choose another name".into(),
            ));
        }
        let (spr, record_s) = record_layout(header.fs);
        let (dmin, dmax) = digital_range(header.bdf);
        let scale = (header.signals.iter())
            .map(|s| {
                let (lo, hi) = s.physical;
                let gain = (hi - lo) / (dmax - dmin) as f64;
                (gain, lo - dmin as f64 * gain)
            })
            .collect();
        let file = File::create(path).map_err(|e| ReadError::write(path, e))?;
        let mut r = EdfRecorder {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
            bdf: header.bdf,
            spr,
            record_s,
            scale,
            pending: vec![VecDeque::new(); header.signals.len()],
            annotations: VecDeque::new(),
            subsecond: header.start.nanosecond().min(999_999_999) as f64 / 1e9,
            records: 0,
            samples: 0,
            clipped: 0,
        };
        let bytes = render_header(header, spr, record_s);
        r.out
            .write_all(&bytes)
            .map_err(|e| ReadError::write(path, e))?;
        Ok(r)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends samples: `signals[k]` continues signal k. Every signal must be given the same
    /// number of samples.
    pub fn push(&mut self, signals: &[&[f32]]) -> Result<(), ReadError> {
        assert_eq!(signals.len(), self.pending.len(), "signals pushed");
        for (p, s) in self.pending.iter_mut().zip(signals) {
            p.extend(s.iter().copied());
        }
        self.samples += signals.first().map_or(0, |s| s.len()) as u64;
        while self.pending[0].len() >= self.spr {
            self.write_record()?;
        }
        Ok(())
    }

    /// An annotation, `onset` in seconds from the first sample; it is written with the next
    /// record that has room.
    pub fn annotate(&mut self, onset: f64, duration: f64, text: &str) {
        let text = text.replace(['\x14', '\x15', '\0'], " ");
        let t = signed(onset + self.subsecond);
        let tal = if duration > 0.0 {
            format!("{t}\x15{}\x14{text}\x14\0", fmt_onset(duration))
        } else {
            format!("{t}\x14{text}\x14\0")
        };
        self.annotations.push_back(tal.into_bytes());
    }

    /// Writes what is buffered and the header's record count, so the file on disk is whole.
    pub fn flush(&mut self) -> Result<(), ReadError> {
        let path = self.path.clone();
        let io = |e| ReadError::write(&path, e);
        self.out.flush().map_err(io)?;
        let file = self.out.get_mut();
        let end = file.stream_position().map_err(io)?;
        file.seek(SeekFrom::Start(236)).map_err(io)?;
        file.write_all(&padded(&self.records.to_string(), 8))
            .map_err(io)?;
        file.seek(SeekFrom::Start(end)).map_err(io)?;
        Ok(())
    }

    /// Completes the last record (with zeros, and an annotation where the signal ends), writes
    /// any annotations still waiting in records of their own, and closes the file. Returns
    /// (samples per signal recorded, samples clipped to the physical range).
    pub fn finish(mut self) -> Result<(u64, u64), ReadError> {
        let partial = self.pending[0].len();
        if partial > 0 {
            let end = self.samples as f64 / self.spr as f64 * self.record_s;
            self.annotate(end, 0.0, "Recording ends (zeros follow)");
            for p in &mut self.pending {
                p.resize(self.spr, 0.0);
            }
            self.write_record()?;
        }
        while !self.annotations.is_empty() {
            let end = self.records as f64 * self.record_s;
            if partial == 0 {
                self.annotate(end, 0.0, "Recording ends (zeros follow)");
            }
            for p in &mut self.pending {
                p.resize(self.spr, 0.0);
            }
            self.write_record()?;
        }
        self.flush()?;
        let file = self.out.get_ref();
        file.sync_all()
            .map_err(|e| ReadError::write(&self.path, e))?;
        Ok((self.samples, self.clipped))
    }

    fn write_record(&mut self) -> Result<(), ReadError> {
        let bps = if self.bdf { 3 } else { 2 };
        let (dmin, dmax) = digital_range(self.bdf);
        let mut bytes = Vec::with_capacity(self.pending.len() * self.spr * bps + ANNOTATION_BYTES);
        for (p, &(gain, bias)) in self.pending.iter_mut().zip(&self.scale) {
            for v in p.drain(..self.spr) {
                let d = ((v as f64 - bias) / gain).round();
                let clamped = if d.is_finite() {
                    d.clamp(dmin as f64, dmax as f64)
                } else {
                    0.0
                };
                if clamped != d {
                    self.clipped += 1;
                }
                bytes.extend_from_slice(&(clamped as i32).to_le_bytes()[..bps]);
            }
        }
        let onset = self.records as f64 * self.record_s + self.subsecond;
        let mut tal = format!("{}\x14\x14\0", signed(onset)).into_bytes();
        while let Some(a) = self.annotations.front() {
            if tal.len() + a.len() > ANNOTATION_BYTES {
                break;
            }
            tal.extend(self.annotations.pop_front().unwrap_or_default());
        }
        tal.resize(ANNOTATION_BYTES, 0);
        bytes.extend(tal);
        self.out
            .write_all(&bytes)
            .map_err(|e| ReadError::write(&self.path, e))?;
        self.records += 1;
        Ok(())
    }
}

/// Samples per record and the record's seconds for a sampling rate.
fn record_layout(fs: f64) -> (usize, f64) {
    for secs in 1..=10 {
        let n = fs * secs as f64;
        if (n - n.round()).abs() < 1e-6 && n.round() >= 1.0 {
            return (n.round() as usize, secs as f64);
        }
    }
    let n = fs.round().max(1.0);
    (n as usize, n / fs)
}

fn digital_range(bdf: bool) -> (i32, i32) {
    if bdf {
        (-8_388_608, 8_388_607)
    } else {
        (-32_768, 32_767)
    }
}

fn render_header(h: &RecordHeader, spr: usize, record_s: f64) -> Vec<u8> {
    let ns = h.signals.len() + 1;
    let mut out = Vec::with_capacity(256 * (ns + 1));
    if h.bdf {
        out.push(0xff);
        out.extend(padded("BIOSEMI", 7));
    } else {
        out.extend(padded("0", 8));
    }
    let start = h.start.with_nanosecond(0).unwrap_or(h.start);
    out.extend(padded(&h.patient, 80));
    out.extend(padded(&h.recording, 80));
    out.extend(padded(&start.format("%d.%m.%y").to_string(), 8));
    out.extend(padded(&start.format("%H.%M.%S").to_string(), 8));
    out.extend(padded(&(256 * (ns + 1)).to_string(), 8));
    out.extend(padded(if h.bdf { "BDF+C" } else { "EDF+C" }, 44));
    out.extend(padded("0", 8));
    out.extend(padded(&number(record_s), 8));
    out.extend(padded(&ns.to_string(), 4));
    let (dmin, dmax) = digital_range(h.bdf);
    let bps = if h.bdf { 3 } else { 2 };
    let label = if h.bdf {
        "BDF Annotations"
    } else {
        "EDF Annotations"
    };
    // Each field: its width, its value for a signal, and its value for the annotation signal.
    type Field<'a> = (usize, &'a dyn Fn(&SignalSpec) -> String, String);
    let fields: [Field; 10] = [
        (16, &|s| s.label.clone(), label.into()),
        (80, &|s| s.transducer.clone(), String::new()),
        (8, &|s| s.unit.clone(), String::new()),
        (8, &|s| number(s.physical.0), "-1".into()),
        (8, &|s| number(s.physical.1), "1".into()),
        (8, &|_| dmin.to_string(), dmin.to_string()),
        (8, &|_| dmax.to_string(), dmax.to_string()),
        (80, &|s| s.prefilter.clone(), String::new()),
        (
            8,
            &|_| spr.to_string(),
            (ANNOTATION_BYTES / bps).to_string(),
        ),
        (32, &|_| String::new(), String::new()),
    ];
    for (width, value, annotation) in &fields {
        for s in &h.signals {
            out.extend(padded(&value(s), *width));
        }
        out.extend(padded(annotation, *width));
    }
    out
}

/// A number in at most 8 characters, with as many decimals as fit.
fn number(v: f64) -> String {
    for decimals in (0..=6).rev() {
        let s = format!("{v:.decimals$}");
        let s = if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        };
        if s.len() <= 8 {
            return s;
        }
    }
    format!("{}", v.round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::Recording;

    fn header(bdf: bool, fs: f64) -> RecordHeader {
        let signal = |label: &str| SignalSpec {
            label: label.into(),
            unit: "uV".into(),
            transducer: "AgAgCl electrode".into(),
            prefilter: "HP:0.1Hz".into(),
            physical: (-500.0, 500.0),
        };
        RecordHeader {
            bdf,
            patient: "X X X X".into(),
            recording: "Startdate 23-NOV-2026 X X ede".into(),
            start: chrono::NaiveDate::from_ymd_opt(2026, 11, 23)
                .unwrap()
                .and_hms_milli_opt(13, 45, 10, 250)
                .unwrap(),
            fs,
            signals: vec![signal("Fp1"), signal("Fp1 clean")],
        }
    }

    #[test]
    fn records_read_back_with_every_sample_and_annotation() {
        for (bdf, fs) in [(false, 128.0), (true, 250.0), (false, 12.5)] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(if bdf { "r.bdf" } else { "r.edf" });
            let mut r = EdfRecorder::create(&path, &header(bdf, fs), None).unwrap();
            let n = (fs * 3.3).round() as usize;
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 400.0).collect();
            let b: Vec<f32> = a.iter().map(|v| v * 0.5).collect();
            for at in (0..n).step_by(7) {
                let to = (at + 7).min(n);
                r.push(&[&a[at..to], &b[at..to]]).unwrap();
                if at % 70 == 0 {
                    r.flush().unwrap();
                }
            }
            r.annotate(1.25, 0.4, "Blink");
            r.annotate(2.0, 0.0, "Gap: 12 samples lost");
            let (samples, clipped) = r.finish().unwrap();
            assert_eq!((samples, clipped), (n as u64, 0));
            let rec = Recording::open(&path, &Default::default()).unwrap();
            assert_eq!(rec.signals.len(), 2);
            assert_eq!(rec.signals[1].label, "Fp1 clean");
            assert!((rec.signals[0].fs - fs).abs() < 1e-9);
            let mut back = vec![0f32; n];
            rec.read(0, 0, &mut back).unwrap();
            let quantum = 1000.0 / if bdf { 16_777_215.0 } else { 65_535.0 };
            for (x, y) in a.iter().zip(&back) {
                assert!(
                    (x - y).abs() <= quantum,
                    "{bdf} {fs}: {x} vs {y} at {}",
                    a.iter().position(|v| v == x).unwrap()
                );
            }
            let texts: Vec<(f64, &str)> = (rec.annotations.iter())
                .map(|a| (a.onset, a.text.as_str()))
                .collect();
            assert!(
                texts
                    .iter()
                    .any(|&(t, s)| s == "Blink" && (t - 1.25).abs() < 1e-6)
            );
            assert!(
                texts
                    .iter()
                    .any(|&(t, s)| s.starts_with("Gap") && (t - 2.0).abs() < 1e-6)
            );
            assert!(texts.iter().any(|&(_, s)| s.starts_with("Recording ends")));
            assert_eq!(rec.start.nanosecond(), 250_000_000);
        }
    }

    #[test]
    fn values_outside_the_range_are_clipped_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.edf");
        let mut r = EdfRecorder::create(&path, &header(false, 10.0), None).unwrap();
        let x = [0.0, 600.0, -900.0, f32::NAN, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        r.push(&[&x, &x]).unwrap();
        assert_eq!(r.finish().unwrap(), (10, 6));
    }

    #[test]
    fn layout_and_numbers() {
        assert_eq!(record_layout(256.0), (256, 1.0));
        assert_eq!(record_layout(12.5), (25, 2.0));
        assert_eq!(number(-8388.608), "-8388.61");
        assert_eq!(number(500.0), "500");
        assert_eq!(number(-3276.7), "-3276.7");
    }
}
