//! EGI/Philips MFF: a folder `NAME.mff` that Net Station and the Philips/EGI amplifiers
//! write. `info.xml` gives the start (`recordTime`, with its time zone); each `signalN.bin`
//! holds one kind of signal, which `infoN.xml` names (`EEG`, or `PNSData` for the
//! polygraphic inputs: ECG, EMG, ...) with its calibrations; `epochs.xml` says which stretches
//! of time the samples cover (a recording paused and resumed has several epochs);
//! `sensorLayout.xml` lists the net's sensors and `coordinates.xml` their positions (cm) with
//! the nasion and the preauricular points; `pnsSet.xml` names the PNS inputs and their units;
//! `Events_*.xml` hold the event tracks (code and clock time of each event); `categories.xml`
//! (segmented files) marks bad channels.
//!
//! A signal file is a run of blocks. A block starts with a flag: 1 when a header follows
//! (header size, data size, channel count, each channel's byte offset in the data, each
//! channel's rate and bit depth, an optional header), 0 when the block keeps the previous
//! block's layout. The data hold each channel's samples together (little-endian float32), so
//! one channel of a stretch of time reads from one piece of each block. Opening indexes the
//! block headers only (a 256-channel net opens without reading samples); samples are
//! memory-mapped and decoded on demand.
//!
//! Read as MNE-Python's `read_raw_egi` reads it (through mffpy), with its defaults: the EEG
//! channels in microvolts times mffpy's `GCAL` calibration, named as `coordinates.xml` names
//! them (E1.., VREF), then one stim channel per event code (value k at the sample of each event
//! of the k-th code), then the PNS channels (ECG typed ecg, names containing EMG emg, others
//! MNE's "bio", misc here; microvolts where pnsSet says uV, the stored numbers otherwise). The
//! time axis runs from the recording start to the end of the last epoch: the samples between
//! epochs, and before the first, read as 0, and each gap is annotated `BAD_ACQ_SKIP` as MNE
//! annotates it. Positions are `coordinates.xml`'s in MNE's head frame (built from the nasion
//! and preauricular points; as given where they are missing). The "PSG sample bug" (PNS one
//! sample shorter than EEG) is annotated `BAD_EGI_PSG` as in MNE. MNE also annotates every
//! event with its code; ede shows each as the event of its code's stim channel (`k@@code`, as
//! MNE's `find_events` finds them). Where MNE stops with an error (epochs that do not add up
//! to the samples, a sensor layout that does not match the channels, PNS at another rate), ede
//! opens what it can and says what it did in a warning.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, FixedOffset, Timelike};
use memmap2::Mmap;
use roxmltree::{Document, Node};

use super::binary::{MatrixSource, decode_text};
use super::{
    Annotation, ChannelType, Format, ReadError, Recording, SampleSource, SignalInfo, unknown_start,
};

/// Channels, event codes and epochs beyond these are no MFF's.
const MAX_CHANNELS: usize = 4096;
const MAX_CODES: usize = 1024;
const MAX_EPOCHS: usize = 1 << 20;
/// XML files larger than this are not read (event tracks of days run to tens of MB).
const MAX_XML_BYTES: u64 = 256 << 20;
/// A time axis longer than this (samples) is a damaged `epochs.xml`, not a recording.
const MAX_SAMPLES: u64 = 1 << 36;

/// Whether a file's first bytes (up to 64) are this format: MFF is known by its folder.
pub fn sniff(_head: &[u8]) -> bool {
    false
}

/// Whether `path` is an MFF: a folder named `*.mff` (any case) holding `info.xml`, or a file
/// inside one (`signal1.bin`, `info.xml`, ...), which opens the folder.
pub fn is_companion(path: &Path) -> bool {
    folder_of(path).is_some()
}

fn is_mff_folder(dir: &Path) -> bool {
    let named = (dir.file_name().and_then(|n| n.to_str()))
        .is_some_and(|n| n.to_ascii_lowercase().ends_with(".mff"));
    named && dir.is_dir() && dir.join("info.xml").is_file()
}

fn folder_of(path: &Path) -> Option<PathBuf> {
    if path.is_dir() {
        return is_mff_folder(path).then(|| path.to_path_buf());
    }
    let parent = path.parent()?;
    (path.is_file() && is_mff_folder(parent)).then(|| parent.to_path_buf())
}

/// `f` of the root of the XML file `name` in `dir`: `None` where the file is absent (or too
/// large to be one of MFF's), an error where it is not XML.
fn with_xml<T>(
    dir: &Path,
    name: &str,
    f: impl for<'a, 'i> FnOnce(Node<'a, 'i>) -> T,
) -> Result<Option<T>, ReadError> {
    let path = dir.join(name);
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() && m.len() <= MAX_XML_BYTES => {}
        _ => return Ok(None),
    }
    let bytes = std::fs::read(&path).map_err(|e| ReadError::io(&path, e))?;
    let text = decode_text(&bytes);
    let doc = Document::parse(&text)
        .map_err(|e| ReadError::invalid(&path, format!("not readable XML ({e})")))?;
    Ok(Some(f(doc.root_element())))
}

/// The first child element named `name` (namespaces aside: every MFF file has its own).
fn child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    n.children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
}

fn children<'a, 'i: 'a>(n: Node<'a, 'i>, name: &'a str) -> impl Iterator<Item = Node<'a, 'i>> {
    n.children()
        .filter(move |c| c.is_element() && c.tag_name().name() == name)
}

/// The trimmed text of child `name` (`None` where it is absent; empty where it is empty).
fn text<'a>(n: Node<'a, '_>, name: &str) -> Option<&'a str> {
    child(n, name).map(|c| c.text().unwrap_or("").trim())
}

/// An MFF clock time ("2020-01-29T06:19:39.202537-08:00") to the microsecond, as mffpy keeps
/// it, with the number of digits of its fraction (9 means `epochs.xml` counts nanoseconds).
fn parse_time(s: &str) -> Option<(DateTime<FixedOffset>, usize)> {
    let t = DateTime::parse_from_rfc3339(s.trim()).ok()?;
    let digits = (s.split_once('.')).map_or(0, |(_, f)| {
        f.chars().take_while(char::is_ascii_digit).count()
    });
    Some((t.with_nanosecond(t.nanosecond() / 1000 * 1000)?, digits))
}

/// One block of a signal file: where its data start, its first sample (counted over the
/// file) and samples per channel, and which layout (channel offsets) it has.
struct Block {
    data_at: usize,
    first: usize,
    samples: usize,
    layout: usize,
}

/// A signal file, its blocks indexed.
struct SignalFile {
    map: Mmap,
    channels: usize,
    rate: u32,
    /// Each distinct layout: the byte offset of each channel's samples in a block's data.
    layouts: Vec<Vec<usize>>,
    blocks: Vec<Block>,
    samples: usize,
    /// mffpy's `GCAL` calibration per channel (1 where there is none).
    gains: Vec<f64>,
}

fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// The block header at `at`: its size, data size, samples per channel, each channel's offset
/// in the data, and the rate.
type Header = (usize, usize, usize, Vec<usize>, u32);

fn block_header(b: &[u8], at: usize) -> Result<Header, String> {
    let field = |k: usize| le_u32(b, at + 4 * k).map(|v| v as usize);
    let (Some(size), Some(data), Some(nc)) = (field(1), field(2), field(3)) else {
        return Err(format!("the block header at byte {at} is cut short"));
    };
    let fits = at.checked_add(size).is_some_and(|e| e <= b.len());
    if nc == 0 || nc > MAX_CHANNELS || size < 20 + 8 * nc || !fits {
        return Err(format!(
            "the block header at byte {at} ({size} bytes, {nc} channels) is damaged"
        ));
    }
    let samples = data / nc / 4;
    let mut rate = 0;
    let mut offsets = Vec::with_capacity(nc);
    for c in 1..=nc {
        let (off, code) = (field(3 + c), field(3 + nc + c).unwrap_or(0) as u32);
        if code & 0xff != 32 {
            let bits = code & 0xff;
            return Err(format!(
                "channel {c} is stored in {bits} bits: ede reads 32-bit samples, as mffpy does"
            ));
        }
        if code >> 8 == 0 || (rate != 0 && code >> 8 != rate) {
            return Err(format!(
                "channel {c} is sampled at {} Hz, another at {rate} Hz: ede reads one rate per \
                 signal file, as MNE-Python does",
                code >> 8
            ));
        }
        rate = code >> 8;
        match off.filter(|o| o.checked_add(4 * samples).is_some_and(|e| e <= data)) {
            Some(o) => offsets.push(o),
            None => {
                return Err(format!(
                    "channel {c} at byte {at} lies past its block's end"
                ));
            }
        }
    }
    Ok((size, data, samples, offsets, rate))
}

impl SignalFile {
    /// Walks the block headers of `path` (the samples themselves are not read).
    fn index(
        (_, path, gcal): &Signal,
        warnings: &mut Vec<String>,
    ) -> Result<SignalFile, ReadError> {
        let map = MatrixSource::map(path)?;
        let bad = |why: String| ReadError::invalid(path, why);
        let b: &[u8] = &map;
        let (mut channels, mut rate) = (0usize, 0u32);
        let mut layouts: Vec<Vec<usize>> = Vec::new();
        let mut blocks = Vec::new();
        // The current block size, samples per channel and layout.
        let mut current: Option<(usize, usize, usize)> = None;
        let (mut total, mut at) = (0usize, 0usize);
        while at < b.len() {
            let flag = le_u32(b, at).ok_or_else(|| bad(format!("block at byte {at} is cut")))?;
            let data_at = match flag {
                0 => at + 4,
                1 => {
                    let (size, data, samples, offsets, r) = block_header(b, at).map_err(bad)?;
                    if channels != 0 && (offsets.len() != channels || r != rate) {
                        return Err(bad(format!(
                            "the block at byte {at} has {} channels at {r} Hz, the first {} \
                             at {rate} Hz",
                            offsets.len(),
                            channels
                        )));
                    }
                    (channels, rate) = (offsets.len(), r);
                    if layouts.last() != Some(&offsets) {
                        layouts.push(offsets);
                    }
                    current = Some((data, samples, layouts.len() - 1));
                    at + size
                }
                f => {
                    return Err(bad(format!(
                        "the block at byte {at} starts with {f}, neither 0 nor 1: the file is \
                         damaged"
                    )));
                }
            };
            let Some((data, samples, layout)) = current else {
                return Err(bad("the first block has no header".into()));
            };
            let Some(end) = data_at.checked_add(data).filter(|&e| e <= b.len()) else {
                let left = b.len().saturating_sub(data_at);
                warnings.push(format!(
                    "{}: the last block is cut short ({left} of {data} bytes): left out",
                    path.display()
                ));
                break;
            };
            if samples > 0 {
                let first = total;
                blocks.push(Block {
                    data_at,
                    first,
                    samples,
                    layout,
                });
                total += samples;
            }
            at = end;
        }
        if blocks.is_empty() {
            return Err(bad("the file holds no samples".into()));
        }
        let mut gains = vec![1.0; channels];
        for &(n, v) in gcal {
            if let Some(g) = gains.get_mut(n.wrapping_sub(1)) {
                *g = v as f64;
            }
        }
        Ok(SignalFile {
            map,
            channels,
            rate,
            layouts,
            blocks,
            samples: total,
            gains,
        })
    }

    /// Samples `from..from + out.len()` of `channel` as the file holds them one after another
    /// (0 past its end: the PNS file of the PSG bug).
    fn read(&self, channel: usize, from: usize, out: &mut [f32]) {
        let gain = self.gains.get(channel).copied().unwrap_or(1.0);
        let mut done = 0;
        let mut i = self.blocks.partition_point(|b| b.first + b.samples <= from);
        while let Some(block) = self.blocks.get(i).filter(|_| done < out.len()) {
            let skip = from + done - block.first;
            let n = (block.samples - skip).min(out.len() - done);
            let off = (self.layouts.get(block.layout)).and_then(|l| l.get(channel));
            let at = off.map_or(usize::MAX, |o| block.data_at + o + 4 * skip);
            let bytes = self.map.get(at..at.saturating_add(4 * n)).unwrap_or(&[]);
            for (o, b) in out[done..done + n].iter_mut().zip(bytes.chunks_exact(4)) {
                let v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                // As mffpy: the calibration times the sample in double, then single.
                *o = (gain * v as f64) as f32;
            }
            done += n;
            i += 1;
        }
        out[done..].fill(0.0);
    }
}

/// An epoch: samples `first..last` of the time axis, from sample `disk` of the signal files.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Epoch {
    first: usize,
    last: usize,
    disk: usize,
}

/// The epochs of `epochs.xml` on the time axis, as MNE converts them (times in microseconds,
/// or nanoseconds where `recordTime` has 9 digits, to samples rounded down); `None` where
/// they do not add up to the `samples` on disk or overlap (MNE stops there).
fn epochs_of(root: Node, rate: u32, nanos: bool, samples: usize) -> Option<Vec<Epoch>> {
    let per_second: u128 = if nanos { 1_000_000_000 } else { 1_000_000 };
    let mut out: Vec<Epoch> = Vec::new();
    let mut disk = 0usize;
    for e in children(root, "epoch").take(MAX_EPOCHS + 1) {
        let time = |name| text(e, name)?.parse::<u64>().ok();
        let to_sample = |t: u64| {
            let s = t as u128 * rate as u128 / per_second;
            usize::try_from(s).ok().filter(|&s| s as u64 <= MAX_SAMPLES)
        };
        let (first, last) = (to_sample(time("beginTime")?)?, to_sample(time("endTime")?)?);
        let after_previous = out.last().is_none_or(|p| first >= p.last);
        if first >= last || !after_previous || out.len() == MAX_EPOCHS {
            return None;
        }
        out.push(Epoch { first, last, disk });
        disk += last - first;
    }
    (disk == samples && !out.is_empty()).then_some(out)
}

/// The head frame of MNE (`get_ras_to_neuromag_trans`): x from the left to the right
/// preauricular point, y through the nasion, origin on the line between the ears.
fn head_frame(nasion: [f64; 3], lpa: [f64; 3], rpa: [f64; 3]) -> Option<[[f64; 3]; 4]> {
    let sub = |a: [f64; 3], b: [f64; 3]| -> [f64; 3] { std::array::from_fn(|i| a[i] - b[i]) };
    let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let unit = |a: [f64; 3]| {
        let n = dot(a, a).sqrt();
        (n > 0.0 && n.is_finite()).then(|| [a[0] / n, a[1] / n, a[2] / n])
    };
    let ex = unit(sub(rpa, lpa))?;
    let along = dot(sub(nasion, lpa), ex);
    let origin: [f64; 3] = std::array::from_fn(|i| lpa[i] + along * ex[i]);
    let ey = unit(sub(nasion, origin))?;
    let ez = [
        ex[1] * ey[2] - ex[2] * ey[1],
        ex[2] * ey[0] - ex[0] * ey[2],
        ex[0] * ey[1] - ex[1] * ey[0],
    ];
    Some([ex, ey, ez, origin])
}

/// The EEG channels' names and positions (metres, head frame) from `coordinates.xml`, for
/// the sensors `numbers` (sensorLayout's EEG and reference sensors) in the file's order; `None`
/// where they do not name exactly `count` channels.
fn names_and_positions(
    root: Node,
    numbers: &[u64],
    count: usize,
) -> Option<Vec<(String, Option<[f64; 3]>)>> {
    let layout = child(root, "sensorLayout")?;
    let (mut nasion, mut lpa, mut rpa) = (None, None, None);
    let mut chans: Vec<(String, [f64; 3])> = Vec::new();
    for s in children(child(layout, "sensors")?, "sensor") {
        let number = text(s, "number").and_then(|n| n.parse::<u64>().ok());
        // mffpy reads coordinates as float32; MNE turns centimetres into metres.
        let coord = |k| {
            text(s, k)
                .and_then(|v| v.parse::<f32>().ok())
                .unwrap_or(0.0) as f64
        };
        let pos = [coord("x") / 100.0, coord("y") / 100.0, coord("z") / 100.0];
        let name = text(s, "name").filter(|n| !n.is_empty() && *n != "None");
        match name {
            Some("Nasion") => nasion = Some(pos),
            Some("Left periauricular point") => lpa = Some(pos),
            Some("Right periauricular point") => rpa = Some(pos),
            _ => {
                let Some(number) = number.filter(|n| numbers.contains(n)) else {
                    continue;
                };
                let name = name.map_or_else(|| format!("E{number}"), str::to_string);
                chans.push((name, pos));
            }
        }
    }
    if chans.len() != count {
        return None;
    }
    let frame = match (nasion, lpa, rpa) {
        (Some(n), Some(l), Some(r)) => head_frame(n, l, r),
        _ => None,
    };
    let to_head = |p: [f64; 3]| match frame {
        Some([ex, ey, ez, o]) => {
            let d = [p[0] - o[0], p[1] - o[1], p[2] - o[2]];
            let dot = |a: [f64; 3]| a[0] * d[0] + a[1] * d[1] + a[2] * d[2];
            [dot(ex), dot(ey), dot(ez)]
        }
        None => p,
    };
    let placed = |p: [f64; 3]| {
        let ok = p.iter().all(|v| v.is_finite()) && p.iter().any(|&v| v != 0.0);
        ok.then_some(p)
    };
    Some(
        (chans.into_iter())
            .map(|(name, p)| (name, placed(to_head(p))))
            .collect(),
    )
}

/// The event codes in order of first appearance, each with its events' samples (MNE's
/// `round(seconds from recordTime x rate)`, half to even).
fn read_events(
    dir: &Path,
    record: &DateTime<FixedOffset>,
    fs: f64,
    warnings: &mut Vec<String>,
) -> Result<Vec<(String, Vec<i64>)>, ReadError> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| ReadError::io(dir, e))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("Events") && n.ends_with(".xml"))
        .collect();
    names.sort();
    let mut codes: Vec<(String, Vec<i64>)> = Vec::new();
    for name in names {
        let found = with_xml(dir, &name, |root| {
            for e in children(root, "event") {
                let Some((begin, _)) = text(e, "beginTime").and_then(parse_time) else {
                    continue;
                };
                // mffpy writes an empty code as Python's "None".
                let code = text(e, "code").filter(|c| !c.is_empty()).unwrap_or("None");
                let Some(us) = (begin - record).num_microseconds() else {
                    continue;
                };
                let sample = (us as f64 / 1e6 * fs).round_ties_even() as i64;
                match codes.iter().position(|(c, _)| c == code) {
                    Some(k) => codes[k].1.push(sample),
                    None if codes.len() < MAX_CODES => codes.push((code.into(), vec![sample])),
                    None => {}
                }
            }
        });
        if let Err(e) = found {
            warnings.push(format!("{e}: its events are left out"));
        }
    }
    Ok(codes)
}

/// A signal file: the kind `infoN.xml` says (`EEG`, `PNSData`), `signalN.bin`, and the
/// `GCAL` calibration mffpy applies ((channel from 1, factor) pairs).
type Signal = (String, PathBuf, Vec<(usize, f32)>);

/// The signal files, by number.
fn signal_files(dir: &Path) -> Result<Vec<Signal>, ReadError> {
    let mut found: Vec<(u64, Signal)> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| ReadError::io(dir, e))? {
        let Some(name) = entry.ok().and_then(|e| e.file_name().into_string().ok()) else {
            continue;
        };
        if !name.contains("signal") || !name.ends_with(".bin") || name.starts_with('.') {
            continue;
        }
        let digits = name.chars().skip_while(|c| !c.is_ascii_digit());
        let Ok(n) = digits
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
        else {
            continue;
        };
        let kind_and_gcal = with_xml(dir, &format!("info{n}.xml"), |root| {
            let kind = (child(root, "generalInformation"))
                .and_then(|g| child(g, "fileDataType"))
                .and_then(|t| t.children().find(|c| c.is_element()))?;
            // mffpy applies GCAL where it begins at the recording's start.
            let gcal = (child(root, "calibrations").into_iter())
                .flat_map(|c| children(c, "calibration"))
                .filter(|c| text(*c, "type") == Some("GCAL"))
                .filter(|c| text(*c, "beginTime").and_then(|t| t.parse::<f64>().ok()) == Some(0.0))
                .flat_map(|c| {
                    child(c, "channels")
                        .into_iter()
                        .flat_map(|c| children(c, "ch"))
                })
                .filter_map(|ch| {
                    let v = ch.text().and_then(|t| t.trim().parse().ok())?;
                    Some((ch.attribute("n")?.parse().ok()?, v))
                })
                .collect();
            Some((kind.tag_name().name().to_string(), gcal))
        })?;
        let Some((kind, gcal)) = kind_and_gcal.flatten() else {
            continue;
        };
        let signal = (kind, dir.join(&name), gcal);
        found.push((n, signal));
    }
    found.sort_by_key(|f| f.0);
    Ok(found.into_iter().map(|f| f.1).collect())
}

/// The samples: EEG and PNS from their files along the epochs, the stim channels from the
/// events.
struct MffSource {
    eeg: SignalFile,
    pns: Option<SignalFile>,
    pns_channels: usize,
    epochs: Vec<Epoch>,
    /// Per event code, the samples (sorted, on the time axis) where its channel holds k.
    stim: Vec<Vec<usize>>,
}

impl MffSource {
    fn along_epochs(&self, file: &SignalFile, channel: usize, start: usize, out: &mut [f32]) {
        out.fill(0.0);
        let end = start + out.len();
        let mut i = self.epochs.partition_point(|e| e.last <= start);
        while let Some(e) = self.epochs.get(i).filter(|e| e.first < end) {
            let (a, b) = (start.max(e.first), end.min(e.last));
            file.read(
                channel,
                e.disk + (a - e.first),
                &mut out[a - start..b - start],
            );
            i += 1;
        }
    }
}

impl SampleSource for MffSource {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        let eeg = self.eeg.channels;
        let stim = eeg + self.stim.len();
        if signal < eeg {
            self.along_epochs(&self.eeg, signal, start, out);
        } else if let Some(samples) = self.stim.get(signal - eeg) {
            out.fill(0.0);
            let (from, end) = (samples.partition_point(|&s| s < start), start + out.len());
            for &s in samples[from..].iter().take_while(|&&s| s < end) {
                out[s - start] = (signal - eeg + 1) as f32;
            }
        } else if let Some(pns) = self
            .pns
            .as_ref()
            .filter(|_| signal - stim < self.pns_channels)
        {
            self.along_epochs(pns, signal - stim, start, out);
        } else {
            out.fill(0.0);
        }
        Ok(())
    }

    fn release_pages(&self) {
        super::release_mapped_pages(&self.eeg.map);
        if let Some(p) = &self.pns {
            super::release_mapped_pages(&p.map);
        }
    }
}

/// Events of a stim channel holding `code` at `samples` (sorted, unique) of `n`, as
/// `stim_steps` finds them: one per run of neighbouring samples, none for a run at sample 0.
fn steps(samples: &[usize], n: usize) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for &s in samples.iter().filter(|&&s| s < n) {
        if let Some(last) = out.last_mut()
            && last.0 + last.1 == s
        {
            last.1 += 1;
        } else {
            out.push((s, 1));
        }
    }
    out.retain(|&(first, _)| first > 0);
    out
}

pub fn open(path: &Path) -> Result<Recording, ReadError> {
    let dir = folder_of(path).ok_or_else(|| {
        ReadError::invalid(path, "not an MFF: a folder named *.mff holding info.xml")
    })?;
    let dir = dir.as_path();
    let mut warnings = Vec::new();
    let record = with_xml(dir, "info.xml", |root| {
        text(root, "recordTime").and_then(parse_time)
    })?
    .flatten();
    if record.is_none() {
        warnings.push("info.xml gives no readable recordTime: the start is unknown".into());
    }
    let files = signal_files(dir)?;
    let Some(eeg) = files.iter().find(|f| f.0 == "EEG") else {
        return Err(ReadError::invalid(
            dir,
            "no EEG signal file: no signalN.bin has an infoN.xml that says EEG",
        ));
    };
    let eeg = SignalFile::index(eeg, &mut warnings)?;
    let fs = eeg.rate as f64;

    let nanos = record.is_some_and(|(_, digits)| digits == 9);
    let epochs = with_xml(dir, "epochs.xml", |root| {
        epochs_of(root, eeg.rate, nanos, eeg.samples)
    })?;
    let epochs = epochs.flatten().unwrap_or_else(|| {
        warnings.push(format!(
            "epochs.xml is missing or does not match the {} samples of the EEG: read as one \
             stretch without gaps (MNE-Python refuses the file)",
            eeg.samples
        ));
        vec![Epoch {
            first: 0,
            last: eeg.samples,
            disk: 0,
        }]
    });
    let n = epochs.last().map_or(0, |e| e.last);

    // The EEG sensors: sensorLayout's type 0 (EEG) and 1 (reference), in order.
    let numbers = with_xml(dir, "sensorLayout.xml", |root| {
        let sensors = child(root, "sensors").into_iter();
        (sensors.flat_map(|s| children(s, "sensor")))
            .filter(|s| matches!(text(*s, "type"), Some("0" | "1")))
            .filter_map(|s| text(s, "number")?.parse::<u64>().ok())
            .collect::<Vec<u64>>()
    })?;
    let mut numbers = numbers.unwrap_or_default();
    if numbers.len() != eeg.channels {
        warnings.push(format!(
            "sensorLayout.xml lists {} EEG sensors for {} channels: named E1.. in order",
            numbers.len(),
            eeg.channels
        ));
        numbers = (1..=eeg.channels as u64).collect();
    }
    let placed = with_xml(dir, "coordinates.xml", |root| {
        names_and_positions(root, &numbers, eeg.channels)
    })?;
    let eeg_names = placed.clone().flatten().unwrap_or_else(|| {
        if placed.is_some() {
            warnings.push("coordinates.xml does not match the EEG channels: no positions".into());
        }
        numbers.iter().map(|n| (format!("E{n}"), None)).collect()
    });

    let codes = match &record {
        Some((t, _)) => read_events(dir, t, fs, &mut warnings)?,
        None => Vec::new(),
    };

    // PNS: names and units from pnsSet.xml, samples from the PNSData file at the EEG's rate.
    let mut pns = None;
    let mut pns_sensors: Vec<(String, String)> = Vec::new();
    if let Some(file) = files.iter().find(|f| f.0 == "PNSData") {
        pns_sensors = with_xml(dir, "pnsSet.xml", |root| {
            let sensors = child(root, "sensors").into_iter();
            (sensors.flat_map(|s| children(s, "sensor")))
                .map(|s| {
                    let field = |k| text(s, k).unwrap_or("").to_string();
                    (field("name"), field("unit"))
                })
                .collect()
        })?
        .unwrap_or_default();
        let file = SignalFile::index(file, &mut warnings)?;
        if pns_sensors.is_empty() || file.rate != eeg.rate {
            warnings.push(format!(
                "the PNS channels (at {} Hz, the EEG at {} Hz) are left out: ede reads them \
                 named by pnsSet.xml at the EEG's rate",
                file.rate, eeg.rate
            ));
        } else {
            if pns_sensors.len() != file.channels {
                warnings.push(format!(
                    "pnsSet.xml names {} PNS channels, the PNS file holds {}",
                    pns_sensors.len(),
                    file.channels
                ));
                pns_sensors.truncate(file.channels);
            }
            pns = Some(file);
        }
    }
    if pns.is_none() {
        pns_sensors.clear();
    }

    let signal = |label: &str, unit: &str, kind, range| SignalInfo {
        kind,
        ..SignalInfo::continuous(label.to_string(), unit.to_string(), fs, n, range)
    };
    const UV: (f64, f64) = (-3200.0, 3200.0);
    let mut signals: Vec<SignalInfo> = (eeg_names.into_iter())
        .map(|(name, position)| SignalInfo {
            position,
            ..signal(&name, "uV", ChannelType::Eeg, UV)
        })
        .collect();
    let codes_range = (0.0, codes.len() as f64);
    signals.extend((codes.iter()).map(|(c, _)| signal(c, "", ChannelType::Stim, codes_range)));
    for (name, unit) in &pns_sensors {
        let kind = match name.as_str() {
            "ECG" => ChannelType::Ecg,
            n if n.contains("EMG") => ChannelType::Emg,
            _ => ChannelType::Misc,
        };
        let (unit, range) = if unit == "uV" {
            ("uV", UV)
        } else {
            ("", (-1.0, 1.0))
        };
        signals.push(signal(name, unit, kind, range));
    }
    mark_bads(dir, &mut signals, eeg.channels, codes.len())?;

    let mut annotations = Vec::new();
    for pair in epochs.windows(2) {
        let gap = pair[1].first - pair[0].last;
        if gap > 0 {
            annotations.push(Annotation {
                onset: (pair[0].last as f64 - 0.5) / fs,
                duration: gap as f64 / fs,
                text: "BAD_ACQ_SKIP".into(),
            });
        }
    }
    if let Some(p) = &pns {
        if p.samples + 1 == eeg.samples {
            warnings.push("the PNS file is one sample short (EGI's PSG sample bug)".into());
            annotations.push(Annotation {
                onset: n.saturating_sub(1) as f64 / fs,
                duration: 1.0 / fs,
                text: "BAD_EGI_PSG".into(),
            });
        } else if p.samples != eeg.samples {
            warnings.push(format!(
                "the PNS file holds {} samples, the EEG {}: its missing end reads as 0",
                p.samples, eeg.samples
            ));
        }
    }
    let mut stim = Vec::with_capacity(codes.len());
    for (k, (code, samples)) in codes.iter().enumerate() {
        let mut on: Vec<usize> = (samples.iter())
            .filter_map(|&s| usize::try_from(s).ok().filter(|&s| s < n))
            .collect();
        on.sort_unstable();
        on.dedup();
        let found = steps(&on, n);
        // As `stim_events`: a channel stepping up at more than one sample in 20 is analog.
        if found.len() * 20 > n {
            warnings.push(format!(
                "{code}: its value steps up at {} of {n} samples, an analog signal rather than \
                 trigger codes: no events made of it",
                found.len()
            ));
        } else {
            for (first, len) in found {
                annotations.push(Annotation {
                    onset: first as f64 / fs,
                    duration: len as f64 / fs,
                    text: Annotation::on_channel(&(k + 1).to_string(), code.trim()),
                });
            }
        }
        stim.push(on);
    }
    annotations.sort_by(|a, b| a.onset.total_cmp(&b.onset));

    let start = record.map_or_else(unknown_start, |(t, _)| t.naive_utc());
    let source = MffSource {
        eeg,
        pns_channels: pns_sensors.len(),
        pns,
        epochs,
        stim,
    };
    Ok(Recording::continuous(
        Some(dir.to_path_buf()),
        Format::Mff,
        start,
        signals,
        annotations,
        warnings,
        n as f64 / fs,
        Arc::new(source),
    ))
}

/// Bad channels from `categories.xml` (segmented files): the union over every segment of
/// the channels excluded as `badChannels`, EEG (`signalBin` 1) and PNS (2) numbered from 1.
fn mark_bads(
    dir: &Path,
    signals: &mut [SignalInfo],
    eeg: usize,
    stim: usize,
) -> Result<(), ReadError> {
    let lists = with_xml(dir, "categories.xml", |root| {
        let lists =
            (root.descendants()).filter(|n| n.attribute("exclusion") == Some("badChannels"));
        let bin_and_text = |n: Node| Some((n.attribute("signalBin")?.into(), n.text()?.into()));
        lists
            .filter_map(bin_and_text)
            .collect::<Vec<(String, String)>>()
    })?;
    for (bin, list) in lists.unwrap_or_default() {
        let (offset, count) = match bin.as_str() {
            "1" => (0, eeg),
            "2" => (eeg + stim, signals.len() - eeg - stim),
            _ => continue,
        };
        let numbers = list
            .split_whitespace()
            .filter_map(|k| k.parse::<usize>().ok());
        for k in numbers.filter(|k| (1..=count).contains(k)) {
            signals[offset + k - 1].bad = true;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block of `nc` channels (channel after channel), with its header or without one.
    fn block(nc: usize, header: bool, values: &[f32]) -> Vec<u8> {
        let samples = values.len() / nc;
        let mut words = vec![u32::from(header)];
        if header {
            words.extend([20 + 8 * nc, values.len() * 4, nc].map(|v| v as u32));
            words.extend((0..nc).map(|c| (c * samples * 4) as u32));
            words.extend((0..nc).map(|_| (250 << 8) | 32));
            words.push(0);
        }
        let values = values.iter().map(|v| v.to_bits());
        words
            .into_iter()
            .chain(values)
            .flat_map(u32::to_le_bytes)
            .collect()
    }

    /// Two EEG channels in two blocks (the second without a header), two epochs with a gap of
    /// two samples, one PNS channel, one event 8 ms in.
    fn write_mff(dir: &Path) -> PathBuf {
        let mff = dir.join("t.mff");
        std::fs::create_dir_all(&mff).unwrap();
        let info = |kind: &str, cal: &str| {
            format!(
                "<dataInfo><generalInformation><fileDataType><{kind}/></fileDataType>\
                 </generalInformation>{cal}</dataInfo>"
            )
        };
        let sensor = |name: &str, n: u32, [x, y, z]: [f32; 3]| {
            format!(
                "<sensor><name>{name}</name><number>{n}</number>\
                 <x>{x}</x><y>{y}</y><z>{z}</z></sensor>"
            )
        };
        let sensors = [
            sensor("", 1, [1.0, 2.0, 3.0]),
            sensor("Cz", 2, [0.0, 0.0, 9.0]),
            sensor("Nasion", 3, [0.0, 10.0, 0.0]),
            sensor("Left periauricular point", 4, [-8.0, 0.0, 0.0]),
            sensor("Right periauricular point", 5, [8.0, 0.0, 0.0]),
        ];
        let coordinates = format!(
            "<coordinates><sensorLayout><sensors>{}</sensors></sensorLayout></coordinates>",
            sensors.concat()
        );
        let gcal = "<calibrations><calibration><beginTime>0</beginTime><type>GCAL</type>\
                    <channels><ch n=\"2\">2.0</ch></channels></calibration></calibrations>";
        let xml = [
            (
                "info.xml",
                "<fileInfo><recordTime>2020-01-29T06:19:39.202537-08:00</recordTime>\
                 </fileInfo>",
            ),
            (
                "pnsSet.xml",
                "<PNSSet><sensors><sensor><name>ECG</name><unit>uV</unit></sensor>\
                 </sensors></PNSSet>",
            ),
            (
                "epochs.xml",
                "<epochs><epoch><beginTime>0</beginTime><endTime>48000</endTime></epoch>\
                 <epoch><beginTime>56000</beginTime><endTime>104000</endTime></epoch></epochs>",
            ),
            (
                "sensorLayout.xml",
                "<sensorLayout><sensors><sensor><number>1</number><type>0</type></sensor>\
                 <sensor><number>2</number><type>1</type></sensor></sensors></sensorLayout>",
            ),
            (
                "Events_User.xml",
                "<eventTrack><event><code>stim</code>\
                 <beginTime>2020-01-29T06:19:39.210537-08:00</beginTime></event></eventTrack>",
            ),
            ("info1.xml", &info("EEG", gcal)),
            ("info2.xml", &info("PNSData", "")),
            ("coordinates.xml", &coordinates),
        ];
        for (name, text) in xml {
            std::fs::write(mff.join(name), text).unwrap();
        }
        // Channel 1 counts 0, 1, 2 ..., channel 2 down: 12 samples a block.
        let ramp = |from: usize| -> Vec<f32> {
            let up = (from..from + 12).map(|k| k as f32);
            up.clone().chain(up.map(|v| -v)).collect()
        };
        let signal = [block(2, true, &ramp(0)), block(2, false, &ramp(12))].concat();
        std::fs::write(mff.join("signal1.bin"), signal).unwrap();
        std::fs::write(mff.join("signal2.bin"), block(1, true, &[9.0; 24])).unwrap();
        mff
    }

    #[test]
    fn a_small_mff_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let mff = write_mff(dir.path());
        assert!(is_companion(&mff) && is_companion(&mff.join("signal1.bin")));
        assert!(!is_companion(dir.path()));
        let rec = open(&mff.join("signal1.bin")).unwrap();
        let labels: Vec<(&str, ChannelType)> = (rec.signals.iter())
            .map(|s| (s.label.as_str(), s.kind))
            .collect();
        use ChannelType::*;
        assert_eq!(
            labels,
            [("E1", Eeg), ("Cz", Eeg), ("stim", Stim), ("ECG", Ecg)]
        );
        // The gap of two samples after the first epoch reads as 0; GCAL scales Cz.
        let e1: Vec<f32> = (0..26)
            .map(|k| match k {
                0..12 => k as f32,
                12..14 => 0.0,
                _ => (k - 2) as f32,
            })
            .collect();
        assert_eq!(rec.read_all(0).unwrap(), e1);
        let cz: Vec<f32> = e1.iter().map(|v| -2.0 * v).collect();
        assert_eq!(rec.read_all(1).unwrap(), cz);
        assert_eq!(rec.read_all(2).unwrap()[2], 1.0);
        assert_eq!(rec.read_all(3).unwrap()[13..15], [0.0, 9.0]);
        let mut part = [0f32; 3];
        rec.read(0, 13, &mut part).unwrap();
        assert_eq!(part, [0.0, 12.0, 13.0]);
        let p = rec.signals[0].position.unwrap();
        assert!((p[0] - 0.01).abs() + (p[1] - 0.02).abs() < 1e-9, "{p:?}");
        assert_eq!(rec.start.to_string(), "2020-01-29 14:19:39.202537");
        let texts: Vec<&str> = rec.annotations.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(texts, ["1@@stim", "BAD_ACQ_SKIP"]);
        let gap = &rec.annotations[1];
        assert!((gap.onset - 11.5 / 250.0).abs() + (gap.duration - 2.0 / 250.0).abs() < 1e-12);
    }

    #[test]
    fn damaged_signal_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let mff = write_mff(dir.path());
        let path = mff.join("signal1.bin");
        let signal = std::fs::read(&path).unwrap();
        // Every truncation opens or fails with an error: none panics.
        for n in 0..signal.len() {
            std::fs::write(&path, &signal[..n]).unwrap();
            if let Ok(rec) = open(&mff) {
                for i in 0..rec.signals.len() {
                    rec.read_all(i).unwrap();
                }
            }
        }
        std::fs::write(&path, [&[7u8][..], &signal[1..]].concat()).unwrap();
        assert!(open(&mff).unwrap_err().to_string().contains("damaged"));
        std::fs::remove_file(mff.join("info1.xml")).unwrap();
        assert!(open(&mff).unwrap_err().to_string().contains("no EEG"));
    }
}
