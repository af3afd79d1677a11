//! Persyst (Persyst Development's EEG review software, and the format its exports and BIDS'
//! iEEG datasets use): a `.lay` layout, INI text, and a `.dat` of samples it names.
//!
//! The `.lay` says in `[FileInfo]` which `.dat` holds the samples (`File=`), the rate
//! (`SamplingRate`), the microvolts one stored unit is (`Calibration`), the channel count
//! (`WaveformCount`) and the sample type (`DataType`: 0 for 16-bit, 7 for 32-bit integers,
//! little-endian); `[ChannelMap]` lists the channels as `name=number`, `[Patient]` holds
//! `TestDate`/`TestTime`, and `[Comments]` the annotations, one a line as
//! `onset,duration,state,type,text` (seconds from the first sample). The `.dat` is the samples
//! multiplexed (all channels of a time point together), without a header.
//!
//! Everything is read as MNE-Python's `read_raw_persyst` reads it: channels in the order of
//! `[ChannelMap]` (its numbers are not used), named in capitals without their `-Ref` suffix,
//! all EEG; a sample is the stored number times `Calibration` microvolts; the number of
//! samples is the `.dat`'s size over a time point's bytes (Persyst's clips keep the original
//! `[SampleTimes]`, so the `.lay` cannot say it); the start is `TestDate` (as `m/d/Y`, `d-m-Y`
//! or `Y.m.d`) at `TestTime`, in UTC; comments become annotations, grouped by text in the order
//! each text first appears, then ordered by onset and duration, and cropped to the recording,
//! as MNE's `Annotations` do. The `.dat` is memory-mapped and decoded on demand.
//!
//! Where ede differs: a `File=` holding a Windows path (`C:\...\x.dat`) is taken by its last
//! component on every system (MNE-Python does so only on Windows); a comment or header line
//! that does not parse is left out with a warning instead of refusing the file; and an
//! unreadable test date gives an unknown start with a warning (MNE-Python raises).
//! `HeaderLength` is ignored, as MNE-Python ignores it (every known file has 0).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{NaiveDate, NaiveDateTime};

use super::binary::{MatrixSource, Orientation, SampleType, read_small_text};
use super::{Annotation, ChannelType, Format, ReadError, Recording, SignalInfo, unknown_start};

/// A layout larger than this is no Persyst layout (real ones are a few kilobytes).
const MAX_LAYOUT_BYTES: u64 = 16 << 20;
/// No Persyst recording has more channels than this.
const MAX_CHANNELS: usize = 65_536;

/// Whether a file's first bytes (up to 64) are a Persyst layout: `[FileInfo]` among them.
pub fn sniff(head: &[u8]) -> bool {
    const TAG: &[u8] = b"[fileinfo]";
    head.windows(TAG.len()).any(|w| w.eq_ignore_ascii_case(TAG))
}

/// Whether `path` is a Persyst `.dat` with its `.lay` beside it (a WFDB `.dat` has a `.hea`).
pub fn is_companion(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("dat"))
        && layout_of(path).is_some()
}

/// The `.lay` beside a `.dat` (either case of the extension).
fn layout_of(dat: &Path) -> Option<PathBuf> {
    ["lay", "LAY"]
        .iter()
        .map(|e| dat.with_extension(e))
        .find(|p| p.is_file())
}

/// A line of the layout as MNE-Python's `_process_lay_line` takes it.
enum Line {
    Section(String),
    /// `key=value` (key and value as written, the line trimmed).
    Entry(String, String),
    /// A comment: onset and duration (as written) and text.
    Comment(String, String, String),
    /// A line that says nothing (empty), or does not parse (a warning says so).
    Nothing,
    Bad(String),
}

fn parse_line(line: &str, section: &str) -> Line {
    let line = line.trim();
    if line.is_empty() {
        return Line::Nothing;
    }
    if line.len() >= 3 && line.starts_with('[') && line.ends_with(']') {
        return Line::Section(line[1..line.len() - 1].to_lowercase());
    }
    if section == "comments" {
        let mut f = line.splitn(5, ',');
        return match (f.next(), f.next(), f.next(), f.next(), f.next()) {
            (Some(onset), Some(duration), Some(_), Some(_), Some(text)) => {
                Line::Comment(onset.into(), duration.into(), text.into())
            }
            _ => Line::Bad(line.into()),
        };
    }
    match line.split_once('=') {
        Some((k, v)) => Line::Entry(k.into(), v.into()),
        None => Line::Bad(line.into()),
    }
}

/// What the layout says.
#[derive(Default)]
struct Layout {
    /// `[FileInfo]` and `[Patient]` entries, keys lower-cased (a later entry wins).
    file_info: Vec<(String, String)>,
    patient: Vec<(String, String)>,
    /// `[ChannelMap]` names in order, each once.
    channels: Vec<String>,
    /// Comments grouped by text in order of first appearance: (text, [(onset, duration)]).
    comments: Vec<(String, Vec<(String, String)>)>,
    /// Lines left out.
    bad: Vec<String>,
}

impl Layout {
    fn parse(text: &str) -> Layout {
        let mut out = Layout::default();
        let mut section = String::new();
        fn set(list: &mut Vec<(String, String)>, k: String, v: String) {
            match list.iter_mut().find(|e| e.0 == k) {
                Some(e) => e.1 = v,
                None => list.push((k, v)),
            }
        }
        for line in text.split(['\n', '\r']) {
            match parse_line(line, &section) {
                Line::Section(s) => section = s,
                Line::Nothing => {}
                Line::Bad(l) => out.bad.push(l),
                // MNE-Python skips entries with an empty key (an empty comment text too).
                Line::Entry(k, _) | Line::Comment(_, _, k) if k.is_empty() => {}
                Line::Entry(k, v) => match section.as_str() {
                    "fileinfo" => set(&mut out.file_info, k.to_lowercase(), v),
                    "patient" => set(&mut out.patient, k.to_lowercase(), v),
                    "channelmap" if !out.channels.contains(&k) => out.channels.push(k),
                    _ => {}
                },
                Line::Comment(onset, duration, text) => {
                    match out.comments.iter_mut().find(|c| c.0 == text) {
                        Some(c) => c.1.push((onset, duration)),
                        None => out.comments.push((text, vec![(onset, duration)])),
                    }
                }
            }
        }
        out
    }

    fn info(&self, key: &str) -> Option<&str> {
        self.file_info
            .iter()
            .find(|e| e.0 == key)
            .map(|e| e.1.as_str())
    }

    fn patient(&self, key: &str) -> Option<&str> {
        self.patient
            .iter()
            .find(|e| e.0 == key)
            .map(|e| e.1.as_str())
    }
}

/// The channel name MNE-Python makes of a `[ChannelMap]` key: capitals, cut at "-REF".
fn channel_name(key: &str) -> String {
    let up = key.to_uppercase();
    match up.find("-REF") {
        Some(i) => up[..i].to_string(),
        None => up,
    }
}

/// Three numbers separated by `sep`, as `(a, b, c)`.
fn three(s: &str, sep: char) -> Option<(i64, i64, i64)> {
    let mut f = s.split(sep).map(|p| p.trim().parse::<i64>().ok());
    let r = (f.next()??, f.next()??, f.next()??);
    f.next().is_none().then_some(r)
}

/// `TestDate` at `TestTime`, read with the three date forms MNE-Python knows.
fn test_start(date: &str, time: &str) -> Option<NaiveDateTime> {
    let (y, m, d) = if date.contains('/') {
        let (m, d, y) = three(date, '/')?;
        (y, m, d)
    } else if date.contains('-') {
        let (d, m, y) = three(date, '-')?;
        (y, m, d)
    } else if date.contains('.') {
        three(date, '.')?
    } else {
        return None;
    };
    let (hh, mm, ss) = three(time, ':')?;
    NaiveDate::from_ymd_opt(
        i32::try_from(y).ok()?,
        u32::try_from(m).ok()?,
        u32::try_from(d).ok()?,
    )?
    .and_hms_opt(
        u32::try_from(hh).ok()?,
        u32::try_from(mm).ok()?,
        u32::try_from(ss).ok()?,
    )
}

fn number(path: &Path, layout: &Layout, key: &str, what: &str) -> Result<f64, ReadError> {
    let v = layout.info(key).ok_or_else(|| {
        ReadError::invalid(
            path,
            format!("the layout's [FileInfo] lacks {what} ({key})"),
        )
    })?;
    v.trim().parse::<f64>().map_err(|_| {
        ReadError::invalid(
            path,
            format!("the layout's {what} ({key}={v}) is not a number"),
        )
    })
}

/// Opens a Persyst recording from its `.lay` (or its `.dat`, through the `.lay` beside it).
pub fn open(path: &Path) -> Result<Recording, ReadError> {
    if is_companion(path)
        && let Some(lay) = layout_of(path)
    {
        return open(&lay);
    }
    let text = read_small_text(path, MAX_LAYOUT_BYTES, "a Persyst layout")?;
    let layout = Layout::parse(&text);
    if !sniff(text.as_bytes()) {
        return Err(ReadError::invalid(
            path,
            "not a Persyst layout: it has no [FileInfo] section",
        ));
    }
    let mut warnings = Vec::new();
    if !layout.bad.is_empty() {
        warnings.push(format!(
            "{} layout lines not understood and left out (the first: {:?})",
            layout.bad.len(),
            layout.bad[0]
        ));
    }

    let file = layout.info("file").ok_or_else(|| {
        ReadError::invalid(
            path,
            "the layout does not name its data file (File= in [FileInfo])",
        )
    })?;
    // The file's name only: the layout may hold the path it was written at (MNE-Python
    // looks beside the layout too).
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file).trim();
    let dat = path.parent().unwrap_or(Path::new(".")).join(name);
    if name.is_empty() || !dat.is_file() {
        return Err(ReadError::invalid(
            path,
            format!(
                "the data file the layout names, {name:?}, is not beside it ({} is missing)",
                dat.display()
            ),
        ));
    }
    let fs = number(path, &layout, "samplingrate", "sampling rate")?;
    if !(fs.is_finite() && fs > 0.0) {
        return Err(ReadError::invalid(
            path,
            format!("the sampling rate {fs} Hz is not a positive number"),
        ));
    }
    let cal = number(path, &layout, "calibration", "calibration")?;
    if !cal.is_finite() {
        return Err(ReadError::invalid(
            path,
            "the calibration is not a finite number",
        ));
    }
    let count = number(path, &layout, "waveformcount", "channel count")?;
    let n_channels = layout.channels.len();
    if count != n_channels as f64 {
        return Err(ReadError::invalid(
            path,
            format!(
                "the layout says {count} channels (WaveformCount) but its [ChannelMap] lists \
                 {n_channels}"
            ),
        ));
    }
    if n_channels == 0 || n_channels > MAX_CHANNELS {
        return Err(ReadError::invalid(
            path,
            format!("{n_channels} channels: not a Persyst recording's"),
        ));
    }
    let data_type = number(path, &layout, "datatype", "sample type")?;
    let sample = match data_type {
        0.0 => SampleType::I16,
        7.0 => SampleType::I32,
        t => {
            return Err(ReadError::invalid(
                path,
                format!(
                    "sample type {t} is not one Persyst writes (0: 16-bit, 7: 32-bit integers)"
                ),
            ));
        }
    };

    let map = MatrixSource::map(&dat)?;
    let samples = map.len() / (sample.bytes() * n_channels);
    if samples == 0 {
        return Err(ReadError::invalid(
            &dat,
            "the data file holds not one sample of every channel",
        ));
    }
    let matrix = MatrixSource::new(
        &dat,
        map,
        0,
        sample,
        false,
        Orientation::Multiplexed,
        samples,
        vec![cal; n_channels],
    )?;
    let digital = match sample {
        SampleType::I16 => (i16::MIN as f64, i16::MAX as f64),
        _ => (i32::MIN as f64, i32::MAX as f64),
    };
    let (lo, hi) = (digital.0 * cal, digital.1 * cal);
    let signals: Vec<SignalInfo> = (layout.channels.iter())
        .map(|k| SignalInfo {
            // MNE-Python types every Persyst channel EEG (an "EKG" too).
            kind: ChannelType::Eeg,
            ..SignalInfo::continuous(
                channel_name(k),
                "uV".into(),
                fs,
                samples,
                (lo.min(hi), lo.max(hi)),
            )
        })
        .collect();

    let start = match (layout.patient("testdate"), layout.patient("testtime")) {
        (Some(d), Some(t)) => {
            let s = test_start(d, t);
            if s.is_none() {
                warnings.push(format!(
                    "the test date {d:?} at {t:?} is not a date ede reads: start unknown"
                ));
            }
            s
        }
        _ => None,
    };

    let mut annotations = Vec::new();
    let mut unreadable = 0;
    for (text, events) in &layout.comments {
        for (onset, duration) in events {
            match (onset.trim().parse::<f64>(), duration.trim().parse::<f64>()) {
                (Ok(onset), Ok(duration)) => annotations.push(Annotation {
                    onset,
                    duration,
                    text: text.clone(),
                }),
                _ => unreadable += 1,
            }
        }
    }
    if unreadable > 0 {
        warnings.push(format!(
            "{unreadable} comments without a readable time left out"
        ));
    }
    let duration = samples as f64 / fs;
    // MNE-Python's end of the data: the last sample's time and one sample more.
    super::sort_and_crop(&mut annotations, (samples - 1) as f64 / fs + 1.0 / fs);

    let mut rec = Recording::continuous(
        Some(path.to_path_buf()),
        Format::Persyst,
        start.unwrap_or_else(unknown_start),
        signals,
        annotations,
        warnings,
        duration,
        Arc::new(matrix),
    );
    if let Some(name) = layout.patient("fullname") {
        rec.patient = name.trim().to_string();
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(dat: &str, count: usize, data_type: u8, comments: &str) -> String {
        format!(
            "[FileInfo]\r\nFile=C:\\exports\\{dat}\r\nFileType=Interleaved\r\nSamplingRate=100\r\n\
             HeaderLength=0\r\nCalibration=0.5\r\nWaveformCount={count}\r\nDataType={data_type}\r\n\
             \r\n[Patient]\r\nFullName=Doe\r\nTestDate=3/7/2020\r\nTestTime=13:04:05\r\n\r\n\
             [ChannelMap]\r\nFp1-Ref=1\r\nEKG1-Ref=2\r\n\r\n[Comments]\r\n{comments}"
        )
    }

    #[test]
    fn a_small_recording_reads_as_mne_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let lay = dir.path().join("r.lay");
        let comments = "1.5,0.5,0,1,spike, left\r\n0.25,0,0,1,eyes\r\n0.0,0.1,0,1,spike, left\r\n\
                        9.0,1,0,1,past the end\r\n";
        std::fs::write(&lay, layout("r.dat", 2, 0, comments)).unwrap();
        // 2 channels x 3 samples, multiplexed int16.
        let data: Vec<u8> = [10i16, -2, 20, -4, 30, -6]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        std::fs::write(dir.path().join("r.dat"), &data).unwrap();
        for opened in [&lay, &dir.path().join("r.dat")] {
            assert!(is_companion(&dir.path().join("r.dat")));
            let rec = open(opened).unwrap();
            let labels: Vec<&str> = rec.signals.iter().map(|s| s.label.as_str()).collect();
            assert_eq!(labels, ["FP1", "EKG1"]);
            assert!(rec.signals.iter().all(|s| s.kind == ChannelType::Eeg));
            assert_eq!(rec.signals[0].samples, 3);
            assert_eq!(rec.read_all(1).unwrap(), [-1.0, -2.0, -3.0]);
            assert_eq!(rec.read_all(0).unwrap(), [5.0, 10.0, 15.0]);
            assert_eq!(rec.start.to_string(), "2020-03-07 13:04:05");
            let a: Vec<(f64, f64, &str)> = (rec.annotations.iter())
                .map(|a| (a.onset, a.duration, a.text.as_str()))
                .collect();
            // Cropped to the 0.03 s of data: the first comment starts after it.
            assert_eq!(a, [(0.0, 0.03, "spike, left")]);
        }
    }

    #[test]
    fn comments_sort_and_crop_as_mne() {
        let mut a: Vec<Annotation> = [(1.0, 0.5, "b"), (0.0, 3.0, "c"), (0.0, 0.5, "a")]
            .into_iter()
            .map(|(onset, duration, t)| Annotation {
                onset,
                duration,
                text: t.into(),
            })
            .collect();
        super::super::sort_and_crop(&mut a, 2.0);
        let got: Vec<(f64, f64, &str)> = a
            .iter()
            .map(|a| (a.onset, a.duration, a.text.as_str()))
            .collect();
        assert_eq!(got, [(0.0, 0.5, "a"), (0.0, 2.0, "c"), (1.0, 0.5, "b")]);
    }

    #[test]
    fn dates_read_in_three_forms() {
        let t = |d| test_start(d, "02:37:48").map(|s| s.to_string());
        assert_eq!(t("2014.12.19").as_deref(), Some("2014-12-19 02:37:48"));
        assert_eq!(t("19-12-2014").as_deref(), Some("2014-12-19 02:37:48"));
        assert_eq!(t("12/19/2014").as_deref(), Some("2014-12-19 02:37:48"));
        assert_eq!(t("19-DEC-2014"), None);
        assert_eq!(channel_name("POL $TP9-Ref"), "POL $TP9");
        assert!(sniff(b"\xef\xbb\xbf[FileInfo]\r\nFile=x.dat"));
        assert!(!sniff(b"[Common Infos]"));
    }

    #[test]
    fn bad_layouts_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let lay = dir.path().join("r.lay");
        std::fs::write(dir.path().join("r.dat"), [0u8; 8]).unwrap();
        for (text, why) in [
            (layout("r.dat", 3, 0, ""), "channels"),
            (layout("r.dat", 2, 5, ""), "sample type"),
            (layout("gone.dat", 2, 0, ""), "not beside it"),
            ("[FileInfo]\nFile=r.dat\n".to_string(), "sampling rate"),
            ("garbage \u{0}\u{1}".to_string(), "no [FileInfo]"),
        ] {
            std::fs::write(&lay, text).unwrap();
            let err = open(&lay).err().unwrap().to_string();
            assert!(err.contains(why), "{why}: {err}");
        }
        // A data file shorter than one time point.
        std::fs::write(&lay, layout("r.dat", 2, 7, "")).unwrap();
        std::fs::write(dir.path().join("r.dat"), [0u8; 7]).unwrap();
        assert!(open(&lay).is_err());
    }
}
