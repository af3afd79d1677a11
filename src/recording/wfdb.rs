//! WFDB (PhysioNet, MIT-BIH) records: a `.hea` header, one or more signal files and an `.atr`
//! annotation file beside them.
//!
//! Signal formats 212, 16, 61, 80, 24 and 32 with one sample per frame are read, memory-mapped
//! and decoded on demand. Invalid samples (the format's most negative value) read as NaN.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use memmap2::Mmap;

use super::{Annotation, Format, ReadError, Recording, SampleSource, SignalInfo};

/// A record is named by its header path with or without `.hea`, or by any of its files
/// (signal `.dat`, annotations `.atr`, `.qrs`, `.ann`) that has a header beside it.
pub fn is_wfdb_path(path: &Path) -> bool {
    header_path(path).is_some()
}

fn header_path(path: &Path) -> Option<PathBuf> {
    if path.extension().is_some_and(|e| e == "hea") {
        return Some(path.to_path_buf());
    }
    if path.extension().is_some_and(|e| {
        ["dat", "atr", "qrs", "ann"]
            .iter()
            .any(|x| e.eq_ignore_ascii_case(x))
    }) {
        let hea = path.with_extension("hea");
        if hea.is_file() {
            return Some(hea);
        }
    }
    let mut with = path.as_os_str().to_owned();
    with.push(".hea");
    let with = PathBuf::from(with);
    with.is_file().then_some(with)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum SampleFormat {
    F212,
    F16,
    F61,
    F80,
    F24,
    F32,
}

impl SampleFormat {
    fn parse(code: u32) -> Option<Self> {
        Some(match code {
            212 => Self::F212,
            16 => Self::F16,
            61 => Self::F61,
            80 => Self::F80,
            24 => Self::F24,
            32 => Self::F32,
            _ => return None,
        })
    }

    /// Bytes taken by `n` samples (212 packs two samples in three bytes).
    fn bytes_for(self, n: usize) -> usize {
        match self {
            Self::F212 => (n * 3).div_ceil(2),
            Self::F16 | Self::F61 => n * 2,
            Self::F80 => n,
            Self::F24 => n * 3,
            Self::F32 => n * 4,
        }
    }

    /// The digital value of sample `i` of the file's interleaved sample stream, or `None` when
    /// it is the format's "invalid sample" marker.
    fn sample(self, data: &[u8], i: usize) -> Option<i32> {
        let (v, invalid) = match self {
            Self::F212 => {
                let b = &data[3 * (i / 2)..];
                let v = if i.is_multiple_of(2) {
                    (b[0] as i32) | (((b[1] & 0x0F) as i32) << 8)
                } else {
                    (b[2] as i32) | (((b[1] & 0xF0) as i32) << 4)
                };
                ((v << 20) >> 20, -2048)
            }
            Self::F16 => (
                i16::from_le_bytes([data[2 * i], data[2 * i + 1]]) as i32,
                -32768,
            ),
            Self::F61 => (
                i16::from_be_bytes([data[2 * i], data[2 * i + 1]]) as i32,
                -32768,
            ),
            Self::F80 => (data[i] as i32 - 128, -128),
            Self::F24 => (
                i32::from_le_bytes([0, data[3 * i], data[3 * i + 1], data[3 * i + 2]]) >> 8,
                -8_388_608,
            ),
            Self::F32 => (
                i32::from_le_bytes([
                    data[4 * i],
                    data[4 * i + 1],
                    data[4 * i + 2],
                    data[4 * i + 3],
                ]),
                i32::MIN,
            ),
        };
        (v != invalid).then_some(v)
    }
}

/// Where a signal's samples are: which file, its position in that file's frame.
struct Channel {
    file: usize,
    position: usize,
    gain: f64,
    baseline: f64,
}

struct DataFile {
    map: Option<Mmap>,
    format: SampleFormat,
    /// Signals interleaved in this file.
    width: usize,
    /// Byte offset of the first sample.
    offset: usize,
}

struct WfdbSource {
    files: Vec<DataFile>,
    channels: Vec<Channel>,
}

impl SampleSource for WfdbSource {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        let c = &self.channels[signal];
        let f = &self.files[c.file];
        let data = f.map.as_ref().map(|m| &m[f.offset..]).unwrap_or(&[]);
        for (j, o) in out.iter_mut().enumerate() {
            let i = (start + j) * f.width + c.position;
            *o = match f.format.sample(data, i) {
                Some(d) => ((d as f64 - c.baseline) / c.gain) as f32,
                None => f32::NAN,
            };
        }
        Ok(())
    }

    fn release_pages(&self) {
        for f in &self.files {
            if let Some(map) = &f.map {
                super::release_mapped_pages(map);
            }
        }
    }
}

struct SignalSpec {
    file_name: String,
    format: SampleFormat,
    offset: usize,
    gain: f64,
    baseline: f64,
    unit: String,
    adc_resolution: u32,
    adc_zero: f64,
    description: String,
}

/// Opens a WFDB record (path with or without `.hea`); its `.atr` annotations are read if present.
pub fn open(path: &Path) -> Result<Recording, ReadError> {
    let hea = header_path(path)
        .ok_or_else(|| ReadError::invalid(path, "no WFDB header (.hea) found for this record"))?;
    let text = std::fs::read(&hea).map_err(|e| ReadError::io(&hea, e))?;
    if text.len() > 1 << 20 {
        return Err(ReadError::invalid(
            &hea,
            "a WFDB header larger than 1 MB is not a header",
        ));
    }
    let text = String::from_utf8_lossy(&text);
    let mut lines = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty());
    let record_line = lines
        .next()
        .ok_or_else(|| ReadError::invalid(&hea, "the header is empty"))?;
    let fields: Vec<&str> = record_line.split_whitespace().collect();
    if fields[0].contains('/') {
        return Err(ReadError::invalid(
            &hea,
            "multi-segment WFDB records are not supported yet",
        ));
    }
    let nsig: usize = fields
        .get(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| ReadError::invalid(&hea, "the record line lacks the number of signals"))?;
    let fs = fields
        .get(2)
        .map(|s| s.split(['/', '(']).next().unwrap_or(""))
        .map(|s| s.parse::<f64>())
        .unwrap_or(Ok(250.0))
        .ok()
        .filter(|f| *f > 0.0 && f.is_finite())
        .ok_or_else(|| {
            ReadError::invalid(&hea, "the sampling frequency is not a positive number")
        })?;
    let declared_samples: Option<usize> = fields.get(3).and_then(|s| s.parse().ok());
    let start = parse_start(fields.get(4).copied(), fields.get(5).copied());
    let mut warnings = Vec::new();
    if nsig == 0 {
        return Err(ReadError::invalid(&hea, "the record has no signals"));
    }

    let dir = hea.parent().unwrap_or(Path::new("."));
    // No reservation by the declared count: a damaged header may declare billions.
    let mut specs = Vec::new();
    for i in 0..nsig {
        let line = lines.next().ok_or_else(|| {
            ReadError::invalid(
                &hea,
                format!("the header declares {nsig} signals but lists {i}"),
            )
        })?;
        specs
            .push(parse_signal_line(line).map_err(|why| {
                ReadError::invalid(&hea, format!("signal line {}: {why}", i + 1))
            })?);
    }

    // Group signals by file, keeping the order in which files first appear.
    let mut files: Vec<DataFile> = Vec::new();
    let mut file_names: Vec<&str> = Vec::new();
    let mut channels = Vec::with_capacity(specs.len());
    for s in &specs {
        let file = match file_names.iter().position(|n| *n == s.file_name) {
            Some(k) => {
                if files[k].format != s.format {
                    return Err(ReadError::invalid(
                        &hea,
                        format!("signals in {} use different formats", s.file_name),
                    ));
                }
                k
            }
            None => {
                file_names.push(&s.file_name);
                files.push(DataFile {
                    map: None,
                    format: s.format,
                    width: 0,
                    offset: s.offset,
                });
                files.len() - 1
            }
        };
        channels.push(Channel {
            file,
            position: files[file].width,
            gain: s.gain,
            baseline: s.baseline,
        });
        files[file].width += 1;
    }

    let mut samples = usize::MAX;
    for (f, name) in files.iter_mut().zip(&file_names) {
        let p = dir.join(name);
        let file = File::open(&p).map_err(|e| ReadError::io(&p, e))?;
        let len = file.metadata().map_err(|e| ReadError::io(&p, e))?.len() as usize;
        let data_len = len.saturating_sub(f.offset);
        // Samples whose bytes are all present (the last 212 pair may be half there).
        let whole_samples = match f.format {
            SampleFormat::F212 => data_len / 3 * 2 + usize::from(data_len % 3 >= 2),
            other => data_len / other.bytes_for(1),
        };
        let frames = whole_samples / f.width;
        samples = samples.min(frames);
        if len > 0 {
            // SAFETY: read-only map; see the EDF reader for the shared caveat.
            f.map = Some(unsafe { Mmap::map(&file) }.map_err(|e| ReadError::io(&p, e))?);
        }
    }
    if let Some(declared) = declared_samples {
        if declared > samples {
            warnings.push(format!(
                "the signal files hold {samples} samples per signal, the header declares {declared}; showing those present"
            ));
        } else {
            samples = declared;
        }
    }

    let signals = specs
        .iter()
        .map(|s| {
            let half = (1i64 << (s.adc_resolution.clamp(1, 32) - 1)) as f64;
            SignalInfo::continuous(
                s.description.clone(),
                s.unit.clone(),
                fs,
                samples,
                (
                    (s.adc_zero - half - s.baseline) / s.gain,
                    (s.adc_zero + half - 1.0 - s.baseline) / s.gain,
                ),
            )
        })
        .collect();

    let atr = hea.with_extension("atr");
    let annotations = if atr.is_file() {
        let bytes = std::fs::read(&atr).map_err(|e| ReadError::io(&atr, e))?;
        let (ann, trouble) = parse_atr(&bytes, fs);
        if let Some(t) = trouble {
            warnings.push(format!("{}: {t}", atr.display()));
        }
        ann
    } else {
        Vec::new()
    };

    let record_path = hea.with_extension("");
    Ok(Recording::continuous(
        Some(record_path),
        Format::Wfdb,
        start,
        signals,
        annotations,
        warnings,
        samples as f64 / fs,
        Arc::new(WfdbSource { files, channels }),
    ))
}

/// `file format[xN][:skew][+offset] gain[(baseline)][/unit] adcres adczero initval cksum bsize desc`
fn parse_signal_line(line: &str) -> Result<SignalSpec, String> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let file_name = f.first().ok_or("empty line")?.to_string();
    if file_name.contains(['/', '\\']) || file_name == ".." {
        return Err(format!(
            "signal file {file_name:?} is outside the record's folder"
        ));
    }
    let fmt_field = f.get(1).ok_or("no signal format")?;
    let (fmt_part, offset) = match fmt_field.split_once('+') {
        Some((a, o)) => (a, o.parse::<usize>().map_err(|_| "bad byte offset")?),
        None => (*fmt_field, 0),
    };
    let fmt_part = fmt_part.split(':').next().unwrap_or("");
    let (code, spf) = match fmt_part.split_once('x') {
        Some((c, n)) => (c, n.parse::<u32>().map_err(|_| "bad samples per frame")?),
        None => (fmt_part, 1),
    };
    if spf != 1 {
        return Err("more than one sample per frame is not supported yet".into());
    }
    let code: u32 = code.parse().map_err(|_| format!("bad format {code:?}"))?;
    let format = SampleFormat::parse(code)
        .ok_or_else(|| format!("signal format {code} is not supported"))?;
    let adc_resolution: u32 = f
        .get(3)
        .and_then(|s| s.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(match format {
            SampleFormat::F212 => 12,
            SampleFormat::F80 => 8,
            SampleFormat::F24 => 24,
            SampleFormat::F32 => 32,
            _ => 16,
        });
    let adc_zero: f64 = f.get(4).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    let (mut gain, mut baseline, mut unit): (f64, f64, String) =
        (200.0, adc_zero, "mV".to_string());
    if let Some(g) = f.get(2) {
        let (g, u) = match g.split_once('/') {
            Some((g, u)) => (g, Some(u)),
            None => (*g, None),
        };
        let (g, b) = match g.split_once('(') {
            Some((g, b)) => (g, Some(b.trim_end_matches(')'))),
            None => (g, None),
        };
        gain = g.parse().map_err(|_| format!("bad gain {g:?}"))?;
        if let Some(b) = b {
            baseline = b.parse().map_err(|_| format!("bad baseline {b:?}"))?;
        }
        if let Some(u) = u {
            unit = u.to_string();
        }
    }
    if gain == 0.0 || !gain.is_finite() {
        gain = 200.0;
    }
    let description = if f.len() > 8 {
        f[8..].join(" ")
    } else {
        file_name.clone()
    };
    Ok(SignalSpec {
        file_name,
        format,
        offset,
        gain,
        baseline,
        unit,
        adc_resolution,
        adc_zero,
        description,
    })
}

fn parse_start(time: Option<&str>, date: Option<&str>) -> NaiveDateTime {
    let t = time.and_then(|t| {
        let parts: Vec<&str> = t.split(':').collect();
        let (h, m, s) = match parts.as_slice() {
            [h, m, s] => (h.parse().ok()?, m.parse().ok()?, s.parse::<f64>().ok()?),
            [m, s] => (0, m.parse().ok()?, s.parse::<f64>().ok()?),
            _ => return None,
        };
        NaiveTime::from_hms_nano_opt(h, m, s as u32, (s.fract() * 1e9) as u32)
    });
    let d = date.and_then(|d| {
        let p: Vec<u32> = d.split('/').filter_map(|x| x.parse().ok()).collect();
        (p.len() == 3)
            .then(|| NaiveDate::from_ymd_opt(p[2] as i32, p[1], p[0]))
            .flatten()
    });
    let default = super::unknown_start();
    d.unwrap_or(default.date())
        .and_time(t.unwrap_or(default.time()))
}

/// MIT annotation codes 1..=41 as their usual symbols.
const ANNOTATION_SYMBOLS: [&str; 42] = [
    "", "N", "L", "R", "a", "V", "F", "J", "A", "S", "E", "j", "/", "Q", "~", "", "|", "", "s",
    "T", "*", "D", "\"", "=", "p", "B", "^", "t", "+", "u", "?", "!", "[", "]", "e", "n", "@", "x",
    "f", "(", ")", "r",
];

/// Parses an MIT-format annotation file. Returns the annotations read and, if the file ended
/// early or held something odd, what was wrong.
pub fn parse_atr(bytes: &[u8], fs: f64) -> (Vec<Annotation>, Option<String>) {
    let mut out: Vec<Annotation> = Vec::new();
    let mut time: i64 = 0;
    let mut i = 0;
    let word = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
    while i + 1 < bytes.len() {
        let w = word(i);
        i += 2;
        let code = w >> 10;
        let value = (w & 0x3FF) as i64;
        match code {
            0 if value == 0 => return (out, None),
            59 => {
                // SKIP: a 32-bit interval follows, high 16 bits first.
                if i + 3 >= bytes.len() {
                    return (out, Some("ends inside a SKIP entry".into()));
                }
                let hi = word(i) as u32;
                let lo = word(i + 2) as u32;
                time += ((hi << 16) | lo) as i32 as i64;
                i += 4;
            }
            60..=62 => {} // NUM, SUB, CHN modify the previous annotation's fields we do not keep
            63 => {
                let len = value as usize;
                if i + len > bytes.len() {
                    return (out, Some("ends inside an auxiliary text".into()));
                }
                let aux = String::from_utf8_lossy(&bytes[i..i + len])
                    .trim_end_matches('\0')
                    .trim()
                    .to_string();
                if let (Some(last), false) = (out.last_mut(), aux.is_empty()) {
                    last.text = format!("{} {aux}", last.text);
                }
                i += len + (len & 1);
            }
            _ => {
                time += value;
                let symbol = ANNOTATION_SYMBOLS
                    .get(code as usize)
                    .copied()
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("code {code}"));
                out.push(Annotation {
                    onset: time.max(0) as f64 / fs,
                    duration: 0.0,
                    text: symbol,
                });
            }
        }
    }
    (out, (i < bytes.len()).then(|| "odd trailing byte".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_212_unpacks_pairs() {
        // samples 0x123 and -1 (0xFFF): bytes 0x23, (0xF << 4) | 0x1, 0xFF
        let data = [0x23u8, 0xF1, 0xFF];
        assert_eq!(SampleFormat::F212.sample(&data, 0), Some(0x123));
        assert_eq!(SampleFormat::F212.sample(&data, 1), Some(-1));
        let invalid = [0x00u8, 0x08, 0x00];
        assert_eq!(SampleFormat::F212.sample(&invalid, 0), None);
    }

    #[test]
    fn signal_lines_with_baseline_and_units() {
        let s = parse_signal_line("100.dat 212 200(5)/uV 11 1024 995 -22131 0 MLII").unwrap();
        assert_eq!(s.gain, 200.0);
        assert_eq!(s.baseline, 5.0);
        assert_eq!(s.unit, "uV");
        assert_eq!(s.description, "MLII");
        assert!(parse_signal_line("x.dat 999 200").is_err());
        assert!(parse_signal_line("../x.dat 16 200").is_err());
    }

    #[test]
    fn atr_skip_aux_and_end() {
        // N at 10, SKIP +1000, V at +5, AUX "(AFL", end.
        let mut b = Vec::new();
        b.extend(((1u16 << 10) | 10).to_le_bytes());
        b.extend((59u16 << 10).to_le_bytes());
        b.extend(0u16.to_le_bytes());
        b.extend(1000u16.to_le_bytes());
        b.extend(((5u16 << 10) | 5).to_le_bytes());
        b.extend(((63u16 << 10) | 4).to_le_bytes());
        b.extend(b"(AFL");
        b.extend(0u16.to_le_bytes());
        let (a, trouble) = parse_atr(&b, 100.0);
        assert!(trouble.is_none());
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].onset, 0.1);
        assert_eq!(a[1].onset, 10.15);
        assert_eq!(a[1].text, "V (AFL");
    }
}
