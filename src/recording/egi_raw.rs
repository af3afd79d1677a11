//! EGI's simple binary (`.raw`): Net Station's export of a recording as one file. A big-endian
//! header (version, date and time, sampling rate, channel count, gain, bits, range, samples,
//! and the four-letter codes of its event channels) is followed by the samples, multiplexed
//! (one time point after another), each time point the EEG channels and then one value per
//! event channel (nonzero where that event happened). The version says the sample type
//! (2: 16-bit integers, 4: 32-bit floats, 6: 64-bit floats) and, when odd, that the file is
//! segmented (epochs of categories, each with its own header).
//!
//! Read as MNE-Python's `read_raw_egi` reads it, with its defaults: the EEG channels are
//! E1..En in microvolts, scaled by range / 2^bits where both are set (MNE's volts per unit)
//! and 1 uV per unit otherwise; the event channels follow, named by their codes and typed
//! stim, unscaled. MNE also annotates every nonzero sample of the event channels (but those
//! of `sync`, `TREV` and of channels without events) with the channel's code; ede shows each
//! step of an event channel once, as that channel's event (`code@@channel`, as MNE's
//! `find_events` finds them). MNE synthesizes no `STI 014` with its defaults
//! (`events_as_annotations=True`) and neither does ede. The start is the header's date and
//! time to the second (MNE drops the milliseconds and takes the clock time as the local time
//! of the computer reading it: on a computer set to UTC the two agree). Segmented files,
//! which MNE does not read either, are recognised and refused with a message that says so.
//! The samples are memory-mapped and decoded on demand.

use std::path::Path;
use std::sync::Arc;

use super::binary::{MatrixSource, Orientation, SampleType};
use super::{
    ChannelType, Format, ReadError, Recording, SignalInfo, nominal_range, stim_events,
    unknown_start,
};

/// EEG plus event channels beyond these are no EGI file's (nets have at most 281 channels).
const MAX_CHANNELS: usize = 4096;

/// Size of the fixed part of the header, up to and including the value range.
const FIXED: usize = 30;

/// Whether a file's first bytes (up to 64) are this format: EGI's header has no signature.
pub fn sniff(_head: &[u8]) -> bool {
    false
}

/// Whether `path` is an EGI simple binary: a `.raw` whose header's version is one of EGI's
/// (2-7) and whose header and samples add up to the file's size exactly (other programs'
/// `.raw` files are not claimed).
pub fn is_companion(path: &Path) -> bool {
    let raw = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("raw"));
    if !raw || !path.is_file() {
        return false;
    }
    let Ok(map) = MatrixSource::map(path) else {
        return false;
    };
    parse(&map).is_ok_and(|h| h.size == Some(map.len()))
}

/// What the header says.
struct Header {
    segmented: bool,
    sample: SampleType,
    date: [i16; 6],
    rate: i16,
    channels: usize,
    bits: i16,
    range: i16,
    samples: usize,
    codes: Vec<String>,
    /// Where the samples start.
    data_at: usize,
    /// The size header and samples add up to (`None`: past any file's size).
    size: Option<usize>,
}

/// A big-endian reader over the header that says where it ran out.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(format!(
                "the header is truncated: {n} bytes wanted at byte {}, the file has {}",
                self.at,
                self.bytes.len()
            ));
        };
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn i16(&mut self) -> Result<i16, String> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Result<i32, String> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A count field that must not be negative.
    fn count(&mut self, v: i64, what: &str) -> Result<usize, String> {
        usize::try_from(v).map_err(|_| format!("the header gives {v} {what}"))
    }
}

/// Parses the header from the file's bytes; the error says what is wrong in words.
fn parse(b: &[u8]) -> Result<Header, String> {
    let mut c = Cursor { bytes: b, at: 0 };
    let version = c.i32()?;
    if !(2..=7).contains(&version) {
        return Err(format!(
            "not an EGI simple binary file: its version field is {version} (EGI's are 2 to 7)"
        ));
    }
    let mut date = [0i16; 6];
    for d in &mut date {
        *d = c.i16()?;
    }
    let _milliseconds = c.i32()?;
    let rate = c.i16()?;
    let channels = c.i16()?;
    let channels = c.count(channels as i64, "channels")?;
    let _gain = c.i16()?;
    let bits = c.i16()?;
    let range = c.i16()?;
    debug_assert_eq!(c.at, FIXED);
    let segmented = version & 1 == 1;
    let mut segments = 1usize;
    if segmented {
        // Category names (a length byte, then the name), then the segment count.
        let categories = c.i16()?;
        for _ in 0..c.count(categories as i64, "categories")? {
            let len = c.take(1)?[0] as usize;
            c.take(len)?;
        }
        let n = c.i16()?;
        segments = c.count(n as i64, "segments")?;
    }
    let samples = c.i32()?;
    let samples = c.count(samples as i64, "samples")?;
    let events = c.i16()?;
    let events = c.count(events as i64, "event channels")?;
    if channels.saturating_add(events) > MAX_CHANNELS || channels + events == 0 {
        return Err(format!(
            "the header gives {channels} channels and {events} event channels: not an EGI \
             file's"
        ));
    }
    let mut codes = Vec::with_capacity(events);
    for _ in 0..events {
        // NUL bytes are no characters (numpy's bytes drop them); others are Latin-1.
        let code = c.take(4)?.iter().filter(|&&x| x != 0).map(|&x| x as char);
        codes.push(code.collect());
    }
    let sample = match version & 6 {
        2 => SampleType::I16,
        4 => SampleType::F32,
        _ => SampleType::F64,
    };
    // Each segment of a segmented file starts with its category (2 bytes) and time (4).
    let per_segment = (samples.checked_mul(channels + events))
        .and_then(|n| n.checked_mul(sample.bytes()))
        .and_then(|n| n.checked_add(if segmented { 6 } else { 0 }));
    let size = per_segment
        .and_then(|n| n.checked_mul(segments))
        .and_then(|n| n.checked_add(c.at));
    Ok(Header {
        segmented,
        sample,
        date,
        rate,
        channels,
        bits,
        range,
        samples,
        codes,
        data_at: c.at,
        size,
    })
}

/// The header's clock time, to the second (MNE drops the milliseconds).
fn start_of(d: &[i16; 6]) -> Option<chrono::NaiveDateTime> {
    let u = |v: i16| u32::try_from(v).ok();
    chrono::NaiveDate::from_ymd_opt(d[0] as i32, u(d[1])?, u(d[2])?)?.and_hms_opt(
        u(d[3])?,
        u(d[4])?,
        u(d[5])?,
    )
}

pub fn open(path: &Path) -> Result<Recording, ReadError> {
    let map = MatrixSource::map(path)?;
    let h = parse(&map).map_err(|why| ReadError::invalid(path, why))?;
    if h.segmented {
        return Err(ReadError::invalid(
            path,
            "a segmented (epoched) EGI simple binary file: ede reads continuous ones only, as \
             MNE-Python does; export the recording from Net Station unsegmented",
        ));
    }
    if h.rate <= 0 {
        return Err(ReadError::invalid(
            path,
            format!("the sampling rate {} Hz is not a positive number", h.rate),
        ));
    }
    let fs = h.rate as f64;
    // MNE's volts per stored unit, in microvolts.
    let gain = if h.range != 0 && h.bits != 0 {
        h.range as f64 / 2f64.powi(h.bits as i32) * 1e6
    } else {
        1.0
    };
    let mut signals = Vec::with_capacity(h.channels + h.codes.len());
    let mut gains = Vec::with_capacity(h.channels + h.codes.len());
    for k in 0..h.channels {
        let range = (-3200.0 * gain.abs(), 3200.0 * gain.abs());
        signals.push(SignalInfo {
            kind: ChannelType::Eeg,
            ..SignalInfo::continuous(format!("E{}", k + 1), "uV".into(), fs, h.samples, range)
        });
        gains.push(gain);
    }
    for code in &h.codes {
        signals.push(SignalInfo {
            kind: ChannelType::Stim,
            ..SignalInfo::continuous(
                code.clone(),
                String::new(),
                fs,
                h.samples,
                nominal_range(""),
            )
        });
        gains.push(1.0);
    }
    let mut warnings = Vec::new();
    if h.size.is_some_and(|n| n < map.len()) {
        warnings.push(format!(
            "{} bytes after the samples are not read",
            map.len() - h.size.unwrap_or(0)
        ));
    }
    let start = start_of(&h.date).unwrap_or_else(|| {
        warnings.push(format!(
            "the recording date {:?} is not a valid date and time",
            h.date
        ));
        unknown_start()
    });
    let source = MatrixSource::new(
        path,
        map,
        h.data_at,
        h.sample,
        true,
        Orientation::Multiplexed,
        h.samples,
        gains,
    )?;
    let mut annotations = Vec::new();
    let bytes = h.size.unwrap_or(usize::MAX);
    stim_events(
        &source,
        &signals,
        &|_, k| k as f64 / fs,
        bytes,
        &mut annotations,
        &mut warnings,
    )?;
    Ok(Recording::continuous(
        Some(path.to_path_buf()),
        Format::EgiRaw,
        start,
        signals,
        annotations,
        warnings,
        h.samples as f64 / fs,
        Arc::new(source),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A continuous float file: 2 EEG channels, events "TRSP" and "sync", 24 samples.
    fn file(version: i32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(version.to_be_bytes());
        for v in [2014i16, 4, 8, 9, 46, 44] {
            b.extend(v.to_be_bytes());
        }
        b.extend(736i32.to_be_bytes());
        for v in [250i16, 2, 1, 0, 0] {
            b.extend(v.to_be_bytes());
        }
        b.extend(24i32.to_be_bytes());
        b.extend(2i16.to_be_bytes());
        b.extend(b"TRSPsync");
        for k in 0..24 {
            let event = if k == 2 { 1.0f32 } else { 0.0 };
            for v in [k as f32, -(k as f32) * 0.5, event, 0.0] {
                b.extend(v.to_be_bytes());
            }
        }
        b
    }

    #[test]
    fn a_small_file_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.raw");
        std::fs::write(&path, file(4)).unwrap();
        assert!(is_companion(&path));
        let rec = open(&path).unwrap();
        let labels: Vec<&str> = rec.signals.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["E1", "E2", "TRSP", "sync"]);
        assert_eq!(rec.signals[2].kind, ChannelType::Stim);
        assert_eq!(rec.read_all(1).unwrap()[..4], [0.0, -0.5, -1.0, -1.5]);
        assert_eq!(rec.start.to_string(), "2014-04-08 09:46:44");
        assert_eq!(rec.annotations.len(), 1);
        assert_eq!(rec.annotations[0].text, "1@@TRSP");
        assert!((rec.annotations[0].onset - 0.008).abs() < 1e-12);
    }

    #[test]
    fn other_raw_files_and_damaged_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.raw");
        // A byte too many: not claimed, but opened (with a note) when picked.
        let mut long = file(4);
        long.push(0);
        std::fs::write(&path, &long).unwrap();
        assert!(!is_companion(&path));
        assert!(!open(&path).unwrap().warnings.is_empty());
        // Truncated samples, a garbage version, a segmented file: errors, no panics.
        let short = file(4);
        std::fs::write(&path, &short[..short.len() - 3]).unwrap();
        assert!(open(&path).unwrap_err().to_string().contains("truncated"));
        std::fs::write(&path, [0xffu8; 40]).unwrap();
        assert!(open(&path).unwrap_err().to_string().contains("version"));
        std::fs::write(&path, file(5)).unwrap();
        assert!(open(&path).is_err());
        for n in 0..40 {
            std::fs::write(&path, &short[..n]).unwrap();
            assert!(open(&path).is_err());
        }
    }
}
