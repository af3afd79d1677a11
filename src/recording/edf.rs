//! EDF, EDF+ (C and D), BDF and BDF+ reading.
//!
//! The file is memory-mapped and only the header and the annotation signals are parsed on open;
//! data samples are decoded when a view or an analysis asks for them. `edfplus` 0.1 opens only
//! EDF+C, reads whole signals through seek/read into `f64` vectors and refuses non-compliant
//! headers, so reading is done here for every variant (the tests cross-check EDF+C files against
//! `edfplus`, and use its writer for round trips).
//!
//! Tolerance: header oddities a clinician's files really have (Latin-1 characters, comma
//! decimals, a wrong header size, an unknown record count, a truncated last record, degenerate
//! calibration) become warnings; only what makes the data unreadable is an error.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use memmap2::Mmap;

use super::{
    Annotation, ChannelType, Format, ReadError, Recording, SampleSource, Segment, SignalInfo,
};

const FIXED_HEADER: usize = 256;
const PER_SIGNAL_HEADER: usize = 256;

/// True when the first bytes are an EDF version field ("0" and seven spaces) or the BDF
/// marker (0xFF "BIOSEMI"). Only the first 8 bytes (the version field) count.
pub fn looks_like_edf(head: &[u8]) -> bool {
    let version = &head[..head.len().min(8)];
    is_bdf(version) || (version.first() == Some(&b'0') && version[1..].iter().all(|&c| c == b' '))
}

fn is_bdf(head: &[u8]) -> bool {
    head.first() == Some(&0xFF) && head.len() >= 8 && &head[1..8] == b"BIOSEMI"
}

/// How one data signal sits in a data record.
#[derive(Debug, Clone, Copy)]
struct Layout {
    /// Byte offset of the signal's first sample within a record.
    offset: usize,
    samples_per_record: usize,
    /// physical = digital * gain + offset
    gain: f64,
    bias: f64,
    /// Digital values outside the header's range are clamped to it, as EDFlib (and edfplus)
    /// do: they are saturation, and unclamped they would draw far outside the channel.
    digital_range: (f64, f64),
    /// The bits kept of each stored integer, which is then the value: a BioSemi Status
    /// channel's trigger code is its low 16 bits (the rest are the amplifier's state).
    code_bits: Option<i32>,
}

/// The low 16 bits of a BioSemi Status channel: the trigger inputs (bit 16 marks a new
/// epoch, bits 17-23 speed mode, CMS range, battery).
const BIOSEMI_TRIGGER_BITS: i32 = 0xFFFF;

struct EdfSource {
    map: Mmap,
    data_start: usize,
    record_size: usize,
    bytes_per_sample: usize,
    layout: Vec<Layout>,
}

impl SampleSource for EdfSource {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        let l = self.layout[signal];
        let bps = self.bytes_per_sample;
        let (lo, hi) = l.digital_range;
        let mut k = start;
        let mut done = 0;
        while done < out.len() {
            let record = k / l.samples_per_record;
            let within = k % l.samples_per_record;
            let n = (l.samples_per_record - within).min(out.len() - done);
            let at = self.data_start + record * self.record_size + l.offset + within * bps;
            let bytes = &self.map[at..at + n * bps];
            let dst = &mut out[done..done + n];
            if let (2, Some(bits)) = (bps, l.code_bits) {
                for (o, c) in dst.iter_mut().zip(bytes.chunks_exact(2)) {
                    *o = (i16::from_le_bytes([c[0], c[1]]) as i32 & bits) as f32;
                }
            } else if bps == 2 {
                for (o, c) in dst.iter_mut().zip(bytes.chunks_exact(2)) {
                    let d = (i16::from_le_bytes([c[0], c[1]]) as f64).clamp(lo, hi);
                    *o = (d * l.gain + l.bias) as f32;
                }
            } else if let Some(bits) = l.code_bits {
                for (o, c) in dst.iter_mut().zip(bytes.chunks_exact(3)) {
                    *o = ((i32::from_le_bytes([0, c[0], c[1], c[2]]) >> 8) & bits) as f32;
                }
            } else {
                for (o, c) in dst.iter_mut().zip(bytes.chunks_exact(3)) {
                    let d = ((i32::from_le_bytes([0, c[0], c[1], c[2]]) >> 8) as f64).clamp(lo, hi);
                    *o = (d * l.gain + l.bias) as f32;
                }
            }
            k += n;
            done += n;
        }
        Ok(())
    }

    /// The stored integers, clamped as `read` clamps them, added up exactly: a tenth of the
    /// time of decoding them (a batch scalogram's means of 64 x 5.76 M samples took 55 ms on 16
    /// threads). A digital range that is not whole numbers is left to `read`.
    fn sum(&self, signal: usize, start: usize, len: usize) -> Result<f64, ReadError> {
        let l = self.layout[signal];
        let (lo, hi) = l.digital_range;
        if l.code_bits.is_some()
            || lo.fract() != 0.0
            || hi.fract() != 0.0
            || lo.abs() > 1e9
            || hi.abs() > 1e9
        {
            return super::sum_by_reading(self, signal, start, len);
        }
        let (lo, hi) = (lo as i32, hi as i32);
        let bps = self.bytes_per_sample;
        let mut total: i64 = 0;
        let mut k = start;
        while k < start + len {
            let record = k / l.samples_per_record;
            let within = k % l.samples_per_record;
            let n = (l.samples_per_record - within).min(start + len - k);
            let at = self.data_start + record * self.record_size + l.offset + within * bps;
            let bytes = &self.map[at..at + n * bps];
            total += if bps == 2 {
                (bytes.chunks_exact(2))
                    .map(|c| i16::from_le_bytes([c[0], c[1]]) as i32)
                    .map(|d| d.clamp(lo, hi) as i64)
                    .sum::<i64>()
            } else {
                (bytes.chunks_exact(3))
                    .map(|c| i32::from_le_bytes([0, c[0], c[1], c[2]]) >> 8)
                    .map(|d| d.clamp(lo, hi) as i64)
                    .sum::<i64>()
            };
            k += n;
        }
        Ok(total as f64 * l.gain + len as f64 * l.bias)
    }

    fn release_pages(&self) {
        super::release_mapped_pages(&self.map);
    }

    fn stored(&self, signal: usize) -> Option<super::StoredLayout<'_>> {
        let l = self.layout.get(signal)?;
        // A trigger code is bits of the integer, not a scaled value.
        if l.code_bits.is_some() {
            return None;
        }
        Some(super::StoredLayout {
            bytes: &self.map,
            data_start: self.data_start,
            record_bytes: self.record_size,
            offset: l.offset,
            samples_per_record: l.samples_per_record,
            bytes_per_sample: self.bytes_per_sample,
            gain: l.gain,
            bias: l.bias,
            digital_range: l.digital_range,
        })
    }
}

/// Reads header fields, turning what EDF forbids but files contain into warnings.
struct HeaderText<'a> {
    bytes: &'a [u8],
    path: &'a Path,
    latin1_seen: bool,
}

impl HeaderText<'_> {
    fn text(&mut self, at: usize, len: usize) -> String {
        let raw = &self.bytes[at..at + len];
        if raw.iter().any(|&c| !(32..=126).contains(&c)) {
            self.latin1_seen = true;
        }
        // EDF headers are ASCII; the non-ASCII bytes seen in practice are Latin-1 ("°" = 0xB0).
        raw.iter()
            .map(|&c| if c < 32 { ' ' } else { c as char })
            .collect::<String>()
            .trim()
            .to_string()
    }

    fn number(&mut self, at: usize, len: usize, what: &str) -> Result<f64, ReadError> {
        let s = self.text(at, len);
        parse_number(&s).ok_or_else(|| {
            ReadError::invalid(
                self.path,
                format!("the {what} field is not a number: {s:?}"),
            )
        })
    }
}

fn parse_number(s: &str) -> Option<f64> {
    let s = s.trim();
    s.parse::<f64>()
        .ok()
        .or_else(|| s.replace(',', ".").parse::<f64>().ok())
        .filter(|v| v.is_finite())
}

struct RawSignal {
    label: String,
    transducer: String,
    unit: String,
    physical_min: f64,
    physical_max: f64,
    digital_min: f64,
    digital_max: f64,
    prefilter: String,
    samples_per_record: usize,
}

/// Opens an EDF/EDF+/BDF/BDF+ file.
pub fn open(path: &Path) -> Result<Recording, ReadError> {
    let file = File::open(path).map_err(|e| ReadError::io(path, e))?;
    let size = file.metadata().map_err(|e| ReadError::io(path, e))?.len() as usize;
    if size == 0 {
        return Err(ReadError::invalid(path, "the file is empty"));
    }
    if size < FIXED_HEADER {
        return Err(ReadError::invalid(
            path,
            format!("the file is truncated: {size} bytes, shorter than the 256-byte EDF header"),
        ));
    }
    // SAFETY: the map is read-only; a file truncated by another program while open would
    // fault, which is the same hazard every memory-mapping viewer accepts for instant opening.
    let map = unsafe { Mmap::map(&file) }.map_err(|e| ReadError::io(path, e))?;
    parse(path, map)
}

fn parse(path: &Path, map: Mmap) -> Result<Recording, ReadError> {
    let size = map.len();
    let mut warnings = Vec::new();
    let bdf = is_bdf(&map[..8]);
    let mut h = HeaderText {
        bytes: &map[..],
        path,
        latin1_seen: false,
    };
    if !bdf && !looks_like_edf(&map[..8]) {
        return Err(ReadError::invalid(
            path,
            "not an EDF/BDF file: the version field is not \"0\" nor the BDF marker",
        ));
    }
    let patient = h.text(8, 80);
    let recording_info = h.text(88, 80);
    let date = h.text(168, 8);
    let time = h.text(176, 8);
    let header_bytes_field = h.text(184, 8);
    let reserved = h.text(192, 44);
    let records_field = h.number(236, 8, "number of data records")?;
    let record_duration = h.number(244, 8, "data record duration")?;
    let ns_f = h.number(252, 4, "number of signals")?;
    if !(1.0..=1e6).contains(&ns_f) || ns_f.fract() != 0.0 {
        return Err(ReadError::invalid(
            path,
            format!("the header says the file has {ns_f} signals"),
        ));
    }
    let ns = ns_f as usize;
    let header_bytes = FIXED_HEADER + ns * PER_SIGNAL_HEADER;
    if size < header_bytes {
        return Err(ReadError::invalid(
            path,
            format!(
                "the file is truncated: the header of {ns} signals needs {header_bytes} bytes, the file has {size}"
            ),
        ));
    }
    if parse_number(&header_bytes_field) != Some(header_bytes as f64) {
        warnings.push(format!(
            "header size field says {header_bytes_field:?}, but {ns} signals make {header_bytes} bytes; using {header_bytes}"
        ));
    }

    let plus = reserved.starts_with("EDF+") || reserved.starts_with("BDF+");
    let discontinuous = plus && reserved[4..].starts_with('D');
    let format = match (bdf, plus, discontinuous) {
        (false, false, _) => Format::Edf,
        (false, true, false) => Format::EdfPlusC,
        (false, true, true) => Format::EdfPlusD,
        (true, false, _) => Format::Bdf,
        (true, true, false) => Format::BdfPlusC,
        (true, true, true) => Format::BdfPlusD,
    };
    let bytes_per_sample = if bdf { 3 } else { 2 };

    let base = FIXED_HEADER;
    let field = |i: usize, offset_per: usize, width: usize| base + offset_per * ns + i * width;
    let mut raw = Vec::with_capacity(ns);
    for i in 0..ns {
        let label = h.text(field(i, 0, 16), 16);
        let spr = h.number(
            field(i, 216, 8),
            8,
            &format!("samples per record (signal {})", i + 1),
        )?;
        if spr < 0.0 || spr.fract() != 0.0 || spr > 1e9 {
            return Err(ReadError::invalid(
                path,
                format!("signal {label:?} has an impossible number of samples per record: {spr}"),
            ));
        }
        raw.push(RawSignal {
            transducer: h.text(field(i, 16, 80), 80),
            unit: h.text(field(i, 96, 8), 8),
            physical_min: h.number(field(i, 104, 8), 8, &format!("physical minimum of {label}"))?,
            physical_max: h.number(field(i, 112, 8), 8, &format!("physical maximum of {label}"))?,
            digital_min: h.number(field(i, 120, 8), 8, &format!("digital minimum of {label}"))?,
            digital_max: h.number(field(i, 128, 8), 8, &format!("digital maximum of {label}"))?,
            prefilter: h.text(field(i, 136, 80), 80),
            samples_per_record: spr as usize,
            label,
        });
    }
    if h.latin1_seen {
        warnings.push(
            "the header contains characters outside printable ASCII (read as Latin-1)".to_string(),
        );
    }

    let record_size: usize = raw
        .iter()
        .map(|s| s.samples_per_record * bytes_per_sample)
        .sum();
    let available = (size - header_bytes).checked_div(record_size).unwrap_or(0);
    let records = if records_field < 0.0 {
        warnings.push(format!(
            "the number of data records is unknown ({records_field}); {available} complete records found in the file"
        ));
        available
    } else {
        let declared = records_field.min(1e15) as usize;
        if record_size > 0 && declared > available {
            warnings.push(format!(
                "the file is truncated: the header declares {declared} data records, only {available} are complete; showing those"
            ));
            available
        } else {
            if record_size > 0 && size > header_bytes + declared * record_size {
                warnings.push(format!(
                    "{} bytes after the last declared data record are ignored",
                    size - header_bytes - declared * record_size
                ));
            }
            declared
        }
    };

    let annotation_label = if bdf {
        "BDF Annotations"
    } else {
        "EDF Annotations"
    };
    let mut offset = 0;
    let mut layout = Vec::new();
    let mut signals = Vec::new();
    let mut annotation_offsets = Vec::new();
    let mut record_duration = record_duration;
    if !(record_duration >= 0.0 && record_duration.is_finite()) {
        return Err(ReadError::invalid(
            path,
            format!("the data record duration is not a non-negative number: {record_duration}"),
        ));
    }
    // A plain EDF's "EDF Annotations" signal is data like any other.
    let has_data = raw
        .iter()
        .any(|s| !(plus && s.label == annotation_label) && s.samples_per_record > 0);
    if record_duration == 0.0 && has_data {
        warnings.push(
            "the data record duration is 0 but the file has data signals; assuming 1 s records"
                .into(),
        );
        record_duration = 1.0;
    }
    for s in raw {
        let this_offset = offset;
        offset += s.samples_per_record * bytes_per_sample;
        if plus && s.label == annotation_label {
            annotation_offsets.push((this_offset, s.samples_per_record * bytes_per_sample));
            continue;
        }
        if s.samples_per_record == 0 {
            warnings.push(format!(
                "signal {:?} has no samples per record and is skipped",
                s.label
            ));
            continue;
        }
        let mut s = s;
        let mut kind = ChannelType::from_label(&s.label, &s.unit);
        // BioSemi's Status channel holds codes, not a voltage: its calibration (often that of
        // the EEG, in uV) would draw a flat 41,009 uV lane and hide every trigger. An EDF made
        // from a BioSemi file keeps it so too; MNE reads both as stored integers.
        let code_bits = (s.label.trim().eq_ignore_ascii_case("Status")).then(|| {
            kind = ChannelType::Stim;
            s.unit = String::new();
            (s.physical_min, s.physical_max) = (0.0, BIOSEMI_TRIGGER_BITS as f64);
            BIOSEMI_TRIGGER_BITS
        });
        let (gain, bias) = calibration(&s, &mut warnings);
        let fs = s.samples_per_record as f64 / record_duration;
        layout.push(Layout {
            offset: this_offset,
            samples_per_record: s.samples_per_record,
            gain,
            bias,
            digital_range: if s.digital_min < s.digital_max {
                (s.digital_min, s.digital_max)
            } else if s.digital_max < s.digital_min {
                (s.digital_max, s.digital_min)
            } else {
                (f64::NEG_INFINITY, f64::INFINITY)
            },
            code_bits,
        });
        signals.push(SignalInfo {
            samples: records * s.samples_per_record,
            fs,
            physical_min: s.physical_min,
            physical_max: s.physical_max,
            samples_per_record: s.samples_per_record,
            transducer: s.transducer,
            prefilter: s.prefilter,
            kind,
            position: None,
            bad: false,
            unit: s.unit,
            label: s.label,
        });
    }

    let mut start = parse_start(&date, &time, &recording_info).unwrap_or_else(|| {
        warnings.push(format!(
            "the start date/time {date:?} {time:?} is not valid; using 1985-01-01 00:00:00"
        ));
        super::unknown_start()
    });

    let data_start = header_bytes;
    let mut annotations = Vec::new();
    let mut record_onsets: Vec<f64> = Vec::new();
    let mut bad_tals = 0usize;
    for r in 0..records {
        let record = &map[data_start + r * record_size..data_start + (r + 1) * record_size];
        for (k, &(off, len)) in annotation_offsets.iter().enumerate() {
            let tals = parse_tals(&record[off..off + len], &mut bad_tals);
            for (i, tal) in tals.into_iter().enumerate() {
                // The record's time-keeping TAL: the first of the first annotation signal,
                // "+onset\x14\x14" (its first text is empty).
                if k == 0 && i == 0 && tal.texts.first().is_none_or(|t| t.is_empty()) {
                    record_onsets.push(tal.onset);
                }
                for text in tal.texts.into_iter().filter(|t| !t.is_empty()) {
                    annotations.push(Annotation {
                        onset: tal.onset,
                        duration: tal.duration,
                        text,
                    });
                }
            }
        }
    }
    if bad_tals > 0 {
        warnings.push(format!(
            "{bad_tals} malformed annotation entries were skipped"
        ));
    }
    if plus && !annotation_offsets.is_empty() && record_onsets.len() != records {
        warnings.push(format!(
            "{} of {records} data records lack a time-keeping annotation; their onsets are assumed contiguous",
            records - record_onsets.len().min(records)
        ));
        record_onsets.clear();
    }
    if record_onsets.is_empty() {
        record_onsets = (0..records).map(|r| r as f64 * record_duration).collect();
    }
    // Times are counted from the first sample: the first record's onset is the sub-second (or
    // later) offset of the recording's start from the header's start time.
    let t0 = record_onsets.first().copied().unwrap_or(0.0);
    if t0 != 0.0 {
        start += chrono::Duration::nanoseconds((t0 * 1e9).round() as i64);
    }
    for a in &mut annotations {
        a.onset -= t0;
    }
    annotations.sort_by(|a, b| a.onset.total_cmp(&b.onset));

    let segments = segments_from_onsets(&record_onsets, record_duration, t0, discontinuous);
    if !discontinuous && segments.len() > 1 {
        warnings.push("record onsets jump although the file says it is continuous".into());
    }

    if signals.is_empty() && annotation_offsets.is_empty() {
        return Err(ReadError::invalid(path, "the file has no readable signals"));
    }

    let bytes_len = map.len();
    let source = EdfSource {
        map,
        data_start,
        record_size,
        bytes_per_sample,
        layout,
    };
    let mut rec = Recording::new(
        Some(path.to_path_buf()),
        format,
        start,
        signals,
        annotations,
        warnings,
        records,
        record_duration,
        segments,
        Arc::new(source),
    );
    rec.patient = patient;
    rec.recording_info = recording_info;
    if rec.signals.iter().any(|s| s.kind == ChannelType::Stim) {
        let mut annotations = std::mem::take(&mut rec.annotations);
        let mut warnings = std::mem::take(&mut rec.warnings);
        super::stim_events(
            rec.source(),
            &rec.signals,
            &|i, k| rec.sample_time(i, k),
            bytes_len,
            &mut annotations,
            &mut warnings,
        )?;
        (rec.annotations, rec.warnings) = (annotations, warnings);
    }
    Ok(rec)
}

/// Gain and offset from the calibration fields; a degenerate calibration (equal minima and
/// maxima) reads the digital values as they are.
fn calibration(s: &RawSignal, warnings: &mut Vec<String>) -> (f64, f64) {
    let dd = s.digital_max - s.digital_min;
    let pd = s.physical_max - s.physical_min;
    if dd == 0.0 || pd == 0.0 {
        warnings.push(format!(
            "signal {:?} has an empty physical or digital range; showing digital values",
            s.label
        ));
        return (1.0, 0.0);
    }
    let gain = pd / dd;
    (gain, s.physical_min - s.digital_min * gain)
}

/// The header start date (dd.mm.yy) and time (hh.mm.ss); EDF+ gives the four-digit year in the
/// recording field ("Startdate 02-AUG-1951 ...") and it wins over the 1985..2084 window.
fn parse_start(date: &str, time: &str, recording_info: &str) -> Option<NaiveDateTime> {
    let nums = |s: &str| -> Option<Vec<u32>> {
        let v: Vec<u32> = s
            .split(['.', ':', '-', ' '])
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().ok())
            .collect::<Option<_>>()?;
        (v.len() == 3).then_some(v)
    };
    let d = nums(date)?;
    let t = nums(time)?;
    let mut year = if d[2] >= 85 { 1900 + d[2] } else { 2000 + d[2] };
    let plus_year = recording_info
        .strip_prefix("Startdate ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|s| s.rsplit('-').next())
        .and_then(|y| y.parse::<u32>().ok());
    if let Some(y) = plus_year.filter(|&y| y >= 1000 && y % 100 == d[2]) {
        year = y;
    }
    let date = NaiveDate::from_ymd_opt(year as i32, d[1], d[0])?;
    let time = NaiveTime::from_hms_opt(t[0], t[1], t[2])?;
    Some(date.and_time(time))
}

struct Tal {
    onset: f64,
    duration: f64,
    texts: Vec<String>,
}

/// Time-stamped annotation lists of one record's annotation signal:
/// `+onset[\x15duration]\x14text\x14...\x14\0`, padded with zeros.
fn parse_tals(bytes: &[u8], bad: &mut usize) -> Vec<Tal> {
    let mut out = Vec::new();
    for chunk in bytes.split(|&b| b == 0) {
        if chunk.is_empty() {
            continue;
        }
        // Some writers (Nihon Kohden) omit the 0 byte between TALs: a part that reads as an
        // onset right after an empty text ("\x14\x14") starts the next TAL.
        let parts: Vec<&[u8]> = chunk.split(|&b| b == 0x14).collect();
        let mut starts = vec![0];
        for i in 2..parts.len() {
            if parts[i - 1].is_empty() && parse_onset(parts[i]).is_some() {
                starts.push(i);
            }
        }
        starts.push(parts.len());
        for w in starts.windows(2) {
            parse_tal(&parts[w[0]..w[1]], &mut out, bad);
        }
    }
    out
}

fn parse_onset(time: &[u8]) -> Option<f64> {
    let onset = time.split(|&b| b == 0x15).next()?;
    std::str::from_utf8(onset)
        .ok()
        .filter(|t| t.starts_with('+') || t.starts_with('-'))
        .and_then(|t| t.trim().parse::<f64>().ok())
        .filter(|t| t.is_finite())
}

fn parse_tal(parts: &[&[u8]], out: &mut Vec<Tal>, bad: &mut usize) {
    {
        let Some((time, parts)) = parts.split_first() else {
            return;
        };
        let mut time_parts = time.split(|&b| b == 0x15);
        let onset = parse_onset(time);
        time_parts.next();
        let duration = match time_parts.next() {
            Some(d) => std::str::from_utf8(d)
                .ok()
                .and_then(|d| d.trim().parse::<f64>().ok()),
            None => Some(0.0),
        };
        let (Some(onset), Some(duration)) = (onset, duration) else {
            *bad += 1;
            return;
        };
        let texts = parts
            .iter()
            .map(|t| String::from_utf8_lossy(t).trim().to_string())
            .collect::<Vec<_>>();
        out.push(Tal {
            onset,
            duration: if duration.is_finite() { duration } else { 0.0 },
            texts,
        });
    }
}

/// Groups records into gap-free segments. Contiguity allows a microsecond of rounding per record
/// (some systems write durations like 1.00000026 s).
fn segments_from_onsets(onsets: &[f64], duration: f64, t0: f64, split: bool) -> Vec<Segment> {
    let mut segments: Vec<Segment> = Vec::new();
    for (r, &onset) in onsets.iter().enumerate() {
        let rel = onset - t0;
        match segments.last_mut() {
            Some(seg)
                if !split || (rel - (seg.start_s + seg.records as f64 * duration)).abs() < 1e-3 =>
            {
                seg.records += 1
            }
            _ => segments.push(Segment {
                start_s: rel,
                first_record: r,
                records: 1,
            }),
        }
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tals_with_durations_and_several_texts() {
        let mut bad = 0;
        let bytes = b"+0\x14\x14\0+1.5\x152\x14Eyes closed\x14Alpha\x14\0\0\0";
        let tals = parse_tals(bytes, &mut bad);
        assert_eq!(bad, 0);
        assert_eq!(tals.len(), 2);
        assert_eq!(tals[1].onset, 1.5);
        assert_eq!(tals[1].duration, 2.0);
        assert_eq!(tals[1].texts[..2], ["Eyes closed", "Alpha"]);
        // Nihon Kohden: no 0 byte after the time-keeping TAL.
        let tals = parse_tals(b"+1.0\x14\x14+1.14\x14A1+A2 OFF\x14\0", &mut bad);
        assert_eq!(tals.len(), 2);
        assert_eq!(tals[1].onset, 1.14);
        assert_eq!(tals[1].texts[0], "A1+A2 OFF");
    }

    #[test]
    fn header_dates_use_the_plus_year() {
        let t = parse_start("02.08.51", "10.11.12", "Startdate 02-AUG-1951 X X X").unwrap();
        assert_eq!(t.to_string(), "1951-08-02 10:11:12");
        let t = parse_start("02.08.51", "10.11.12", "").unwrap();
        assert_eq!(t.to_string(), "2051-08-02 10:11:12");
        assert!(parse_start("xx", "10.11.12", "").is_none());
    }

    #[test]
    fn segments_split_on_gaps_only_when_discontinuous() {
        let on = [0.0, 1.0, 2.0, 5.0, 6.0];
        let s = segments_from_onsets(&on, 1.0, 0.0, true);
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].start_s, 5.0);
        assert_eq!(s[1].first_record, 3);
        assert_eq!(segments_from_onsets(&on, 1.0, 0.0, false).len(), 1);
    }
}
