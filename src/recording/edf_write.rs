//! Writes a copy of an EDF/BDF recording with a new set of annotations, as EDF+ (or BDF+ for
//! 24-bit input): the header fields and every data record's samples are copied byte for byte,
//! the old annotation signals are dropped and one new "EDF Annotations" signal carries each
//! record's time-keeping TAL and the annotations whose onsets fall in that record. A
//! discontinuous input stays discontinuous (EDF+D). The original is never written to; the
//! copy is written beside its target and renamed, so a failed save leaves an earlier file.

use std::io::Write;
use std::path::Path;

use chrono::Timelike;

use super::{Annotation, Format, ReadError, Recording};

const FIXED_HEADER: usize = 256;
const PER_SIGNAL_HEADER: usize = 256;
/// The per-signal header fields: (offset per signal within the block, width).
const SIGNAL_FIELDS: [usize; 10] = [16, 80, 8, 8, 8, 8, 8, 80, 8, 32];

/// A part of a recording to write: whole data records (so every sample is copied as it was)
/// and some of its signals (indices in `Recording::signals`).
#[derive(Debug, Clone, PartialEq)]
pub struct Clip {
    pub records: std::ops::Range<usize>,
    pub signals: Vec<usize>,
}

impl Clip {
    /// The records covering `t0..t1` seconds (from the recording's start) of `signals`.
    pub fn covering(rec: &Recording, (t0, t1): (f64, f64), signals: Vec<usize>) -> Self {
        let d = rec.record_duration.max(1e-9);
        let onset = |r: usize| {
            (rec.segments.iter())
                .rev()
                .find(|s| s.first_record <= r)
                .map_or(r as f64 * d, |s| {
                    s.start_s + (r - s.first_record) as f64 * d
                })
        };
        let first = (0..rec.records)
            .find(|&r| onset(r) + d > t0)
            .unwrap_or(rec.records);
        let end = (first..rec.records)
            .find(|&r| onset(r) >= t1)
            .unwrap_or(rec.records);
        Clip {
            records: first..end.max(first + 1).min(rec.records),
            signals,
        }
    }
}

/// Writes `rec` (opened from an EDF or BDF file) to `out` with `annotations` (onsets in seconds
/// from the recording's start, as ede reads them).
pub fn write_with_annotations(
    rec: &Recording,
    out: &Path,
    annotations: &[Annotation],
) -> Result<(), ReadError> {
    write_clip(rec, out, annotations, None)
}

/// As `write_with_annotations`, of a `clip` only: its start becomes the file's start time, and
/// only the annotations that overlap it are written, their onsets counted from its start.
pub fn write_clip(
    rec: &Recording,
    out: &Path,
    annotations: &[Annotation],
    clip: Option<&Clip>,
) -> Result<(), ReadError> {
    let src = rec.path.as_deref().ok_or_else(|| {
        ReadError::invalid(out, "only a recording opened from a file can be copied")
    })?;
    let bdf = match rec.format.edf_family() {
        Some(ext) => ext == "bdf",
        None => {
            return Err(ReadError::invalid(
                out,
                format!(
                    "{} recordings are saved with their events as a TSV file instead",
                    rec.format
                ),
            ));
        }
    };
    if same_file(src, out) {
        return Err(ReadError::invalid(
            out,
            "the copy must not replace the original recording: choose another name",
        ));
    }
    let data = std::fs::read(src).map_err(|e| ReadError::io(src, e))?;
    let bytes =
        render(&data, rec, bdf, annotations, clip).map_err(|m| ReadError::invalid(src, m))?;
    let partial = out.with_extension("partial");
    let written = std::fs::File::create(&partial)
        .and_then(|mut f| f.write_all(&bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&partial, out));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&partial);
        ReadError::write(out, e)
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn field(h: &[u8], at: usize, width: usize) -> String {
    String::from_utf8_lossy(&h[at..at + width])
        .trim()
        .to_string()
}

/// A header field: `text` in printable ASCII (anything else as '_'), cut or padded with spaces
/// to `width`.
pub(super) fn padded(text: &str, width: usize) -> Vec<u8> {
    let mut b: Vec<u8> = text
        .chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c as u8
            } else {
                b'_'
            }
        })
        .take(width)
        .collect();
    b.resize(width, b' ');
    b
}

/// The file's bytes with the new header and records.
fn render(
    src: &[u8],
    rec: &Recording,
    bdf: bool,
    annotations: &[Annotation],
    clip: Option<&Clip>,
) -> Result<Vec<u8>, String> {
    if src.len() < FIXED_HEADER {
        return Err("the file is shorter than an EDF header".into());
    }
    let ns: usize = field(src, 252, 4)
        .parse()
        .map_err(|_| "the number of signals is unreadable")?;
    let header_len = FIXED_HEADER + ns * PER_SIGNAL_HEADER;
    if src.len() < header_len {
        return Err("the header is truncated".into());
    }
    let bps = if bdf { 3 } else { 2 };
    let annotation_label = if bdf {
        "BDF Annotations"
    } else {
        "EDF Annotations"
    };
    let offset_of = |k: usize| -> usize { SIGNAL_FIELDS[..k].iter().sum::<usize>() * ns };
    let spr: Vec<usize> = (0..ns)
        .map(|i| {
            field(src, FIXED_HEADER + offset_of(8) + i * 8, 8)
                .parse()
                .unwrap_or(0)
        })
        .collect();
    let is_annotation =
        |i: usize| field(src, FIXED_HEADER + offset_of(0) + i * 16, 16) == annotation_label;
    // The reader's signals are the header's, less annotation signals and empty ones.
    let data_signals: Vec<usize> = (0..ns)
        .filter(|&i| !is_annotation(i) && spr[i] > 0)
        .collect();
    let keep: Vec<usize> = match clip {
        None => (0..ns).filter(|&i| !is_annotation(i)).collect(),
        Some(c) => (c.signals.iter())
            .map(|&j| data_signals.get(j).copied().ok_or("no such signal"))
            .collect::<Result<_, _>>()?,
    };
    if keep.is_empty() {
        return Err("choose at least one signal".into());
    }
    let record_in = spr.iter().sum::<usize>() * bps;
    let all_records = rec.records;
    if record_in == 0 || src.len() < header_len + all_records * record_in {
        return Err("the data records are missing or truncated".into());
    }
    let range = clip.map_or(0..all_records, |c| c.records.clone());
    if range.is_empty() || range.end > all_records {
        return Err("the clip holds no whole data record".into());
    }
    let records = range.len();
    let duration = rec.record_duration;
    if duration <= 0.0 {
        return Err("records of zero duration carry no samples to copy".into());
    }
    // Record onsets relative to the header's start time: the recording's sub-second start
    // offset, plus each record's place in its segment.
    let mut all_onsets = vec![0.0; all_records];
    for s in &rec.segments {
        let end = (s.first_record + s.records).min(all_records);
        for (k, onset) in all_onsets[s.first_record.min(end)..end]
            .iter_mut()
            .enumerate()
        {
            *onset = s.start_s + k as f64 * duration;
        }
    }
    // Seconds from the written header's start time to the recording's start: the sub-second
    // start of the original, or for a clip the fraction of a second its first record starts at
    // (the header then says the clip's whole second).
    let (header_start, t0, shift) = match clip {
        None => (None, header_offset(src, rec), 0.0),
        Some(_) => {
            let begin = rec.start
                + chrono::Duration::nanoseconds((all_onsets[range.start] * 1e9).round() as i64);
            let whole = begin.with_nanosecond(0).unwrap_or(begin);
            let frac = (begin - whole).num_nanoseconds().unwrap_or(0) as f64 / 1e9;
            (Some(whole), frac, all_onsets[range.start])
        }
    };
    let onsets: Vec<f64> = all_onsets[range.clone()]
        .iter()
        .map(|o| o - shift + t0)
        .collect();
    let clip_end = shift + records as f64 * duration;
    let annotations: Vec<Annotation> = annotations
        .iter()
        .filter(|a| clip.is_none() || (a.onset + a.duration >= shift && a.onset < clip_end))
        .map(|a| Annotation {
            onset: a.onset - shift,
            ..a.clone()
        })
        .collect();
    // Each annotation goes with the record holding its onset (the first or last at the ends).
    let mut tals: Vec<Vec<u8>> = onsets
        .iter()
        .map(|o| format!("{}\x14\x14\0", signed(*o)).into_bytes())
        .collect();
    for a in &annotations {
        let r = onsets
            .partition_point(|&o| o <= a.onset + t0 + 1e-9)
            .saturating_sub(1)
            .min(records - 1);
        let text = a.text.replace(['\x14', '\x15', '\0'], " ");
        let tal = if a.duration > 0.0 {
            format!(
                "{}\x15{}\x14{text}\x14\0",
                signed(a.onset + t0),
                fmt_onset(a.duration)
            )
        } else {
            format!("{}\x14{text}\x14\0", signed(a.onset + t0))
        };
        tals[r].extend(tal.as_bytes());
    }
    let ann_spr = tals
        .iter()
        .map(|t| t.len())
        .max()
        .unwrap_or(0)
        .div_ceil(bps)
        .max(1);

    let ns_out = keep.len() + 1;
    let mut out = Vec::with_capacity(src.len() + records * ann_spr * bps);
    // Fixed header: everything copied except the start (for a clip), the header size, the
    // reserved field, the number of records and ns.
    out.extend_from_slice(&src[..168]);
    match header_start {
        Some(t) => {
            out.extend(padded(&t.format("%d.%m.%y").to_string(), 8));
            out.extend(padded(&t.format("%H.%M.%S").to_string(), 8));
        }
        None => out.extend_from_slice(&src[168..184]),
    }
    out.extend(padded(
        &(FIXED_HEADER + ns_out * PER_SIGNAL_HEADER).to_string(),
        8,
    ));
    let discontinuous =
        rec.segments.len() > 1 || matches!(rec.format, Format::EdfPlusD | Format::BdfPlusD);
    let reserved = match (bdf, discontinuous) {
        (false, false) => "EDF+C",
        (false, true) => "EDF+D",
        (true, false) => "BDF+C",
        (true, true) => "BDF+D",
    };
    out.extend(padded(reserved, 44));
    out.extend(padded(&records.to_string(), 8));
    out.extend_from_slice(&src[244..252]);
    out.extend(padded(&ns_out.to_string(), 4));
    // Per-signal fields: the kept signals' bytes, then the annotation signal's.
    for (k, &width) in SIGNAL_FIELDS.iter().enumerate() {
        for &i in &keep {
            let at = FIXED_HEADER + offset_of(k) + i * width;
            out.extend_from_slice(&src[at..at + width]);
        }
        let (dmin, dmax) = if bdf {
            ("-8388608", "8388607")
        } else {
            ("-32768", "32767")
        };
        let value = match k {
            0 => annotation_label.to_string(),
            3 => "-1".into(),
            4 => "1".into(),
            5 => dmin.into(),
            6 => dmax.into(),
            8 => ann_spr.to_string(),
            _ => String::new(),
        };
        out.extend(padded(&value, width));
    }
    // Records: the kept signals' bytes as they were, then the annotations.
    let mut offsets = Vec::with_capacity(ns);
    let mut at = 0;
    for &n in &spr {
        offsets.push(at);
        at += n * bps;
    }
    for (tal, r) in tals.iter().zip(range) {
        let record = &src[header_len + r * record_in..header_len + (r + 1) * record_in];
        for &i in &keep {
            out.extend_from_slice(&record[offsets[i]..offsets[i] + spr[i] * bps]);
        }
        let mut a = tal.clone();
        a.resize(ann_spr * bps, 0);
        out.extend(a);
    }
    Ok(out)
}

/// Seconds from the header's start date and time to the recording's first sample (its
/// sub-second start), 0 when the header's time cannot be read.
fn header_offset(src: &[u8], rec: &Recording) -> f64 {
    let (date, time) = (field(src, 168, 8), field(src, 176, 8));
    let num = |s: &str, k: usize| {
        s.split('.')
            .nth(k)
            .and_then(|v| v.trim().parse::<u32>().ok())
    };
    let header = (|| {
        let yy = num(&date, 2)?;
        let year = if yy >= 85 { 1900 + yy } else { 2000 + yy } as i32;
        chrono::NaiveDate::from_ymd_opt(year, num(&date, 1)?, num(&date, 0)?)?.and_hms_opt(
            num(&time, 0)?,
            num(&time, 1)?,
            num(&time, 2)?,
        )
    })();
    match header {
        Some(h) => {
            let d = (rec.start - h).num_nanoseconds().unwrap_or(0) as f64 / 1e9;
            if (0.0..1e6).contains(&d) { d } else { 0.0 }
        }
        None => 0.0,
    }
}

/// An onset as a TAL starts: its sign, then `fmt_onset` of its size.
pub(super) fn signed(t: f64) -> String {
    format!("{}{}", if t < 0.0 { '-' } else { '+' }, fmt_onset(t.abs()))
}

/// Seconds as TALs write them: no sign, no exponent, no trailing zeros.
pub(super) fn fmt_onset(t: f64) -> String {
    let s = format!("{t:.9}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// Writes a copy of `rec` (an EDF/BDF file, any variant) to `out` in which the data signals in
/// `replaced` (index in `Recording::signals`, all of its samples) carry new values: every other
/// byte - header, annotations, other signals, and each sample whose value is unchanged - is
/// copied as it was. New values are quantized with the signal's own calibration and clamped to
/// its digital range. Written beside `out` and renamed, so a failure leaves no partial file.
pub fn write_replacing(
    rec: &Recording,
    out: &Path,
    replaced: &[(usize, &[f32])],
) -> Result<(), ReadError> {
    let src = rec.path.as_deref().ok_or_else(|| {
        ReadError::invalid(out, "only a recording opened from a file can be copied")
    })?;
    let Some(ext) = rec.format.edf_family() else {
        return Err(ReadError::invalid(
            out,
            format!(
                "{} recordings cannot be written back in their own format",
                rec.format
            ),
        ));
    };
    if same_file(src, out) {
        return Err(ReadError::invalid(
            out,
            "the copy must not replace the original recording: choose another name",
        ));
    }
    let mut data = std::fs::read(src).map_err(|e| ReadError::io(src, e))?;
    replace_samples(&mut data, rec, ext == "bdf", replaced)
        .map_err(|m| ReadError::invalid(src, m))?;
    let partial = out.with_extension("partial");
    let written = std::fs::File::create(&partial)
        .and_then(|mut f| f.write_all(&data).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&partial, out));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&partial);
        ReadError::write(out, e)
    })
}

fn replace_samples(
    src: &mut [u8],
    rec: &Recording,
    bdf: bool,
    replaced: &[(usize, &[f32])],
) -> Result<(), String> {
    let ns: usize = field(src, 252, 4)
        .parse()
        .map_err(|_| "the number of signals is unreadable")?;
    let header_len = FIXED_HEADER + ns * PER_SIGNAL_HEADER;
    let offset_of = |k: usize| -> usize { SIGNAL_FIELDS[..k].iter().sum::<usize>() * ns };
    let number = |k: usize, i: usize| -> f64 {
        let w = SIGNAL_FIELDS[k];
        field(src, FIXED_HEADER + offset_of(k) + i * w, w)
            .parse()
            .unwrap_or(0.0)
    };
    let bps = if bdf { 3 } else { 2 };
    let spr: Vec<usize> = (0..ns).map(|i| number(8, i) as usize).collect();
    let annotation_label = if bdf {
        "BDF Annotations"
    } else {
        "EDF Annotations"
    };
    let is_annotation =
        |i: usize| field(src, FIXED_HEADER + offset_of(0) + i * 16, 16) == annotation_label;
    let data_signals: Vec<usize> = (0..ns)
        .filter(|&i| !is_annotation(i) && spr[i] > 0)
        .collect();
    let record_len = spr.iter().sum::<usize>() * bps;
    if src.len() < header_len + rec.records * record_len {
        return Err("the data records are truncated".into());
    }
    let calibration: Vec<[f64; 4]> = (0..ns)
        .map(|i| [number(3, i), number(4, i), number(5, i), number(6, i)])
        .collect();
    let mut offsets = Vec::with_capacity(ns);
    let mut at = 0;
    for &n in &spr {
        offsets.push(at);
        at += n * bps;
    }
    for &(j, values) in replaced {
        let i = *data_signals.get(j).ok_or("no such signal")?;
        let [pmin, pmax, dmin, dmax] = calibration[i];
        let (gain, bias) = if dmax != dmin && pmax != pmin {
            let g = (pmax - pmin) / (dmax - dmin);
            (g, pmin - dmin * g)
        } else {
            (1.0, 0.0)
        };
        let mut old = vec![0.0f32; values.len()];
        rec.read(j, 0, &mut old).map_err(|e| e.to_string())?;
        for (k, (&v, &o)) in values.iter().zip(&old).enumerate() {
            if v == o || !v.is_finite() {
                continue;
            }
            let d = ((v as f64 - bias) / gain).round().clamp(dmin, dmax) as i32;
            let (r, s) = (k / spr[i], k % spr[i]);
            let at = header_len + r * record_len + offsets[i] + s * bps;
            let bytes = d.to_le_bytes();
            src[at..at + bps].copy_from_slice(&bytes[..bps]);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onsets_are_plain_decimals() {
        assert_eq!(fmt_onset(0.0), "0");
        assert_eq!(fmt_onset(12.5), "12.5");
        assert_eq!(fmt_onset(3.0), "3");
        assert_eq!(fmt_onset(0.000123), "0.000123");
        assert_eq!(
            (signed(-1.5), signed(2.0)),
            ("-1.5".to_string(), "+2".to_string())
        );
    }
}
