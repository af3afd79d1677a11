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

use super::binary::{LastWindow, MatrixSource};
use super::{
    Annotation, ChannelType, Format, ReadError, Recording, SampleSource, SignalInfo,
    release_mapped_pages, unknown_start,
};

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

/// One trigger as antio hands it to MNE.
#[derive(Default)]
struct Trigger {
    code: String,
    sample: i32,
    duration: i32,
    condition: Option<String>,
    description: Option<String>,
    impedance: bool,
}

/// A little-endian reader with C `fread` semantics: a short read leaves the value unset
/// and the file at its end.
struct Fread<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Fread<'a> {
    /// The next `n` bytes, or as many as are left (the file is then at its end).
    fn upto(&mut self, n: usize) -> &'a [u8] {
        let (b, from) = (self.b, self.at);
        self.at = from.saturating_add(n).min(b.len());
        &b[from..self.at]
    }

    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.upto(n);
        (s.len() == n).then_some(s)
    }

    fn num<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.bytes(N).and_then(|s| s.try_into().ok())
    }

    fn i32(&mut self) -> Option<i32> {
        self.num().map(i32::from_le_bytes)
    }

    fn u32(&mut self) -> Option<u32> {
        self.num().map(u32::from_le_bytes)
    }

    fn f64(&mut self) -> Option<f64> {
        self.num().map(f64::from_le_bytes)
    }

    /// libeep's string: a length in 1, 2, 4 or 8 bytes (each wider one flagged by the
    /// narrower's all-ones), then the bytes; `None` for length 0. C reads it up to a NUL.
    fn string(&mut self) -> Option<Vec<u8>> {
        let mut len = 0u64;
        if let Some([b]) = self.num::<1>() {
            len = b as u64;
            if b == 0xff
                && let Some(w) = self.num().map(u16::from_le_bytes)
            {
                len = w as u64;
                if w == 0xffff
                    && let Some(d) = self.u32()
                {
                    len = d as u64;
                    if d == u32::MAX
                        && let Some(q) = self.num().map(u64::from_le_bytes)
                    {
                        len = q;
                    }
                }
            }
        }
        if len == 0 {
            return None;
        }
        let s = self.upto(usize::try_from(len).unwrap_or(usize::MAX));
        Some(s.split(|&c| c == 0).next().unwrap_or(s).to_vec())
    }

    /// A UTF-16 string as libeep reads it: the low byte of each code unit.
    fn wstring(&mut self) -> Option<Vec<u8>> {
        let n = usize::try_from(self.i32()?).ok()?;
        let s = self.upto(n);
        let low: Vec<u8> = s.chunks(2).take(n / 2).map(|p| p[0]).collect();
        Some(low.split(|&c| c == 0).next().unwrap_or(&low).to_vec())
    }

    fn class(&mut self) -> Option<Vec<u8>> {
        (self.i32()? == -1).then(|| self.string()).flatten()
    }
}

/// An event of a `.evt` file, with the fields libeep keeps.
#[derive(Default)]
struct EvtEvent {
    duration: f64,
    date: f64,
    fraction: f64,
    code: i32,
    condition: Option<Vec<u8>>,
    description: Option<Vec<u8>>,
    impedance: bool,
}

/// A descriptor's value (libeep's variant): its type, the integer `EventCode` takes, its
/// string, its count of floats (impedances) and its text as C's `printf` writes it.
#[derive(Default)]
struct Variant {
    kind: u16,
    i32: i32,
    string: Option<Vec<u8>>,
    floats: u32,
    text: Option<String>,
}

fn variant_base(r: &mut Fread) -> Variant {
    let mut v = Variant::default();
    let Some(kind) = r.num().map(u16::from_le_bytes) else {
        return v;
    };
    v.kind = kind;
    // C's `%f`, where not-a-number is "nan".
    let float = |x: f64| {
        if x.is_nan() {
            "nan".into()
        } else {
            format!("{x:.6}")
        }
    };
    v.text = match kind {
        2 => Some(r.num().map_or(0, i16::from_le_bytes).to_string()),
        3 => {
            v.i32 = r.i32().unwrap_or(0);
            Some(v.i32.to_string())
        }
        4 => Some(float(r.num().map_or(0.0, f32::from_le_bytes) as f64)),
        5 => Some(float(r.f64().unwrap_or(0.0))),
        8 => {
            v.string = r.wstring();
            let s = v.string.as_deref().unwrap_or(b"(null)");
            Some(String::from_utf8_lossy(s).into_owned())
        }
        19 => Some(r.u32().unwrap_or(0).to_string()),
        _ => None,
    };
    v
}

/// libeep's `_libeep_evt_read_variant`: arrays and references hold a second value, of which
/// libeep reads float arrays only.
fn variant(r: &mut Fread) -> Variant {
    let mut v = variant_base(r);
    if !matches!(v.kind, 2..=5 | 8 | 11) && v.kind & 0x6000 != 0 && variant_base(r).kind == 4 {
        v.floats = r.u32().unwrap_or(0);
        r.upto((v.floats as usize).saturating_mul(4));
    }
    v
}

/// libeep's `_libeep_evt_event_process_variant`.
fn take_variant(ev: &mut EvtEvent, name: Option<&[u8]>, v: Variant) {
    match name.unwrap_or(b"(null)") {
        b"EventCode" => ev.code = v.i32,
        b"Condition" if v.string.is_some() => ev.condition = v.string,
        b"Condition" | b"VideoFileName" => {}
        b"Impedance" => ev.impedance |= v.floats > 0,
        b"Name:" => ev.description = v.string,
        other => {
            // libeep appends an unset buffer for the types it does not print; ede nothing.
            let name = String::from_utf8_lossy(other);
            let text = v.text.map(|t| format!(" {name}={t}")).unwrap_or_default();
            let mut tmp = text.into_bytes();
            tmp.truncate(1023);
            ev.condition.get_or_insert_with(Vec::new).extend(tmp);
        }
    }
}

/// libeep's `_libeep_evt_read_event`: the part every event class shares.
fn evt_event(r: &mut Fread, version: i32, ev: &mut EvtEvent) -> Option<()> {
    r.i32()?;
    r.bytes(16); // GUID
    r.class();
    r.string();
    if version >= 78 {
        r.string();
    }
    r.i32()?; // type
    r.i32()?; // state
    r.bytes(1)?;
    ev.duration = r.f64()?;
    r.f64()?;
    ev.date = r.f64()?;
    ev.fraction = r.f64()?;
    if version >= 19 {
        let n = r.i32()?;
        for _ in 0..n.max(0) {
            if r.at >= r.b.len() {
                break;
            }
            let name = r.string();
            let v = variant(r);
            r.string();
            take_variant(ev, name.as_deref(), v);
        }
    }
    Some(())
}

/// The events of a `.evt` file, in file order (libeep's `libeep_evt_read`).
fn read_evt(b: &[u8]) -> Vec<EvtEvent> {
    let mut r = Fread { b, at: 0 };
    let mut out = Vec::new();
    let Some(head) = r.bytes(24) else {
        return out;
    };
    let version = i32::from_le_bytes([head[12], head[13], head[14], head[15]]);
    if r.class().as_deref() != Some(b"class dcEventsLibrary_c") {
        return out;
    }
    r.string();
    let n = r.u32().unwrap_or(0);
    for _ in 0..n {
        if r.at >= b.len() || out.len() >= MAX_EVENTS {
            break;
        }
        let mut ev = EvtEvent::default();
        let class = r.class();
        match class.as_deref().unwrap_or(b"") {
            b"class dcEpochEvent_c" => {
                evt_event(&mut r, version, &mut ev);
                if version < 33 {
                    r.i32();
                }
            }
            b"class dcEventMarker_c" | b"class dcArtefactEvent_c" => {
                evt_event(&mut r, version, &mut ev);
                // The channel and its reference.
                r.string();
                r.string();
                let marker = class.as_deref() == Some(b"class dcEventMarker_c");
                if marker || version >= 174 {
                    ev.description = r.string();
                }
                if marker && version >= 35 {
                    // Whether to show the amplitude and the duration.
                    r.upto(if version >= 103 { 5 } else { 2 });
                }
            }
            b"class dcSpikeEvent_c"
            | b"class dcSeizureEvent_c"
            | b"class dcSleepEvent_c"
            | b"class dcRPeakEvent_c" => {
                evt_event(&mut r, version, &mut ev);
            }
            _ => {}
        }
        out.push(ev);
    }
    out
}

/// Seconds since 1970 of an Excel date (libeep's `_libeep_helper_excel_to_double`).
fn excel_seconds(date: f64, fraction: f64) -> f64 {
    if (27538.0..=2958464.0).contains(&date) {
        date * 3600.0 * 24.0 - 2209161600.0 + fraction
    } else {
        0.0
    }
}

/// The `.evt` events inside the recording, as libeep places them on samples.
fn evt_triggers(
    events: Vec<EvtEvent>,
    start: (f64, f64),
    period: f64,
    samples: u64,
) -> Vec<Trigger> {
    let rate = 1.0 / period;
    let text = |b: Option<Vec<u8>>| b.map(|b| String::from_utf8_lossy(&b).into_owned());
    let mut out = Vec::new();
    for e in events {
        let diff = excel_seconds(e.date, e.fraction) - excel_seconds(start.0, start.1);
        let offset = (rate * diff) as u64;
        if !(e.date > 0.0 && e.date >= start.0 && diff >= 0.0 && offset < samples) {
            continue;
        }
        out.push(Trigger {
            code: e.code.to_string(),
            // antio passes both through a C int.
            sample: offset as u32 as i32,
            duration: (e.duration / period) as u64 as u32 as i32,
            condition: text(e.condition),
            description: text(e.description),
            impedance: e.impedance,
        });
    }
    out
}

/// The `evt ` chunk's triggers (libeep's `read_trigger_chunk`).
fn chunk_triggers(b: &[u8], wide: bool) -> Vec<Trigger> {
    let size = if wide { 16 } else { 12 };
    let mut out: Vec<(u64, Vec<u8>)> = Vec::new();
    for e in b.chunks_exact(size).take(MAX_EVENTS) {
        let (at, code) = e.split_at(size - 8);
        let sample = match at.try_into() {
            Ok(a) => u64::from_le_bytes(a),
            Err(_) => i32::from_le_bytes(at.try_into().unwrap_or([0; 4])) as u64,
        };
        let code = code.split(|&c| c == 0).next().unwrap_or(code).to_vec();
        // An early writer stored each DISCONT and DCRESET twice; libeep drops the copy.
        let twice =
            (out.last()).is_some_and(|l| l.0 == sample) && (code == b"1024" || code == b"2048");
        if !twice {
            out.push((sample, code));
        }
    }
    (out.into_iter())
        .map(|(sample, code)| Trigger {
            code: String::from_utf8_lossy(&code).into_owned(),
            sample: sample as u32 as i32,
            ..Trigger::default()
        })
        .collect()
}

/// MNE's `read_triggers` and `_prepare_annotations`: triggers to annotations, in samples.
fn mne_annotations(triggers: Vec<Trigger>) -> Vec<(i64, i64, String)> {
    let mut out = Vec::new();
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for t in triggers {
        let cond = t.condition.as_deref().map(str::to_lowercase);
        let desc_is = |w: &str| {
            t.description
                .as_deref()
                .is_some_and(|d| d.to_lowercase() == w)
        };
        if desc_is("impedance") && t.impedance {
            out.push((t.sample as i64, t.duration as i64, "impedance".to_string()));
        } else if cond.as_deref() == Some("amplifier disconnected") {
            off.push(t.sample as i64);
        } else if cond.as_deref() == Some("amplifier reconnected") {
            on.push(t.sample as i64);
        } else {
            let mut d = t.code;
            for part in [t.condition, t.description].into_iter().flatten() {
                d = format!("{d}/{part}");
            }
            out.push((t.sample as i64, t.duration as i64, d));
        }
    }
    for a in &mut out {
        if a.2.to_lowercase() == "impedance" {
            a.2 = "impedance".into();
        }
    }
    let paired =
        off.len() == on.len() && !off.is_empty() && off.iter().zip(&on).all(|(a, b)| b >= a);
    if paired {
        out.extend((off.iter().zip(&on)).map(|(&a, &b)| (a, b - a, "BAD_disconnection".into())));
    } else {
        out.extend(off.iter().map(|&a| (a, 0, "Amplifier disconnected".into())));
        out.extend(on.iter().map(|&a| (a, 0, "Amplifier reconnected".into())));
    }
    out
}

/// The sign-extended `n`-bit numbers of a compressed channel, most significant bit first.
struct Bits<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Bits<'_> {
    fn take(&mut self, n: u32) -> i32 {
        let i = self.pos / 8;
        let mut w = [0u8; 8];
        let rest = self.b.get(i..).unwrap_or(&[]);
        let k = rest.len().min(8);
        w[..k].copy_from_slice(&rest[..k]);
        let word = u64::from_be_bytes(w) << (self.pos % 8);
        self.pos += n as usize;
        if n == 0 {
            0
        } else {
            ((word as i64) >> (64 - n)) as i32
        }
    }
}

/// Decodes one channel of an epoch (libeep's `decompchan`): `n` samples into `cur`, from the
/// previous channel's `last`; the bytes it took.
fn decode_channel(
    b: &[u8],
    n: usize,
    last: &[i32],
    cur: &mut [i32],
    res: &mut [i32],
) -> Result<usize, String> {
    let method = b.first().ok_or("its data ends inside an epoch")? >> 4;
    if method & 7 > 3 {
        return Err(format!(
            "a channel is compressed in an unknown way (method {method})"
        ));
    }
    // Bit 3 of the method: 32-bit values with 6-bit sizes, else 16-bit with 4-bit ones.
    let width = if method & 8 == 0 { 16 } else { 32 };
    let mut bits = Bits { b, pos: 4 };
    if method & 7 == 0 {
        // The values as they are, after 4 unused bits.
        bits.pos = 8;
        res.iter_mut().for_each(|r| *r = bits.take(width));
    } else {
        let field = if width == 16 { 4 } else { 6 };
        // A 4-bit size of 0 means 16.
        let mut size = || match bits.take(field) & ((1 << field) - 1) {
            0 if width == 16 => 16,
            v => v as u32,
        };
        let (nbit, nexc) = (size(), size());
        if !(1..=32).contains(&nbit) || nexc > 32 {
            return Err(format!(
                "a channel packs its values in {nbit} or {nexc} bits"
            ));
        }
        res[0] = bits.take(width);
        // Residuals in `nbit` bits; the lowest value flags one in `nexc` bits after it.
        let escape = (-1i64 << (nbit - 1)) as i32;
        for r in res.iter_mut().skip(1) {
            let v = bits.take(nbit);
            *r = if v == escape && nbit != nexc {
                bits.take(nexc)
            } else {
                v
            };
        }
    }
    cur[0] = res[0];
    for s in 1..n {
        let prev = cur[s - 1];
        cur[s] = match method & 7 {
            0 => res[s],
            1 => prev.wrapping_add(res[s]),
            2 if s == 1 => prev.wrapping_add(res[s]),
            2 => (prev.wrapping_mul(2).wrapping_sub(cur[s - 2])).wrapping_add(res[s]),
            _ => (prev.wrapping_add(last[s]).wrapping_sub(last[s - 1])).wrapping_add(res[s]),
        };
    }
    Ok(bits.pos.div_ceil(8))
}

/// The samples of a RAW3 `data` chunk, decoded an epoch at a time.
struct Raw3 {
    path: PathBuf,
    map: Mmap,
    /// File offset of the `data` chunk's first byte, and its size.
    data: usize,
    data_size: u64,
    /// Each epoch's offset in `data`.
    epochs: Vec<u64>,
    epoch_len: usize,
    /// The header's sample count.
    samples: usize,
    /// The channel each compressed block holds, in file order.
    order: Vec<usize>,
    scales: Vec<f32>,
    last: LastWindow,
}

impl Raw3 {
    /// Epoch `e`'s `n` samples of every channel, channel after channel, scaled.
    fn decode(&self, e: usize, n: usize) -> Result<Vec<f32>, ReadError> {
        let bad = |why: String| ReadError::invalid(&self.path, format!("epoch {} {why}", e + 1));
        // libeep reads from this epoch's offset to the next one's (the last: to the chunk end).
        let to = self.epochs.get(e + 1).copied().unwrap_or(self.data_size);
        let at = |o: u64| usize::try_from(o).ok()?.checked_add(self.data);
        let bytes = (at(self.epochs[e]).zip(at(to)))
            .and_then(|(a, b)| self.map.get(a..b))
            .ok_or_else(|| bad("lies outside the file: the file is truncated or damaged".into()))?;
        let chanc = self.order.len();
        // Every channel takes at least a bit a sample: a shorter epoch is damaged, and is
        // refused before its buffers are made.
        if (bytes.len() as u64) * 8 < chanc as u64 * (n as u64 - 1) {
            return Err(bad("is shorter than its samples need".into()));
        }
        let mut out = vec![0f32; chanc * n];
        let (mut last, mut cur, mut res) = (vec![0i32; n], vec![0i32; n], vec![0i32; n]);
        let mut at = 0;
        for &ch in &self.order {
            at += decode_channel(bytes.get(at..).unwrap_or(&[]), n, &last, &mut cur, &mut res)
                .map_err(bad)?;
            for (o, &v) in out[ch * n..(ch + 1) * n].iter_mut().zip(&cur) {
                *o = v as f32 * self.scales[ch];
            }
            std::mem::swap(&mut last, &mut cur);
        }
        if at != bytes.len() {
            return Err(bad(format!(
                "is damaged: its channels take {at} bytes, the epoch table gives {}",
                bytes.len()
            )));
        }
        Ok(out)
    }
}

impl SampleSource for Raw3 {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        let l = self.epoch_len;
        let mut done = 0;
        while done < out.len() {
            let s = start + done;
            let (e, first) = (s / l, s / l * l);
            // libeep decodes the last epoch to the sample count, the others whole.
            let n = if e + 1 == self.epochs.len() {
                (self.samples - first).min(l)
            } else {
                l
            };
            let (values, _) = self.last.rows(first, n, || self.decode(e, n))?;
            let take = (n - (s - first)).min(out.len() - done);
            let at = signal * n + (s - first);
            out[done..done + take].copy_from_slice(&values[at..at + take]);
            done += take;
        }
        Ok(())
    }

    fn release_pages(&self) {
        release_mapped_pages(&self.map);
    }
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
mod tests {
    use super::*;

    /// A channel as libeep's `huffman` packs it: method, sizes (4 bits for 16-bit values, 6
    /// for 32-bit), first value, then residuals in `nbit` bits, escaping to `nexc` bits.
    fn pack(method: i64, width: u32, (nbit, nexc): (u32, u32), first: i64, res: &[i64]) -> Vec<u8> {
        let (mut bytes, mut at) = (Vec::new(), 0);
        let mut push = |v: i64, n: u32| {
            for k in (0..n).rev() {
                if at % 8 == 0 {
                    bytes.push(0u8);
                }
                *bytes.last_mut().unwrap() |= (((v >> k) & 1) as u8) << (7 - at % 8);
                at += 1;
            }
        };
        let field = if width == 16 { 4 } else { 6 };
        (
            push(method, 4),
            push(nbit as i64, field),
            push(nexc as i64, field),
        );
        push(first, width);
        let lo = -(1i64 << (nbit - 1));
        for &r in res {
            if nbit != nexc && (r <= lo || r >= -lo) {
                (push(lo, nbit), push(r, nexc));
            } else {
                push(r, nbit);
            }
        }
        bytes
    }

    fn chunk(id: &[u8], body: &[u8]) -> Vec<u8> {
        let mut c = id.to_vec();
        c.extend((body.len() as u32).to_le_bytes());
        c.extend(body);
        if body.len() % 2 == 1 {
            c.push(0);
        }
        c
    }

    fn list(kind: &[u8], children: &[Vec<u8>]) -> Vec<u8> {
        let mut body = kind.to_vec();
        children.iter().for_each(|c| body.extend(c));
        chunk(b"LIST", &body)
    }

    /// Two channels, ten samples in epochs of eight: channel "B" is compressed first.
    fn file() -> (Vec<u8>, [Vec<i64>; 2]) {
        let a: Vec<i64> = vec![5, 7, 6, 300, 301, -40, -41, -39, 1000, 1003];
        let b: Vec<i64> = vec![-2, 0, 3, 5, 4, 4, 2, 1, 70000, -70000];
        // Epoch 1: B as 16-bit values, A in 32-bit CHAN (its steps less B's), 3/20 bits.
        let mut data = vec![0u8];
        data.extend(b[..8].iter().flat_map(|&x| (x as i16).to_be_bytes()));
        let res: Vec<i64> = (1..8)
            .map(|s| a[s] - a[s - 1] - (b[s] - b[s - 1]))
            .collect();
        data.extend(pack(11, 32, (3, 20), a[0], &res));
        // Epoch 2: B as 32-bit values, A in 16-bit TIME (its steps), 4/12 bits.
        let second = data.len() as u32;
        data.push(0x80);
        data.extend(b[8..].iter().flat_map(|&x| (x as i32).to_be_bytes()));
        data.extend(pack(1, 16, (4, 12), a[8], &[a[9] - a[8]]));
        let ep: Vec<u8> = [8u32, 0, second]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let eeph = "[File Version]\n4.2\n[Sampling Rate]\n500.0\n[Samples]\n10\n[Channels]\n2\n\
                    [Basic Channel Data]\n;label calibration factor\n\
                    A 1.0 0.5 uV REF:Cz\nBIP1 2.0 0.25 uV\n";
        let info = "[StartDate]\n45518.5\n[StartFraction]\n0.25\n";
        let raw3 = list(
            b"raw3",
            &[
                chunk(b"chan", &[1, 0, 0, 0]),
                chunk(b"data", &data),
                chunk(b"ep  ", &ep),
            ],
        );
        let mut body = b"CNT ".to_vec();
        for c in [
            chunk(b"eeph", eeph.as_bytes()),
            raw3,
            chunk(b"info", info.as_bytes()),
        ] {
            body.extend(c);
        }
        (chunk(b"RIFF", &body), [a, b])
    }

    fn write(bytes: &[u8]) -> tempfile::TempPath {
        let f = tempfile::Builder::new().suffix(".cnt").tempfile().unwrap();
        std::fs::write(f.path(), bytes).unwrap();
        f.into_temp_path()
    }

    #[test]
    fn a_minimal_file_round_trips() {
        let (bytes, [a, b]) = file();
        assert!(sniff(&bytes[..16]));
        let path = write(&bytes);
        let rec = open(&path).unwrap();
        let labels: Vec<&str> = rec.signals.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["A", "BIP1"]);
        assert_eq!(rec.signals[1].kind, ChannelType::Misc);
        assert_eq!((rec.signals[0].fs, rec.signals[0].samples), (500.0, 10));
        assert_eq!(rec.start.to_string(), "2024-08-14 12:00:00.250");
        for (k, (values, scale)) in [(&a, 0.5), (&b, 0.5)].into_iter().enumerate() {
            let got = rec.read_all(k).unwrap();
            let want: Vec<f32> = values.iter().map(|&v| v as f32 * scale).collect();
            assert_eq!(got, want, "channel {k}");
        }
        let mut three = [0f32; 3];
        rec.read(0, 7, &mut three).unwrap();
        assert_eq!(three, [-19.5, 500.0, 501.5]);
    }

    #[test]
    fn truncated_or_damaged_files_are_errors() {
        let (bytes, _) = file();
        let cut = bytes.iter().rposition(|_| true).unwrap() - 60;
        for b in [
            &bytes[..cut],
            &bytes[..40],
            b"RIFF\0\0\0\0CNT garbage".as_slice(),
        ] {
            let path = write(b);
            let read = open(&path).and_then(|r| r.read_all(0));
            assert!(read.is_err(), "{} bytes", b.len());
        }
        let mut flipped = bytes.clone();
        let at = flipped.windows(4).position(|w| w == b"data").unwrap() + 8;
        flipped[at] = 0x70; // an unknown compression method
        let err = open(&write(&flipped)).unwrap().read_all(0).unwrap_err();
        assert!(err.to_string().contains("unknown way"), "{err}");
        for n in 0..64 {
            let garbage: Vec<u8> = (0..n * 7).map(|k| (k * 37 % 251) as u8).collect();
            assert!(read_evt(&garbage).len() <= n * 7);
        }
    }

    #[test]
    fn disconnections_pair_into_bad_spans() {
        let t = |sample, cond: &str| Trigger {
            code: "0".into(),
            sample,
            condition: Some(cond.into()),
            ..Trigger::default()
        };
        let got = mne_annotations(vec![
            t(5, "Amplifier disconnected"),
            t(9, "amplifier reconnected"),
            t(7, "x"),
        ]);
        assert_eq!(
            got,
            [(7, 0, "0/x".into()), (5, 4, "BAD_disconnection".into())]
        );
    }
}
