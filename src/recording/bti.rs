//! 4D Neuroimaging / BTi MEG (Magnes 2500 WH, 3600 WH: the Cross-ApEn paper's 148-channel
//! system and the Human Connectome Project's 248-channel one). A run is a processed data file
//! ("PDF", named like `c,rfDC` or `e,rfhp1.0Hz,COH`) and the system's `config` beside it;
//! `hs_file`, the head shape, is not needed to read the data.
//!
//! The PDF holds the samples first, multiplexed (all channels of a time slice together), in
//! big-endian short, int, float or double, and its header at the end: the last 8 bytes give
//! the header's position. The header lists the epochs (their lengths add up to the slices),
//! the channels (label, number, scale, slot in a slice) and the processing steps (the first
//! one's time stamp is the measurement's date). The config gives each channel number its name,
//! type (MEG, reference, EEG, trigger, ...), gain and units per bit, and each sensor its coil
//! transform. Everything is read as MNE-Python's `read_raw_bti` reads it: a channel's value is
//! the stored number times scale x units per bit / gain (integer formats) or scale x gain
//! (floating point); channels are ordered A1, A2, ... by number, then the rest by name, and
//! keep their 4D names (MNE's `rename_channels=False`); sensor positions are the coil
//! transforms carried into MNE's Neuromag-like device frame (`convert=True`). The samples are
//! memory-mapped and decoded on demand; the trigger's steps become events. Where a channel's
//! scale is not 1, MNE-Python applies it twice (in its calibration and again as the channel's
//! `cal`) and FieldTrip not at all; ede applies it once. (FieldTrip and Brainstorm also
//! multiply integer samples by the gain where MNE-Python divides; ede follows MNE-Python.)

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::binary::{MatrixSource, Orientation, SampleType};
use super::cursor::Cursor;
use super::{
    Annotation, ChannelType, Format, ReadError, Recording, SampleSource, SignalInfo, stim_events,
    unknown_start,
};

/// The name of the system configuration a run's data file needs beside it.
const CONFIG: &str = "config";
/// Headers, tables and channel lists beyond these counts are no 4D file's.
const MAX_CHANNELS: usize = 4096;
const MAX_ENTRIES: usize = 1 << 20;

/// Whether `path` is a 4D data file: a file whose name holds a comma (4D names its processed
/// files `c,rfDC`, `e,rfhp1.0Hz,COH`, ...) with the system `config` beside it, or whose last
/// 8 bytes point at a header with one of 4D's sample formats (then opening it says the config
/// is missing).
pub fn is_data_file(path: &Path) -> bool {
    let named = (path.file_name().and_then(|n| n.to_str())).is_some_and(|n| n.contains(','));
    named && path.is_file() && (config_of(path).is_file() || has_header(path))
}

/// Whether the header the last 8 bytes of `path` point at starts like a 4D header.
fn has_header(path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let look = || -> std::io::Result<bool> {
        let mut f = std::fs::File::open(path)?;
        let len = f.seek(SeekFrom::End(0))?;
        if len < 16 {
            return Ok(false);
        }
        let mut tail = [0u8; 8];
        f.seek(SeekFrom::End(-8))?;
        f.read_exact(&mut tail)?;
        let at = (u64::from_be_bytes(tail) & 0x7fff_ffff).div_ceil(8) * 8;
        if at + 10 > len - 8 {
            return Ok(false);
        }
        let mut head = [0u8; 10];
        f.seek(SeekFrom::Start(at))?;
        f.read_exact(&mut head)?;
        Ok((1..=4).contains(&i16::from_be_bytes([head[8], head[9]])))
    };
    look().unwrap_or(false)
}

fn config_of(path: &Path) -> PathBuf {
    path.parent().unwrap_or(Path::new(".")).join(CONFIG)
}

impl Cursor<'_> {
    /// A NUL-padded text field of `n` bytes, trimmed.
    fn text(&mut self, n: usize) -> Result<String, ReadError> {
        Ok(self.nul_text(n)?.trim().to_string())
    }

    /// A 4 x 4 matrix of doubles, row by row.
    fn transform(&mut self) -> Result<[[f64; 4]; 4], ReadError> {
        let mut t = [[0.0; 4]; 4];
        for row in &mut t {
            for v in row.iter_mut() {
                *v = self.f64()?;
            }
        }
        Ok(t)
    }

    /// On to the next multiple of 8 bytes (4D aligns its structures so).
    fn align(&mut self) -> Result<(), ReadError> {
        let rest = (8 - self.at % 8) % 8;
        self.skip(rest)
    }

    /// A count field, checked against `most`.
    fn count(&mut self, v: i64, most: usize, what: &str) -> Result<usize, ReadError> {
        usize::try_from(v)
            .ok()
            .filter(|&n| n <= most)
            .ok_or_else(|| {
                ReadError::invalid(
                    self.path,
                    format!("the {} gives {v} {what}: not a 4D file's", self.what),
                )
            })
    }
}

/// A channel of the data file's header.
struct PdfChannel {
    label: String,
    number: i16,
    scale: f32,
    /// Its place within a time slice.
    index: usize,
}

/// What the data file's header says.
struct PdfHeader {
    format: SampleType,
    total_channels: usize,
    sample_period: f32,
    slices: usize,
    channels: Vec<PdfChannel>,
    /// Seconds since 1970 of the first processing step (the measurement's date).
    timestamp: Option<i32>,
    /// Where the header starts: the samples end before it.
    header_at: usize,
}

fn read_pdf_header(path: &Path, b: &[u8]) -> Result<PdfHeader, ReadError> {
    if b.len() < 8 {
        return Err(ReadError::invalid(path, "too short for a 4D data file"));
    }
    let start = b.len() - 8;
    let mut c = Cursor::big_endian(b, start, path, "data file's header");
    let raw = u64::from_be_bytes(c.take(8)?.try_into().expect("8 bytes"));
    // As 4D (and MNE-Python) read it: the low 31 bits, unless they cannot be the position.
    let masked = raw & 0x7fff_ffff;
    let mut at = if (start as u64 + 8).saturating_sub(masked) <= 0x7fff_ffff {
        masked
    } else {
        raw
    };
    at = at.div_ceil(8) * 8;
    let at = usize::try_from(at)
        .ok()
        .filter(|&a| a < start)
        .ok_or_else(|| {
            ReadError::invalid(
                path,
                format!(
                    "not a 4D data file: its last 8 bytes put the header at byte {at}, past its \
                     end ({start})"
                ),
            )
        })?;
    let mut c = Cursor::big_endian(b, at, path, "data file's header");
    let _version = c.i16()?;
    let _file_type = c.text(5)?;
    c.skip(1)?;
    let data_format = c.i16()?;
    let _acq_mode = c.i16()?;
    let total_epochs = c.i32()?;
    let _input_epochs = c.i32()?;
    let total_events = c.i32()?;
    let _fixed_events = c.i32()?;
    let sample_period = c.f32()?;
    let _xaxis = c.text(16)?;
    let total_processes = c.i32()?;
    let total_chans = c.i16()?;
    c.skip(2)?;
    let _checksum = c.i32()?;
    let _ed_classes = c.i32()?;
    let _assoc = c.i16()?;
    let _last_index = c.i16()?;
    let _timestamp = c.i32()?;
    c.skip(20)?;
    c.align()?;
    let format = match data_format {
        1 => SampleType::I16,
        2 => SampleType::I32,
        3 => SampleType::F32,
        4 => SampleType::F64,
        f => {
            return Err(ReadError::invalid(
                path,
                format!("the data format {f} is none of 4D's (1 short, 2 int, 3 float, 4 double)"),
            ));
        }
    };
    if !(sample_period.is_finite() && sample_period > 0.0) {
        return Err(ReadError::invalid(
            path,
            format!("the sample period {sample_period} s is not a positive number"),
        ));
    }
    let epochs = c.count(total_epochs as i64, MAX_ENTRIES, "epochs")?;
    let total_channels = c.count(total_chans as i64, MAX_CHANNELS, "channels")?;
    let mut slices = 0usize;
    for _ in 0..epochs {
        let points = c.i32()?;
        slices = slices
            .checked_add(c.count(points as i64, usize::MAX, "points in an epoch")?)
            .ok_or_else(|| ReadError::invalid(path, "the epochs' points overflow a count"))?;
        c.skip(52)?;
    }
    let mut channels = Vec::with_capacity(total_channels);
    for _ in 0..total_channels {
        let label = c.text(16)?;
        let number = c.i16()?;
        let _attributes = c.i16()?;
        let scale = c.f32()?;
        let _ylabel = c.text(16)?;
        c.skip(2 + 6 + 16)?;
        let index = c.i32()?;
        c.skip(4 + 4 + 4 + 24)?;
        let index = usize::try_from(index)
            .ok()
            .filter(|&i| i < total_channels)
            .ok_or_else(|| {
                ReadError::invalid(
                    path,
                    format!("channel {label} sits at slot {index} of {total_channels}"),
                )
            })?;
        channels.push(PdfChannel {
            label,
            number,
            scale,
            index,
        });
    }
    let events = c.count(total_events as i64, MAX_ENTRIES, "events")?;
    for _ in 0..events {
        c.skip(16 + 4 + 4 + 4 + 2 + 4 + 32)?;
        c.align()?;
    }
    let processes = c.count(total_processes as i64, MAX_ENTRIES, "processes")?;
    let timestamp = match processes {
        0 => None,
        _ => {
            c.skip(4 + 20 + 4 + 32)?;
            Some(c.i32()?)
        }
    };
    Ok(PdfHeader {
        format,
        total_channels,
        sample_period,
        slices,
        channels,
        timestamp,
        header_at: at,
    })
}

/// 4D's channel types in the config.
const MEG: u16 = 1;
const EEG: u16 = 2;
const REFERENCE: u16 = 3;
const EXTERNAL: u16 = 4;
const TRIGGER: u16 = 5;
const UTILITY: u16 = 6;
const DERIVED: u16 = 7;
const SHORTED: u16 = 8;

/// A channel of the config.
struct ConfigChannel {
    name: String,
    number: i16,
    kind: u16,
    gain: f32,
    units_per_bit: f32,
    /// The coil transform of a MEG or reference sensor (4D's head frame, metres).
    transform: Option<[[f64; 4]; 4]>,
}

/// What the config says: the channels, and the first sensor transform (4D's device to head).
struct Config {
    channels: Vec<ConfigChannel>,
    device_to_head: Option<[[f64; 4]; 4]>,
}

fn read_config(path: &Path, b: &[u8]) -> Result<Config, ReadError> {
    let mut c = Cursor::big_endian(b, 0, path, "config");
    let _version = c.i16()?;
    c.skip(32 + 16)?;
    let _sys_type = c.i16()?;
    let _options = c.i32()?;
    let _supply = c.i16()?;
    let total_chans = c.i16()?;
    let _fixed_gain = c.f32()?;
    let _volts_per_bit = c.f32()?;
    let total_sensors = c.i16()?;
    let total_user_blocks = c.i16()?;
    let _next = c.i16()?;
    c.skip(2 + 4 + 32)?;
    let sensors = c.count(total_sensors as i64, MAX_CHANNELS, "sensors")?;
    let mut device_to_head = None;
    for k in 0..sensors {
        let t = c.transform()?;
        if k == 0 {
            device_to_head = Some(t);
        }
    }
    // The user blocks (weights, E tables, channel maps ...) say nothing ede shows: each
    // states its size and is stepped over.
    let blocks = c.count(total_user_blocks as i64, MAX_ENTRIES, "user blocks")?;
    for _ in 0..blocks {
        c.skip(4 + 20 + 4 + 32 + 4)?;
        let size = c.u32()? as usize;
        c.skip(32)?;
        c.align()?;
        c.skip(size)?;
        c.align()?;
    }
    let n = c.count(total_chans as i64, MAX_CHANNELS, "channels")?;
    let mut channels = Vec::with_capacity(n);
    for _ in 0..n {
        let name = c.text(16)?;
        let number = c.i16()?;
        let kind = c.u16()?;
        let _sensor = c.i16()?;
        c.skip(2)?;
        let gain = c.f32()?;
        let units_per_bit = c.f32()?;
        c.skip(16 + 8 + 4 + 32)?;
        c.align()?;
        // The device header (size, checksum, 32 reserved bytes) starts every kind's data.
        let device = 4 + 4 + 32;
        let mut transform = None;
        match kind {
            MEG | REFERENCE => {
                c.skip(device + 4 + 4)?;
                transform = Some(c.transform()?);
                let _xform_flag = c.i16()?;
                let loops = c.i16()?;
                c.skip(4 + 32)?;
                let loops = c.count(loops as i64, 64, "coil loops")?;
                c.skip(loops * (24 + 24 + 8 + 8 + 2 + 2 + 4 + 32))?;
            }
            EEG => c.skip(device + 4 + 4 + 128 + 32)?,
            EXTERNAL | UTILITY | DERIVED => c.skip(device + 4 + 32)?,
            TRIGGER => c.skip(device + 4 + 2 + 32)?,
            SHORTED => c.skip(device + 32)?,
            k => {
                return Err(ReadError::invalid(
                    path,
                    format!("channel {name} has type {k}, which 4D's configs do not use"),
                ));
            }
        }
        c.align()?;
        channels.push(ConfigChannel {
            name,
            number,
            kind,
            gain,
            units_per_bit,
            transform,
        });
    }
    Ok(Config {
        channels,
        device_to_head,
    })
}

type Transform = nalgebra::Matrix4<f64>;

fn matrix(t: &[[f64; 4]; 4]) -> Transform {
    Transform::from_fn(|i, j| t[i][j])
}

/// A 4 x 4 transform as 4D stores it, its scalings (the bottom row) applied to its columns.
fn corrected(t: &[[f64; 4]; 4]) -> Transform {
    let mut m = matrix(t);
    for j in 0..3 {
        let scale = t[3][j];
        for i in 0..3 {
            m[(i, j)] *= scale;
        }
    }
    m.set_row(3, &nalgebra::RowVector4::new(0.0, 0.0, 0.0, 1.0));
    m
}

/// MNE-Python's frame for 4D sensors (`_get_bti_dev_t`): x right, y front, z up, the origin
/// moved 2 cm forward and 11 cm up from 4D's.
fn to_device() -> Transform {
    Transform::new(
        0.0, -1.0, 0.0, 0.0, //
        1.0, 0.0, 0.0, 0.02, //
        0.0, 0.0, 1.0, 0.11, //
        0.0, 0.0, 0.0, 1.0,
    )
}

/// Where a coil sits in that frame: its transform carried from 4D's head frame (through the
/// inverse of the config's first transform, 4D's device to head, or none where it is unset)
/// into MNE's device frame.
fn coil_position(coil: &[[f64; 4]; 4], head_to_device: &Transform) -> [f64; 3] {
    let t = to_device() * head_to_device * corrected(coil);
    [t[(0, 3)], t[(1, 3)], t[(2, 3)]]
}

/// The type MNE-Python gives a 4D channel name (`_get_bti_info`), with its unit.
fn channel_type(name: &str) -> (ChannelType, &'static str) {
    let eeg_like = (name.split_once('-')).is_some_and(|(a, b)| {
        !b.contains('-')
            && crate::recording::electrodes::electrode_position(a).is_some()
            && crate::recording::electrodes::electrode_position(b).is_some()
    });
    if name.starts_with('A') {
        (ChannelType::Mag, "T")
    } else if name.starts_with('M') {
        (ChannelType::RefMeg, "T")
    } else if name.starts_with('G') {
        (ChannelType::RefMeg, "T/m")
    } else if name.starts_with("EEG") || eeg_like {
        (ChannelType::Eeg, "V")
    } else if name == "RESPONSE" || name == "TRIGGER" {
        (ChannelType::Stim, "V")
    } else if ["EOG", "HEOG", "VEOG"].iter().any(|p| name.starts_with(p))
        || ["E63", "E64"].contains(&name)
    {
        (ChannelType::Eog, "V")
    } else if name.starts_with("EMG") {
        (ChannelType::Emg, "V")
    } else if name == "E31" || name.starts_with("ECG") {
        (ChannelType::Ecg, "V")
    } else {
        (ChannelType::Misc, "V")
    }
}

/// The samples of the data file, channel `c` of the recording in slot `slots[c]` of a slice.
struct SlotSource {
    matrix: MatrixSource,
    slots: Vec<usize>,
}

impl SampleSource for SlotSource {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        self.matrix.read(self.slots[signal], start, out)
    }

    fn release_pages(&self) {
        self.matrix.release_pages();
    }
}

/// Opens a 4D run from its data file, with the `config` beside it.
pub fn open(path: &Path) -> Result<Recording, ReadError> {
    let map = MatrixSource::map(path)?;
    let header = read_pdf_header(path, &map)?;
    let config_path = config_of(path);
    if !config_path.is_file() {
        return Err(ReadError::invalid(
            path,
            format!(
                "a 4D data file needs the system's config beside it: {} is missing",
                config_path.display()
            ),
        ));
    }
    let config_bytes = std::fs::read(&config_path).map_err(|e| ReadError::io(&config_path, e))?;
    let config = read_config(&config_path, &config_bytes)?;
    // In single precision, as MNE-Python divides the stored period, so that rates agree to the
    // bit (the period is a float32 already: 1/period in double is no truer).
    let fs = (1.0f32 / header.sample_period) as f64;
    if !(fs.is_finite() && fs > 0.0) {
        return Err(ReadError::invalid(
            path,
            format!(
                "the sample period {} s is not a positive number",
                header.sample_period
            ),
        ));
    }
    let slice_bytes = header.total_channels * header.format.bytes();
    let data_bytes = header.slices.checked_mul(slice_bytes);
    if data_bytes.is_none_or(|n| n > header.header_at) {
        return Err(ReadError::invalid(
            path,
            format!(
                "the file is truncated: {} slices of {slice_bytes} bytes do not fit before its \
                 header at byte {}",
                header.slices, header.header_at
            ),
        ));
    }
    // The PDF's channels with their config entries, as MNE-Python orders them: by slot, then
    // the sensors A1, A2 ... by number and the others by name.
    struct Channel<'a> {
        pdf: &'a PdfChannel,
        cfg: &'a ConfigChannel,
    }
    let mut chans = Vec::with_capacity(header.channels.len());
    for p in &header.channels {
        let cfg = (config.channels.iter()).find(|c| c.number == p.number);
        let Some(cfg) = cfg else {
            return Err(ReadError::invalid(
                path,
                format!(
                    "channel {} (number {}) is not in {}: is it this system's config?",
                    p.label,
                    p.number,
                    config_path.display()
                ),
            ));
        };
        chans.push(Channel { pdf: p, cfg });
    }
    // MNE-Python's order (`_read_bti_header`): by slot, then the sensors A1, A2 ... by
    // number ahead of the others, which keep their slots' order. (MNE-Python takes the names
    // from a list sorted by channel number and the samples by slot: where the two orders
    // differ its names and samples part ways. Here each channel keeps its own.)
    chans.sort_by_key(|c| c.pdf.index);
    let sensor = |c: &Channel| -> Option<u64> { c.cfg.name.strip_prefix('A')?.parse().ok() };
    chans.sort_by_key(|c| sensor(c).map_or((1, 0), |n| (0, n)));
    let integer = matches!(header.format, SampleType::I16 | SampleType::I32);
    let mut gains = vec![0.0f64; header.total_channels];
    for c in &chans {
        let (scale, upb, gain) = (
            c.pdf.scale as f64,
            c.cfg.units_per_bit as f64,
            c.cfg.gain as f64,
        );
        gains[c.pdf.index] = if integer {
            scale * upb / gain
        } else {
            scale * gain
        };
    }
    let head_to_device = (config.device_to_head.map(|t| corrected(&t)))
        .filter(|t| t.iter().all(|v| v.is_finite()))
        .and_then(|t| t.try_inverse())
        .unwrap_or_else(Transform::identity);
    let samples = header.slices;
    let signals: Vec<SignalInfo> = (chans.iter())
        .map(|c| {
            // The sensors keep the config's name, the others the data file's label.
            let label = if c.cfg.name.starts_with('A') {
                c.cfg.name.clone()
            } else {
                c.pdf.label.clone()
            };
            let (kind, unit) = channel_type(&label);
            let position = (c.cfg.kind == MEG || c.cfg.kind == REFERENCE)
                .then_some(c.cfg.transform)
                .flatten()
                .map(|t| coil_position(&t, &head_to_device))
                .filter(|p| p.iter().all(|v| v.is_finite()));
            let range = super::nominal_range(unit);
            SignalInfo {
                kind,
                position,
                ..SignalInfo::continuous(label, unit.to_string(), fs, samples, range)
            }
        })
        .collect();
    let slots: Vec<usize> = chans.iter().map(|c| c.pdf.index).collect();
    let matrix = MatrixSource::new(
        path,
        map,
        0,
        header.format,
        true,
        Orientation::Multiplexed,
        samples,
        gains,
    )?;
    let source = SlotSource { matrix, slots };
    let mut annotations: Vec<Annotation> = Vec::new();
    let mut warnings = Vec::new();
    let bytes = data_bytes.unwrap_or(0);
    let time_of = |i: usize, k: usize| k as f64 / signals[i].fs;
    stim_events(
        &source,
        &signals,
        &time_of,
        bytes,
        &mut annotations,
        &mut warnings,
    )?;
    let start = (header.timestamp)
        .and_then(|s| chrono::DateTime::from_timestamp(s as i64, 0))
        .map(|d| d.naive_utc());
    Ok(Recording::continuous(
        Some(path.to_path_buf()),
        Format::Bti,
        start.unwrap_or_else(unknown_start),
        signals,
        annotations,
        warnings,
        samples as f64 / fs,
        Arc::new(source),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalings_multiply_the_rotations_columns() {
        let s = [
            [1.0, 0.0, 0.0, 0.5],
            [0.0, 1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0, 0.0],
            [2.0, 3.0, 4.0, 1.0],
        ];
        let c = corrected(&s);
        assert_eq!(
            (c[(0, 0)], c[(1, 1)], c[(2, 2)], c[(0, 3)]),
            (2.0, 3.0, 4.0, 0.5)
        );
        assert_eq!(
            c.row(3).iter().copied().collect::<Vec<_>>(),
            [0.0, 0.0, 0.0, 1.0]
        );
        // A coil at 4D's origin, no device transform: MNE's origin offset.
        let p = coil_position(
            &[
                [1.0, 0.0, 0.0, 0.0],
                [0.0, 1.0, 0.0, 0.0],
                [0.0, 0.0, 1.0, 0.0],
                [1.0, 1.0, 1.0, 1.0],
            ],
            &Transform::identity(),
        );
        assert_eq!(p, [0.0, 0.02, 0.11]);
    }

    #[test]
    fn names_type_channels_as_mne_does() {
        assert_eq!(channel_type("A12").0, ChannelType::Mag);
        assert_eq!(channel_type("MxA"), (ChannelType::RefMeg, "T"));
        assert_eq!(channel_type("GxxA"), (ChannelType::RefMeg, "T/m"));
        assert_eq!(channel_type("TRIGGER").0, ChannelType::Stim);
        assert_eq!(channel_type("E31").0, ChannelType::Ecg);
        assert_eq!(channel_type("E63").0, ChannelType::Eog);
        assert_eq!(channel_type("F4-POz").0, ChannelType::Eeg);
        assert_eq!(channel_type("X1").0, ChannelType::Misc);
    }
}
