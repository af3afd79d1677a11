//! BrainVision (Brain Products): a `.vhdr` text header naming a binary `.eeg` data file and a
//! `.vmrk` marker file. Header versions 1.0 and 2.0; INT_16, UINT_16, INT_32 and IEEE_FLOAT_32,
//! multiplexed or vectorized; each channel's resolution and unit; markers as annotations
//! ("Type/Description", as MNE-Python names them); `[Coordinates]` as electrode positions.
//! The data file is memory-mapped and decoded on demand; ASCII exports (multiplexed, as
//! MNE-Python reads them) are indexed by line and parsed on demand.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::NaiveDateTime;

use super::binary::{LastWindow, MatrixSource, Orientation, SampleType, decode_text};
use super::{Annotation, Format, ReadError, Recording, SampleSource, SignalInfo, unknown_start};

/// The head radius MNE-Python scales "idealized" (unit-radius) coordinates to, in metres.
const HEAD_RADIUS_M: f64 = 0.095;

/// Whether `head` (the file's first bytes) is a BrainVision header.
pub fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start_matches('\u{feff}');
    t.starts_with("Brain Vision") || t.starts_with("BrainVision")
}

/// The sections of an INI-style header: `(section, key, value)` in file order, sections
/// lower-cased. Lines after `[Comment]` are free text and ignored.
fn ini(text: &str) -> Vec<(String, String, String)> {
    let mut section = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(';') {
            continue;
        }
        if line.starts_with('[') && line.ends_with(']') {
            section = line[1..line.len() - 1].trim().to_ascii_lowercase();
            if section == "comment" {
                break;
            }
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            out.push((section.clone(), k.trim().to_string(), v.trim().to_string()));
        }
    }
    out
}

struct Header {
    entries: Vec<(String, String, String)>,
}

impl Header {
    fn get(&self, section: &str, key: &str) -> Option<&str> {
        (self.entries.iter())
            .find(|(s, k, _)| s == section && k.eq_ignore_ascii_case(key))
            .map(|e| e.2.as_str())
    }

    /// The numbered entries of a section (`Ch1=`, `Mk1=`), by number.
    fn numbered(&self, section: &str, prefix: &str) -> Vec<(usize, &str)> {
        let mut v: Vec<(usize, &str)> = (self.entries.iter())
            .filter(|(s, _, _)| s == section)
            .filter_map(|(_, k, v)| {
                let n = k.get(prefix.len()..)?;
                (k[..prefix.len()].eq_ignore_ascii_case(prefix))
                    .then(|| n.parse().ok())
                    .flatten()
                    .map(|n| (n, v.as_str()))
            })
            .collect();
        v.sort_by_key(|e| e.0);
        v
    }
}

/// BrainVision escapes commas in names and descriptions as `\1`.
fn unescape(s: &str) -> String {
    s.replace("\\1", ",")
}

/// Resolves a file the header names, relative to the header's folder.
fn beside(vhdr: &Path, name: &str) -> PathBuf {
    vhdr.parent().unwrap_or(Path::new(".")).join(name)
}

/// Whether `path` is the `.eeg` or `.vmrk` of a set whose `.vhdr` lies beside it.
pub fn is_companion(path: &Path) -> bool {
    let ext = path.extension().map(|e| e.to_ascii_lowercase());
    matches!(
        ext.as_deref().and_then(|e| e.to_str()),
        Some("eeg" | "vmrk")
    ) && path.with_extension("vhdr").is_file()
}

/// Opens a BrainVision set from its `.vhdr` (or its `.eeg` or `.vmrk`, through the header).
pub fn open(path: &Path) -> Result<Recording, ReadError> {
    if is_companion(path) {
        return open(&path.with_extension("vhdr"));
    }
    let size = std::fs::metadata(path)
        .map_err(|e| ReadError::io(path, e))?
        .len();
    if size > 16 << 20 {
        return Err(ReadError::invalid(
            path,
            "a BrainVision header larger than 16 MB: not a header",
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| ReadError::io(path, e))?;
    if !sniff(&bytes) {
        return Err(ReadError::invalid(
            path,
            "not a BrainVision header: it does not start with \"Brain Vision Data Exchange Header File\"",
        ));
    }
    let h = Header {
        entries: ini(&decode_text(&bytes)),
    };
    let common = if h.entries.iter().any(|e| e.0 == "common infos") {
        "common infos"
    } else {
        return Err(ReadError::invalid(
            path,
            "the header has no [Common Infos] section",
        ));
    };
    let required = |key: &str| {
        h.get(common, key).ok_or_else(|| {
            ReadError::invalid(path, format!("the header's [Common Infos] lacks {key}="))
        })
    };
    let interval_us: f64 = required("SamplingInterval")?.parse().unwrap_or(f64::NAN);
    if !(interval_us.is_finite() && interval_us > 0.0) {
        return Err(ReadError::invalid(
            path,
            format!(
                "SamplingInterval={:?} is not a positive number of microseconds",
                h.get(common, "SamplingInterval").unwrap_or("")
            ),
        ));
    }
    let fs = 1e6 / interval_us;
    let n_channels: usize = required("NumberOfChannels")?
        .parse()
        .ok()
        .filter(|&n| (1..=100_000).contains(&n))
        .ok_or_else(|| {
            ReadError::invalid(path, "NumberOfChannels is not a count between 1 and 100000")
        })?;
    let format = h.get(common, "DataFormat").unwrap_or("BINARY");
    let ascii = format.eq_ignore_ascii_case("ASCII");
    if !ascii && !format.eq_ignore_ascii_case("BINARY") {
        return Err(ReadError::invalid(
            path,
            format!("DataFormat={format} is neither BINARY nor ASCII"),
        ));
    }
    let orientation = match h.get(common, "DataOrientation").unwrap_or("MULTIPLEXED") {
        o if o.eq_ignore_ascii_case("MULTIPLEXED") => Orientation::Multiplexed,
        o if o.eq_ignore_ascii_case("VECTORIZED") => Orientation::Vectorized,
        o => {
            return Err(ReadError::invalid(
                path,
                format!("DataOrientation={o} is neither MULTIPLEXED nor VECTORIZED"),
            ));
        }
    };
    let sample = match h.get("binary infos", "BinaryFormat").unwrap_or("INT_16") {
        _ if ascii => SampleType::F32,
        "INT_16" => SampleType::I16,
        "UINT_16" => SampleType::U16,
        "INT_32" => SampleType::I32,
        "IEEE_FLOAT_32" => SampleType::F32,
        other => {
            return Err(ReadError::invalid(
                path,
                format!(
                    "BinaryFormat={other} is not one ede reads (INT_16, UINT_16, INT_32, \
                     IEEE_FLOAT_32)"
                ),
            ));
        }
    };
    let mut warnings = Vec::new();
    if let Some(bo) = h.get("binary infos", "UseBigEndianOrder")
        && bo.eq_ignore_ascii_case("YES")
    {
        warnings.push("the data are big-endian (UseBigEndianOrder=YES)".to_string());
    }
    let big_endian = !warnings.is_empty();

    // Channels: Ch<n>=<name>,<reference>,<resolution>,<unit>.
    let listed = h.numbered("channel infos", "Ch");
    let mut labels = Vec::with_capacity(n_channels);
    let mut units = Vec::with_capacity(n_channels);
    let mut gains = Vec::with_capacity(n_channels);
    for c in 1..=n_channels {
        let entry = listed.iter().find(|e| e.0 == c).map(|e| e.1);
        let fields: Vec<&str> = entry.map(|e| e.split(',').collect()).unwrap_or_default();
        let name = fields
            .first()
            .map(|s| unescape(s.trim()))
            .unwrap_or_default();
        labels.push(if name.is_empty() {
            format!("Ch{c}")
        } else {
            name
        });
        let resolution = match fields.get(2).map(|s| s.trim()) {
            None | Some("") => 1.0,
            Some(r) => r
                .parse::<f64>()
                .ok()
                .filter(|r| r.is_finite())
                .ok_or_else(|| {
                    ReadError::invalid(path, format!("Ch{c}'s resolution {r:?} is not a number"))
                })?,
        };
        gains.push(resolution);
        let unit = fields.get(3).map(|s| s.trim()).unwrap_or("");
        units.push(match unit {
            "" | "µV" | "μV" => "uV".to_string(),
            u => u.to_string(),
        });
        if entry.is_none() {
            warnings.push(format!("the header does not describe channel {c}"));
        }
    }

    let data_path = beside(path, required("DataFile")?);
    if !data_path.is_file() {
        return Err(ReadError::invalid(
            path,
            format!(
                "the data file it names, {}, is missing",
                data_path.display()
            ),
        ));
    }
    let map = MatrixSource::map(&data_path)?;
    let (source, samples): (Arc<dyn SampleSource>, usize) = if ascii {
        if orientation == Orientation::Vectorized {
            return Err(ReadError::invalid(
                path,
                "ASCII data in vectorized order (a channel a line) are not read (MNE-Python \
                 refuses them too)",
            ));
        }
        let number = |key: &str| -> Result<usize, ReadError> {
            match h.get("ascii infos", key) {
                None => Ok(0),
                Some(v) => v.trim().parse().map_err(|_| {
                    ReadError::invalid(path, format!("[ASCII Infos] {key}={v:?} is not a count"))
                }),
            }
        };
        let layout = TextLayout {
            skip_lines: number("SkipLines")?,
            skip_columns: number("SkipColumns")?,
            decimal_comma: h.get("ascii infos", "DecimalSymbol") == Some(","),
        };
        let source = TextSource::new(&data_path, map, layout, gains.clone())?;
        let samples = source.lines.len();
        (Arc::new(source), samples)
    } else {
        let frame = n_channels * sample.bytes();
        let samples = map.len() / frame;
        if map.len() % frame != 0 {
            warnings.push(format!(
                "the data file's {} bytes are not a whole number of {n_channels}-channel \
                 samples; the last {} bytes are left out",
                map.len(),
                map.len() % frame
            ));
        }
        let source = MatrixSource::new(
            &data_path,
            map,
            0,
            sample,
            big_endian,
            orientation,
            samples,
            gains.clone(),
        )?;
        (Arc::new(source), samples)
    };

    let positions = coordinates(&h, n_channels);
    let (annotations, start) = match h.get(common, "MarkerFile").filter(|m| !m.is_empty()) {
        Some(m) => {
            let vmrk = beside(path, m);
            match markers(&vmrk, fs) {
                Ok(found) => found,
                Err(e) => {
                    warnings.push(format!("markers not read: {e}"));
                    (Vec::new(), None)
                }
            }
        }
        None => (Vec::new(), None),
    };

    // Integer formats span their type's range; float data have none that the header
    // states: +-3200 of the unit (where EDF exports and the browser's scale start).
    let digital = match sample {
        SampleType::I16 => (i16::MIN as f64, i16::MAX as f64),
        SampleType::U16 => (0.0, u16::MAX as f64),
        SampleType::I32 => (i32::MIN as f64, i32::MAX as f64),
        SampleType::F32 | SampleType::F64 => (-3200.0, 3200.0),
    };
    let signals: Vec<SignalInfo> = (0..n_channels)
        .map(|c| {
            let g = if digital.1 == 3200.0 { 1.0 } else { gains[c] };
            let (lo, hi) = (digital.0 * g, digital.1 * g);
            SignalInfo {
                position: positions[c],
                ..SignalInfo::continuous(
                    labels[c].clone(),
                    units[c].clone(),
                    fs,
                    samples,
                    (lo.min(hi), lo.max(hi)),
                )
            }
        })
        .collect();
    Ok(Recording::continuous(
        Some(path.to_path_buf()),
        Format::BrainVision,
        start.unwrap_or_else(unknown_start),
        signals,
        annotations,
        warnings,
        samples as f64 / fs,
        source,
    ))
}

/// How an ASCII data file lays out its numbers: lines to skip at its start (a header line of
/// channel names, as Analyzer writes one), columns to skip at each line's start, and whether
/// the decimal symbol is a comma.
struct TextLayout {
    skip_lines: usize,
    skip_columns: usize,
    decimal_comma: bool,
}

/// Multiplexed ASCII samples (a time point a line, a channel a column, in the channel's unit
/// over its resolution), read a window of lines at a time: the file is mapped and indexed by
/// line once, at open, and the lines a read needs are parsed then, every channel of them (the
/// browser reads each channel of the same span in turn).
struct TextSource {
    path: std::path::PathBuf,
    map: memmap2::Mmap,
    /// Where each data line starts, and where it ends.
    lines: Vec<(usize, usize)>,
    layout: TextLayout,
    gains: Vec<f64>,
    last: LastWindow,
}

impl TextSource {
    fn new(
        path: &Path,
        map: memmap2::Mmap,
        layout: TextLayout,
        gains: Vec<f64>,
    ) -> Result<Self, ReadError> {
        let mut lines = Vec::new();
        let mut at = 0;
        for line in map.split_inclusive(|&b| b == b'\n') {
            let (from, to) = (at, at + line.len());
            at = to;
            if line.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            lines.push((from, to));
        }
        if layout.skip_lines > lines.len() {
            return Err(ReadError::invalid(
                path,
                format!(
                    "SkipLines={} passes its {} lines",
                    layout.skip_lines,
                    lines.len()
                ),
            ));
        }
        lines.drain(..layout.skip_lines);
        Ok(TextSource {
            path: path.to_path_buf(),
            map,
            lines,
            layout,
            gains,
            last: LastWindow::default(),
        })
    }

    /// Lines `first..first + count`, every channel, in physical units.
    fn parse(&self, first: usize, count: usize) -> Result<Vec<f32>, ReadError> {
        let n = self.gains.len();
        let Some(lines) = self.lines.get(first..first + count) else {
            return Err(ReadError::invalid(
                &self.path,
                format!(
                    "lines {first}..{} of {} wanted",
                    first + count,
                    self.lines.len()
                ),
            ));
        };
        let mut values = Vec::with_capacity(count * n);
        for (k, &(from, to)) in lines.iter().enumerate() {
            let text = String::from_utf8_lossy(&self.map[from..to]);
            let text = match self.layout.decimal_comma {
                true => text.replace(',', "."),
                false => text.into_owned(),
            };
            // As MNE-Python splits them: on blanks where there are any, else on commas.
            let fields: Vec<&str> = if text.trim().contains(char::is_whitespace) {
                text.split_whitespace().collect()
            } else {
                text.trim().split(',').collect()
            };
            let fields = fields.get(self.layout.skip_columns..).unwrap_or_default();
            if fields.len() < n {
                return Err(ReadError::invalid(
                    &self.path,
                    format!(
                        "data line {} has {} numbers for {n} channels",
                        first + k + 1,
                        fields.len()
                    ),
                ));
            }
            for (c, field) in fields[..n].iter().enumerate() {
                let v: f64 = field.trim().parse().map_err(|_| {
                    ReadError::invalid(
                        &self.path,
                        format!("data line {}: {field:?} is not a number", first + k + 1),
                    )
                })?;
                values.push((v * self.gains[c]) as f32);
            }
        }
        Ok(values)
    }
}

impl SampleSource for TextSource {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        if out.is_empty() {
            return Ok(());
        }
        let (values, at) = (self.last).rows(start, out.len(), || self.parse(start, out.len()))?;
        let n = self.gains.len();
        for (k, o) in out.iter_mut().enumerate() {
            *o = values[(at + k) * n + signal];
        }
        Ok(())
    }

    fn release_pages(&self) {
        super::release_mapped_pages(&self.map);
    }
}

/// `[Coordinates]`: `Ch<n>=<radius>,<theta>,<phi>` in mm and degrees (BrainVision's sphere:
/// x towards T8, y towards Fpz, z through Cz); radius 1 means an idealized head, scaled as
/// MNE-Python does; radius 0 means no position.
fn coordinates(h: &Header, n: usize) -> Vec<Option<[f64; 3]>> {
    let mut out = vec![None; n];
    for (c, v) in h.numbered("coordinates", "Ch") {
        let f: Vec<f64> = v.split(',').filter_map(|x| x.trim().parse().ok()).collect();
        let (Some(slot), [r, theta, phi]) = (out.get_mut(c.wrapping_sub(1)), f.as_slice()) else {
            continue;
        };
        if *r == 0.0 {
            continue;
        }
        let r_m = if *r == 1.0 { HEAD_RADIUS_M } else { r / 1e3 };
        let (pol, az) = (theta.to_radians(), phi.to_radians());
        *slot = Some([
            r_m * pol.sin() * az.cos(),
            r_m * pol.sin() * az.sin(),
            r_m * pol.cos(),
        ]);
    }
    out
}

/// The markers of a `.vmrk` file: `Mk<n>=<type>,<description>,<position>,<points>,<channel>
/// [,<date>]`, positions counted from 1. The first "New Segment" marker holds the start time
/// (YYYYMMDDhhmmssuuuuuu) and is not an event.
fn markers(vmrk: &Path, fs: f64) -> Result<(Vec<Annotation>, Option<NaiveDateTime>), ReadError> {
    let bytes = std::fs::read(vmrk).map_err(|e| ReadError::io(vmrk, e))?;
    let h = Header {
        entries: ini(&decode_text(&bytes)),
    };
    let mut start = None;
    let mut annotations = Vec::new();
    for (i, (_, v)) in h.numbered("marker infos", "Mk").into_iter().enumerate() {
        let f: Vec<&str> = v.split(',').collect();
        if f.len() < 3 {
            continue;
        }
        let kind = unescape(f[0].trim());
        let description = unescape(f[1]);
        let Ok(position) = f[2].trim().parse::<u64>() else {
            continue;
        };
        let points: u64 = f.get(3).and_then(|p| p.trim().parse().ok()).unwrap_or(0);
        if kind == "New Segment" && start.is_none() {
            start = f.get(5).and_then(|d| parse_date(d.trim()));
        }
        if i == 0 && kind == "New Segment" {
            continue;
        }
        annotations.push(Annotation {
            onset: position.saturating_sub(1) as f64 / fs,
            duration: points as f64 / fs,
            text: format!("{kind}/{description}"),
        });
    }
    Ok((annotations, start))
}

/// YYYYMMDDhhmmssuuuuuu (20 digits; all zeros when unknown).
fn parse_date(d: &str) -> Option<NaiveDateTime> {
    if d.len() != 20 || !d.bytes().all(|b| b.is_ascii_digit()) || d.bytes().all(|b| b == b'0') {
        return None;
    }
    let n = |a: usize, b: usize| d[a..b].parse::<u32>().ok();
    chrono::NaiveDate::from_ymd_opt(n(0, 4)? as i32, n(4, 6)?, n(6, 8)?)?.and_hms_micro_opt(
        n(8, 10)?,
        n(10, 12)?,
        n(12, 14)?,
        n(14, 20)?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_escapes_read() {
        let t = parse_date("20200102030405123456").unwrap();
        assert_eq!(t.to_string(), "2020-01-02 03:04:05.123456");
        assert!(parse_date("00000000000000000000").is_none());
        assert_eq!(unescape("a\\1b"), "a,b");
    }
}
