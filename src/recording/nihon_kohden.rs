//! Nihon Kohden clinical EEG in the system's native files (EEG-1100, EEG-1200, EEG-2100,
//! QI-403A, DAE-2100D). A recording is a set of files sharing one name: the `.EEG` holds the
//! samples, the `.PNT` the patient and the start time, the `.LOG` the events and the `.21E`
//! the electrode names; ede opens the set from any of these four. The `.11D`, `.CMT` and
//! `.CN2` beside them (montages, comments, the recording's own settings) are not read: MNE-Python
//! does not read them either.
//!
//! Every file starts with the device and version that wrote it, 16 characters. Accepted, as by
//! MNE-Python's `read_raw_nihon`: `EEG-1100A V01.00`, `EEG-1100B V01.00`, `EEG-1100C V01.00`,
//! `QI-403A   V01.00`, `QI-403A   V02.00`, `EEG-2100  V01.00`, `EEG-2100  V02.00`,
//! `DAE-2100D V01.30`, `DAE-2100D V02.00` and `EEG-1200A V01.00`.
//!
//! The `.EEG` points (little-endian) at one control block, which points at its data blocks;
//! each data block gives the sampling rate, its length in tenths of a second and its channels
//! as indices into the system's electrode table, then holds its samples multiplexed as
//! unsigned 16-bit numbers, one more column than channels (a marker column MNE-Python drops).
//! The electrode table is the device's default (FP1, FP2 ... DC01-DC32 ... Mark1, Mark2 ...)
//! with the `.21E`'s `[ELECTRODE]` and `[REFERENCE]` entries over it. Everything is read as
//! MNE-Python reads it: a channel whose name first appears in the table at a DC input
//! (entries 42-73) or a mark input (76, 77) spans -12002.9 to 12002.56 mV, any other
//! -3200 to 3199.902 uV, over the 65536 steps; types come from the name ("Mark": stim; "DC",
//! "NA", "Z", "$": misc; "X": MNE's "bio", misc here; else EEG); the start time is the
//! `.PNT`'s; the events are the `.LOG`'s (a description of 20 characters at a time of day
//! counted from the recording's start, refined to the microsecond by a second block of the
//! log where it has one); data blocks follow each other without gaps, marked by MNE's
//! "BAD boundary" and "EDGE boundary" events. The file has no electrode positions.
//!
//! Where ede differs: channels are in uV or mV (MNE: volts), stim channels keeping MNE's value
//! without a unit; the `.PNT`, `.LOG` and `.21E` are found whatever the case
//! of their extension (MNE-Python looks for `.PNT`/`.pnt`, `.LOG` and `.21E` only); a
//! damaged `.PNT` or `.LOG`, or a `.21E` line without `=`, is a warning rather than a refusal;
//! an event text that is not UTF-8 is kept, its odd bytes replaced, rather than dropped; and
//! a read across data blocks is read as one (MNE-Python's recursion there loses its place).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::NaiveDateTime;

use super::binary::{MatrixSource, Orientation, SampleType};
use super::{
    Annotation, ChannelType, Format, ReadError, Recording, SampleSource, SignalInfo, stim_events,
    unknown_start,
};

/// The device strings MNE-Python accepts (`_valid_headers`), all 16 bytes long.
const VERSIONS: [&[u8; 16]; 10] = [
    b"EEG-1100A V01.00",
    b"EEG-1100B V01.00",
    b"EEG-1100C V01.00",
    b"QI-403A   V01.00",
    b"QI-403A   V02.00",
    b"EEG-2100  V01.00",
    b"EEG-2100  V02.00",
    b"DAE-2100D V01.30",
    b"DAE-2100D V02.00",
    b"EEG-1200A V01.00",
];

/// The files beside the `.EEG` a user may pick to open it.
const COMPANIONS: [&str; 3] = ["pnt", "log", "21e"];

/// Bytes of one event record in the `.LOG`.
const LOG_RECORD: usize = 45;

fn is_version(b: &[u8]) -> bool {
    b.get(..16)
        .is_some_and(|v| VERSIONS.iter().any(|k| &k[..] == v))
}

/// Whether a file's first bytes (up to 64) are this format: a Nihon Kohden device string.
pub fn sniff(head: &[u8]) -> bool {
    is_version(head)
}

/// Whether `path` is a `.PNT`, `.LOG` or `.21E` (any case) with its Nihon Kohden `.EEG` beside.
pub fn is_companion(path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    COMPANIONS.iter().any(|c| ext.eq_ignore_ascii_case(c))
        && path.is_file()
        && sibling(path, "eeg").is_some_and(|eeg| starts_with_version(&eeg))
}

fn starts_with_version(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && is_version(&head)
}

/// The file beside `path` with the same name and extension `ext`, in upper case, lower case
/// or any other (Nihon Kohden writes upper case; copies off Windows may not keep it).
fn sibling(path: &Path, ext: &str) -> Option<PathBuf> {
    let stem = path.file_stem()?;
    let dir = path.parent().unwrap_or(Path::new("."));
    for e in [ext.to_ascii_uppercase(), ext.to_ascii_lowercase()] {
        let mut name = stem.to_os_string();
        name.push(".");
        name.push(&e);
        let p = dir.join(name);
        if p.is_file() {
            return Some(p);
        }
    }
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::fs::read_dir(dir).ok()?.flatten().find_map(|entry| {
        let p = entry.path();
        let same = p.file_stem() == Some(stem)
            && (p.extension().and_then(|e| e.to_str()))
                .is_some_and(|e| e.eq_ignore_ascii_case(ext));
        (same && p.is_file()).then_some(p)
    })
}

/// Little-endian fields at absolute positions of a file's bytes, saying where they ran out.
struct Bytes<'a> {
    b: &'a [u8],
    path: &'a Path,
}

impl<'a> Bytes<'a> {
    fn slice(&self, at: usize, n: usize) -> Result<&'a [u8], ReadError> {
        (at.checked_add(n))
            .and_then(|end| self.b.get(at..end))
            .ok_or_else(|| {
                ReadError::invalid(
                    self.path,
                    format!(
                        "the header is truncated: it points at byte {at}, the file has {}",
                        self.b.len()
                    ),
                )
            })
    }

    fn u8(&self, at: usize) -> Result<u8, ReadError> {
        Ok(self.slice(at, 1)?[0])
    }

    fn u16(&self, at: usize) -> Result<u16, ReadError> {
        let s = self.slice(at, 2)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }

    fn u32(&self, at: usize) -> Result<usize, ReadError> {
        let s = self.slice(at, 4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize)
    }
}

/// One data block of the `.EEG`.
struct DataBlock {
    address: usize,
    /// The channels, as indices into the electrode table.
    channels: Vec<u8>,
    fs: u16,
    samples: usize,
}

impl DataBlock {
    /// Where its samples start: after the channel list of 10 bytes a channel.
    fn data_at(&self) -> usize {
        (self.address)
            .saturating_add(0x27)
            .saturating_add(self.channels.len() * 10)
    }
}

/// The device string and the data blocks of a `.EEG`.
fn read_header(path: &Path, b: &[u8]) -> Result<(String, Vec<DataBlock>), ReadError> {
    let f = Bytes { b, path };
    let version = b.get(..16).unwrap_or(b);
    if !is_version(version) {
        return Err(ReadError::invalid(
            path,
            format!(
                "not a Nihon Kohden EEG file: it starts with {:?}, not one of the device names \
                 ede reads (EEG-1100, EEG-1200, EEG-2100, QI-403A, DAE-2100D)",
                String::from_utf8_lossy(version)
            ),
        ));
    }
    if !is_version(f.slice(0x81, 16)?) {
        return Err(ReadError::invalid(
            path,
            "not a Nihon Kohden EEG file: its control block does not name the device",
        ));
    }
    if f.u8(0x17FE)? != 1 {
        return Err(ReadError::invalid(
            path,
            "not a Nihon Kohden EEG file: its waveform block is not marked as one",
        ));
    }
    match f.u8(0x91)? {
        1 => {}
        0 => return Err(ReadError::invalid(path, "the file holds no control block")),
        n => {
            return Err(ReadError::invalid(
                path,
                format!(
                    "the file holds {n} control blocks: only recordings with one are read (as \
                     by MNE-Python)"
                ),
            ));
        }
    }
    let control = f.u32(0x92)?;
    let n_blocks = f.u8(control.saturating_add(17))? as usize;
    if n_blocks == 0 {
        return Err(ReadError::invalid(path, "the file holds no data block"));
    }
    let mut blocks = Vec::with_capacity(n_blocks);
    for i in 0..n_blocks {
        let address = f.u32(control.saturating_add(18 + i * 20))?;
        let n_channels = f.u8(address.saturating_add(0x26))? as usize;
        let channels = (0..n_channels)
            .map(|c| f.u8(address.saturating_add(0x27 + c * 10)))
            .collect::<Result<Vec<u8>, _>>()?;
        let duration = f.u32(address.saturating_add(0x1C))?;
        let fs = f.u16(address.saturating_add(0x1A))? & 0x3FFF;
        // The duration is in tenths of a second.
        let samples = (duration as u64 * fs as u64 / 10) as usize;
        blocks.push(DataBlock {
            address,
            channels,
            fs,
            samples,
        });
    }
    Ok((String::from_utf8_lossy(version).into_owned(), blocks))
}

/// The device's electrode table before the `.21E` renames any (MNE's `_default_chan_labels`),
/// 256 entries: every index a data block can hold.
fn default_labels() -> Vec<String> {
    let mut l: Vec<String> = [
        "FP1", "FP2", "F3", "F4", "C3", "C4", "P3", "P4", "O1", "O2", "F7", "F8", "T3", "T4", "T5",
        "T6", "FZ", "CZ", "PZ", "E", "PG1", "PG2", "A1", "A2", "T1", "T2",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    l.extend((1..12).map(|i| format!("X{i}")));
    l.extend((1..6).map(|i| format!("NA{i}")));
    l.extend((1..33).map(|i| format!("DC{i:02}")));
    l.extend(["BN1", "BN2", "Mark1", "Mark2"].map(String::from));
    l.extend((6..28).map(|i| format!("NA{i}")));
    l.extend(["X12/BP1", "X13/BP2", "X14/BP3", "X15/BP4"].map(String::from));
    l.extend((16..166).map(|i| format!("X{i}")));
    l.extend(["NA28", "Z"].map(String::from));
    l
}

/// The electrode table with the `[ELECTRODE]` and `[REFERENCE]` entries (`0076=$A2`) of the
/// `.21E` text over the defaults, as MNE-Python reads them line by line.
fn apply_21e(labels: &mut [String], text: &str, warnings: &mut Vec<String>) {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut in_section = false;
    let mut odd = 0usize;
    for line in text.split('\n') {
        if line.starts_with('[') {
            in_section = line.contains("ELECTRODE") || line.contains("REFERENCE");
        } else if in_section {
            let Some((idx, name)) = line.split_once('=').filter(|(_, n)| !n.contains('=')) else {
                odd += usize::from(!line.trim().is_empty());
                continue;
            };
            // A data block holds its channels' indices in one byte: indices past 255 name
            // nothing a recording can hold.
            match idx.trim().parse::<usize>() {
                Ok(i) if i < labels.len() => labels[i] = name.trim().to_string(),
                Ok(_) => {}
                Err(_) => odd += 1,
            }
        }
    }
    if odd > 0 {
        warnings.push(format!(
            "the .21E electrode table has {odd} lines that are not \"number=name\": left out"
        ));
    }
}

/// The electrode table for `eeg`: the defaults, renamed by the `.21E` beside it.
fn electrode_table(eeg: &Path, warnings: &mut Vec<String>) -> Vec<String> {
    let mut labels = default_labels();
    match sibling(eeg, "21e").map(|p| std::fs::read(&p).map(|b| (p, b))) {
        Some(Ok((_, bytes))) => {
            // UTF-8 where it decodes, else Latin-1, as MNE-Python tries them.
            let text = match String::from_utf8(bytes) {
                Ok(s) => s,
                Err(e) => e.as_bytes().iter().map(|&c| c as char).collect(),
            };
            apply_21e(&mut labels, &text, warnings);
        }
        Some(Err(e)) => warnings.push(format!(
            "the .21E electrode table cannot be read ({e}): channels have the device's default \
             names"
        )),
        None => warnings.push(
            "no .21E electrode table beside the .EEG: channels have the device's default names"
                .into(),
        ),
    }
    labels
}

/// MNE-Python's type for a channel name (`_map_ch_to_type`: substrings, case as written).
fn channel_type(name: &str) -> ChannelType {
    if name.contains("Mark") {
        ChannelType::Stim
    } else if ["DC", "NA", "Z", "$"].iter().any(|k| name.contains(k)) {
        ChannelType::Misc
    } else if name.contains('X') {
        // MNE-Python's "bio".
        ChannelType::Misc
    } else {
        ChannelType::Eeg
    }
}

/// Whether a channel is a DC or mark input, in mV over +-12 V, rather than an EEG input in uV
/// over +-3.2 mV: by where its name first appears in the table (MNE's `_map_ch_to_specs`; a
/// name the table lacks counts as a DC input).
fn is_dc_input(name: &str, table_upper: &[String]) -> bool {
    let up = name.to_uppercase();
    match table_upper.iter().position(|l| *l == up) {
        Some(i) => (42..=73).contains(&i) || i == 76 || i == 77,
        None => true,
    }
}

/// The start time the `.PNT` beside `eeg` gives (its version, then "YYYYmmddHHMMSS" at 0x40).
fn start_time(eeg: &Path, warnings: &mut Vec<String>) -> Option<NaiveDateTime> {
    let Some(pnt) = sibling(eeg, "pnt") else {
        warnings.push("no .PNT beside the .EEG: the start time is unknown".into());
        return None;
    };
    let bytes = match std::fs::read(&pnt) {
        Ok(b) => b,
        Err(e) => {
            warnings.push(format!(
                "the .PNT cannot be read ({e}): the start time is unknown"
            ));
            return None;
        }
    };
    if !is_version(&bytes) {
        warnings.push(
            "the .PNT does not start with a Nihon Kohden device name: the start time is unknown"
                .into(),
        );
        return None;
    }
    let field = bytes.get(0x40..0x4E).unwrap_or(&[]);
    let text = String::from_utf8_lossy(field);
    let start = NaiveDateTime::parse_from_str(text.trim_end_matches('\0'), "%Y%m%d%H%M%S");
    if start.is_err() {
        warnings.push(format!(
            "the .PNT's start time {text:?} is not a date: the start time is unknown"
        ));
    }
    start.ok()
}

/// `bytes[at..at + n]` where the file has them.
fn get(bytes: &[u8], at: usize, n: usize) -> Option<&[u8]> {
    bytes.get(at..at.checked_add(n)?)
}

/// `s[a..b]` as Python slices: cut to what there is.
fn pyslice(s: &[u8], a: usize, b: usize) -> &[u8] {
    &s[a.min(s.len())..b.min(s.len())]
}

/// Without its trailing NULs (as numpy reads a fixed-length byte string).
fn strip_nul(s: &[u8]) -> &[u8] {
    let end = s.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    &s[..end]
}

/// A decimal number as Python's `int()` reads it from bytes: spaces around, a sign, digits.
fn py_int(s: &[u8]) -> Option<i64> {
    let t = std::str::from_utf8(s).ok()?.trim_ascii();
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) || digits.len() > 12 {
        return None;
    }
    t.parse().ok()
}

/// The event records of log block `block` of a `.LOG` (`_read_event_log_block`); a version
/// other than the file's is noted in `mismatch`.
fn log_block<'a>(b: &'a [u8], block: usize, version: &[u8], mismatch: &mut bool) -> Vec<&'a [u8]> {
    let address =
        get(b, 0x92 + block * 20, 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
    let Some(address) = address.filter(|&a| a != 0).map(|a| a as usize) else {
        return Vec::new();
    };
    if get(b, address.saturating_add(1), 16) != Some(version) {
        *mismatch = true;
    }
    let Some(&n) = b.get(address.saturating_add(0x12)) else {
        return Vec::new();
    };
    let first = address.saturating_add(0x14);
    (0..n as usize)
        .map_while(|i| get(b, first.saturating_add(i * LOG_RECORD), LOG_RECORD))
        .collect()
}

/// The events of a `.LOG` (`_read_nihon_annotations`): onset in microseconds from the start
/// and text. A block's twin 22 blocks on, where it has as many records, adds 20 more
/// characters of text and the microseconds.
fn read_log(bytes: &[u8], warnings: &mut Vec<String>) -> Vec<(i64, String)> {
    let version = bytes.get(..16).unwrap_or(bytes);
    if !is_version(version) {
        warnings.push(
            "the .LOG does not start with a Nihon Kohden device name: its events are left out"
                .into(),
        );
        return Vec::new();
    }
    let n_blocks = bytes.get(0x91).copied().unwrap_or(0) as usize;
    let (mut mismatch, mut unreadable, mut not_utf8) = (false, 0usize, 0usize);
    let mut events = Vec::new();
    for block in 0..n_blocks {
        let logs = log_block(bytes, block, version, &mut mismatch);
        let subs = (n_blocks <= 21)
            .then(|| log_block(bytes, block + 22, version, &mut mismatch))
            .filter(|s| s.len() == logs.len());
        for (i, record) in logs.iter().enumerate() {
            let r = strip_nul(record);
            let mut text = pyslice(r, 0, 20).to_vec();
            let field = |a: usize| py_int(pyslice(r, a, a + 2));
            let (Some(h), Some(m), Some(s)) = (field(20), field(22), field(24)) else {
                unreadable += 1;
                continue;
            };
            let mut micros = ((h * 60 + m) * 60 + s) * 1_000_000;
            if let Some(sub) = subs.as_ref().and_then(|s| s.get(i)) {
                let r = strip_nul(sub);
                let Some(us) = py_int(pyslice(r, 24, 30)) else {
                    unreadable += 1;
                    continue;
                };
                text.extend_from_slice(pyslice(r, 0, 20));
                micros += us;
            }
            let text = strip_nul(&text);
            not_utf8 += usize::from(std::str::from_utf8(text).is_err());
            events.push((micros, String::from_utf8_lossy(text).into_owned()));
        }
    }
    if mismatch {
        warnings.push("a block of the .LOG names another device version than the file".into());
    }
    if unreadable > 0 {
        warnings.push(format!(
            "{unreadable} events of the .LOG have no readable time: left out"
        ));
    }
    if not_utf8 > 0 {
        warnings.push(format!(
            "{not_utf8} event texts of the .LOG are not UTF-8: shown with their odd characters \
             replaced (MNE-Python leaves them out)"
        ));
    }
    events
}

/// Consecutive data blocks read as one: block `k` holds samples `first..first + len`.
struct BlockSource {
    blocks: Vec<(usize, usize, MatrixSource)>,
}

impl SampleSource for BlockSource {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        let mut done = 0;
        while done < out.len() {
            let at = start + done;
            let k = self.blocks.partition_point(|b| b.0 <= at);
            let (first, len, m) = &self.blocks[k.saturating_sub(1)];
            let n = (first + len).saturating_sub(at).min(out.len() - done);
            if n == 0 {
                // Cannot happen for reads in bounds (the blocks tile the samples).
                break;
            }
            m.read(signal, at.saturating_sub(*first), &mut out[done..done + n])?;
            done += n;
        }
        Ok(())
    }

    fn release_pages(&self) {
        for b in &self.blocks {
            b.2.release_pages();
        }
    }
}

/// Opens a Nihon Kohden recording from its `.EEG`, or from the `.PNT`, `.LOG` or `.21E`
/// beside it.
pub fn open(path: &Path) -> Result<Recording, ReadError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let eeg = if ext.eq_ignore_ascii_case("eeg") {
        path.to_path_buf()
    } else {
        sibling(path, "eeg").ok_or_else(|| {
            ReadError::invalid(
                path,
                "this Nihon Kohden file goes with a recording's .EEG file of the same name, \
                 which is not beside it",
            )
        })?
    };
    let path = eeg.as_path();
    let map = MatrixSource::map(path)?;
    let (version, blocks) = read_header(path, &map)?;
    let mut warnings = Vec::new();
    let table = electrode_table(path, &mut warnings);
    let name_of = |i: u8| table[i as usize].clone();
    let first = &blocks[0];
    let names: Vec<String> = first.channels.iter().map(|&i| name_of(i)).collect();
    if names.is_empty() {
        return Err(ReadError::invalid(path, "the recording has no channels"));
    }
    if first.fs == 0 {
        return Err(ReadError::invalid(path, "the sampling rate is 0"));
    }
    for b in &blocks[1..] {
        let same = b.channels.len() == names.len()
            && b.channels
                .iter()
                .zip(&names)
                .all(|(&i, n)| table[i as usize] == *n);
        if !same || b.fs != first.fs {
            return Err(ReadError::invalid(
                path,
                "the data blocks differ in their channels or sampling rate: only recordings \
                 whose blocks agree are read (as by MNE-Python)",
            ));
        }
    }
    let fs = first.fs as f64;
    let samples = (blocks.iter())
        .try_fold(0usize, |n, b| n.checked_add(b.samples))
        .ok_or_else(|| ReadError::invalid(path, "the data blocks' lengths overflow a count"))?;
    if samples == 0 {
        return Err(ReadError::invalid(path, "the recording holds no samples"));
    }
    let table_upper: Vec<String> = table.iter().map(|l| l.to_uppercase()).collect();
    let mut signals = Vec::with_capacity(names.len());
    let (mut gains, mut zeros) = (Vec::new(), Vec::new());
    for name in &names {
        let kind = channel_type(name);
        let dc = is_dc_input(name, &table_upper);
        let (unit, min, max, volts) = if dc {
            ("mV", -12002.9, 12002.56, 1e-3)
        } else {
            ("uV", -3200.0, 3199.902, 1e-6)
        };
        // MNE-Python: (stored - 32768) x cal + offset, in the unit; stim channels keep its
        // value in volts, without a unit.
        let cal: f64 = (max - min) / 65535.0;
        let offset = min + 32768.0 * cal;
        let (unit, scale) = match kind {
            ChannelType::Stim => ("", volts),
            _ => (unit, 1.0),
        };
        gains.push(cal * scale);
        zeros.push(32768.0 - offset / cal);
        signals.push(SignalInfo {
            kind,
            ..SignalInfo::continuous(
                name.clone(),
                unit.to_string(),
                fs,
                samples,
                (min * scale, max * scale),
            )
        });
    }
    // The marker column after the channels is never shown.
    gains.push(0.0);
    zeros.push(0.0);
    let mut parts = Vec::with_capacity(blocks.len());
    let mut at = 0usize;
    for b in &blocks {
        if b.samples > 0 {
            let map = MatrixSource::map(path)?;
            let m = MatrixSource::new(
                path,
                map,
                b.data_at(),
                SampleType::U16,
                false,
                Orientation::Multiplexed,
                b.samples,
                gains.clone(),
            )?
            .with_zeros(zeros.clone());
            parts.push((at, b.samples, m));
        }
        at += b.samples;
    }
    drop(map);
    let source: Arc<dyn SampleSource> = if parts.len() == 1 {
        Arc::new(parts.remove(0).2)
    } else {
        Arc::new(BlockSource { blocks: parts })
    };

    let start = start_time(path, &mut warnings);
    let mut annotations: Vec<Annotation> = Vec::new();
    match sibling(path, "log").map(|p| std::fs::read(&p)) {
        Some(Ok(bytes)) => {
            for (micros, text) in read_log(&bytes, &mut warnings) {
                annotations.push(Annotation {
                    onset: micros as f64 / 1e6,
                    duration: 0.0,
                    text,
                });
            }
        }
        Some(Err(e)) => warnings.push(format!("the .LOG cannot be read ({e}): no events")),
        None => warnings.push("no .LOG beside the .EEG: no events".into()),
    }
    // Where data blocks meet, as MNE-Python marks a join half a sample before it.
    let mut at = 0usize;
    for b in &blocks[..blocks.len() - 1] {
        at += b.samples;
        for text in ["BAD boundary", "EDGE boundary"] {
            annotations.push(Annotation {
                onset: (at as f64 - 0.5) / fs,
                duration: 0.0,
                text: text.into(),
            });
        }
    }
    // MNE-Python keeps the events within the data (to the end of its last sample).
    let end = samples as f64 / fs;
    let before = annotations.len();
    annotations.retain(|a| a.onset <= end && a.onset + a.duration >= 0.0);
    if annotations.len() < before {
        warnings.push(format!(
            "{} events of the .LOG lie outside the recording: left out",
            before - annotations.len()
        ));
    }
    let data_bytes = samples.saturating_mul(gains.len() * 2);
    let time_of = |_: usize, k: usize| k as f64 / fs;
    stim_events(
        source.as_ref(),
        &signals,
        &time_of,
        data_bytes,
        &mut annotations,
        &mut warnings,
    )?;
    // In time order, as MNE-Python's annotations (by onset, then duration).
    annotations
        .sort_by(|a, b| (a.onset.total_cmp(&b.onset)).then(a.duration.total_cmp(&b.duration)));
    let mut rec = Recording::continuous(
        Some(eeg.clone()),
        Format::NihonKohden,
        start.unwrap_or_else(unknown_start),
        signals,
        annotations,
        warnings,
        end,
        source,
    );
    rec.recording_info = version;
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERSION: &[u8; 16] = b"EEG-1100C V01.00";
    const BLOCK: usize = 0x17FE;

    /// A `.EEG` of one data block: channels by table index, `tenths` of a second at `fs`,
    /// `rows` the stored numbers per sample (the marker column after the channels).
    fn eeg(channels: &[u8], fs: u16, tenths: u32, rows: &[Vec<u16>]) -> Vec<u8> {
        let data_at = BLOCK + 0x27 + channels.len() * 10;
        let mut b = vec![0u8; data_at];
        b[..16].copy_from_slice(VERSION);
        b[0x81..0x91].copy_from_slice(VERSION);
        b[0x91] = 1;
        b[0x92..0x96].copy_from_slice(&1024u32.to_le_bytes());
        b[1024 + 17] = 1;
        b[1024 + 18..1024 + 22].copy_from_slice(&(BLOCK as u32).to_le_bytes());
        b[BLOCK] = 1;
        b[BLOCK + 0x1A..BLOCK + 0x1C].copy_from_slice(&(fs | 0xC000).to_le_bytes());
        b[BLOCK + 0x1C..BLOCK + 0x20].copy_from_slice(&tenths.to_le_bytes());
        b[BLOCK + 0x26] = channels.len() as u8;
        for (i, &c) in channels.iter().enumerate() {
            b[BLOCK + 0x27 + i * 10] = c;
        }
        for row in rows {
            b.extend(row.iter().flat_map(|v| v.to_le_bytes()));
        }
        b
    }

    /// A `.LOG` of one block of events (text, hhmmss) and its twin with the microseconds.
    fn log(events: &[(&str, &str, &str)]) -> Vec<u8> {
        let mut b = vec![0u8; 3000];
        b[..16].copy_from_slice(VERSION);
        b[0x91] = 1;
        for (block, at) in [(0usize, 1024usize), (22, 2048)] {
            b[0x92 + block * 20..0x96 + block * 20].copy_from_slice(&(at as u32).to_le_bytes());
            b[at + 1..at + 17].copy_from_slice(VERSION);
            b[at + 0x12] = events.len() as u8;
            for (i, (text, hms, micros)) in events.iter().enumerate() {
                let r = at + 0x14 + i * LOG_RECORD;
                if block == 0 {
                    b[r..r + text.len()].copy_from_slice(text.as_bytes());
                    b[r + 20..r + 20 + hms.len()].copy_from_slice(hms.as_bytes());
                } else {
                    b[r + 24..r + 30].copy_from_slice(format!("{micros:0>6}").as_bytes());
                }
            }
        }
        b
    }

    #[test]
    fn a_recording_round_trips_through_its_four_files() {
        let dir = tempfile::tempdir().unwrap();
        // FP1 (EEG, uV), DC01 (a DC input, mV) and Mark1 (stim), 3 s at 100 Hz.
        let rows: Vec<Vec<u16>> = (0..300u16)
            .map(|k| vec![32768 + k, 40000, if k >= 100 { 46468 } else { 32768 }, 7])
            .collect();
        let path = dir.path().join("REC.EEG");
        std::fs::write(&path, eeg(&[0, 42, 76], 100, 30, &rows)).unwrap();
        std::fs::write(
            dir.path().join("REC.21E"),
            "[ELECTRODE]\r\n0000=Fp1\r\n0001=Fp2\r\n[SD_DEF]\r\n0042=Nope\r\n",
        )
        .unwrap();
        let mut pnt = vec![0u8; 0x60];
        pnt[..16].copy_from_slice(VERSION);
        pnt[0x40..0x4E].copy_from_slice(b"20190403160016");
        std::fs::write(dir.path().join("REC.PNT"), pnt).unwrap();
        let log_path = dir.path().join("REC.log");
        let events = [("Spike", "000002", "500000"), ("Late", "000009", "000000")];
        std::fs::write(&log_path, log(&events)).unwrap();

        assert!(sniff(VERSION) && !sniff(b"Brain Vision Data Exchange"));
        assert!(is_companion(&log_path) && !is_companion(&path));
        let rec = open(&log_path).unwrap();
        assert_eq!(rec.path.as_deref(), Some(path.as_path()));
        let labels: Vec<&str> = rec.signals.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["Fp1", "DC01", "Mark1"]);
        let kinds: Vec<ChannelType> = rec.signals.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [ChannelType::Eeg, ChannelType::Misc, ChannelType::Stim]
        );
        let units: Vec<&str> = rec.signals.iter().map(|s| s.unit.as_str()).collect();
        assert_eq!(units, ["uV", "mV", ""]);
        assert_eq!((rec.signals[0].samples, rec.signals[0].fs), (300, 100.0));
        assert_eq!(rec.start.to_string(), "2019-04-03 16:00:16");
        // MNE-Python: (stored - 32768) x cal + offset.
        let value = |v: f64, min: f64, max: f64| {
            let cal = (max - min) / 65535.0;
            (v - 32768.0) * cal + min + 32768.0 * cal
        };
        let fp1 = rec.read_all(0).unwrap();
        for k in [0usize, 150, 299] {
            let want = value(32768.0 + k as f64, -3200.0, 3199.902);
            assert!((fp1[k] as f64 - want).abs() < 1e-4, "{k}: {}", fp1[k]);
        }
        let dc = rec.read_all(1).unwrap()[0] as f64;
        assert!(
            (dc - value(40000.0, -12002.9, 12002.56)).abs() < 1e-3,
            "{dc}"
        );
        // The event past the end is left out; the mark steps up at 1 s.
        let texts: Vec<(f64, &str)> = (rec.annotations.iter())
            .map(|a| (a.onset, a.text.as_str()))
            .collect();
        assert_eq!(texts.len(), 2, "{texts:?}");
        assert!((texts[1].0 - 2.5).abs() < 1e-12 && texts[1].1 == "Spike");
        assert!((texts[0].0 - 1.0).abs() < 1e-12 && texts[0].1 == "5@@Mark1");
        assert!(rec.warnings.iter().any(|w| w.contains("outside")));
    }

    #[test]
    fn default_names_type_as_mne_does() {
        let labels = default_labels();
        assert_eq!(labels.len(), 256);
        assert_eq!(
            (labels[42].as_str(), labels[76].as_str()),
            ("DC01", "Mark1")
        );
        assert_eq!(labels[255], "Z");
        // MNE's substrings: the default "CZ" holds a "Z".
        assert_eq!(channel_type("CZ"), ChannelType::Misc);
        assert_eq!(channel_type("Cz"), ChannelType::Eeg);
        assert_eq!(channel_type("X1"), ChannelType::Misc);
        assert_eq!(channel_type("$A2"), ChannelType::Misc);
        let upper: Vec<String> = labels.iter().map(|l| l.to_uppercase()).collect();
        assert!(is_dc_input("Mark2", &upper) && !is_dc_input("fp1", &upper));
        assert!(is_dc_input("not in the table", &upper));
    }

    #[test]
    fn truncated_or_garbage_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let rows = vec![vec![0u16; 3]; 100];
        let whole = eeg(&[0, 1], 100, 10, &rows);
        let path = dir.path().join("BAD.EEG");
        for cut in [0, 10, 100, 0x90, 1030, BLOCK + 0x20, whole.len() - 1] {
            std::fs::write(&path, &whole[..cut]).unwrap();
            assert!(open(&path).is_err(), "cut at {cut}");
        }
        std::fs::write(&path, &whole[..whole.len() - 1]).unwrap();
        let err = open(&path).unwrap_err().to_string();
        assert!(err.contains("truncated"), "{err}");
        // Pointers past the end, a zero rate, no channels.
        for (at, v) in [(0x92, 0xFFu8), (BLOCK + 0x1A, 0), (BLOCK + 0x26, 0)] {
            let mut b = whole.clone();
            b[at] = v;
            if at == BLOCK + 0x1A {
                b[at + 1] = 0;
            }
            std::fs::write(&path, &b).unwrap();
            assert!(open(&path).is_err(), "byte {at:#x} = {v}");
        }
        let mut garbage = whole.clone();
        garbage[..16].copy_from_slice(b"NOT A NK FILE!!!");
        std::fs::write(&path, &garbage).unwrap();
        assert!(open(&path).is_err());
        // A damaged .LOG or .PNT is a warning, not a refusal.
        std::fs::write(&path, &whole).unwrap();
        std::fs::write(
            dir.path().join("BAD.LOG"),
            &log(&[("x", "0a", "1")])[..1100],
        )
        .unwrap();
        std::fs::write(dir.path().join("BAD.PNT"), b"short").unwrap();
        let rec = open(&path).unwrap();
        assert!(rec.annotations.is_empty());
        assert!(rec.warnings.len() >= 3, "{:?}", rec.warnings);
        let lone = dir.path().join("LONE.PNT");
        std::fs::write(&lone, VERSION).unwrap();
        assert!(!is_companion(&lone) && open(&lone).is_err());
    }
}
