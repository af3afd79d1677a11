//! XDF (what LabRecorder writes from Lab Streaming Layer streams): chunks of several streams,
//! each stream with an XML header, sample chunks (time stamps on some samples), clock offsets
//! and a footer. ede shows one regularly sampled stream: the EEG stream (type EEG, else the
//! regular stream with most channels), or the one `OpenOptions::xdf_stream` names. Clock
//! offsets are applied as pyxdf applies them (a line fitted through each stream's offsets),
//! marker streams' samples become events, and irregular numeric streams are left out with a
//! warning. The chosen stream's samples are decoded into memory at open: XDF interleaves
//! streams and time stamps, so no sample has a fixed place in the file.

use std::collections::BTreeMap;
use std::path::Path;

use super::binary::MatrixSource;
use super::channel::unit_from_lsl;
use super::{Annotation, ChannelType, Format, ReadError, Recording, in_memory, unknown_start};

/// The most samples (times channels) ede decodes from one stream.
const MAX_VALUES: usize = 1 << 30;

pub fn sniff(head: &[u8]) -> bool {
    head.starts_with(b"XDF:")
}

#[derive(Default)]
struct Stream {
    name: String,
    kind: String,
    channels: usize,
    srate: f64,
    format: String,
    labels: Vec<String>,
    units: Vec<String>,
    types: Vec<String>,
    /// One value per channel per sample, in order (strings for marker streams).
    values: Vec<f32>,
    strings: Vec<String>,
    stamps: Vec<f64>,
    /// (collection time, offset) pairs.
    offsets: Vec<(f64, f64)>,
}

impl Stream {
    fn regular(&self) -> bool {
        self.srate > 0.0 && self.format != "string"
    }

    fn samples(&self) -> usize {
        self.stamps.len()
    }

    /// The stream's clock mapped onto the recording computer's: t + a + b t, the line through
    /// its offsets (pyxdf's synchronisation, without its outlier weighting).
    fn correct(&self, t: f64) -> f64 {
        let n = self.offsets.len() as f64;
        if self.offsets.is_empty() {
            return t;
        }
        if self.offsets.len() == 1 {
            return t + self.offsets[0].1;
        }
        let (mx, my) = self
            .offsets
            .iter()
            .fold((0.0, 0.0), |(a, b), &(x, y)| (a + x / n, b + y / n));
        let sxx: f64 = self.offsets.iter().map(|&(x, _)| (x - mx) * (x - mx)).sum();
        let sxy: f64 = self.offsets.iter().map(|&(x, y)| (x - mx) * (y - my)).sum();
        let b = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        t + my + b * (t - mx)
    }
}

/// A tiny reader of the XML the headers carry: the text of the first `<tag>` inside `xml`.
fn tag<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let a = xml.find(&open)? + open.len();
    let b = a + xml[a..].find(&close)?;
    Some(xml[a..b].trim())
}

/// Every `<tag>…</tag>` inside `xml`.
fn tags<'a>(xml: &'a str, name: &str) -> Vec<&'a str> {
    let (open, close) = (format!("<{name}>"), format!("</{name}>"));
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(a) = rest.find(&open) {
        let from = a + open.len();
        let Some(b) = rest[from..].find(&close) else {
            break;
        };
        out.push(&rest[from..from + b]);
        rest = &rest[from + b + close.len()..];
    }
    out
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = (self.at.checked_add(n))
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| format!("the file is truncated at byte {}", self.at))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    /// XDF's variable-length integer: a byte saying 1, 4 or 8, then that many bytes.
    fn varlen(&mut self) -> Result<u64, String> {
        Ok(match self.u8()? {
            1 => self.u8()? as u64,
            4 => u32::from_le_bytes(self.take(4)?.try_into().unwrap_or_default()) as u64,
            8 => u64::from_le_bytes(self.take(8)?.try_into().unwrap_or_default()),
            n => return Err(format!("a length of {n} bytes at byte {}", self.at - 1)),
        })
    }

    fn f64(&mut self) -> Result<f64, String> {
        Ok(f64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or_default(),
        ))
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or_default(),
        ))
    }
}

fn value_bytes(format: &str) -> Option<usize> {
    Some(match format {
        "int8" => 1,
        "int16" => 2,
        "int32" | "float32" => 4,
        "int64" | "double64" => 8,
        _ => return None,
    })
}

fn decode(format: &str, b: &[u8]) -> f32 {
    let a = |n: usize| {
        let mut x = [0u8; 8];
        x[..n].copy_from_slice(&b[..n]);
        x
    };
    match format {
        "int8" => b[0] as i8 as f32,
        "int16" => i16::from_le_bytes([b[0], b[1]]) as f32,
        "int32" => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32,
        "float32" => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        "int64" => i64::from_le_bytes(a(8)) as f32,
        _ => f64::from_le_bytes(a(8)) as f32,
    }
}

/// What a file holds: its streams by id, and the file header's `<datetime>` (LabRecorder
/// writes when the recording started, as local time with its offset).
struct Parsed {
    streams: BTreeMap<u32, Stream>,
    started: Option<chrono::NaiveDateTime>,
}

fn parse(bytes: &[u8], want: Option<&str>) -> Result<Parsed, String> {
    if !sniff(bytes) {
        return Err("not an XDF file: it does not start with \"XDF:\"".into());
    }
    let mut c = Cursor { b: bytes, at: 4 };
    let mut streams: BTreeMap<u32, Stream> = BTreeMap::new();
    let mut started = None;
    let mut decoded = 0usize;
    while c.at < bytes.len() {
        let len = c.varlen()? as usize;
        if len < 2 {
            return Err(format!("a chunk of {len} bytes at byte {}", c.at));
        }
        let body = c.take(len)?;
        let mut k = Cursor { b: body, at: 0 };
        let tag_id = u16::from_le_bytes([k.u8()?, k.u8()?]);
        match tag_id {
            1 => {
                let xml = String::from_utf8_lossy(&body[k.at..]);
                started = tag(&xml, "datetime").and_then(|d| {
                    chrono::DateTime::parse_from_str(d, "%Y-%m-%dT%H:%M:%S%z")
                        .map(|t| t.naive_local())
                        .or_else(|_| chrono::NaiveDateTime::parse_from_str(d, "%Y-%m-%dT%H:%M:%S"))
                        .ok()
                });
            }
            2 => {
                let id = k.u32()?;
                let xml = String::from_utf8_lossy(&body[k.at..]).into_owned();
                let channels: Vec<&str> = tags(&xml, "channel");
                let field = |name: &str| -> Vec<String> {
                    (channels.iter())
                        .map(|ch| unescape(tag(ch, name).unwrap_or("")))
                        .collect()
                };
                let s = Stream {
                    name: unescape(tag(&xml, "name").unwrap_or("")),
                    kind: unescape(tag(&xml, "type").unwrap_or("")),
                    channels: (tag(&xml, "channel_count").and_then(|v| v.parse().ok()))
                        .filter(|&n: &usize| (1..=100_000).contains(&n))
                        .ok_or_else(|| format!("stream {id} has no channel count"))?,
                    srate: tag(&xml, "nominal_srate")
                        .and_then(|v| v.parse().ok())
                        .filter(|v: &f64| v.is_finite())
                        .unwrap_or(0.0),
                    format: tag(&xml, "channel_format").unwrap_or("float32").to_string(),
                    labels: field("label"),
                    units: field("unit"),
                    types: field("type"),
                    ..Default::default()
                };
                streams.insert(id, s);
            }
            3 => {
                let id = k.u32()?;
                let Some(s) = streams.get_mut(&id) else {
                    return Err(format!("samples of stream {id} before its header"));
                };
                let keep = match want {
                    Some(w) => w == s.name || w == id.to_string() || s.srate == 0.0,
                    None => true,
                };
                let n = k.varlen()? as usize;
                let width = value_bytes(&s.format);
                let mut last = s.stamps.last().copied();
                for _ in 0..n {
                    let stamp = match k.u8()? {
                        0 => None,
                        8 => Some(k.f64()?),
                        b => return Err(format!("a time stamp of {b} bytes in stream {id}")),
                    };
                    let t = match (stamp, last) {
                        (Some(t), _) => t,
                        (None, Some(p)) if s.srate > 0.0 => p + 1.0 / s.srate,
                        (None, p) => p.unwrap_or(0.0),
                    };
                    last = Some(t);
                    match width {
                        Some(w) => {
                            let row = k.take(w * s.channels)?;
                            if keep {
                                decoded += s.channels;
                                if decoded > MAX_VALUES {
                                    return Err(format!(
                                        "stream {} holds more than {MAX_VALUES} values: too \
                                         large to show",
                                        s.name
                                    ));
                                }
                                s.values
                                    .extend(row.chunks_exact(w).map(|b| decode(&s.format, b)));
                            }
                        }
                        None => {
                            let mut text = Vec::with_capacity(s.channels);
                            for _ in 0..s.channels {
                                let l = k.varlen()? as usize;
                                text.push(String::from_utf8_lossy(k.take(l)?).into_owned());
                            }
                            if keep {
                                s.strings.push(text.join(", "));
                            }
                        }
                    }
                    if keep {
                        s.stamps.push(t);
                    }
                }
            }
            4 => {
                let id = k.u32()?;
                let (t, o) = (k.f64()?, k.f64()?);
                if let Some(s) = streams.get_mut(&id) {
                    s.offsets.push((t, o));
                }
            }
            _ => {}
        }
    }
    Ok(Parsed { streams, started })
}

/// Opens the EEG stream of an XDF file (or the stream `want` names: its name or id).
pub fn open(path: &Path, want: Option<&str>) -> Result<Recording, ReadError> {
    let map = MatrixSource::map(path)?;
    if map.is_empty() {
        return Err(ReadError::invalid(path, "the file is empty"));
    }
    let Parsed { streams, started } = parse(&map, want).map_err(|e| ReadError::invalid(path, e))?;
    let describe = |s: &Stream| {
        let rate = if s.srate > 0.0 {
            format!("{} Hz", s.srate)
        } else {
            "irregular".into()
        };
        format!("{} ({}, {} ch, {rate})", s.name, s.kind, s.channels)
    };
    let chosen = match want {
        Some(w) => (streams.iter())
            .find(|(id, s)| s.name == w || id.to_string() == w)
            .map(|(id, _)| *id)
            .ok_or_else(|| {
                let all: Vec<String> = streams.values().map(describe).collect();
                ReadError::invalid(path, format!("no stream {w:?}; it has {}", all.join("; ")))
            })?,
        None => {
            let regular = || streams.iter().filter(|(_, s)| s.regular());
            (regular().find(|(_, s)| s.kind.eq_ignore_ascii_case("EEG")))
                .or_else(|| regular().max_by_key(|(_, s)| s.channels))
                .map(|(id, _)| *id)
                .ok_or_else(|| {
                    let all: Vec<String> = streams.values().map(describe).collect();
                    ReadError::invalid(
                        path,
                        format!(
                            "no regularly sampled stream to show; it has {}",
                            if all.is_empty() {
                                "none".into()
                            } else {
                                all.join("; ")
                            }
                        ),
                    )
                })?
        }
    };
    let s = &streams[&chosen];
    if !s.regular() {
        return Err(ReadError::invalid(
            path,
            format!(
                "stream {} is irregular ({}); ede shows regularly sampled streams",
                s.name,
                if s.format == "string" {
                    "markers"
                } else {
                    "no nominal rate"
                }
            ),
        ));
    }
    // A stream whose header a second header chunk changed holds rows of two widths: keep
    // those that pair a time stamp with a full row.
    let n = s.samples().min(s.values.len() / s.channels.max(1));
    if n == 0 {
        return Err(ReadError::invalid(
            path,
            format!("stream {} has no samples", s.name),
        ));
    }
    let first = s.correct(s.stamps[0]);
    let mut warnings = Vec::new();
    let span = s.correct(s.stamps[n - 1]) - first;
    let expected = (n - 1) as f64 / s.srate;
    if (span - expected).abs() > 0.01 * expected.max(1.0) {
        warnings.push(format!(
            "the time stamps span {span:.3} s where {n} samples at {} Hz take {expected:.3} s: \
             samples were lost or the rate drifts; shown at the nominal rate",
            s.srate
        ));
    }
    let mut annotations = Vec::new();
    for (id, other) in &streams {
        if *id == chosen {
            continue;
        }
        if other.format == "string" {
            annotations.extend(other.stamps.iter().zip(&other.strings).map(|(&t, text)| {
                Annotation {
                    onset: other.correct(t) - first,
                    duration: 0.0,
                    text: text.clone(),
                }
            }));
        } else {
            warnings.push(format!("stream left out: {}", describe(other)));
        }
    }
    annotations.sort_by(|a, b| a.onset.total_cmp(&b.onset));
    let unit = |c: usize| unit_from_lsl(s.units.get(c).map_or("", String::as_str));
    let labels: Vec<(String, String, f64)> = (0..s.channels)
        .map(|c| {
            let label = (s.labels.get(c).filter(|l| !l.is_empty()))
                .cloned()
                .unwrap_or_else(|| format!("Ch{}", c + 1));
            (label, unit(c), s.srate)
        })
        .collect();
    let data: Vec<Vec<f32>> = (0..s.channels)
        .map(|c| (0..n).map(|k| s.values[k * s.channels + c]).collect())
        .collect();
    let mut rec = in_memory(
        Some(path.to_path_buf()),
        Format::Xdf,
        started.unwrap_or_else(unknown_start),
        labels,
        data,
        annotations,
        warnings,
    );
    for (c, sig) in rec.signals.iter_mut().enumerate() {
        if let Some(t) = s.types.get(c).and_then(|t| ChannelType::parse(t)) {
            sig.kind = t;
        }
    }
    rec.recording_info = format!("{} ({})", s.name, s.kind);
    rec.streams = (streams.values())
        .filter(|s| s.regular())
        .map(|s| s.name.clone())
        .collect();
    Ok(rec)
}
