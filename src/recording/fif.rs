//! FIF (MEGIN/Neuromag, and what MNE-Python writes): a chain of tags, each with a 16-byte
//! big-endian header (kind, type, size, next), grouped into nested blocks. ede reads the
//! measurement info (channels with kind, unit, calibration and range, EEG positions; rate;
//! date; bad channels), the raw data buffers (short, int, float, double; skips as gaps of
//! zeros), MNE-Python's annotations, and follows split files (`_raw-1.fif`, ...). Buffers stay
//! in the memory-mapped files and decode on demand.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::DateTime;
use memmap2::Mmap;

use super::binary::{MatrixSource, SampleType};
use super::{
    Annotation, ChannelType, Format, ReadError, Recording, SampleSource, SignalInfo, unknown_start,
};

// Tag kinds.
const FILE_ID: i32 = 100;
const BLOCK_START: i32 = 104;
const BLOCK_END: i32 = 105;
const REF_ROLE: i32 = 115;
const REF_FILE_NAME: i32 = 118;
const NCHAN: i32 = 200;
const SFREQ: i32 = 201;
const CH_INFO: i32 = 203;
const MEAS_DATE: i32 = 204;
const COMMENT: i32 = 206;
const FIRST_SAMPLE: i32 = 208;
const DATA_BUFFER: i32 = 300;
const DATA_SKIP: i32 = 301;
const DATA_SKIP_SAMP: i32 = 303;
const CH_NAME_LIST: i32 = 3507;
const BASELINE_MIN: i32 = 3568;
const BASELINE_MAX: i32 = 3569;
// Block kinds.
const B_MEAS_INFO: i32 = 101;
const B_RAW_DATA: i32 = 102;
const B_CONTINUOUS_DATA: i32 = 112;
const B_REF: i32 = 118;
const B_IAS_RAW_DATA: i32 = 119;
const B_BAD_CHANNELS: i32 = 359;
const B_ANNOTATIONS: i32 = 3810;
/// Inside the annotations block, MNE-Python keeps each annotation's channels here (JSON).
const ANNOTATION_CHANNELS: i32 = 3801;
// Data types.
const T_SHORT: u32 = 2;
const T_INT: u32 = 3;
const T_FLOAT: u32 = 4;
const T_DOUBLE: u32 = 5;
const T_STRING: u32 = 10;
const T_DAU_PACK16: u32 = 16;
/// FIFFV_ROLE_NEXT_FILE: the reference to the next part of a split recording.
const ROLE_NEXT_FILE: i32 = 2;
/// Split files one recording may have (MNE-Python splits at 2 GB).
const MAX_PARTS: usize = 1000;

/// Whether the first bytes are a FIF file's first tag (FIFF_FILE_ID of type id struct, 20
/// bytes of data).
pub fn sniff(head: &[u8]) -> bool {
    head.len() >= 16
        && i32::from_be_bytes([head[0], head[1], head[2], head[3]]) == FILE_ID
        && u32::from_be_bytes([head[4], head[5], head[6], head[7]]) == 31
        && i32::from_be_bytes([head[8], head[9], head[10], head[11]]) == 20
}

struct Tag {
    kind: i32,
    dtype: u32,
    /// Where the data start and how many bytes they hold.
    data: usize,
    size: usize,
}

/// One channel as `fiffChInfoRec` describes it.
struct Channel {
    name: String,
    kind: i32,
    /// Physical value = stored value * cal * range.
    gain: f64,
    unit: i32,
    loc: [f32; 3],
}

/// Data buffers of one or more files: each covers samples `first..first + samples` of the
/// recording; `None` for a skip (zeros).
struct Buffer {
    first: usize,
    samples: usize,
    data: Option<(usize, usize, SampleType)>,
}

struct FifSource {
    maps: Vec<Mmap>,
    buffers: Vec<Buffer>,
    channels: usize,
    gains: Vec<f64>,
}

impl SampleSource for FifSource {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        let mut b = self
            .buffers
            .partition_point(|b| b.first + b.samples <= start);
        let mut k = start;
        let mut done = 0;
        while done < out.len() {
            let Some(buf) = self.buffers.get(b) else {
                out[done..].fill(0.0);
                break;
            };
            let within = k - buf.first;
            let n = (buf.samples - within).min(out.len() - done);
            let dst = &mut out[done..done + n];
            match buf.data {
                None => dst.fill(0.0),
                Some((file, offset, sample)) => {
                    let width = sample.bytes();
                    let stride = self.channels * width;
                    let mut at = offset + within * stride + signal * width;
                    let map = &self.maps[file];
                    for o in dst.iter_mut() {
                        *o =
                            (sample.decode(&map[at..at + width], true) * self.gains[signal]) as f32;
                        at += stride;
                    }
                }
            }
            k += n;
            done += n;
            b += 1;
        }
        Ok(())
    }

    fn release_pages(&self) {
        self.maps.iter().for_each(super::release_mapped_pages);
    }
}

/// What a file's tags say.
#[derive(Default)]
struct Parsed {
    nchan: Option<usize>,
    sfreq: Option<f64>,
    channels: Vec<Channel>,
    date: Option<(i32, i32)>,
    bads: Vec<String>,
    first_sample: Option<i64>,
    /// (offset, bytes, type) of each data buffer, and skips: `Err(samples)` (buffers skipped
    /// are resolved to samples once the buffer size is known).
    data: Vec<DataItem>,
    onsets: Vec<f64>,
    ends: Vec<f64>,
    descriptions: Vec<String>,
    /// Each annotation's channels (empty: the whole recording), where MNE wrote them.
    channels_of: Vec<Vec<String>>,
    next_file: Option<String>,
}

enum DataItem {
    Buffer(usize, usize, SampleType),
    SkipBuffers(usize),
    SkipSamples(usize),
}

fn tag_at(map: &[u8], at: usize, path: &Path) -> Result<(Tag, Option<usize>), ReadError> {
    let word = |i: usize| -> Option<[u8; 4]> { map.get(at + i..at + i + 4)?.try_into().ok() };
    let (Some(k), Some(t), Some(s), Some(n)) = (word(0), word(4), word(8), word(12)) else {
        return Err(ReadError::invalid(
            path,
            format!("the file is truncated: a tag header at byte {at} is cut off"),
        ));
    };
    let size = i32::from_be_bytes(s);
    let data = at + 16;
    if size < 0 || data + size as usize > map.len() {
        return Err(ReadError::invalid(
            path,
            format!(
                "the file is truncated: a tag at byte {at} claims {size} bytes, {} remain",
                map.len().saturating_sub(data)
            ),
        ));
    }
    let size = size as usize;
    let next = match i32::from_be_bytes(n) {
        0 => Some(data + size),
        -1 => None,
        p if p > 0 && (p as usize) > at => Some(p as usize),
        p => {
            return Err(ReadError::invalid(
                path,
                format!("a tag at byte {at} points back to byte {p}"),
            ));
        }
    };
    Ok((
        Tag {
            kind: i32::from_be_bytes(k),
            dtype: u32::from_be_bytes(t),
            data,
            size,
        },
        next,
    ))
}

fn be_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be_f32(b: &[u8]) -> f32 {
    f32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn parse(map: &[u8], path: &Path) -> Result<Parsed, ReadError> {
    if !sniff(map) {
        return Err(ReadError::invalid(
            path,
            "not a FIF file: it does not start with a file id tag",
        ));
    }
    let mut p = Parsed::default();
    let mut blocks: Vec<i32> = Vec::new();
    let mut at = Some(0usize);
    let mut ref_role = None;
    while let Some(pos) = at {
        if pos >= map.len() {
            break;
        }
        let (tag, next) = tag_at(map, pos, path)?;
        at = next;
        let d = &map[tag.data..tag.data + tag.size];
        let int = || (d.len() >= 4).then(|| be_i32(d));
        let inside = |b: i32| blocks.contains(&b);
        match tag.kind {
            BLOCK_START => {
                if let Some(b) = int() {
                    blocks.push(b);
                }
                if blocks.len() > 64 {
                    return Err(ReadError::invalid(path, "blocks nest more than 64 deep"));
                }
            }
            BLOCK_END => {
                if blocks.last() == Some(&B_REF) && ref_role == Some(ROLE_NEXT_FILE) {
                    ref_role = None;
                }
                blocks.pop();
            }
            NCHAN if inside(B_MEAS_INFO) && p.nchan.is_none() => {
                p.nchan = int().and_then(|n| usize::try_from(n).ok());
            }
            SFREQ if inside(B_MEAS_INFO) && p.sfreq.is_none() && d.len() >= 4 => {
                p.sfreq = Some(be_f32(d) as f64);
            }
            MEAS_DATE if inside(B_MEAS_INFO) && p.date.is_none() && d.len() >= 8 => {
                p.date = Some((be_i32(d), be_i32(&d[4..])));
            }
            CH_INFO if inside(B_MEAS_INFO) && d.len() >= 96 => {
                let name_bytes = &d[80..96];
                let end = name_bytes.iter().position(|&c| c == 0).unwrap_or(16);
                p.channels.push(Channel {
                    name: String::from_utf8_lossy(&name_bytes[..end])
                        .trim()
                        .to_string(),
                    kind: be_i32(&d[8..]),
                    gain: be_f32(&d[12..]) as f64 * be_f32(&d[16..]) as f64,
                    unit: be_i32(&d[72..]),
                    loc: [be_f32(&d[24..]), be_f32(&d[28..]), be_f32(&d[32..])],
                });
            }
            CH_NAME_LIST if inside(B_BAD_CHANNELS) && tag.dtype == T_STRING => {
                p.bads = names(d);
            }
            FIRST_SAMPLE if data_block(&blocks) => {
                p.first_sample = int().map(|v| v as i64);
            }
            DATA_BUFFER if data_block(&blocks) => {
                let sample = match tag.dtype {
                    T_SHORT | T_DAU_PACK16 => SampleType::I16,
                    T_INT => SampleType::I32,
                    T_FLOAT => SampleType::F32,
                    T_DOUBLE => SampleType::F64,
                    t => {
                        return Err(ReadError::invalid(
                            path,
                            format!(
                                "data buffers of FIF type {t} (complex or packed) are not read"
                            ),
                        ));
                    }
                };
                p.data.push(DataItem::Buffer(tag.data, tag.size, sample));
            }
            DATA_SKIP if data_block(&blocks) => {
                let n = int().unwrap_or(0).max(0) as usize;
                p.data.push(DataItem::SkipBuffers(n));
            }
            DATA_SKIP_SAMP if data_block(&blocks) => {
                let n = int().unwrap_or(0).max(0) as usize;
                p.data.push(DataItem::SkipSamples(n));
            }
            BASELINE_MIN if inside(B_ANNOTATIONS) => p.onsets = floats(d, tag.dtype),
            BASELINE_MAX if inside(B_ANNOTATIONS) => p.ends = floats(d, tag.dtype),
            COMMENT if inside(B_ANNOTATIONS) && tag.dtype == T_STRING => {
                p.descriptions = names(d);
            }
            ANNOTATION_CHANNELS if inside(B_ANNOTATIONS) && tag.dtype == T_STRING => {
                // Unreadable JSON leaves the annotations on the whole recording.
                p.channels_of = serde_json::from_slice(d).unwrap_or_default();
            }
            REF_ROLE if inside(B_REF) => ref_role = int(),
            REF_FILE_NAME if inside(B_REF) && ref_role == Some(ROLE_NEXT_FILE) => {
                p.next_file = Some(String::from_utf8_lossy(d).trim().to_string());
            }
            _ => {}
        }
    }
    Ok(p)
}

fn data_block(blocks: &[i32]) -> bool {
    matches!(
        blocks.last(),
        Some(&B_RAW_DATA) | Some(&B_CONTINUOUS_DATA) | Some(&B_IAS_RAW_DATA)
    )
}

/// MNE-Python's name lists: ':'-separated, with "{COLON}" for a colon inside a name.
fn names(d: &[u8]) -> Vec<String> {
    let s = String::from_utf8_lossy(d);
    if s.is_empty() {
        return Vec::new();
    }
    s.split(':').map(|n| n.replace("{COLON}", ":")).collect()
}

/// A float or double array (annotations' onsets and ends; a matrix tag's dimensions trail).
fn floats(d: &[u8], dtype: u32) -> Vec<f64> {
    let base = dtype & 0xffff;
    match base {
        // The decimal the writer meant (3.1, not 3.0999999046): the shortest that round-trips.
        T_FLOAT => (d.chunks_exact(4))
            .map(|c| {
                let v = be_f32(c);
                v.to_string().parse().unwrap_or(v as f64)
            })
            .collect(),
        T_DOUBLE => (d.chunks_exact(8))
            .map(|c| f64::from_be_bytes(c.try_into().unwrap_or([0; 8])))
            .collect(),
        _ => Vec::new(),
    }
}

/// Opens a FIF raw file and the parts it continues into.
pub fn open(path: &Path) -> Result<Recording, ReadError> {
    let map = MatrixSource::map(path)?;
    if map.is_empty() {
        return Err(ReadError::invalid(path, "the file is empty"));
    }
    let first = parse(&map, path)?;
    let nchan = first.nchan.unwrap_or(first.channels.len());
    if nchan == 0 || first.channels.len() != nchan {
        return Err(ReadError::invalid(
            path,
            format!(
                "the measurement info describes {} channels of {nchan}; is it a raw file (not \
                 epochs, evoked data or a forward solution)?",
                first.channels.len()
            ),
        ));
    }
    let fs = first.sfreq.unwrap_or(f64::NAN);
    if !(fs.is_finite() && fs > 0.0) {
        return Err(ReadError::invalid(
            path,
            format!("the sampling rate is {fs}"),
        ));
    }
    let mut warnings = Vec::new();
    let mut maps = vec![map];
    let mut parts = vec![(path.to_path_buf(), first.data, first.next_file.clone())];
    // Split files: each names the next; the data continue where the last part's end.
    while let Some(next) = parts.last().and_then(|p| p.2.clone()) {
        if parts.len() >= MAX_PARTS {
            warnings.push(format!(
                "more than {MAX_PARTS} split files; the rest are left out"
            ));
            break;
        }
        let next_path: PathBuf = path.with_file_name(&next);
        if !next_path.is_file() {
            warnings.push(format!(
                "the recording continues in {next}, which is missing; shown up to there"
            ));
            break;
        }
        let m = MatrixSource::map(&next_path)?;
        let parsed = parse(&m, &next_path)?;
        maps.push(m);
        parts.push((next_path, parsed.data, parsed.next_file));
    }

    let mut buffers: Vec<Buffer> = Vec::new();
    let mut samples = 0usize;
    let mut last_buffer = 0usize;
    for (file, (part, items, _)) in parts.iter().enumerate() {
        for item in items {
            let (n, data) = match *item {
                DataItem::Buffer(offset, bytes, sample) => {
                    let frame = nchan * sample.bytes();
                    if bytes % frame != 0 {
                        return Err(ReadError::invalid(
                            part,
                            format!(
                                "a data buffer of {bytes} bytes is not a whole number of \
                                 {nchan}-channel samples"
                            ),
                        ));
                    }
                    last_buffer = bytes / frame;
                    (last_buffer, Some((file, offset, sample)))
                }
                DataItem::SkipBuffers(k) => (k.saturating_mul(last_buffer), None),
                DataItem::SkipSamples(k) => (k, None),
            };
            if n == 0 {
                continue;
            }
            if data.is_none() {
                warnings.push(format!(
                    "{n} samples were skipped in acquisition at {:.3} s; shown as zeros",
                    samples as f64 / fs
                ));
            }
            buffers.push(Buffer {
                first: samples,
                samples: n,
                data,
            });
            samples = samples
                .checked_add(n)
                .ok_or_else(|| ReadError::invalid(path, "the data buffers overflow a count"))?;
        }
    }
    if buffers.is_empty() {
        return Err(ReadError::invalid(
            path,
            "the file has no raw data buffers (is it epochs, evoked data or a forward solution?)",
        ));
    }

    let first_time = first.first_sample.unwrap_or(0) as f64 / fs;
    let mut annotations: Vec<Annotation> = Vec::new();
    if first.onsets.len() == first.descriptions.len() {
        for (i, (&onset, text)) in first.onsets.iter().zip(&first.descriptions).enumerate() {
            let end = first.ends.get(i).copied().unwrap_or(onset);
            // MNE-Python keeps onsets from the measurement start: the first sample is
            // `first_samp / sfreq` after it.
            let duration = (end - onset).max(0.0);
            let onset = onset
                - if first.date.is_some() {
                    first_time
                } else {
                    0.0
                };
            // An annotation of several channels becomes one event a channel, as MNE writes
            // them to EDF+ (`text@@channel`).
            let channels = first.channels_of.get(i).filter(|c| !c.is_empty());
            let texts: Vec<String> = match channels {
                Some(cs) => cs.iter().map(|c| Annotation::on_channel(text, c)).collect(),
                None => vec![text.clone()],
            };
            for text in texts {
                annotations.push(Annotation {
                    onset,
                    duration,
                    text,
                });
            }
        }
    } else {
        warnings.push("the annotations' onsets and descriptions do not pair up".into());
    }
    if !first.bads.is_empty() {
        warnings.push(format!("bad channels: {}", first.bads.join(", ")));
    }

    let signals: Vec<SignalInfo> = (first.channels.iter())
        .map(|c| {
            let kind = channel_type(c.kind, c.unit);
            let unit = unit_name(c.unit).to_string();
            let range = super::nominal_range(&unit);
            SignalInfo {
                // MNE writes NaN (or zeros) where a channel has no position.
                position: (kind == ChannelType::Eeg
                    && c.loc.iter().all(|v| v.is_finite())
                    && c.loc.iter().any(|&v| v != 0.0))
                .then(|| c.loc.map(|v| v as f64)),
                bad: first.bads.contains(&c.name),
                kind,
                ..SignalInfo::continuous(c.name.clone(), unit, fs, samples, range)
            }
        })
        .collect();
    let start = first
        .date
        .filter(|&(_, us)| (0..1_000_000).contains(&us))
        .and_then(|(s, us)| DateTime::from_timestamp(s as i64, us as u32 * 1000))
        .and_then(|d| {
            let first = chrono::Duration::microseconds((first_time * 1e6) as i64);
            d.naive_utc().checked_add_signed(first)
        });
    let data_bytes: usize = (buffers.iter())
        .filter_map(|b| b.data.map(|(_, _, t)| b.samples * nchan * t.bytes()))
        .sum();
    let source = FifSource {
        maps,
        buffers,
        channels: nchan,
        gains: first.channels.iter().map(|c| c.gain).collect(),
    };
    super::stim_events(
        &source,
        &signals,
        &|i, k| k as f64 / signals[i].fs,
        data_bytes,
        &mut annotations,
        &mut warnings,
    )?;
    Ok(Recording::continuous(
        Some(path.to_path_buf()),
        Format::Fif,
        start.unwrap_or_else(unknown_start),
        signals,
        annotations,
        warnings,
        samples as f64 / fs,
        Arc::new(source),
    ))
}

/// FIFFV_*_CH kinds; MEG sensors are magnetometers in T and gradiometers in T/m.
fn channel_type(kind: i32, unit: i32) -> ChannelType {
    match kind {
        1 if unit == 201 => ChannelType::Grad,
        1 => ChannelType::Mag,
        301 => ChannelType::RefMeg,
        2 | 802 | 803 | 902 => ChannelType::Eeg,
        3 => ChannelType::Stim,
        202 => ChannelType::Eog,
        302 => ChannelType::Emg,
        402 => ChannelType::Ecg,
        602 => ChannelType::Resp,
        _ => ChannelType::Misc,
    }
}

fn unit_name(unit: i32) -> &'static str {
    match unit {
        107 => "V",
        112 => "T",
        201 => "T/m",
        114 => "degC",
        202 => "Am",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meg_kinds_and_units_type_channels() {
        assert_eq!(channel_type(1, 112), ChannelType::Mag);
        assert_eq!(channel_type(1, 201), ChannelType::Grad);
        assert_eq!(channel_type(3, -1), ChannelType::Stim);
        assert_eq!(names(b"MEG 0113:EEG{COLON}1"), ["MEG 0113", "EEG:1"]);
    }
}
