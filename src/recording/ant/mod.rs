//! ANT Neuro's continuous EEG (eego, asalab): a `.cnt` in RIFF (32-bit sizes) or RF64 (64-bit
//! sizes) with the form type "CNT ", written by ANT's libeep. Not Neuroscan's `.cnt` (that
//! one starts with "Version 3.0"; `neuroscan.rs`). The events usually lie beside it in a
//! binary `.evt` (opening the `.evt` opens its `.cnt`).
//!
//! Inside: `eeph`, the header as text (rate, sample count, one line per channel: label,
//! `iscale`, `rscale`, unit, `REF:` label); `LIST raw3` with `chan` (the order the channels
//! were compressed in), `ep  ` (the epoch length in samples and each epoch's offset in
//! `data`) and `data`; `info` (start date as an Excel day number plus a second fraction,
//! subject, device); sometimes `evt ` (sample + 8-byte code triggers). Each epoch holds every
//! channel in turn, each compressed with libeep's RAW3 scheme: a 4-bit method (copy, first
//! or second time difference, or the first difference less the previous channel's),
//! residuals packed in `nbits` bits (16-bit flavour) or up to 32 (32-bit flavour), with an
//! escape code followed by the value in `nexcbits` bits where a residual does not fit.
//!
//! MNE-Python's `read_raw_ant` reads it through `antio` (libeep in C); ede decodes it the
//! way libeep's `raw3.c`/`cnt.c` do, lazily: opening parses the headers and the epoch table;
//! a read decodes only the epochs it touches (all channels of one, since a channel may be
//! predicted from the previous one) and keeps the last. Values are libeep's: the stored
//! integer times `iscale x rscale`, in single precision; MNE then takes "uV"/"µV" channels
//! as microvolts and leaves any other unit unscaled (as if volts). The sampling rate is
//! libeep's, truncated to a whole number. Channels are EEG but `BIP1`, `BIP2`, ... (MNE's
//! default `misc=r"BIP\d+"`); there are no positions. The start is the `info` chunk's
//! date as antio rounds it. Events are libeep's: from the `.evt` (each event's time stamp
//! against the start date, kept where it falls inside the recording), else from the `evt `
//! chunk, then turned into MNE's descriptions (`code/condition/description`, "impedance"
//! for impedance measurements, amplifier disconnections as `BAD_disconnection` spans).
//!
//! ede differs where libeep's behaviour is undefined or lost: a channel in an unknown
//! compression method, an epoch whose channels do not add up to its bytes, or a sample count
//! beyond the epoch table are errors or cut (libeep reads stale memory); a channel whose
//! unit is not microvolts keeps its unit (MNE calls the same number volts); text is decoded
//! leniently where antio would fail on bad UTF-8. libeep's `.seg` (segment times) and `.trg`
//! (text triggers) side files are not read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;

mod evt;
mod raw3;

use super::binary::{LastWindow, MatrixSource};
use super::{
    Annotation, ChannelType, Format, ReadError, Recording, SampleSource, SignalInfo,
    release_mapped_pages, unknown_start,
};
use evt::*;
use raw3::*;

/// libeep's file version; a newer major version is refused (as libeep does).
const VERSION_MAJOR: i64 = 4;
/// More values than this in one decoded epoch (channels x epoch length) is no CNT file's.
const MAX_EPOCH_VALUES: usize = 1 << 26;
const MAX_EVENTS: usize = 1 << 20;

/// Whether a file's first bytes are a RIFF/RF64 container of form type "CNT ".
pub fn sniff(head: &[u8]) -> bool {
    (head.starts_with(b"RIFF") && head.get(8..12) == Some(b"CNT "))
        || (head.starts_with(b"RF64") && head.get(12..16) == Some(b"CNT "))
}

/// Whether `path` is the `.evt` event file of a `.cnt` beside it.
pub fn is_companion(path: &Path) -> bool {
    let evt = (path.extension()).is_some_and(|e| e.eq_ignore_ascii_case("evt"));
    evt && cnt_beside(path).is_some()
}

fn cnt_beside(path: &Path) -> Option<PathBuf> {
    ["cnt", "CNT"]
        .into_iter()
        .map(|e| path.with_extension(e))
        .find(|p| p.is_file())
}

/// A chunk: where its header starts and the size its header gives.
#[derive(Clone, Copy)]
struct Chunk {
    start: usize,
    size: u64,
}

/// The container: RIFF's chunk headers hold a 4-byte size, RF64's an 8-byte one.
struct Riff<'a> {
    b: &'a [u8],
    wide: bool,
}

impl Riff<'_> {
    fn header(&self) -> usize {
        if self.wide { 12 } else { 8 }
    }

    fn chunk_at(&self, at: usize) -> Option<([u8; 4], Chunk)> {
        let id: [u8; 4] = self.b.get(at..at.checked_add(4)?)?.try_into().ok()?;
        let s = self.b.get(at + 4..at.checked_add(self.header())?)?;
        let size = match s.try_into() {
            Ok(a) => u64::from_le_bytes(a),
            Err(_) => u32::from_le_bytes(s.try_into().ok()?) as u64,
        };
        Some((id, Chunk { start: at, size }))
    }

    /// The data of a chunk (clipped to the file).
    fn data(&self, c: Chunk) -> &[u8] {
        let from = (c.start + self.header()).min(self.b.len());
        let end = (from as u64)
            .saturating_add(c.size)
            .min(self.b.len() as u64) as usize;
        &self.b[from..end]
    }

    /// The first child of `parent` (a RIFF/RF64 form or LIST) with id `id` or, for
    /// `list`, the first `LIST` of that type, as libeep's `riff_open`/`riff_list_open`.
    fn find(&self, parent: Chunk, id: &[u8; 4], list: bool) -> Option<Chunk> {
        let mut at = parent.start.checked_add(self.header() + 4)?;
        let end = (parent.start as u64 + self.header() as u64).saturating_add(parent.size);
        while (at as u64) < end {
            let (cid, c) = self.chunk_at(at)?;
            let hit = if list {
                &cid == b"LIST"
                    && self.b.get(at + self.header()..at + self.header() + 4) == Some(id)
            } else {
                &cid == id
            };
            if hit {
                return Some(c);
            }
            let next = (self.header() as u64)
                .checked_add(c.size)?
                .checked_add(c.size & 1)?;
            at = usize::try_from((at as u64).checked_add(next)?).ok()?;
        }
        None
    }
}

/// `fgets(line, max)` over a text chunk: lines up to `max - 1` bytes, cut at a NUL as C reads
/// them.
fn c_lines(text: &[u8], max: usize) -> impl Iterator<Item = &[u8]> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let rest = text.get(at..).filter(|r| !r.is_empty())?;
        let mut n = rest.len().min(max - 1);
        if let Some(k) = rest[..n].iter().position(|&c| c == b'\n') {
            n = k + 1;
        }
        at += n;
        rest[..n].split(|&c| c == 0).next()
    })
}

/// C's `sscanf` conversions over one line (its bytes, the position reached), as libeep's
/// header parsing uses them.
struct Scan<'a>(&'a [u8], usize);

impl<'a> Scan<'a> {
    /// Skips white space, then takes up to `max` bytes of no white space for which `ok` holds.
    fn take(&mut self, max: usize, ok: impl Fn(u8) -> bool) -> &'a [u8] {
        let space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
        while self.0.get(self.1).is_some_and(|&c| space(c)) {
            self.1 += 1;
        }
        let from = self.1;
        while self.1 - from < max && self.0.get(self.1).is_some_and(|&c| ok(c) && !space(c)) {
            self.1 += 1;
        }
        &self.0[from..self.1]
    }

    /// `%Ns`: up to `max` bytes without white space.
    fn word(&mut self, max: usize) -> Option<&'a [u8]> {
        Some(self.take(max, |_| true)).filter(|w| !w.is_empty())
    }

    /// `%lf` or `%d`: the longest prefix that reads as a number, as `strtod`/`strtol` stop.
    fn number<T: std::str::FromStr>(&mut self) -> Option<T> {
        let run = self.take(usize::MAX, |c| c.is_ascii_digit() || b"+-.eE".contains(&c));
        let text = std::str::from_utf8(run).ok()?;
        let n = (1..=text.len())
            .rev()
            .find(|&n| text[..n].parse::<T>().is_ok())?;
        self.1 -= run.len() - n;
        text[..n].parse().ok()
    }
}

/// One channel line of `[Basic Channel Data]`.
struct Channel {
    label: String,
    scale: f64,
    unit: String,
}

/// What ede takes from the `eeph` header.
#[derive(Default)]
struct Header {
    major: i64,
    rate: Option<f64>,
    samples: i64,
    channels: Vec<Channel>,
}

fn latin1(b: &[u8]) -> String {
    b.iter().map(|&c| c as char).collect()
}

/// Parses the `eeph` text as libeep's `gethead_RAW3` does.
fn parse_header(text: &[u8]) -> Result<Header, String> {
    let mut h = Header::default();
    let mut chanc: i64 = 0;
    let mut lines = c_lines(text, 128);
    let has = |l: &[u8], key: &str| l.windows(key.len()).any(|w| w == key.as_bytes());
    while let Some(line) = lines.next() {
        if line.first() != Some(&b'[') {
            continue;
        }
        let mut value = || lines.next().unwrap_or(&[]);
        if has(line, "[File Version]") {
            h.major = Scan(value(), 0).number().unwrap_or(0);
        } else if has(line, "[Sampling Rate]") {
            match Scan(value(), 0).number::<f64>() {
                Some(r) if r >= 1e-30 => h.rate = Some(r),
                _ => return Err("its sampling rate is not a positive number".into()),
            }
        } else if has(line, "[Samples]") {
            h.samples = Scan(value(), 0).number().unwrap_or(0);
        } else if has(line, "[Channels]") {
            // libeep reads the count as a C short.
            chanc = Scan(value(), 0)
                .number()
                .map_or(0, |n: i64| n as i16 as i64);
        } else if has(line, "[Basic Channel Data]") {
            if chanc < 1 {
                return Err("its channel table comes before a channel count".into());
            }
            while (h.channels.len() as i64) < chanc {
                let Some(l) = lines.next() else {
                    return Err(format!(
                        "its channel table ends after {} of {chanc} channels",
                        h.channels.len()
                    ));
                };
                if l.first() == Some(&b';') {
                    continue;
                }
                // "%10s %lf %lf %10s": label, iscale, rscale, unit (the rest is optional).
                let mut s = Scan(l, 0);
                let label = s.word(10);
                let (iscale, rscale) = (s.number::<f64>(), s.number::<f64>());
                let unit = s.word(10);
                let (Some(label), Some(iscale), Some(rscale), Some(unit)) =
                    (label, iscale, rscale, unit)
                else {
                    return Err(format!(
                        "channel line {} is not \"label scale scale unit\"",
                        h.channels.len() + 1
                    ));
                };
                h.channels.push(Channel {
                    label: latin1(label),
                    scale: iscale * rscale,
                    unit: latin1(unit),
                });
            }
        } else if has(line, "[History]") {
            for l in lines.by_ref() {
                if l.starts_with(b"EOH") {
                    break;
                }
            }
        }
    }
    Ok(h)
}

/// The `info` chunk's start (Excel day number, second fraction) as libeep's
/// `read_recinfo_chunk` reads it; `None` where libeep drops the recording info.
fn start_date(info: &[u8], whole: &[u8]) -> Option<(f64, f64)> {
    let mut lines = c_lines(info, 256);
    let mut date = None;
    let mut fraction = 0.0;
    const KEYS: &str = "SubjectSex SubjectHandedness Hospital TestName TestSerial Physician \
                        Technician MachineMake MachineModel MachineSN SubjectName SubjectID \
                        SubjectAddress SubjectPhone Comment";
    let has = |l: &[u8], key: &str| l.windows(key.len()).any(|w| w == key.as_bytes());
    while let Some(line) = lines.next() {
        if line.is_empty() {
            break;
        }
        if line.first() != Some(&b'[') {
            continue;
        }
        if has(line, "[StartDate]") {
            date = Some(Scan(lines.next()?, 0).number()?);
        } else if has(line, "[StartFraction]") {
            fraction = Scan(lines.next()?, 0).number()?;
        } else if has(line, "[SubjectDateOfBirth]") {
            let mut s = Scan(lines.next()?, 0);
            for _ in 0..9 {
                s.number::<i64>()?;
            }
        } else if KEYS.split(' ').any(|k| has(line, &format!("[{k}]"))) {
            lines.next();
        }
    }
    if let Some(d) = date {
        return Some((d, fraction));
    }
    // Older files keep the two numbers in binary, little-endian, at the chunk's start.
    let f64_at = |k: usize| Some(f64::from_le_bytes(whole.get(k..k + 8)?.try_into().ok()?));
    Some((f64_at(0)?, f64_at(8)?))
}

/// antio's measurement date: the Excel day rounded to the second, plus the fraction, as
/// Python's `datetime.fromtimestamp` rounds it to microseconds.
fn meas_date(date: f64, fraction: f64) -> Option<chrono::NaiveDateTime> {
    if !(27538.0..=2958464.0).contains(&date) {
        return None;
    }
    let t = (date * 3600.0 * 24.0).round_ties_even() - 2209161600.0 + fraction;
    let (mut secs, mut us) = (t.trunc(), (t.fract() * 1e6).round_ties_even());
    if us >= 1e6 {
        (secs, us) = (secs + 1.0, us - 1e6);
    } else if us < 0.0 {
        (secs, us) = (secs - 1.0, us + 1e6);
    }
    chrono::DateTime::from_timestamp(secs as i64, us as u32 * 1000).map(|d| d.naive_utc())
}

/// Opens an ANT `.cnt` (or its `.evt`, through the `.cnt` beside it).
pub fn open(path: &Path) -> Result<Recording, ReadError> {
    if is_companion(path)
        && let Some(cnt) = cnt_beside(path)
    {
        return open(&cnt);
    }
    let bad = |why: String| ReadError::invalid(path, why);
    let map = MatrixSource::map(path)?;
    if !sniff(map.get(..16).unwrap_or(&map)) {
        return Err(bad(
            "not an ANT CNT file: it is no RIFF/RF64 file of form \"CNT \"".into(),
        ));
    }
    let riff = Riff {
        b: &map,
        wide: map.starts_with(b"RF64"),
    };
    let (_, root) = riff
        .chunk_at(0)
        .ok_or_else(|| bad("the file is truncated".into()))?;
    let need = |c: Option<Chunk>, what: &str| c.ok_or_else(|| bad(format!("it has no {what}")));
    let eeph = need(riff.find(root, b"eeph", false), "header (eeph chunk)")?;
    let h =
        parse_header(riff.data(eeph)).map_err(|w| bad(format!("the header is damaged: {w}")))?;
    if h.major > VERSION_MAJOR {
        return Err(bad(format!(
            "it is CNT version {}, newer than libeep reads",
            h.major
        )));
    }
    let rate = h
        .rate
        .ok_or_else(|| bad("the header gives no sampling rate".into()))?;
    let period = 1.0 / rate;
    // libeep hands MNE the rate truncated to a whole number.
    let fs = ((1.0 / period) as i32) as f64;
    if fs < 1.0 || h.channels.is_empty() {
        return Err(bad(
            "it has no channels or a sampling rate below 1 Hz".into()
        ));
    }
    let chanc = h.channels.len();

    let raw3 = need(riff.find(root, b"raw3", true), "EEG data (raw3 list)")?;
    let chan = need(
        riff.find(raw3, b"chan", false),
        "channel order (chan chunk)",
    )?;
    let ep = need(riff.find(raw3, b"ep  ", false), "epoch table (ep chunk)")?;
    let data = need(riff.find(raw3, b"data", false), "data chunk")?;
    let seq = riff.data(chan);
    if chan.size != 2 * chanc as u64 || seq.len() != 2 * chanc {
        return Err(bad("its channel order does not list every channel".into()));
    }
    let order = (seq.chunks_exact(2))
        .map(|p| {
            usize::try_from(i16::from_le_bytes([p[0], p[1]]))
                .ok()
                .filter(|&c| c < chanc)
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| bad("its channel order names a channel it does not have".into()))?;
    let word = if riff.wide { 8 } else { 4 };
    let table = riff.data(ep);
    let entry = |k: usize| {
        let b = table.get(k * word..(k + 1) * word)?;
        Some(match b.try_into() {
            Ok(a) => u64::from_le_bytes(a),
            Err(_) => i32::from_le_bytes(b.try_into().ok()?) as u64,
        })
    };
    let epochc = (ep.size / word as u64).saturating_sub(1);
    let epoch_len = entry(0).and_then(|l| usize::try_from(l).ok()).unwrap_or(0);
    if epochc == 0 || epoch_len == 0 || (table.len() / word) as u64 <= epochc {
        return Err(bad("its epoch table is empty or truncated".into()));
    }
    if epoch_len
        .checked_mul(chanc)
        .is_none_or(|v| v > MAX_EPOCH_VALUES)
    {
        return Err(bad(format!(
            "its epochs are too long ({epoch_len} samples)"
        )));
    }
    let epochs: Vec<u64> = (1..=epochc as usize).filter_map(entry).collect();

    let mut warnings = Vec::new();
    let held = epochs.len().saturating_mul(epoch_len);
    let mut samples = usize::try_from(h.samples.max(0)).unwrap_or(usize::MAX);
    if samples > held {
        warnings.push(format!(
            "the header gives {samples} samples, the epochs hold {held}: the rest left out"
        ));
        samples = held;
    }
    if samples == 0 {
        return Err(bad("it holds no samples".into()));
    }

    let whole_info = riff.find(root, b"info", false).map(|c| {
        let from = (c.start + riff.header()).min(map.len());
        (riff.data(c), &map[from..])
    });
    let start = whole_info.and_then(|(info, whole)| start_date(info, whole));
    let mut triggers = Vec::new();
    let name = path.to_string_lossy();
    if name.len() > 3 && name.is_char_boundary(name.len() - 3) {
        let evt = PathBuf::from(format!("{}evt", &name[..name.len() - 3]));
        if let Ok(b) = std::fs::read(&evt) {
            let at = start.unwrap_or((0.0, 0.0));
            triggers = evt_triggers(read_evt(&b), at, period, h.samples.max(0) as u64);
        }
    }
    if triggers.is_empty()
        && let Some(c) = riff.find(root, b"evt ", false)
    {
        triggers = chunk_triggers(riff.data(c), riff.wide);
    }
    let mut annotations: Vec<Annotation> = mne_annotations(triggers)
        .into_iter()
        .map(|(on, dur, text)| Annotation {
            onset: on as f64 / fs,
            duration: dur as f64 / fs,
            text,
        })
        .collect();
    // MNE keeps annotations sorted by onset, then duration.
    annotations.sort_by(|a, b| {
        a.onset
            .total_cmp(&b.onset)
            .then(a.duration.total_cmp(&b.duration))
    });

    let misc =
        |l: &str| l.len() > 3 && l.starts_with("BIP") && l[3..].bytes().all(|c| c.is_ascii_digit());
    let signals = (h.channels.iter())
        .map(|c| {
            let micro = matches!(c.unit.to_lowercase().as_str(), "uv" | "µv");
            let unit = if micro {
                "uV".to_string()
            } else {
                c.unit.clone()
            };
            let scale = c.scale as f32 as f64;
            let range = (i32::MIN as f64 * scale, i32::MAX as f64 * scale);
            SignalInfo {
                kind: if misc(&c.label) {
                    ChannelType::Misc
                } else {
                    ChannelType::Eeg
                },
                ..SignalInfo::continuous(
                    c.label.clone(),
                    unit,
                    fs,
                    samples,
                    (range.0.min(range.1), range.0.max(range.1)),
                )
            }
        })
        .collect();
    let source = Raw3 {
        path: path.to_path_buf(),
        data: data.start + riff.header(),
        data_size: data.size,
        epochs,
        epoch_len,
        samples,
        order,
        scales: h.channels.iter().map(|c| c.scale as f32).collect(),
        last: LastWindow::default(),
        map,
    };
    let start = start
        .and_then(|(d, f)| meas_date(d, f))
        .unwrap_or_else(unknown_start);
    Ok(Recording::continuous(
        Some(path.to_path_buf()),
        Format::Ant,
        start,
        signals,
        annotations,
        warnings,
        samples as f64 / fs,
        Arc::new(source),
    ))
}

#[cfg(test)]
mod tests;
