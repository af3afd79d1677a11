//! Curry (Compumedics Neuroscan's source-analysis and acquisition software), versions 7 and 8.
//!
//! A Curry 8 recording is a `.cdt` of samples (32-bit floats, little-endian, all channels of a
//! time point together) with a `.cdt.dpa` (or `.cdt.dpo`) of parameters beside it and, where it
//! has events, a `.cdt.cef` (or `.cdt.ceo`). Curry 7 (and 6) splits the same into a `.dat` of
//! samples, a `.dap` of parameters, an `.rs3` of channel labels and sensor positions and a
//! `.cef`/`.ceo` of events. Any of a set's files opens the set.
//!
//! The parameters are text: `Key = value` lines (`NumSamples`, `NumChannels`, `NumTrials`,
//! `SampleFreqHz`, `SampleTimeUsec`, `DataByteOrder`, `DataSampOrder`, `StartYear` ...; Curry 6
//! spells them `NUM_SAMPLES` ...), one `DEVICE_PARAMETERS` block per channel group (EEG; `_MAG1`
//! for MEG, `_OTHERS` for the rest) with its `DataUnit` and channel count, and per group lists
//! between `NAME START_LIST` and `NAME END_LIST` lines: `LABELS`, `SENSORS` (x y z in mm, MEG
//! sensors x y z x y z) and `CHAN_IN_FILE` (each channel's column in the data, 0 for none). The
//! event file's `NUMBER_LIST` holds 11 numbers an event (sample, -, type, -, start, end, ...)
//! and its `REMARK_LIST` a line of text each.
//!
//! Everything is read as MNE-Python's `read_raw_curry` reads it (with the `curryreader`
//! package): channels in group order, typed EEG, MEG magnetometer (`MAG` groups) or
//! miscellaneous (`OTHER` groups); samples in microvolts and tesla, every reader's units (MNE
//! scales the same numbers to volts and tesla); the rate 10^6 / `SampleTimeUsec` where that is
//! given, else `SampleFreqHz`; the start from `StartYear` ... `StartMillisec` (UTC), unknown
//! where those make no valid date (MNE's `meas_date` None); EEG positions the `SENSORS` rows in
//! metres, in Curry's frame (MNE labels them head coordinates without transforming them); MEG
//! positions the inner coil carried into MNE's device frame (x and y negated, then 1.5 cm back
//! and 12 cm down); each event an annotation at its sample, of no duration, described by the
//! remark of the first event of its type, or its type number where that remark is empty;
//! annotations ordered by onset and cropped to the recording. ASCII data (rows of numbers) is
//! read too. The binary samples are memory-mapped and decoded on demand.
//!
//! Where ede differs, MNE-Python misreads: `DataSampOrder = CHAN` ("blocked by channel") is read
//! channel after channel (MNE reads every file time point by time point); a voltage unit other
//! than uV (mV, V) is converted to uV (MNE takes such numbers for volts); a label holding a
//! space stays one label (curryreader splits it in two); each group's positions and labels stay
//! with that group, and `CHAN_IN_FILE` orders the channels wherever it is given (MNE uses it only
//! when a channel is left out of the data). Several trials (epochs) are shown one after another.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{NaiveDate, NaiveDateTime};

use super::binary::{MatrixSource, Orientation, SampleType, read_small_text};
use super::{
    Annotation, ChannelType, Format, MemorySource, ReadError, Recording, SampleSource, SignalInfo,
    reading_unit, si_per_unit, unknown_start,
};

/// A parameter, label or event file larger than this is no Curry text file.
const MAX_TEXT_BYTES: u64 = 64 << 20;
/// ASCII data is parsed whole at open: larger exports should be converted in Curry.
const MAX_ASCII_BYTES: u64 = 64 << 20;
const MAX_CHANNELS: usize = 65_536;
const MAX_EVENTS: usize = 1 << 20;
/// Curry's GUID for its compressed data, which only Curry reads.
const COMPRESSED: &str = "{2912E8D8-F5C8-4E25-A8E7-A1385967DA09}";

/// Curry files are known by their names: no signature.
pub fn sniff(_head: &[u8]) -> bool {
    false
}

fn name_of(path: &Path) -> String {
    (path.file_name())
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Whether `path` is a file of a Curry set: a `.cdt` or one of its `.cdt.dpa`, `.cdt.dpo`,
/// `.cdt.cef`, `.cdt.ceo`; a Curry 7 `.dap`, `.rs3`, `.cef`, `.ceo`; or a `.dat` with its
/// `.dap` beside it (WFDB's and Persyst's `.dat` have a `.hea` or a `.lay` instead).
pub fn is_companion(path: &Path) -> bool {
    let name = name_of(path);
    let ext = name.rsplit('.').next().unwrap_or("");
    match ext {
        "cdt" | "dpa" | "dpo" | "dap" | "rs3" | "cef" | "ceo" => true,
        "dat" => sibling(path, "dap").is_some(),
        _ => false,
    }
}

/// `path` with its extension replaced by `ext` (or its capitals), where that file exists.
fn sibling(path: &Path, ext: &str) -> Option<PathBuf> {
    [ext.to_string(), ext.to_ascii_uppercase()]
        .into_iter()
        .map(|e| path.with_extension(e))
        .find(|p| p.is_file())
}

/// `path` with `suffix` appended to its name, where that file exists.
fn appended(path: &Path, suffix: &str) -> Option<PathBuf> {
    [suffix.to_string(), suffix.to_ascii_uppercase()]
        .into_iter()
        .map(|s| {
            let mut p = path.as_os_str().to_owned();
            p.push(s);
            PathBuf::from(p)
        })
        .find(|p| p.is_file())
}

/// The files of a set.
struct Files {
    data: PathBuf,
    /// Curry 7 (`.dat`); else Curry 8 (`.cdt`).
    legacy: bool,
    params: PathBuf,
    labels: Option<PathBuf>,
    events: Option<PathBuf>,
}

/// The set `path` belongs to, as MNE-Python finds its files.
fn files(path: &Path) -> Result<Files, ReadError> {
    let name = name_of(path);
    let data = if name.ends_with(".cdt") || name.ends_with(".dat") {
        Some(path.to_path_buf())
    } else {
        // X.cdt.dpa -> X.cdt; X.dap -> X.cdt or X.dat.
        let stem = path.with_extension("");
        if name_of(&stem).ends_with(".cdt") && stem.is_file() {
            Some(stem)
        } else {
            sibling(path, "cdt").or_else(|| sibling(path, "dat"))
        }
    };
    let Some(data) = data.filter(|d| d.is_file()) else {
        return Err(ReadError::invalid(
            path,
            "the Curry data file (.cdt or .dat of the same name) is not beside it",
        ));
    };
    let legacy = name_of(&data).ends_with(".dat");
    let params = if legacy {
        sibling(&data, "dap")
    } else {
        appended(&data, ".dpa").or_else(|| appended(&data, ".dpo"))
    };
    let Some(params) = params else {
        let want = if legacy { ".dap" } else { ".cdt.dpa" };
        return Err(ReadError::invalid(
            &data,
            format!("a Curry recording needs its parameter file ({want}) beside it"),
        ));
    };
    let (labels, events) = if legacy {
        let events = sibling(&data, "cef").or_else(|| sibling(&data, "ceo"));
        (sibling(&data, "rs3"), events)
    } else {
        let events = appended(&data, ".cef").or_else(|| appended(&data, ".ceo"));
        (None, events)
    };
    Ok(Files {
        data,
        legacy,
        params,
        labels,
        events,
    })
}

fn read_text(path: &Path) -> Result<String, ReadError> {
    read_small_text(
        path,
        MAX_TEXT_BYTES,
        "a Curry parameter, label or event file",
    )
}

/// The value of the first `key = value` line (keys as Curry spells them).
fn value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix(key)?.trim_start();
        Some(rest.strip_prefix('=')?.trim())
    })
}

/// The first of `keys` (Curry 8's spelling, then Curry 6's) whose value is a number.
fn number(text: &str, keys: &[&str]) -> Option<f64> {
    keys.iter()
        .find_map(|k| value(text, k).and_then(|v| v.parse::<f64>().ok()))
}

/// The value's leading integer, as MNE-Python's `Key\s*=\s*-?\d+` takes it.
fn leading_int(text: &str, key: &str) -> Option<i64> {
    let v = value(text, key)?;
    let digits = v.strip_prefix('-').unwrap_or(v);
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    let n: i64 = digits.get(..end)?.parse().ok()?;
    Some(if v.starts_with('-') { -n } else { n })
}

/// The lists named `prefix` or `prefix_GROUP` in `text`: (group suffix, lines between the
/// `START_LIST` and `END_LIST` lines).
fn lists<'a>(text: &'a str, prefix: &str) -> Vec<(&'a str, Vec<&'a str>)> {
    let mut out: Vec<(&'a str, Vec<&'a str>)> = Vec::new();
    let mut open: Option<&'a str> = None;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (first, second) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        match open {
            Some(name) if first == name && second == "END_LIST" => open = None,
            Some(_) => {
                if let Some(last) = out.last_mut() {
                    last.1.push(line);
                }
            }
            None if second == "START_LIST" => {
                let first = first.trim_start_matches('\u{feff}');
                if let Some(suffix) = first.strip_prefix(prefix)
                    && (suffix.is_empty() || suffix.starts_with('_'))
                {
                    open = Some(first);
                    out.push((suffix, Vec::new()));
                }
            }
            None => {}
        }
    }
    out
}

/// A channel group of the parameters (`DEVICE_PARAMETERS`, `DEVICE_PARAMETERS_MAG1` ...).
struct Group {
    /// `""`, `"_MAG1"`, `"_OTHERS"` ...: the suffix its lists carry too.
    suffix: String,
    kind: ChannelType,
    unit: String,
    channels: usize,
}

fn groups(text: &str) -> Vec<Group> {
    let mut out = Vec::new();
    let mut current: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (first, second) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        let first = first.trim_start_matches('\u{feff}');
        let Some(suffix) = first.strip_prefix("DEVICE_PARAMETERS") else {
            if let Some((_, body)) = current.as_mut() {
                body.push(line);
            }
            continue;
        };
        match second {
            "START" => current = Some((suffix.to_string(), Vec::new())),
            "END" => {
                if let Some((suffix, body)) = current.take() {
                    let body = body.join("\n");
                    let id = suffix.to_ascii_uppercase();
                    out.push(Group {
                        kind: if id.contains("MAG") {
                            ChannelType::Mag
                        } else if id.contains("OTHER") {
                            ChannelType::Misc
                        } else {
                            ChannelType::Eeg
                        },
                        unit: (value(&body, "DataUnit"))
                            .and_then(|u| u.split_whitespace().next())
                            .unwrap_or("")
                            .to_string(),
                        channels: (value(&body, "NumChanThisGroup"))
                            .and_then(|n| n.parse().ok())
                            .unwrap_or(0),
                        suffix,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// A channel before it is placed in the data's order.
struct Channel {
    label: Option<String>,
    kind: ChannelType,
    unit: String,
    /// Its `SENSORS` row (mm).
    sensor: Option<[f64; 3]>,
    /// Its 1-based column in the data (0: not in the data), where `CHAN_IN_FILE` says.
    column: Option<usize>,
}

/// The channels of the groups, with the labels and positions of `labels_text` and the columns
/// of `params`, in the data's order; warnings where the file is inconsistent.
fn channels(params: &str, labels_text: &str, n: usize, warnings: &mut Vec<String>) -> Vec<Channel> {
    let labels = lists(labels_text, "LABELS");
    let sensors = lists(labels_text, "SENSORS");
    let columns = lists(params, "CHAN_IN_FILE");
    let of = |l: &[(&str, Vec<&str>)], suffix: &str| -> Vec<String> {
        l.iter()
            .filter(|(s, _)| *s == suffix)
            .flat_map(|(_, lines)| lines.iter().map(|x| x.trim().to_string()))
            .collect()
    };
    // curryreader's labels: every list's, one after another (for channels past the groups).
    let flat: Vec<String> = (labels.iter())
        .flat_map(|(_, lines)| lines.iter().map(|x| x.trim().to_string()))
        .filter(|l| !l.is_empty())
        .collect();
    let mut all = Vec::new();
    for g in groups(params) {
        let names: Vec<String> = (of(&labels, &g.suffix).into_iter())
            .filter(|l| !l.is_empty())
            .collect();
        let rows: Vec<[f64; 3]> = (of(&sensors, &g.suffix).iter())
            .filter_map(|row| {
                let v: Vec<f64> = row
                    .split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect();
                (v.len() == 3 || v.len() == 6).then(|| [v[0], v[1], v[2]])
            })
            .collect();
        let cols: Vec<Option<usize>> = (of(&columns, &g.suffix).iter())
            .filter(|c| !c.is_empty())
            .map(|c| c.parse().ok())
            .collect();
        // Groups may claim any count: no more channels than a recording can have.
        for j in 0..g.channels.min(MAX_CHANNELS.saturating_sub(all.len())) {
            all.push(Channel {
                label: names.get(j).cloned(),
                kind: g.kind,
                unit: g.unit.clone(),
                sensor: rows.get(j).copied(),
                column: cols.get(j).copied().flatten(),
            });
        }
    }
    // CHAN_IN_FILE orders the channels where it gives every one a column and the columns in
    // the data are 1..=n, each once.
    let mut placed: Vec<usize> = (all.iter())
        .filter_map(|c| c.column.filter(|&k| k > 0))
        .collect();
    placed.sort_unstable();
    let by_column = all.iter().all(|c| c.column.is_some())
        && placed.len() == n
        && placed.iter().enumerate().all(|(i, &k)| k == i + 1);
    if by_column {
        all.retain(|c| c.column.is_some_and(|k| k > 0));
        all.sort_by_key(|c| c.column);
        return all;
    }
    if all.len() != n {
        warnings.push(format!(
            "the channel groups list {} channels, the parameters {n}: channels past the \
             groups read as EEG in uV",
            all.len()
        ));
        all.truncate(n);
        while all.len() < n {
            all.push(Channel {
                label: flat.get(all.len()).cloned(),
                kind: ChannelType::Eeg,
                unit: "uV".into(),
                sensor: None,
                column: None,
            });
        }
    }
    all
}

/// Where MNE-Python puts a channel: EEG at its sensor in metres; MEG's inner coil carried from
/// Curry's device frame into MNE's (`curry_dev_dev_t`: x, y negated, then moved (0, -15, -120)
/// mm); none for the others.
fn position(c: &Channel) -> Option<[f64; 3]> {
    let [x, y, z] = c.sensor?.map(|v| v / 1000.0);
    match c.kind {
        ChannelType::Eeg => Some([x, y, z]),
        ChannelType::Mag => Some([-x, -y - 0.015, z - 0.12]),
        _ => None,
    }
    .filter(|p| p.iter().all(|v| v.is_finite()))
}

/// `StartYear` ... `StartMillisec` as a date, where they make one.
fn start(params: &str) -> Option<NaiveDateTime> {
    let keys = [
        "StartYear",
        "StartMonth",
        "StartDay",
        "StartHour",
        "StartMin",
        "StartSec",
        "StartMillisec",
    ];
    let mut v = [0i64; 7];
    for (slot, key) in v.iter_mut().zip(keys) {
        *slot = leading_int(params, key)?;
    }
    let u = |x: i64| u32::try_from(x).ok();
    let ms = u(v[6]).filter(|&ms| ms < 1000)?;
    // Python's datetime (MNE's meas_date) takes years 1 to 9999 only.
    let year = i32::try_from(v[0])
        .ok()
        .filter(|y| (1..=9999).contains(y))?;
    NaiveDate::from_ymd_opt(year, u(v[1])?, u(v[2])?)?.and_hms_micro_opt(
        u(v[3])?,
        u(v[4])?,
        u(v[5]).filter(|&s| s < 60)?,
        ms * 1000,
    )
}

/// The events of an event file as MNE-Python makes annotations of them: onset from the
/// sample, no duration, the first remark of each type (else the type number) as text.
fn events(text: &str, fs: f64) -> Result<Vec<Annotation>, String> {
    let numbers: Vec<&str> = (lists(text, "NUMBER_LIST").into_iter().next())
        .map(|(_, lines)| lines.into_iter().flat_map(str::split_whitespace).collect())
        .unwrap_or_default();
    let remarks: Vec<&str> = (lists(text, "REMARK_LIST").into_iter().next())
        .map(|(_, lines)| lines)
        .unwrap_or_default();
    if numbers.len() / 11 > MAX_EVENTS {
        return Err(format!(
            "{} events: more than a Curry file holds",
            numbers.len() / 11
        ));
    }
    let mut names: Vec<(i64, String)> = Vec::new();
    let mut out = Vec::new();
    for (i, ev) in numbers.chunks_exact(11).enumerate() {
        let int = |s: &str| s.parse::<i64>().map_err(|_| format!("event number {s:?}"));
        let (sample, kind) = (int(ev[0])?, int(ev[2])?);
        let text = match names.iter().find(|(k, _)| *k == kind) {
            Some((_, t)) => t.clone(),
            None => {
                let remark = remarks.get(i).map_or("", |r| r.trim());
                let t = if remark.is_empty() {
                    kind.to_string()
                } else {
                    remark.to_string()
                };
                names.push((kind, t.clone()));
                t
            }
        };
        out.push(Annotation {
            onset: sample as f64 / fs,
            duration: 0.0,
            text,
        });
    }
    Ok(out)
}

/// ASCII data: rows of numbers, parsed whole (`samples` x `channels`, or channel after channel
/// where `by_channel`).
fn ascii(
    path: &Path,
    channels: usize,
    samples: usize,
    by_channel: bool,
    gains: &[f64],
) -> Result<Arc<dyn SampleSource>, ReadError> {
    let size = std::fs::metadata(path)
        .map_err(|e| ReadError::io(path, e))?
        .len();
    if size > MAX_ASCII_BYTES {
        return Err(ReadError::invalid(
            path,
            "ASCII Curry data larger than 64 MB: convert it to raw float in Curry",
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| ReadError::io(path, e))?;
    // Every number takes two bytes at least (a digit and a space): a header that claims more
    // is refused before anything is allocated for them.
    let total = channels.saturating_mul(samples);
    if total > text.len().div_ceil(2) {
        return Err(ReadError::invalid(
            path,
            format!(
                "the ASCII data cannot hold {samples} samples of {channels} channels: the file \
                 is truncated"
            ),
        ));
    }
    let mut values = text.split_whitespace().map(|v| v.parse::<f64>());
    let mut data = vec![Vec::with_capacity(samples); channels];
    for i in 0..total {
        let c = if by_channel {
            i / samples
        } else {
            i % channels
        };
        let v = match values.next() {
            Some(Ok(v)) => v,
            Some(Err(_)) => {
                return Err(ReadError::invalid(
                    path,
                    "the ASCII data holds a word that is no number",
                ));
            }
            None => {
                return Err(ReadError::invalid(
                    path,
                    format!("the ASCII data holds {i} numbers, {total} expected"),
                ));
            }
        };
        data[c].push((v * gains[c]) as f32);
    }
    Ok(Arc::new(MemorySource { data }))
}

/// Opens a Curry recording from any of its files.
pub fn open(path: &Path) -> Result<Recording, ReadError> {
    let f = files(path)?;
    let params = read_text(&f.params)?;
    let labels_text = match &f.labels {
        Some(p) => read_text(p)?,
        None => params.clone(),
    };
    let p = &f.params;
    if value(&params, "DataGuid") == Some(COMPRESSED) {
        return Err(ReadError::invalid(
            p,
            "compressed Curry data, which only Curry reads: convert it to raw float in Curry",
        ));
    }
    let mut warnings = Vec::new();
    if f.legacy && f.labels.is_none() {
        warnings.push("no .rs3 beside the data: labels and positions from the .dap".into());
    }
    let whole = |x: Option<f64>| x.filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e15);
    let n = whole(number(&params, &["NumChannels", "NUM_CHANNELS"]))
        .map(|v| v as usize)
        .filter(|&n| (1..=MAX_CHANNELS).contains(&n))
        .ok_or_else(|| ReadError::invalid(p, "the parameters give no channel count"))?;
    let trials = whole(number(&params, &["NumTrials", "NUM_TRIALS"])).map_or(1, |t| t as usize);
    let trials = trials.max(1);
    if trials > 1 {
        warnings.push(format!("{trials} trials (epochs), shown one after another"));
    }
    let rate = number(&params, &["SampleFreqHz", "SAMPLE_FREQ_HZ"]).unwrap_or(0.0);
    let period = number(&params, &["SampleTimeUsec", "SAMPLE_TIME_USEC"]).unwrap_or(0.0);
    // curryreader's rule: the sample time where it is given.
    let fs = if rate == 0.0 || period != 0.0 {
        1e6 / period
    } else {
        rate
    };
    if !(fs.is_finite() && fs > 0.0) {
        return Err(ReadError::invalid(
            p,
            "the parameters give no sampling rate (SampleFreqHz, SampleTimeUsec)",
        ));
    }
    let word = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| value(&params, k))
            .unwrap_or("")
            .to_ascii_uppercase()
    };
    let is_ascii =
        word(&["DataByteOrder"]) == "ASCII" || word(&["DataFormat", "DATA_FORMAT"]) == "ASCII";
    let by_channel = word(&["DataSampOrder", "DATA_SAMP_ORDER"]) == "CHAN";

    let chans = channels(&params, &labels_text, n, &mut warnings);
    let mut gains = Vec::with_capacity(n);
    let mut signals = Vec::with_capacity(n);
    let header_samples = whole(number(&params, &["NumSamples", "NUM_SAMPLES"])).unwrap_or(0.0);
    let data_len = std::fs::metadata(&f.data)
        .map_err(|e| ReadError::io(&f.data, e))?
        .len() as usize;
    let samples = if header_samples >= 1.0 {
        (header_samples as usize)
            .checked_mul(trials)
            .ok_or_else(|| ReadError::invalid(p, "the sample count overflows"))?
    } else if !is_ascii {
        warnings.push("the parameters give no sample count: taken from the data's size".into());
        data_len / (4 * n)
    } else {
        return Err(ReadError::invalid(p, "the parameters give no sample count"));
    };
    for (i, c) in chans.iter().enumerate() {
        // MEG in tesla, as every reader keeps it; voltages in microvolts.
        let (unit, k) = match si_per_unit(&c.unit) {
            Some(("T", k)) => ("T".to_string(), k),
            _ => reading_unit(&c.unit),
        };
        let range = super::nominal_range(&unit);
        let label = c.label.clone().unwrap_or_else(|| format!("EEG{}", i + 1));
        gains.push(k);
        signals.push(SignalInfo {
            kind: c.kind,
            position: position(c),
            ..SignalInfo::continuous(label, unit, fs, samples, range)
        });
    }
    let source: Arc<dyn SampleSource> = if is_ascii {
        ascii(&f.data, n, samples, by_channel, &gains)?
    } else {
        let map = MatrixSource::map(&f.data)?;
        let orientation = if by_channel {
            Orientation::Vectorized
        } else {
            Orientation::Multiplexed
        };
        Arc::new(MatrixSource::new(
            &f.data,
            map,
            0,
            SampleType::F32,
            false,
            orientation,
            samples,
            gains,
        )?)
    };

    let mut annotations = match &f.events {
        Some(e) => match events(&read_text(e)?, fs) {
            Ok(a) => a,
            Err(why) => {
                warnings.push(format!("events not read: {why}"));
                Vec::new()
            }
        },
        None => Vec::new(),
    };
    super::sort_and_crop(&mut annotations, (samples as f64 - 1.0) / fs + 1.0 / fs);
    let when = start(&params);
    if when.is_none() {
        warnings.push("the start date is not a valid date: start unknown".into());
    }
    Ok(Recording::continuous(
        Some(f.data.clone()),
        Format::Curry,
        when.unwrap_or_else(unknown_start),
        signals,
        annotations,
        warnings,
        samples as f64 / fs,
        source,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAP: &str = "DATA_PARAMETERS START\n   DataFormat = FLOAT\n   DataByteOrder = INTEL\n\
        \x20  DataSampOrder = SAMP\n   NumSamples = 4\n   NumTrials = 1\n   NumChannels = 3\n\
        \x20  StartYear = 2018\n   StartMonth = 11\n   StartDay = 21\n   StartHour = 12\n\
        \x20  StartMin = 53\n   StartSec = 48\n   StartMillisec = 525\n   SampleTimeUsec = 4000\n\
        \x20  SampleFreqHz = 250\nDATA_PARAMETERS END\n\n\
        DEVICE_PARAMETERS START\n   DataUnit = uV\n   NumChanThisGroup = 3\nDEVICE_PARAMETERS END\n\n\
        DEVICE_PARAMETERS_OTHERS START\n   DataUnit = mV\n   NumChanThisGroup = 1\n\
        DEVICE_PARAMETERS_OTHERS END\n\n\
        CHAN_IN_FILE START_LIST\t# Do not edit!\n  2\n  1\n  0\nCHAN_IN_FILE END_LIST\n\
        CHAN_IN_FILE_OTHERS START_LIST\t# Do not edit!\n  3\nCHAN_IN_FILE_OTHERS END_LIST\n";
    const RS3: &str = "LABELS START_LIST\t# Do not edit!\nFP1\nFP 2\nRef\nLABELS END_LIST\n\n\
        LABELS_OTHERS START_LIST\t# Do not edit!\nTrigger\nLABELS_OTHERS END_LIST\n\n\
        SENSORS START_LIST\t# Do not edit!\n  71\t-17.6\t 116.7\n -71\t-18.4\t 114.6\n\
        \x20 0\t0\t0\nSENSORS END_LIST\n";
    const CEF: &str = "NUMBER_LIST START_LIST\t# Do not edit!\n\
        \x20 1\t 0\t 4\t-1\t 1\t 1\t 0\t 0\t 0\t 0\t 0\n\
        \x20 2\t 0\t 7\t-1\t 2\t 2\t 0\t 0\t 0\t 0\t 0\n\
        \x20 3\t 0\t 4\t-1\t 3\t 3\t 0\t 0\t 0\t 0\t 0\n\
        \x20 9\t 0\t 4\t-1\t 9\t 9\t 0\t 0\t 0\t 0\t 0\n\
        NUMBER_LIST END_LIST\n\nREMARK_LIST START_LIST\t# Do not edit!\n\nstim on\nother\n\n\
        REMARK_LIST END_LIST\n";

    /// A Curry 7 set: 3 channels in the data (the reference is left out), 4 samples. MNE-Python
    /// reads the same set (with "FP2" and the trigger in uV) as FP2, FP1, Trigger, the same
    /// samples, positions and start.
    fn curry7(dir: &Path) -> PathBuf {
        std::fs::write(dir.join("r.dap"), DAP).unwrap();
        std::fs::write(dir.join("r.rs3"), RS3).unwrap();
        std::fs::write(dir.join("r.cef"), CEF).unwrap();
        // Columns: FP 2, FP1, Trigger (mV).
        let data: Vec<u8> = (0..4)
            .flat_map(|k| [k as f32, 10.0 * k as f32, 0.5 * k as f32])
            .flat_map(f32::to_le_bytes)
            .collect();
        let dat = dir.join("r.dat");
        std::fs::write(&dat, data).unwrap();
        dat
    }

    #[test]
    fn a_curry7_set_reads_from_any_of_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let dat = curry7(dir.path());
        for name in ["r.dat", "r.dap", "r.rs3", "r.cef"] {
            let p = dir.path().join(name);
            assert!(is_companion(&p), "{name}");
            let rec = open(&p).unwrap();
            let labels: Vec<&str> = rec.signals.iter().map(|s| s.label.as_str()).collect();
            assert_eq!(labels, ["FP 2", "FP1", "Trigger"]);
            let kinds: Vec<ChannelType> = rec.signals.iter().map(|s| s.kind).collect();
            assert_eq!(
                kinds,
                [ChannelType::Eeg, ChannelType::Eeg, ChannelType::Misc]
            );
            assert_eq!(rec.signals[2].unit, "uV");
            assert_eq!(rec.read_all(1).unwrap(), [0.0, 10.0, 20.0, 30.0]);
            assert_eq!(rec.read_all(2).unwrap(), [0.0, 500.0, 1000.0, 1500.0]);
            assert_eq!(rec.signals[0].fs, 250.0);
            let near = |p: Option<[f64; 3]>, q: [f64; 3]| {
                p.is_some_and(|p| p.iter().zip(q).all(|(a, b)| (a - b).abs() < 1e-12))
            };
            assert!(near(rec.signals[1].position, [0.071, -0.0176, 0.1167]));
            assert!(near(rec.signals[0].position, [-0.071, -0.0184, 0.1146]));
            assert_eq!(rec.start.to_string(), "2018-11-21 12:53:48.525");
            let a: Vec<(f64, &str)> = (rec.annotations.iter())
                .map(|a| (a.onset, a.text.as_str()))
                .collect();
            // Type 4's first remark is empty: its number; sample 9 is past the end.
            assert_eq!(a, [(0.004, "4"), (0.008, "stim on"), (0.012, "4")]);
            assert_eq!(rec.path.as_deref(), Some(dat.as_path()));
        }
        assert!(!is_companion(&dir.path().join("x.dat")));
    }

    /// A Curry 8 set with MEG, EEG and another channel; what MNE-Python 1.13 reads of the
    /// same files is written out here.
    #[test]
    fn a_curry8_set_reads_as_mne_reads_it() {
        let list = |name: &str, rows: &str| {
            format!(
                "{name} START\n{name} END\n\n{name} START_LIST\t# Do not edit!\n{rows}\n{name} END_LIST\n\n"
            )
        };
        let group = |suffix: &str, unit: &str, n: usize| {
            let name = format!("DEVICE_PARAMETERS{suffix}");
            format!("{name} START\n   DataUnit = {unit}\n   NumChanThisGroup = {n}\n{name} END\n\n")
        };
        let dpa = [
            "DATA_PARAMETERS START\n   DataByteOrder = INTEL\n   NumSamples = 6\n   NumTrials = 1\n\
             \x20  NumChannels = 5\n   StartYear = 2020\n   StartMonth = 2\n   StartDay = 29\n\
             \x20  StartHour = 23\n   StartMin = 59\n   StartSec = 58\n   StartMillisec = 250\n\
             \x20  SampleTimeUsec = 1000\n   SampleFreqHz = 1000\nDATA_PARAMETERS END\n\n"
                .to_string(),
            group("_MAG1", "fT", 2),
            group("", "uV", 2),
            group("_OTHERS", "uV", 1),
            list("LABELS_MAG1", "A1\nA2"),
            list("SENSORS_MAG1", "  10\t20\t30\t11\t21\t31\n -40\t50\t-60\t-41\t51\t-61"),
            list("LABELS", "Fz\nCz"),
            list("SENSORS", "  1.5\t60\t80\n -2\t3\t100"),
            list("LABELS_OTHERS", "Trigger"),
        ]
        .concat();
        let cef = [
            list(
                "NUMBER_LIST",
                "  3\t0\t5\t-1\t3\t3\t0\t0\t0\t0\t0\n  1\t0\t2\t-1\t1\t4\t0\t0\t0\t0\t0\n\
                 \x20 4\t0\t5\t-1\t4\t4\t0\t0\t0\t0\t0",
            ),
            list("REMARK_LIST", " go \nfirst\nignored"),
        ]
        .concat();
        let dir = tempfile::tempdir().unwrap();
        let cdt = dir.path().join("m.cdt");
        std::fs::write(dir.path().join("m.cdt.dpa"), dpa).unwrap();
        std::fs::write(dir.path().join("m.cdt.cef"), cef).unwrap();
        let x: Vec<u8> = (0..30)
            .map(|i| i as f32 * 1.5 - 7.0)
            .flat_map(f32::to_le_bytes)
            .collect();
        std::fs::write(&cdt, x).unwrap();
        let rec = open(&dir.path().join("m.cdt.cef")).unwrap();
        let labels: Vec<&str> = rec.signals.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["A1", "A2", "Fz", "Cz", "Trigger"]);
        let kinds: Vec<&str> = rec.signals.iter().map(|s| s.kind.mne_name()).collect();
        assert_eq!(kinds, ["mag", "mag", "eeg", "eeg", "misc"]);
        assert_eq!(rec.start.to_string(), "2020-02-29 23:59:58.250");
        // MNE: A1 -7e-15, 0.5e-15, 8e-15 T; Cz -2.5e-6, 5e-6, 12.5e-6 V.
        let meg = rec.read_all(0).unwrap();
        for (v, fem) in meg.iter().zip([-7.0, 0.5, 8.0]) {
            assert!((*v as f64 - fem * 1e-15).abs() < 1e-21, "{meg:?}");
        }
        assert_eq!(rec.read_all(3).unwrap()[..3], [-2.5, 5.0, 12.5]);
        let mne = [
            Some([-0.01, -0.035, -0.09]),
            Some([0.04, -0.065, -0.18]),
            Some([0.0015, 0.06, 0.08]),
            Some([-0.002, 0.003, 0.1]),
            None,
        ];
        for (s, want) in rec.signals.iter().zip(mne) {
            let close = |p: [f64; 3], q: [f64; 3]| (0..3).all(|i| (p[i] - q[i]).abs() < 1e-12);
            assert!(
                s.position.zip(want).is_some_and(|(p, q)| close(p, q))
                    || (s.position.is_none() && want.is_none()),
                "{}: {:?}",
                s.label,
                s.position
            );
        }
        let a: Vec<(f64, f64, &str)> = (rec.annotations.iter())
            .map(|a| (a.onset, a.duration, a.text.as_str()))
            .collect();
        assert_eq!(
            a,
            [
                (0.001, 0.0, "first"),
                (0.003, 0.0, "go"),
                (0.004, 0.0, "go")
            ]
        );
    }

    #[test]
    fn bad_sets_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let dat = curry7(dir.path());
        std::fs::write(&dat, [0u8; 20]).unwrap();
        let err = open(&dat).err().unwrap().to_string();
        assert!(err.contains("truncated"), "{err}");
        std::fs::write(dir.path().join("r.dap"), "garbage\u{0}").unwrap();
        assert!(open(&dat).is_err());
        let lone = dir.path().join("lone.cdt.dpa");
        std::fs::write(&lone, DAP).unwrap();
        assert!(
            open(&lone)
                .err()
                .unwrap()
                .to_string()
                .contains("not beside")
        );
        std::fs::write(dir.path().join("lone.cdt"), [0u8; 48]).unwrap();
        let compressed = DAP.replace(
            "DataFormat",
            &format!("DataGuid = {COMPRESSED}\n DataFormat"),
        );
        std::fs::write(&lone, compressed).unwrap();
        assert!(
            open(&lone)
                .err()
                .unwrap()
                .to_string()
                .contains("compressed")
        );
    }

    #[test]
    fn dates_and_ascii_data_read() {
        let dir = tempfile::tempdir().unwrap();
        curry7(dir.path());
        // Curry writes StartSec beyond 59 at times: MNE then has no date.
        let dap = DAP.replace("StartSec = 48", "StartSec = 11280");
        assert_eq!(start(&dap), None);
        let dap = DAP.replace("DataByteOrder = INTEL", "DataByteOrder = ASCII");
        std::fs::write(dir.path().join("r.dap"), dap).unwrap();
        std::fs::write(
            dir.path().join("r.dat"),
            "0 0 0\n1 10 0.5\n2 20 1\n3 30 1.5\n",
        )
        .unwrap();
        let rec = open(&dir.path().join("r.dat")).unwrap();
        assert_eq!(rec.read_all(2).unwrap(), [0.0, 500.0, 1000.0, 1500.0]);
    }
}
