//! KIT / Yokogawa / Ricoh MEG (the NYU, Maryland, Macquarie and Kanazawa systems): one
//! `.sqd` or `.con` file holds a run, header and samples. (`.mrk` marker files share the
//! layout but hold no run.)
//!
//! The file starts with a table of directories (offset, entry size, counts of 16 bytes each);
//! the ones read here are the system's basic information (format version, system id, channel
//! count, creation time, the A/D converter's range and bits), the channel table (type, sensor
//! position and orientation, name), the sensors' calibration (tesla per volt), the amplifier's
//! gain and filter bits, the acquisition's mode, rate and length, and the samples: little-endian
//! int16 or int32, multiplexed (all channels of a time point together).
//!
//! Everything is read as MNE-Python's `read_raw_kit` reads it with its defaults: a sensor's
//! value is the stored number x ADC range / 2^bits / amplifier gain x its calibration (T), the
//! other channels' x ADC range / 2^bits (V), EEG and ECG x their own gain / 2^(bits - 14).
//! Channels keep the file's order; sensors are named by the file or "MEG 001" (their place in
//! the file), the others by the file or "TRIGGER/EEG/ECG/MISC 001" (counted per kind).
//! Sensors are typed "mag" (MNE's name for KIT's axial gradiometers) and "ref_meg"; trigger,
//! other and unused channels "misc", and then like MNE a synthesized "STI 014" (stim) is
//! appended: the first eight "misc" channels are trigger lines, each on where it is below 1 V
//! (`slope='-'`, `stimthresh=1`), and line k adds 2^k (`stim='>'`, `stim_code='binary'`). Here
//! it is decoded from the lines on demand, never stored. Its steps up are the events, as
//! `mne.find_events` finds them.
//!
//! Positions: a sensor's is MNE's `loc[:3]`, the file's position turned from KIT's frame (x
//! front, y left) to MNE's device frame (x right, y front, z up), in metres. MNE's
//! device-to-head transform is the identity for a run read without marker and head-shape
//! files, so these are its "head" coordinates too. Reference sensors at the origin (no
//! position in the file) get none.
//!
//! Where ede differs: EEG positions digitized into the file, and the device-to-head transform
//! MNE fits from the file's marker coils, are not read (MNE puts those EEG positions in the
//! digitizer's frame, not the device's); sensor positions stay in the device frame, and a
//! warning says so where the file has a digitization. Files of formats before V2R003, which
//! MNE refuses unless asked, are read with MNE's legacy ADC parameters (the NYU and Maryland
//! systems) and a warning; a calibration offset, on which MNE stops, is left out with a
//! warning. Averaged and epoched files are refused, as MNE's raw reader does.

use std::path::Path;
use std::sync::Arc;

use memmap2::Mmap;

use super::binary::{MatrixSource, Orientation, SampleType};
use super::cursor::Cursor;
use super::{
    Annotation, ChannelType, Format, ReadError, Recording, SampleSource, SignalInfo, stim_events,
    unknown_start,
};

/// Tables beyond these counts are no KIT file's.
const MAX_DIRS: usize = 1024;
const MAX_CHANNELS: usize = 4096;

/// The directories read (MNE's `KIT.DIR_INDEX_*`).
const DIR_SYSTEM: usize = 1;
const DIR_CHANNELS: usize = 4;
const DIR_CALIBRATION: usize = 5;
const DIR_AMP_FILTER: usize = 7;
const DIR_ACQ: usize = 8;
const DIR_RAW_DATA: usize = 9;
const DIR_COREG: usize = 12;
const DIR_DIG_POINTS: usize = 26;

/// KIT's channel types.
const AXIAL_GRADIOMETER: i32 = 2;
const MAGNETOMETER_REFERENCE: i32 = 0x101;
const TRIGGER: i32 = -1;
const EEG: i32 = -2;
const ECG: i32 = -3;
const ETC: i32 = -4;
const NULL: i32 = 0;
/// Sensor types MNE reads no coil for, and so refuses.
const OTHER_SENSORS: [i32; 6] = [1, 0x102, 3, 0x103, 4, 0x104];

/// Acquisition modes.
const CONTINUOUS: i32 = 1;
const EVOKED: i32 = 2;
const EPOCHS: i32 = 3;

/// The synthesized trigger: MNE's defaults for `read_raw_kit`.
const STIM_NAME: &str = "STI 014";
const STIM_LINES: usize = 8;
const STIM_THRESHOLD: f64 = 1.0;

/// Amplifier gains by their 3-bit code.
const GAINS: [f64; 8] = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0];
/// Filter settings by option set and code (MNE's `KIT.HPFS`, `LPFS`, `BEFS`).
const HPFS: [[f64; 8]; 4] = [
    [0.0, 1.0, 3.0, 3.0, f64::NAN, f64::NAN, f64::NAN, f64::NAN],
    [0.0, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0],
    [0.0, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0],
    [0.0, 1.0, 3.0, 10.0, 30.0, 100.0, 200.0, 500.0],
];
const LPFS: [[f64; 8]; 4] = [
    [10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0],
    [10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0],
    [10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 10000.0],
    [10.0, 30.0, 100.0, 300.0, 1000.0, 2000.0, 5000.0, 10000.0],
];
const BEFS: [&[f64]; 3] = [
    &[0.0, 50.0, 60.0, 60.0],
    &[0.0, 0.0, 0.0],
    &[0.0, 60.0, 50.0, 50.0],
];
/// FLL (SQUID electronics) types with their (high-pass, low-pass, notch) option sets, 1-based.
const FLL_SETTINGS: [(i32, [usize; 3]); 10] = [
    (0, [1, 1, 1]),
    (10, [1, 1, 1]),
    (20, [1, 1, 1]),
    (50, [2, 1, 1]),
    (60, [2, 1, 1]),
    (100, [3, 3, 3]),
    (101, [1, 3, 2]),
    (120, [3, 3, 3]),
    (200, [4, 4, 3]),
    (300, [2, 2, 2]),
];
/// MNE's ADC range (V) and bits for systems whose old files lack them.
const LEGACY_AMP: [(i32, (f64, i32)); 4] = [
    (32, (5.0, 11)),
    (33, (5.0, 11)),
    (34, (5.0, 11)),
    (51, (5.0, 11)),
];

/// Whether `path` is a KIT run: a `.sqd` or `.con` file whose header reads as one.
pub fn is_companion(path: &Path) -> bool {
    let ext = (path.extension().and_then(|e| e.to_str())).map(str::to_ascii_lowercase);
    if !matches!(ext.as_deref(), Some("sqd" | "con")) || !path.is_file() {
        return false;
    }
    MatrixSource::map(path).is_ok_and(|map| read_header(path, &map).is_ok())
}

/// KIT files are known by their name and header, not by their first bytes.
pub fn sniff(_head: &[u8]) -> bool {
    false
}

/// A channel of the channel table.
struct Channel {
    kind: i32,
    /// x, y, z (m, KIT's frame) of a sensor.
    position: Option<[f64; 3]>,
    name: String,
    /// EEG's and ECG's own gain.
    exg_gain: Option<f64>,
}

/// What the header says.
struct Header {
    description: String,
    create_time: i32,
    sample: SampleType,
    channels: Vec<Channel>,
    /// Stored number to volts or tesla, per channel (MNE's `conv_factor`).
    conv: Vec<f64>,
    sfreq: f64,
    samples: usize,
    data_offset: usize,
    highpass: Option<f64>,
    lowpass: Option<f64>,
    warnings: Vec<String>,
}

/// The directory table: where each directory starts and how many entries it holds.
fn read_dirs(path: &Path, b: &[u8]) -> Result<Vec<(usize, i32)>, ReadError> {
    let mut c = Cursor::little_endian(b, 0, path, "directory table");
    let mut dirs = Vec::new();
    let mut count = 1;
    while dirs.len() < count {
        let offset = c.u32()? as usize;
        let _size = c.i32()?;
        let _max_count = c.i32()?;
        let n = c.i32()?;
        if dirs.is_empty() {
            count = usize::try_from(n)
                .ok()
                .filter(|n| (DIR_RAW_DATA + 1..=MAX_DIRS).contains(n))
                .ok_or_else(|| {
                    ReadError::invalid(
                        path,
                        format!("not a KIT file: its directory table lists {n} directories"),
                    )
                })?;
        }
        dirs.push((offset, n));
    }
    Ok(dirs)
}

/// The entry size of directory `i` (the channel table's stride).
fn dir_size(path: &Path, b: &[u8], i: usize) -> Result<usize, ReadError> {
    let mut c = Cursor::little_endian(b, i * 16 + 4, path, "directory table");
    let size = c.i32()?;
    usize::try_from(size)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| ReadError::invalid(path, format!("the channel entries are {size} bytes")))
}

fn read_header(path: &Path, b: &[u8]) -> Result<Header, ReadError> {
    let table = read_dirs(path, b)?;
    let dirs: Vec<usize> = table.iter().map(|d| d.0).collect();
    let mut warnings = Vec::new();
    // Marker coils and digitized points in the file: MNE fits its device-to-head transform
    // to them (and takes EEG positions from them); ede does not.
    let entries = |i: usize| table.get(i).map_or(0, |d| d.1);
    if entries(DIR_COREG) > 0 && entries(DIR_DIG_POINTS) > 0 {
        warnings.push(
            "the head digitization in the file is not read: MEG sensor positions are in the \
             MEG device's frame, EEG channels have none"
                .to_string(),
        );
    }

    let mut c = Cursor::little_endian(b, dirs[DIR_SYSTEM], path, "system information");
    let version = c.i32()?;
    let revision = c.i32()?;
    if !(0..100).contains(&version) || !(0..1000).contains(&revision) {
        return Err(ReadError::invalid(
            path,
            format!("not a KIT file: format version {version}.{revision}"),
        ));
    }
    let sysid = c.i32()?;
    let system_name = c.nul_text(128)?;
    let model_name = c.nul_text(128)?;
    let nchan = c.i32()?;
    let nchan = usize::try_from(nchan)
        .ok()
        .filter(|&n| (1..=MAX_CHANNELS).contains(&n))
        .ok_or_else(|| {
            ReadError::invalid(path, format!("the file says it has {nchan} channels"))
        })?;
    c.skip(256)?; // comment
    let create_time = c.i32()?;
    c.skip(4 + 12)?; // last modified, reserved
    let _dewar = c.i32()?;
    c.skip(12)?;
    let mut fll_type = c.i32()?;
    c.skip(12)?;
    let _trigger_type = c.i32()?;
    c.skip(12)?;
    let _adboard = c.i32()?;
    c.skip(29 * 4)?;
    let old = version < 2 || (version == 2 && revision <= 3);
    let mut adc_range = if old { c.i32()? as f64 } else { c.f64()? };
    let _polarity = c.i32()?;
    let allocated = c.i32()?;
    let mut stored = c.i32()?;
    let clean = |s: &str| s.replace('\0', "").trim().replace('\n', "/");
    let full_version = format!("V{version}R{revision:03}");
    let description = format!(
        "{} ({sysid}) {full_version} {}",
        clean(&system_name),
        clean(&model_name)
    );
    if version < 2 || (version == 2 && revision < 3) {
        let Some((_, (range, bits))) = LEGACY_AMP.iter().find(|(id, _)| *id == sysid) else {
            return Err(ReadError::invalid(
                path,
                format!(
                    "KIT format {full_version} of system {sysid} is too old to read: re-save it \
                     with KIT's MEG Laboratory"
                ),
            ));
        };
        (adc_range, stored) = (*range, *bits);
        warnings.push(format!(
            "KIT format {full_version} is older than MNE-Python reads by default: read with \
             its legacy converter settings for system {sysid}"
        ));
    }
    let sample = match allocated {
        16 => SampleType::I16,
        32 => SampleType::I32,
        a => {
            return Err(ReadError::invalid(
                path,
                format!("samples of {a} bits: KIT files store 16 or 32"),
            ));
        }
    };
    if !(adc_range.is_finite() && adc_range > 0.0 && (1..=32).contains(&stored)) {
        return Err(ReadError::invalid(
            path,
            format!("the converter's range {adc_range} V over {stored} bits is not one"),
        ));
    }
    // MNE's fallback for an unknown FLL type: the next lower known one (the last for none).
    let fll = match FLL_SETTINGS.iter().rev().find(|(t, _)| *t <= fll_type) {
        Some(&(t, opts)) if t == fll_type => opts,
        found => {
            let &(t, opts) = found.unwrap_or(&FLL_SETTINGS[FLL_SETTINGS.len() - 1]);
            warnings.push(format!(
                "unknown filter settings (FLL type {fll_type}): read as FLL type {t}, as \
                 MNE-Python does; check the channel scales"
            ));
            fll_type = t;
            opts
        }
    };

    // The channel table.
    let chan_at = dirs[DIR_CHANNELS];
    let stride = dir_size(path, b, DIR_CHANNELS)?;
    let mut channels = Vec::with_capacity(nchan);
    for i in 0..nchan {
        let at = (stride.checked_mul(i))
            .and_then(|o| o.checked_add(chan_at))
            .ok_or_else(|| ReadError::invalid(path, "the channel table lies past any file"))?;
        let mut c = Cursor::little_endian(b, at, path, "channel table");
        let mut kind = c.i32()?;
        // System 52 mislabeled its reference sensors as unused (MNE's fix).
        if sysid == 52 && i < 160 && kind == NULL {
            kind = MAGNETOMETER_REFERENCE;
        }
        let mut ch = Channel {
            kind,
            position: None,
            name: String::new(),
            exg_gain: None,
        };
        match kind {
            AXIAL_GRADIOMETER | MAGNETOMETER_REFERENCE => {
                let p = [c.f64()?, c.f64()?, c.f64()?];
                c.skip(16)?; // the orientation (theta, phi)
                ch.position = Some(p);
                if kind == AXIAL_GRADIOMETER {
                    c.skip(16)?;
                    ch.name = c.nul_text(6)?;
                }
            }
            TRIGGER | EEG | ECG | ETC => {
                let _number = c.i32()?;
                c.skip(4)?;
                ch.name = c.nul_text(if kind == EEG { 8 } else { 32 })?;
                if kind == EEG || kind == ECG {
                    c.skip(if kind == EEG { 6 } else { 8 })?;
                    ch.exg_gain = Some(c.f64()?);
                }
            }
            NULL => {}
            k if OTHER_SENSORS.contains(&k) => {
                return Err(ReadError::invalid(
                    path,
                    format!(
                        "channel {} is a KIT sensor of type {k:#x}, which MNE-Python cannot \
                         read either",
                        i + 1
                    ),
                ));
            }
            k => {
                return Err(ReadError::invalid(
                    path,
                    format!("channel {} has type {k}, which KIT files do not use", i + 1),
                ));
            }
        }
        channels.push(ch);
    }

    // Calibration: (offset V, gain T/V) per channel.
    let mut c = Cursor::little_endian(b, dirs[DIR_CALIBRATION], path, "calibration table");
    let mut channel_gain = Vec::with_capacity(nchan);
    let mut offsets = 0;
    for _ in 0..nchan {
        offsets += usize::from(c.f64()? != 0.0);
        channel_gain.push(c.f64()?);
    }
    if offsets > 0 {
        warnings.push(format!(
            "{offsets} channels have a calibration offset, which MNE-Python refuses and ede \
             leaves out"
        ));
    }

    // Amplifier: gain and filter codes packed in one word.
    let amp = Cursor::little_endian(b, dirs[DIR_AMP_FILTER], path, "amplifier settings").u32()?;
    let bits = |mask: u32, shift: u32| ((amp & mask) >> shift) as usize;
    let (amp_gain, hpf, lpf, bef) = if fll_type >= 100 {
        let g =
            GAINS[bits(0x7000, 12)] * GAINS[bits(0x7000_0000, 28)] * GAINS[bits(0x0700_0000, 24)];
        (g, bits(0x700, 8), bits(0x7_0000, 16), bits(0x3, 0))
    } else {
        // MNE reads the high-pass code of these as (amp & 7) >> 4, that is always 0.
        let g = GAINS[bits(0x1800, 11)] * GAINS[bits(0x7, 0)];
        (g, 0, bits(0x700, 8), bits(0xC000, 14))
    };
    let highpass = Some(HPFS[fll[0] - 1][hpf]).filter(|v| v.is_finite());
    let lowpass = Some(LPFS[fll[1] - 1][lpf]);
    let _notch = BEFS[fll[2] - 1].get(bef);

    // Acquisition.
    let mut c = Cursor::little_endian(b, dirs[DIR_ACQ], path, "acquisition settings");
    let acq = c.i32()?;
    let sfreq = c.f64()?;
    let samples = match acq {
        CONTINUOUS => {
            c.skip(4)?;
            c.i32()?
        }
        EVOKED | EPOCHS => {
            let what = if acq == EVOKED {
                "an average"
            } else {
                "epochs"
            };
            return Err(ReadError::invalid(
                path,
                format!(
                    "the file holds {what}, not a continuous recording: ede reads KIT's \
                     continuous runs"
                ),
            ));
        }
        a => {
            return Err(ReadError::invalid(
                path,
                format!("acquisition mode {a} is neither continuous nor epoched: not a KIT run"),
            ));
        }
    };
    if !(sfreq.is_finite() && sfreq > 0.0) {
        return Err(ReadError::invalid(
            path,
            format!("the sampling rate {sfreq} Hz is not a positive number"),
        ));
    }
    let samples = usize::try_from(samples)
        .map_err(|_| ReadError::invalid(path, format!("the file says it has {samples} samples")))?;

    // Stored numbers to volts and tesla, as MNE's `conv_factor`.
    let ad_to_volt = adc_range / 2f64.powi(stored);
    let exg_scale = 2f64.powi(stored - 14);
    let conv = (channels.iter().zip(&channel_gain))
        .map(|(ch, &gain)| match ch.exg_gain {
            Some(g) if g / exg_scale != 0.0 => g / exg_scale,
            Some(_) => ad_to_volt,
            None if is_sensor(ch.kind) => ad_to_volt / amp_gain * gain,
            None => ad_to_volt,
        })
        .collect();
    Ok(Header {
        description,
        create_time,
        sample,
        channels,
        conv,
        sfreq,
        samples,
        data_offset: dirs[DIR_RAW_DATA],
        highpass,
        lowpass,
        warnings,
    })
}

/// The samples: the file's channels through the matrix, and the synthesized trigger after
/// them, decoded from its lines.
struct KitSource {
    matrix: MatrixSource,
    /// A second view of the file for the trigger lines, compared in volts before rounding.
    map: Mmap,
    offset: usize,
    sample: SampleType,
    channels: usize,
    /// The trigger lines (channel, volts per stored number), the first adding 1.
    lines: Vec<(usize, f64)>,
}

impl SampleSource for KitSource {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        if signal < self.channels {
            return self.matrix.read(signal, start, out);
        }
        let b = self.sample.bytes();
        for (k, o) in out.iter_mut().enumerate() {
            let row = self.offset + (start + k) * self.channels * b;
            let code: u32 = (self.lines.iter().enumerate())
                .filter(|&(_, &(c, conv))| {
                    let at = row + c * b;
                    self.sample.decode(&self.map[at..at + b], false) * conv < STIM_THRESHOLD
                })
                .map(|(bit, _)| 1 << bit)
                .sum();
            *o = code as f32;
        }
        Ok(())
    }

    fn release_pages(&self) {
        self.matrix.release_pages();
        super::release_mapped_pages(&self.map);
    }
}

fn is_sensor(kind: i32) -> bool {
    kind == AXIAL_GRADIOMETER || kind == MAGNETOMETER_REFERENCE
}

/// MNE's type, ede's unit and that unit per MNE's (T or V) of a KIT channel.
fn channel_type(kind: i32) -> (ChannelType, &'static str, f64) {
    match kind {
        AXIAL_GRADIOMETER => (ChannelType::Mag, "T", 1.0),
        MAGNETOMETER_REFERENCE => (ChannelType::RefMeg, "T", 1.0),
        EEG => (ChannelType::Eeg, "uV", 1e6),
        ECG => (ChannelType::Ecg, "uV", 1e6),
        _ => (ChannelType::Misc, "V", 1.0),
    }
}

/// MNE's label prefix of a channel that is no sensor.
fn kind_label(kind: i32) -> &'static str {
    match kind {
        TRIGGER => "TRIGGER",
        EEG => "EEG",
        ECG => "ECG",
        _ => "MISC",
    }
}

/// Opens a KIT run (`.sqd`, `.con`).
pub fn open(path: &Path) -> Result<Recording, ReadError> {
    let map = MatrixSource::map(path)?;
    let h = read_header(path, &map)?;
    let mut warnings = h.warnings;
    let nchan = h.channels.len();
    let row = nchan * h.sample.bytes();
    let room = map.len().saturating_sub(h.data_offset) / row;
    if h.data_offset > map.len() || room < h.samples.min(1) {
        return Err(ReadError::invalid(
            path,
            format!(
                "the file is truncated: its samples should start at byte {}, it has {} bytes",
                h.data_offset,
                map.len()
            ),
        ));
    }
    let samples = if room < h.samples {
        warnings.push(format!(
            "the file is truncated: {} of its {} samples are there",
            room, h.samples
        ));
        room
    } else {
        h.samples
    };
    let fs = h.sfreq;
    let prefilter = match (h.highpass, h.lowpass) {
        (Some(hp), Some(lp)) => format!("HP:{hp}Hz LP:{lp}Hz"),
        (None, Some(lp)) => format!("LP:{lp}Hz"),
        _ => String::new(),
    };

    let mut signals = Vec::with_capacity(nchan + 1);
    let mut gains = Vec::with_capacity(nchan);
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for (i, ch) in h.channels.iter().enumerate() {
        let (kind, unit, scale) = channel_type(ch.kind);
        let label = if is_sensor(ch.kind) {
            match ch.name.as_str() {
                "" => format!("MEG {:03}", i + 1),
                n => n.to_string(),
            }
        } else {
            let prefix = kind_label(ch.kind);
            let n = match counts.iter_mut().find(|(p, _)| *p == prefix) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    counts.push((prefix, 1));
                    1
                }
            };
            match ch.name.as_str() {
                "" | "EEG" => format!("{prefix} {n:03}"),
                name => name.to_string(),
            }
        };
        // KIT's frame (x front, y left, z up) to MNE's device frame (x right, y front).
        let position = (ch.position)
            .map(|[x, y, z]| [-y, x, z])
            .filter(|p| p.iter().all(|v| v.is_finite()) && p.iter().any(|&v| v != 0.0));
        let mne_unit = if unit == "T" { "T" } else { "V" };
        let (lo, hi) = super::nominal_range(mne_unit);
        gains.push(h.conv[i] * scale);
        signals.push(SignalInfo {
            kind,
            position,
            prefilter: prefilter.clone(),
            ..SignalInfo::continuous(
                label,
                unit.to_string(),
                fs,
                samples,
                (lo * scale, hi * scale),
            )
        });
    }
    // MNE's default trigger lines: the first eight channels it types "misc".
    let lines: Vec<(usize, f64)> = (signals.iter().enumerate())
        .filter(|(_, s)| s.kind == ChannelType::Misc)
        .take(STIM_LINES)
        .map(|(i, _)| (i, h.conv[i]))
        .collect();
    let top = ((1u32 << lines.len()) - 1) as f64;
    signals.push(SignalInfo {
        kind: ChannelType::Stim,
        ..SignalInfo::continuous(
            STIM_NAME.to_string(),
            String::new(),
            fs,
            samples,
            (0.0, top),
        )
    });

    let matrix = MatrixSource::new(
        path,
        map,
        h.data_offset,
        h.sample,
        false,
        Orientation::Multiplexed,
        samples,
        gains,
    )?;
    let source = KitSource {
        matrix,
        map: MatrixSource::map(path)?,
        offset: h.data_offset,
        sample: h.sample,
        channels: nchan,
        lines,
    };
    let mut annotations: Vec<Annotation> = Vec::new();
    let time_of = |i: usize, k: usize| k as f64 / signals[i].fs;
    stim_events(
        &source,
        &signals,
        &time_of,
        samples.saturating_mul(row),
        &mut annotations,
        &mut warnings,
    )?;
    let start = chrono::DateTime::from_timestamp(h.create_time as i64, 0).map(|d| d.naive_utc());
    let mut rec = Recording::continuous(
        Some(path.to_path_buf()),
        Format::Kit,
        start.unwrap_or_else(unknown_start),
        signals,
        annotations,
        warnings,
        samples as f64 / fs,
        Arc::new(source),
    );
    rec.recording_info = h.description;
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A KIT file: an axial gradiometer, a reference at the origin, an EEG channel, two
    /// unused channels and a trigger, 16-bit samples `data[sample][channel]`, in `mode`.
    fn kit_file(mode: i32, data: &[[i16; 6]]) -> Vec<u8> {
        let mut b = vec![0u8; 512];
        let (system, chans, calib, amp, acq, raw) = (512usize, 1600, 2200, 2400, 2500, 2600);
        let dir = |b: &mut Vec<u8>, i: usize, offset: usize, size: i32, count: i32| {
            let at = i * 16;
            b[at..at + 4].copy_from_slice(&(offset as u32).to_le_bytes());
            b[at + 4..at + 8].copy_from_slice(&size.to_le_bytes());
            b[at + 12..at + 16].copy_from_slice(&count.to_le_bytes());
        };
        dir(&mut b, 0, 0, 16, 32);
        dir(&mut b, DIR_SYSTEM, system, 1248, 1);
        dir(&mut b, DIR_CHANNELS, chans, 76, 6);
        dir(&mut b, DIR_CALIBRATION, calib, 16, 6);
        dir(&mut b, DIR_AMP_FILTER, amp, 4, 1);
        dir(&mut b, DIR_ACQ, acq, 24, 1);
        dir(&mut b, DIR_RAW_DATA, raw, 2, (data.len() * 6) as i32);
        b.resize(raw, 0);
        let put = |b: &mut Vec<u8>, at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
        // System: V2R004, system 34, 6 channels, created 2012-05-31 18:07:13 UTC, FLL 0,
        // a 10 V converter storing 12 of 16 bits.
        put(&mut b, system, &2i32.to_le_bytes());
        put(&mut b, system + 4, &4i32.to_le_bytes());
        put(&mut b, system + 8, &34i32.to_le_bytes());
        put(&mut b, system + 12, b"Test system");
        put(&mut b, system + 268, &6i32.to_le_bytes());
        put(&mut b, system + 528, &1_338_487_633i32.to_le_bytes());
        let adc = system + 528 + 8 + 12 + 4 + 12 + 4 + 12 + 4 + 12 + 4 + 116;
        put(&mut b, adc, &10f64.to_le_bytes());
        put(&mut b, adc + 12, &16i32.to_le_bytes());
        put(&mut b, adc + 16, &12i32.to_le_bytes());
        // Channels.
        let kinds = [
            AXIAL_GRADIOMETER,
            MAGNETOMETER_REFERENCE,
            EEG,
            NULL,
            NULL,
            TRIGGER,
        ];
        for (i, k) in kinds.iter().enumerate() {
            let at = chans + 76 * i;
            put(&mut b, at, &k.to_le_bytes());
            if *k == AXIAL_GRADIOMETER {
                for (j, v) in [0.1f64, 0.02, 0.03].iter().enumerate() {
                    put(&mut b, at + 4 + 8 * j, &v.to_le_bytes());
                }
            }
        }
        put(&mut b, chans + 76 * 2 + 12, b"Cz");
        put(&mut b, chans + 76 * 2 + 12 + 8 + 6, &2f64.to_le_bytes());
        put(&mut b, chans + 76 * 5 + 12, b"TRIG");
        put(&mut b, calib + 8, &1e-9f64.to_le_bytes());
        // Hanger amplifier: input gain 5, output gain 10.
        put(&mut b, amp, &((2u32 << 11) | 3).to_le_bytes());
        put(&mut b, acq, &mode.to_le_bytes());
        put(&mut b, acq + 4, &1000f64.to_le_bytes());
        put(&mut b, acq + 16, &(data.len() as i32).to_le_bytes());
        b.extend(data.iter().flatten().flat_map(|v| v.to_le_bytes()));
        b
    }

    fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// Trigger lines (channels 3, 4, 5) are on below 1 V, 410 counts: codes 0, 1, 5, 0, then
    /// 0 for 36 samples more (a trigger's steps are rarer than one sample in 20).
    fn data() -> Vec<[i16; 6]> {
        let mut d = vec![
            [100, -4, 3, 500, 500, 500],
            [200, 0, 0, 0, 500, 500],
            [-300, 0, 0, 0, 500, 0],
        ];
        d.resize(40, [0, 0, 0, 500, 500, 500]);
        d
    }

    #[test]
    fn a_small_run_reads_as_mne_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(&dir, "run.SQD", &kit_file(CONTINUOUS, &data()));
        assert!(is_companion(&path));
        let rec = open(&path).unwrap();
        let labels: Vec<&str> = rec.signals.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "MEG 001", "MEG 002", "Cz", "MISC 001", "MISC 002", "TRIG", "STI 014"
            ]
        );
        let types: Vec<&str> = rec.signals.iter().map(|s| s.kind.mne_name()).collect();
        assert_eq!(
            types,
            ["mag", "ref_meg", "eeg", "misc", "misc", "misc", "stim"]
        );
        assert_eq!(rec.signals[0].position, Some([-0.02, 0.1, 0.03]));
        assert_eq!(rec.signals[1].position, None);
        assert_eq!(rec.start.to_string(), "2012-05-31 18:07:13");
        // 10 V / 2^12 / (5 x 10) x 1e-9 T/V per count.
        let meg = rec.read_all(0).unwrap();
        let per_count = 10.0 / 4096.0 / 50.0 * 1e-9;
        for (v, d) in meg.iter().zip(&data()) {
            let want = d[0] as f64 * per_count;
            assert!(
                (*v as f64 - want).abs() <= 1e-6 * want.abs().max(per_count),
                "{v} {want}"
            );
        }
        // EEG: its gain 2 / 2^(12 - 14) V per count.
        assert_eq!(rec.read_all(2).unwrap()[0], 3.0 * 8.0 * 1e6);
        assert_eq!(rec.read_all(6).unwrap()[..4], [0.0, 1.0, 5.0, 0.0]);
        let events: Vec<(f64, &str)> = (rec.annotations.iter())
            .map(|a| (a.onset, a.text.as_str()))
            .collect();
        assert_eq!(events, [(0.001, "1@@STI 014"), (0.002, "5@@STI 014")]);
    }

    #[test]
    fn epochs_truncation_and_garbage_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let epochs = write(&dir, "ep.sqd", &kit_file(EPOCHS, &data()));
        let err = open(&epochs).err().unwrap().to_string();
        assert!(err.contains("epochs"), "{err}");
        let whole = kit_file(CONTINUOUS, &data());
        let cut = write(&dir, "cut.sqd", &whole[..1000]);
        assert!(!is_companion(&cut));
        let err = open(&cut).err().unwrap().to_string();
        assert!(err.contains("truncated"), "{err}");
        let garbage = write(&dir, "junk.con", &[0xA5u8; 4096]);
        assert!(!is_companion(&garbage));
        assert!(open(&garbage).is_err());
        // Samples cut short: the run keeps the whole time points there are.
        let short = write(&dir, "short.sqd", &whole[..whole.len() - 13]);
        let rec = open(&short).unwrap();
        assert_eq!(rec.signals[0].samples, 38);
        assert!(rec.warnings.iter().any(|w| w.contains("truncated")));
    }
}
