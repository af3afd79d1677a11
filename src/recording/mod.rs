//! The recording model every reader produces and every view and analysis consumes.
//!
//! Conventions, stated once: samples are `f32` in the signal's physical unit; time is `f64`
//! seconds from the recording start; sample indices are `usize` and count from the first sample
//! of a signal. Samples are read on demand through [`SampleSource`]: opening a recording parses
//! headers only, so a multi-gigabyte file opens at once and memory stays bounded.

pub mod ant;
pub mod bids;
pub mod binary;
pub mod brainvision;
pub mod bti;
pub mod channel;
pub mod convert;
pub mod csv;
pub mod ctf;
pub mod curry;
mod cursor;
pub mod demo;
pub mod edf;
pub mod edf_record;
pub mod edf_write;
pub mod eeglab;
pub mod egi_raw;
pub mod electrodes;
pub mod fif;
pub mod fif_write;
pub mod kit;
pub mod mat5;
pub mod mat5_write;
pub mod mat73;
pub mod mff;
pub mod neuroscan;
pub mod nihon_kohden;
mod pairing;
pub mod persyst;
mod readers;
mod stim;
pub mod wfdb;
mod whole_file;
pub mod xdf;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::NaiveDateTime;
use serde::Serialize;

pub(crate) use channel::nominal_range;
pub use channel::{ChannelType, reading_unit, si_per_unit, volts_per_unit};
pub use pairing::sibling_hypnogram;
pub use readers::{READERS, Reader};
pub(crate) use stim::stim_events;
pub use stim::{StimStep, stim_steps};
pub use whole_file::write_whole;

/// A reader's error, always naming the file and saying what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The system's reason is in the message, and so not also a source: a chain of sources
    /// printed it twice ("No such file or directory ...: No such file or directory ...").
    #[error("{path}: cannot read the file: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: cannot write the file: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Invalid { path: PathBuf, reason: String },
}

impl ReadError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            error: source,
        }
    }

    /// A file that could not be made or written (a writer's error, said as one).
    pub fn write(path: &Path, error: std::io::Error) -> Self {
        Self::Write {
            path: path.to_path_buf(),
            error,
        }
    }

    pub fn invalid(path: &Path, reason: impl Into<String>) -> Self {
        Self::Invalid {
            path: path.to_path_buf(),
            reason: reason.into(),
        }
    }
}

/// The sampling rate most of `rates` share (of equally common ones, the last seen), `None` for
/// none.
pub fn most_common_rate(rates: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut counts: Vec<(f64, usize)> = Vec::new();
    for fs in rates {
        match counts.iter_mut().find(|(f, _)| (*f - fs).abs() < 1e-9) {
            Some(r) => r.1 += 1,
            None => counts.push((fs, 1)),
        }
    }
    counts.iter().max_by_key(|r| r.1).map(|r| r.0)
}

/// The file format, spelled as `ede info` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Format {
    #[serde(rename = "EDF")]
    Edf,
    #[serde(rename = "EDF+C")]
    EdfPlusC,
    #[serde(rename = "EDF+D")]
    EdfPlusD,
    #[serde(rename = "BDF")]
    Bdf,
    #[serde(rename = "BDF+C")]
    BdfPlusC,
    #[serde(rename = "BDF+D")]
    BdfPlusD,
    #[serde(rename = "WFDB")]
    Wfdb,
    #[serde(rename = "CSV")]
    Csv,
    #[serde(rename = "BrainVision")]
    BrainVision,
    #[serde(rename = "EEGLAB")]
    Eeglab,
    #[serde(rename = "FIF")]
    Fif,
    #[serde(rename = "XDF")]
    Xdf,
    #[serde(rename = "4D")]
    Bti,
    #[serde(rename = "Nihon Kohden")]
    NihonKohden,
    /// Neuroscan's CNT.
    #[serde(rename = "CNT")]
    Cnt,
    /// EGI/Philips MFF (a folder).
    #[serde(rename = "MFF")]
    Mff,
    /// EGI's simple binary.
    #[serde(rename = "EGI")]
    EgiRaw,
    #[serde(rename = "CTF")]
    Ctf,
    #[serde(rename = "Persyst")]
    Persyst,
    #[serde(rename = "Curry")]
    Curry,
    /// ANT Neuro's eego CNT (RIFF).
    #[serde(rename = "ANT")]
    Ant,
    /// KIT/Yokogawa/Ricoh MEG.
    #[serde(rename = "KIT")]
    Kit,
    #[serde(rename = "DEMO")]
    Demo,
    /// The newest samples of a Lab Streaming Layer stream, held in memory (live mode).
    #[serde(rename = "LSL")]
    Lsl,
    /// Samples handed over in memory (the Python package's numpy arrays).
    #[serde(rename = "array")]
    Array,
}

impl Format {
    /// The file extension of the EDF family this format belongs to ("edf" for EDF/EDF+,
    /// "bdf" for BDF/BDF+), or `None` for other formats: what `edf_write` can copy.
    pub fn edf_family(self) -> Option<&'static str> {
        match self {
            Format::Edf | Format::EdfPlusC | Format::EdfPlusD => Some("edf"),
            Format::Bdf | Format::BdfPlusC | Format::BdfPlusD => Some("bdf"),
            _ => None,
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Format::Edf => "EDF",
            Format::EdfPlusC => "EDF+C",
            Format::EdfPlusD => "EDF+D",
            Format::Bdf => "BDF",
            Format::BdfPlusC => "BDF+C",
            Format::BdfPlusD => "BDF+D",
            Format::Wfdb => "WFDB",
            Format::Csv => "CSV",
            Format::BrainVision => "BrainVision",
            Format::Eeglab => "EEGLAB",
            Format::Fif => "FIF",
            Format::Xdf => "XDF",
            Format::Bti => "4D",
            Format::NihonKohden => "Nihon Kohden",
            Format::Cnt => "CNT",
            Format::Mff => "MFF",
            Format::EgiRaw => "EGI",
            Format::Ctf => "CTF",
            Format::Persyst => "Persyst",
            Format::Curry => "Curry",
            Format::Ant => "ANT",
            Format::Kit => "KIT",
            Format::Demo => "DEMO",
            Format::Lsl => "LSL",
            Format::Array => "array",
        };
        f.write_str(s)
    }
}

/// One data signal (an EDF "EDF Annotations" signal is not one).
#[derive(Debug, Clone, Serialize)]
pub struct SignalInfo {
    pub label: String,
    pub unit: String,
    /// Samples per second.
    pub fs: f64,
    /// Number of samples in the whole recording.
    pub samples: usize,
    pub physical_min: f64,
    pub physical_max: f64,
    /// Samples of this signal in one data record (the whole signal for formats without records).
    #[serde(skip)]
    pub samples_per_record: usize,
    #[serde(skip)]
    pub transducer: String,
    #[serde(skip)]
    pub prefilter: String,
    /// What it measures (from the format where it says, else from the label).
    #[serde(rename = "type")]
    pub kind: ChannelType,
    /// Electrode or sensor position in metres, head coordinates (x right, y front, z up),
    /// where the file has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<[f64; 3]>,
    /// Marked bad by the file (FIF's bad channels, BIDS' channels.tsv).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bad: bool,
}

impl SignalInfo {
    /// A signal of a format without data records (one record holds all of it), typed from its
    /// label and unit; readers that know the type, a position or a bad mark set them after.
    pub fn continuous(
        label: String,
        unit: String,
        fs: f64,
        samples: usize,
        range: (f64, f64),
    ) -> Self {
        SignalInfo {
            kind: ChannelType::from_label(&label, &unit),
            position: None,
            bad: false,
            label,
            unit,
            fs,
            samples,
            physical_min: range.0,
            physical_max: range.1,
            samples_per_record: samples,
            transducer: String::new(),
            prefilter: String::new(),
        }
    }
}

/// An annotation: onset in seconds from the recording start, duration in seconds (0 for events).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Annotation {
    pub onset: f64,
    pub duration: f64,
    pub text: String,
}

impl Annotation {
    /// The channel an event belongs to, as EDFbrowser and MNE-Python write it in EDF+:
    /// `text@@channel` (`None`: the whole recording).
    pub fn channel(&self) -> Option<&str> {
        self.text
            .rsplit_once("@@")
            .map(|(_, c)| c.trim())
            .filter(|c| !c.is_empty())
    }

    /// The text without its channel.
    pub fn description(&self) -> &str {
        self.text.rsplit_once("@@").map_or(&self.text, |(t, _)| t)
    }

    /// `text` tied to `channel` (EDF+'s `text@@channel`).
    pub fn on_channel(text: &str, channel: &str) -> String {
        format!("{text}@@{channel}")
    }
}

/// Sorts annotations by onset then duration (ties keep their order) and crops them to
/// `0..=end` seconds, as MNE-Python's `Annotations` and `set_annotations` do: onsets kept to
/// the microsecond (MNE-Python's `timedelta`), events wholly outside dropped, the others cut
/// at the ends.
pub(crate) fn sort_and_crop(annotations: &mut Vec<Annotation>, end: f64) {
    annotations
        .sort_by(|a, b| (a.onset.total_cmp(&b.onset)).then(a.duration.total_cmp(&b.duration)));
    annotations.retain_mut(|a| {
        let dur = if a.duration.is_nan() { 0.0 } else { a.duration };
        let (on, off) = (a.onset, a.onset + dur);
        if on > end || off < 0.0 {
            return false;
        }
        let (on2, off2) = (on.max(0.0), off.min(end));
        if on2 != on || off2 != off {
            a.duration = off2 - on2;
        }
        a.onset = (on2 * 1e6).round() / 1e6;
        true
    });
}

/// A stretch of records without a gap. Continuous recordings have one; EDF+D has one per
/// jump in the record onsets, so the time axis keeps the gaps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// Seconds from the recording start to the first sample of the segment.
    pub start_s: f64,
    pub first_record: usize,
    pub records: usize,
}

/// Decodes samples on demand. `read` fills `out` with the physical values of samples
/// `start..start + out.len()` of data signal `signal`; the caller keeps the range in bounds.
pub trait SampleSource: Send + Sync {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError>;

    /// The sum of the physical values of samples `start..start + len` (in bounds), in f64:
    /// read in pieces here; a format may add them up faster from its stored integers.
    fn sum(&self, signal: usize, start: usize, len: usize) -> Result<f64, ReadError> {
        sum_by_reading(self, signal, start, len)
    }

    /// Hands the file pages read so far back to the system (the file stays readable: pages
    /// come back from it when read again). Sources in memory have nothing to hand back.
    fn release_pages(&self) {}

    /// Where the stored integers of `signal` lie in the file, for a decoder elsewhere (the
    /// GPU's trends): formats of fixed-size records of little-endian integers (EDF, BDF) say;
    /// the rest, and signals whose value is not `gain * integer + bias`, do not.
    fn stored(&self, _signal: usize) -> Option<StoredLayout<'_>> {
        None
    }
}

/// A signal stored as EDF and BDF store samples: records of `record_bytes` from `data_start`
/// of `bytes`, the signal's `samples_per_record` integers at `offset` within each, of
/// `bytes_per_sample` (2 or 3) little-endian bytes; the physical value is the integer clamped
/// to `digital_range`, times `gain`, plus `bias` (in f64, then f32).
#[derive(Debug, Clone, Copy)]
pub struct StoredLayout<'a> {
    pub bytes: &'a [u8],
    pub data_start: usize,
    pub record_bytes: usize,
    pub offset: usize,
    pub samples_per_record: usize,
    pub bytes_per_sample: usize,
    pub gain: f64,
    pub bias: f64,
    pub digital_range: (f64, f64),
}

/// `SampleSource::sum` by decoding the samples in pieces.
pub(crate) fn sum_by_reading<S: SampleSource + ?Sized>(
    source: &S,
    signal: usize,
    start: usize,
    len: usize,
) -> Result<f64, ReadError> {
    const PIECE: usize = 1 << 16;
    let mut buf = vec![0f32; len.min(PIECE)];
    let mut sum = 0.0;
    for from in (start..start + len).step_by(PIECE) {
        let piece = &mut buf[..(start + len - from).min(PIECE)];
        source.read(signal, from, piece)?;
        sum += piece.iter().map(|&v| v as f64).sum::<f64>();
    }
    Ok(sum)
}

/// Drops the resident pages of a read-only file mapping: after a pass over a whole file (the
/// overview), they count in the process's resident size until the system needs the memory,
/// which reads like a leak to whoever looks at `top`.
pub(crate) fn release_mapped_pages(map: &memmap2::Mmap) {
    #[cfg(unix)]
    // SAFETY: the mapping is shared and read-only, so dropping its pages loses nothing: a
    // later read faults them in from the file again (MADV_DONTNEED only loses data of private
    // or written mappings). Other threads reading it meanwhile see the same bytes.
    unsafe {
        let _ = map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed);
    }
}

/// An opened recording: headers, annotations and a handle to decode samples.
#[derive(Clone)]
pub struct Recording {
    /// The file it came from; `None` for the built-in demo.
    pub path: Option<PathBuf>,
    pub format: Format,
    /// Clock time of the first sample (sub-second precision where the file has it).
    pub start: NaiveDateTime,
    pub signals: Vec<SignalInfo>,
    pub annotations: Vec<Annotation>,
    /// What was odd about the file but did not stop it from opening.
    pub warnings: Vec<String>,
    /// Data records and their duration in seconds (one record for formats without records).
    pub records: usize,
    pub record_duration: f64,
    pub segments: Vec<Segment>,
    pub patient: String,
    pub recording_info: String,
    /// The regularly sampled streams of a file that holds several (XDF), by name: what else
    /// it can show. Empty for other formats.
    pub streams: Vec<String>,
    /// Bad scalp electrodes are drawn, exported and analysed as the spherical-spline
    /// interpolation of the good ones (`dsp::spline::BadInterpolation`, MNE's
    /// `interpolate_bads`) instead of as recorded. Like the bad marks, recording state.
    pub interpolate_bads: bool,
    source: Arc<dyn SampleSource>,
}

impl fmt::Debug for Recording {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recording")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("signals", &self.signals.len())
            .field("annotations", &self.annotations.len())
            .finish()
    }
}

/// Options the file itself cannot tell.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// Sampling rate of a CSV file without a time column.
    pub csv_fs: Option<f64>,
    /// The stream of an XDF file to show (its name or id); the EEG stream when `None`.
    pub xdf_stream: Option<String>,
}

impl Recording {
    /// Builds a recording; readers call this after parsing their headers.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        path: Option<PathBuf>,
        format: Format,
        start: NaiveDateTime,
        signals: Vec<SignalInfo>,
        annotations: Vec<Annotation>,
        warnings: Vec<String>,
        records: usize,
        record_duration: f64,
        segments: Vec<Segment>,
        source: Arc<dyn SampleSource>,
    ) -> Self {
        // Events at no time (a corrupt onset) cannot be drawn, sorted or saved.
        let mut annotations = annotations;
        let mut warnings = warnings;
        let timed = annotations.len();
        annotations.retain(|a| a.onset.is_finite() && a.duration.is_finite());
        if annotations.len() < timed {
            warnings.push(format!(
                "{} events without a valid time left out",
                timed - annotations.len()
            ));
        }
        Self {
            path,
            format,
            start,
            signals,
            annotations,
            warnings,
            records,
            record_duration,
            segments,
            patient: String::new(),
            recording_info: String::new(),
            streams: Vec::new(),
            interpolate_bads: false,
            source,
        }
    }

    /// A recording without data records (one record, one segment: every format but EDF).
    #[allow(clippy::too_many_arguments)]
    pub fn continuous(
        path: Option<PathBuf>,
        format: Format,
        start: NaiveDateTime,
        signals: Vec<SignalInfo>,
        annotations: Vec<Annotation>,
        warnings: Vec<String>,
        duration_s: f64,
        source: Arc<dyn SampleSource>,
    ) -> Self {
        let one = Segment {
            start_s: 0.0,
            first_record: 0,
            records: 1,
        };
        Self::new(
            path,
            format,
            start,
            signals,
            annotations,
            warnings,
            1,
            duration_s,
            vec![one],
            source,
        )
    }

    /// Total duration in seconds: records times record duration (for EDF+D as well).
    pub fn duration_s(&self) -> f64 {
        self.records as f64 * self.record_duration
    }

    /// The end of the time axis: the end of the last segment (after the gaps of EDF+D); for
    /// a file of annotations alone (a Sleep-EDF hypnogram), the end of its last annotation.
    pub fn time_span_s(&self) -> f64 {
        let data = (self.segments.last())
            .map(|s| s.start_s + s.records as f64 * self.record_duration)
            .unwrap_or(0.0)
            .max(self.duration_s());
        if !self.signals.is_empty() {
            return data;
        }
        (self.annotations.iter())
            .map(|a| a.onset + a.duration)
            .filter(|t| t.is_finite())
            .fold(data, f64::max)
    }

    /// File name for titles and messages.
    pub fn display_name(&self) -> String {
        match &self.path {
            Some(p) => p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.display().to_string()),
            None => "Demo EEG (synthetic)".to_string(),
        }
    }

    /// Reads samples `start..start + out.len()` of signal `signal` in physical units.
    pub fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        let info = self.signals.get(signal).ok_or_else(|| {
            ReadError::invalid(self.path_for_errors(), format!("no signal {signal}"))
        })?;
        if start
            .checked_add(out.len())
            .is_none_or(|end| end > info.samples)
        {
            return Err(ReadError::invalid(
                self.path_for_errors(),
                format!(
                    "samples {}..{} of {} are past its end ({} samples)",
                    start,
                    start.saturating_add(out.len()),
                    info.label,
                    info.samples
                ),
            ));
        }
        if out.is_empty() {
            return Ok(());
        }
        self.source.read(signal, start, out)
    }

    /// The sum of the physical values of samples `start..start + len` of signal `signal`, in
    /// f64 (what `read` gives, added up; some formats add up their stored integers).
    pub fn sum(&self, signal: usize, start: usize, len: usize) -> Result<f64, ReadError> {
        let info = self.signals.get(signal).ok_or_else(|| {
            ReadError::invalid(self.path_for_errors(), format!("no signal {signal}"))
        })?;
        if start.checked_add(len).is_none_or(|end| end > info.samples) {
            return Err(ReadError::invalid(
                self.path_for_errors(),
                format!(
                    "samples {start}..{} of {} are past its end ({} samples)",
                    start.saturating_add(len),
                    info.label,
                    info.samples
                ),
            ));
        }
        self.source.sum(signal, start, len)
    }

    /// Reads a whole signal (for small recordings, tests and analyses of a bounded window).
    pub fn read_all(&self, signal: usize) -> Result<Vec<f32>, ReadError> {
        let n = self.signals.get(signal).map(|s| s.samples).unwrap_or(0);
        let mut out = vec![0.0; n];
        self.read(signal, 0, &mut out)?;
        Ok(out)
    }

    /// Where signal `signal`'s stored integers lie in the file, where its format says
    /// (`SampleSource::stored`).
    pub fn stored(&self, signal: usize) -> Option<StoredLayout<'_>> {
        self.signals.get(signal)?;
        self.source.stored(signal)
    }

    /// What decodes its samples.
    pub(crate) fn source(&self) -> &dyn SampleSource {
        self.source.as_ref()
    }

    /// Hands the file pages read so far back to the system (after the overview's full pass).
    pub fn release_pages(&self) {
        self.source.release_pages();
    }

    /// Time in seconds of sample `k` of signal `signal`, following the segments.
    pub fn sample_time(&self, signal: usize, k: usize) -> f64 {
        let info = &self.signals[signal];
        let spr = info.samples_per_record.max(1);
        let record = k / spr;
        let seg = self
            .segments
            .iter()
            .rev()
            .find(|s| s.first_record <= record)
            .copied()
            .unwrap_or(Segment {
                start_s: 0.0,
                first_record: 0,
                records: self.records,
            });
        seg.start_s + (k - seg.first_record * spr) as f64 / info.fs
    }

    /// Sample ranges of signal `signal` per segment, with the segment's start time:
    /// `(start_s, first_sample, samples)`.
    pub fn signal_segments(&self, signal: usize) -> Vec<(f64, usize, usize)> {
        let info = &self.signals[signal];
        let spr = info.samples_per_record;
        self.segments
            .iter()
            .map(|s| {
                let first = s.first_record * spr;
                let n = (s.records * spr).min(info.samples.saturating_sub(first));
                (s.start_s, first, n)
            })
            .collect()
    }

    /// The sample of signal `signal` nearest to time `t` (seconds from the start), following
    /// the segments; `None` in a gap or outside the recording.
    pub fn sample_at(&self, signal: usize, t: f64) -> Option<usize> {
        let fs = self.signals.get(signal)?.fs;
        self.signal_segments(signal)
            .into_iter()
            .find_map(|(start, first, n)| {
                let k = ((t - start) * fs).round();
                (k >= 0.0 && (k as usize) < n).then(|| first + k as usize)
            })
    }

    /// The sampling rate most signals share (0 without signals): analyses that need one rate
    /// default to these signals.
    pub fn most_common_rate(&self) -> f64 {
        let mut rates: Vec<(f64, usize)> = Vec::new();
        for s in &self.signals {
            match rates.iter_mut().find(|(f, _)| *f == s.fs) {
                Some((_, n)) => *n += 1,
                None => rates.push((s.fs, 1)),
            }
        }
        rates
            .into_iter()
            .max_by_key(|&(_, n)| n)
            .map_or(0.0, |(f, _)| f)
    }

    /// Index of the signal labelled `label` (case-insensitive, surrounding spaces ignored).
    pub fn signal_index(&self, label: &str) -> Option<usize> {
        let want = label.trim();
        self.signals
            .iter()
            .position(|s| s.label.trim() == want)
            .or_else(|| {
                self.signals
                    .iter()
                    .position(|s| s.label.trim().eq_ignore_ascii_case(want))
            })
    }

    /// The scalp electrodes, good or bad: EEG channels with a position in the file or a
    /// 10-20/10-10 name, the earlobes (A1, A2) aside. A recording with fewer than three such,
    /// or with them under a quarter of its EEG channels (numbered nets, "EEG 001"), counts
    /// every EEG channel in a voltage.
    /// The average reference and every montage's arithmetic take these, never DC, oximetry,
    /// polygraphic or ear channels that a file types EEG.
    pub fn scalp_electrodes(&self) -> Vec<usize> {
        let eeg = |i: &usize| self.signals[*i].kind == ChannelType::Eeg;
        let placed: Vec<usize> = (0..self.signals.len())
            .filter(eeg)
            .filter(|&i| {
                let s = &self.signals[i];
                !electrodes::is_earlobe(&s.label)
                    && (s.position.is_some() || electrodes::is_scalp_name(&s.label))
            })
            .collect();
        // A net numbered but for a name or two (EGI's E1-E256 beside "Cz") is placed by none:
        // its few named channels would make an average of themselves.
        let eeg_count = (0..self.signals.len()).filter(eeg).count();
        if placed.len() >= 3 && 4 * placed.len() >= eeg_count {
            return placed;
        }
        (0..self.signals.len())
            .filter(eeg)
            .filter(|&i| {
                let u = self.signals[i].unit.trim();
                u.is_empty() || volts_per_unit(u).is_some()
            })
            .collect()
    }

    /// How many of `to`'s unit one of `from`'s unit is, where both measure the same thing in
    /// units ede knows (mV to uV: 1000); 1 otherwise. Montage arithmetic sums channels in the
    /// unit of the trace it makes.
    pub fn unit_factor(&self, from: usize, to: usize) -> f64 {
        let (a, b) = (&self.signals[from].unit, &self.signals[to].unit);
        match (si_per_unit(a), si_per_unit(b)) {
            (Some((da, ka)), Some((db, kb))) if da == db => ka / kb,
            _ => 1.0,
        }
    }

    /// Gives the channels `types` names (by label, as `signal_index` finds them) those types:
    /// the user's word over the file's and the labels'. A label the recording lacks is an
    /// error naming it.
    pub fn set_types(&mut self, types: &[(String, ChannelType)]) -> Result<(), String> {
        for (label, kind) in types {
            let c = (self.signal_index(label))
                .ok_or_else(|| format!("--types: no channel {label:?}"))?;
            self.signals[c].kind = *kind;
        }
        Ok(())
    }

    /// The brain channels (MEG, and of EEG the scalp electrodes) not marked bad, at the rate
    /// most of them share: what whole-head analyses take by default. Without any, every signal
    /// at the most common rate.
    pub fn brain_signals(&self) -> Vec<usize> {
        let scalp = self.scalp_electrodes();
        let brain: Vec<usize> = (0..self.signals.len())
            .filter(|&i| {
                let s = &self.signals[i];
                let on_head = s.kind != ChannelType::Eeg || scalp.contains(&i);
                s.kind.is_brain() && on_head && !s.bad
            })
            .collect();
        let pool = if brain.is_empty() {
            (0..self.signals.len()).collect()
        } else {
            brain
        };
        let Some(fs) = most_common_rate(pool.iter().map(|&i| self.signals[i].fs)) else {
            return Vec::new();
        };
        (pool.into_iter())
            .filter(|&i| (self.signals[i].fs - fs).abs() < 1e-9)
            .collect()
    }

    /// The signals `entries` name: each a label, or a channel type standing for every
    /// signal of it (eeg, mag, grad, eog, ...; `meg` for magnetometers and gradiometers).
    /// The error names what is unknown and lists the channels.
    pub fn pick(&self, entries: &[String]) -> Result<Vec<usize>, String> {
        let mut out: Vec<usize> = Vec::new();
        for e in entries {
            let of_types = |types: &[ChannelType]| -> Vec<usize> {
                (0..self.signals.len())
                    .filter(|&i| types.contains(&self.signals[i].kind))
                    .collect()
            };
            let found = match self.signal_index(e) {
                Some(i) => vec![i],
                None if e.trim().eq_ignore_ascii_case("meg") => {
                    of_types(&[ChannelType::Mag, ChannelType::Grad])
                }
                None => match ChannelType::parse(e) {
                    Some(t) => of_types(&[t]),
                    None => Vec::new(),
                },
            };
            if found.is_empty() {
                // A few names to go on, not a wall of them: `ede info` lists them all.
                const SHOWN: usize = 12;
                let mut known: Vec<String> = (self.signals.iter().take(SHOWN))
                    .map(|s| format!("{} ({})", s.label.trim(), s.kind.name()))
                    .collect();
                if self.signals.len() > SHOWN {
                    known.push(format!(
                        "and {} more (`ede info` lists them)",
                        self.signals.len() - SHOWN
                    ));
                }
                return Err(format!(
                    "no channel or channel type {e:?} in {}; its channels: {}",
                    self.display_name(),
                    known.join(", ")
                ));
            }
            for i in found {
                if !out.contains(&i) {
                    out.push(i);
                }
            }
        }
        Ok(out)
    }

    fn path_for_errors(&self) -> &Path {
        self.path.as_deref().unwrap_or(Path::new("demo"))
    }
}

/// The JSON of `ede info`.
#[derive(Debug, Serialize)]
pub struct RecordingSummary {
    pub path: String,
    pub format: Format,
    pub start: String,
    pub duration_s: f64,
    /// What the file says of itself, or what the reader decided about it (a CNT file's sample
    /// width, a CTF run's compensation grade, a KIT system); empty where nothing.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub recording: String,
    pub signals: Vec<SignalInfo>,
    pub annotations: usize,
    /// Every annotation and stimulus-channel event, in time order.
    pub events: Vec<EventSummary>,
    pub warnings: Vec<String>,
}

/// An event as `ede info --json` lists it: `text` without its channel, `channels` the ones it
/// belongs to (empty: the whole recording).
#[derive(Debug, Serialize)]
pub struct EventSummary {
    pub onset_s: f64,
    pub duration_s: f64,
    pub text: String,
    pub channels: Vec<String>,
}

impl From<&Recording> for RecordingSummary {
    fn from(r: &Recording) -> Self {
        RecordingSummary {
            path: r
                .path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "demo".into()),
            format: r.format,
            start: r.start.format("%Y-%m-%dT%H:%M:%S%.f").to_string(),
            duration_s: r.duration_s(),
            recording: r.recording_info.clone(),
            signals: r.signals.clone(),
            annotations: r.annotations.len(),
            events: (r.annotations.iter())
                .map(|a| EventSummary {
                    onset_s: a.onset,
                    duration_s: a.duration,
                    text: a.description().to_string(),
                    channels: a.channel().map(str::to_string).into_iter().collect(),
                })
                .collect(),
            warnings: r.warnings.clone(),
        }
    }
}

/// Samples held in memory (CSV, the demo, tests).
pub struct MemorySource {
    pub data: Vec<Vec<f32>>,
}

impl SampleSource for MemorySource {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        out.copy_from_slice(&self.data[signal][start..start + out.len()]);
        Ok(())
    }
}

/// Builds a one-record, one-segment recording from signals held in memory.
pub fn in_memory(
    path: Option<PathBuf>,
    format: Format,
    start: NaiveDateTime,
    labels_units_fs: Vec<(String, String, f64)>,
    data: Vec<Vec<f32>>,
    annotations: Vec<Annotation>,
    warnings: Vec<String>,
) -> Recording {
    let signals: Vec<SignalInfo> = labels_units_fs
        .into_iter()
        .zip(&data)
        .map(|((label, unit, fs), d)| {
            SignalInfo::continuous(label, unit, fs, d.len(), finite_min_max(d))
        })
        .collect();
    let duration = signals
        .iter()
        .map(|s| s.samples as f64 / s.fs)
        .fold(0.0, f64::max);
    Recording::continuous(
        path,
        format,
        start,
        signals,
        annotations,
        warnings,
        duration,
        Arc::new(MemorySource { data }),
    )
}

fn finite_min_max(d: &[f32]) -> (f64, f64) {
    let (lo, hi) = d
        .iter()
        .filter(|v| v.is_finite())
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        (0.0, 0.0)
    } else {
        (lo as f64, hi as f64)
    }
}

/// The default start time when a file gives none or an unreadable one.
pub fn unknown_start() -> NaiveDateTime {
    chrono::NaiveDate::from_ymd_opt(1985, 1, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .expect("valid constant date")
}
