//! The group step of a study: the per-recording outputs of a derivatives folder (what the batch
//! commands write, `sub-01/eeg/sub-01_task-rest_desc-xapen.json` and so on) gathered into tidy
//! tables, one row per recording and measured thing (a channel pair, a channel and band, a beat
//! label, a recording's blinks), with the columns of `participants.tsv` joined in; and the
//! figures of a first report (`figures`). The failed jobs a workflow recorded
//! (`status/<analysis>/<stem>.status` with its log in `logs/<analysis>/<stem>.log`) are listed
//! with their error.
//!
//! CSV is written here rather than through a crate: the tables are plain rows of labels and
//! numbers, and quoting the few text fields is all a CSV writer would add. Parquet is left out:
//! the crates that write it (arrow, parquet) would more than double the cold build.

pub mod figures;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rayon::prelude::*;
use serde::Serialize;

use crate::analysis::ica::iclabel::{CLASSES, top_class};
use crate::recording::bids::Table;

/// The bands of the band-power table, Hz: [low, high).
pub const BANDS: [(&str, f64, f64); 5] = [
    ("delta", 1.0, 4.0),
    ("theta", 4.0, 8.0),
    ("alpha", 8.0, 13.0),
    ("beta", 13.0, 30.0),
    ("gamma", 30.0, 80.0),
];

/// Which recording a row is about: its BIDS entities and its participant's columns.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Key {
    /// The file name's entities, `sub-01_ses-1_task-rest_run-1`.
    pub stem: String,
    pub subject: String,
    pub session: String,
    pub task: String,
    pub run: String,
    /// The participant's values, in the order of `Group::participant_columns`.
    pub participant: Vec<String>,
}

impl Key {
    /// The entities of `stem`; empty where the name has none.
    fn of(stem: &str, participants: Option<&Table>, columns: &[String]) -> Key {
        let entity = |key: &str| {
            (stem.split('_'))
                .find_map(|p| p.strip_prefix(&format!("{key}-")))
                .unwrap_or_default()
                .to_string()
        };
        let subject = entity("sub");
        let row = participants.and_then(|t| {
            let col = t.column("participant_id")?;
            let id = format!("sub-{subject}");
            t.rows.iter().find(|r| r.get(col) == Some(&id))
        });
        let participant = (columns.iter())
            .map(|c| {
                (row.zip(participants))
                    .and_then(|(r, t)| t.get(r, c))
                    .unwrap_or("n/a")
                    .to_string()
            })
            .collect();
        Key {
            stem: stem.to_string(),
            subject,
            session: entity("ses"),
            task: entity("task"),
            run: entity("run"),
            participant,
        }
    }
}

/// A recording's Cross-ApEn matrix.
#[derive(Debug, Clone)]
pub struct Xapen {
    pub key: Key,
    pub channels: Vec<String>,
    /// Row-major, channels x channels.
    pub matrix: Vec<f64>,
}

/// A recording's mean band power per channel and band (`BANDS`), over its blocks.
#[derive(Debug, Clone)]
pub struct BandPower {
    pub key: Key,
    /// (channel, band name, power).
    pub rows: Vec<(String, &'static str, f64)>,
}

/// A recording's Hermite fits: each beat's label, sigma (s) and MSE.
#[derive(Debug, Clone)]
pub struct Hermite {
    pub key: Key,
    pub unit: String,
    pub beats: Vec<(String, f64, f64)>,
}

/// A recording's blink removal, and its quality where `ede blinks measure` ran.
#[derive(Debug, Clone)]
pub struct Blinks {
    pub key: Key,
    pub duration_s: Option<f64>,
    pub blinks: usize,
    pub eye_events: usize,
    pub frontal_residual_pct: Option<f64>,
    pub posterior_change_pct: Option<f64>,
}

/// A recording's ICA: per ICLabel class (its most probable class), the components, their share
/// of the variance, and how many were excluded.
#[derive(Debug, Clone)]
pub struct Ica {
    pub key: Key,
    pub method: String,
    /// Per class of `iclabel::CLASSES`: (components, variance, excluded); empty where ICLabel
    /// could not run.
    pub classes: Vec<(usize, f64, usize)>,
    pub components: usize,
    pub excluded: usize,
    pub iclabel_error: Option<String>,
}

/// A job a workflow recorded as failed.
#[derive(Debug, Clone)]
pub struct Failure {
    pub key: Key,
    pub analysis: String,
    pub log: PathBuf,
    /// The log's last lines that say what went wrong.
    pub error: String,
}

/// Everything the group step found.
#[derive(Debug, Clone, Default)]
pub struct Group {
    pub participant_columns: Vec<String>,
    pub xapen: Vec<Xapen>,
    pub band_power: Vec<BandPower>,
    pub hermite: Vec<Hermite>,
    pub blinks: Vec<Blinks>,
    pub ica: Vec<Ica>,
    pub failures: Vec<Failure>,
    /// Files that could not be read, with why: listed, not fatal.
    pub unreadable: Vec<(PathBuf, String)>,
}

/// Where each kind of output lies: (file name ending, kind).
const OUTPUTS: [(&str, Kind); 6] = [
    ("_desc-xapen.json", Kind::Xapen),
    ("_desc-bandpower.csv", Kind::BandPower),
    ("_desc-hermite.json", Kind::Hermite),
    ("_desc-deblink.json", Kind::Deblink),
    ("_desc-blinkquality.json", Kind::BlinkQuality),
    ("_desc-iclabel.json", Kind::Ica),
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Xapen,
    BandPower,
    Hermite,
    Deblink,
    BlinkQuality,
    Ica,
}

/// Gathers the outputs under `dir` (a derivatives folder), joining `participants`.
pub fn collect(dir: &Path, participants: Option<&Table>) -> anyhow::Result<Group> {
    if !dir.is_dir() {
        anyhow::bail!("{} is not a folder", dir.display());
    }
    let columns: Vec<String> = participants.map_or(Vec::new(), |t| {
        (t.columns.iter())
            .filter(|c| *c != "participant_id")
            .cloned()
            .collect()
    });
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    let mut g = Group {
        participant_columns: columns.clone(),
        ..Default::default()
    };
    // Each file read and parsed on its own (in parallel: a study's outputs run to gigabytes),
    // then put together in file order.
    let parsed: Vec<(PathBuf, anyhow::Result<Parsed>)> = (files.into_par_iter())
        .filter_map(|path| {
            let name = path.file_name()?.to_string_lossy().into_owned();
            let parsed = parse(dir, &path, &name, participants, &columns)?;
            Some((path, parsed))
        })
        .collect();
    let mut quality: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    let mut deblinks: Vec<(Key, DeblinkFile)> = Vec::new();
    for (path, parsed) in parsed {
        match parsed {
            Ok(Parsed::Xapen(x)) => g.xapen.push(x),
            Ok(Parsed::BandPower(b)) => g.band_power.push(b),
            Ok(Parsed::Hermite(h)) => g.hermite.push(h),
            Ok(Parsed::Ica(i)) => g.ica.push(i),
            Ok(Parsed::Deblink(key, d)) => deblinks.push((key, d)),
            Ok(Parsed::Quality(stem, q)) => {
                quality.insert(stem, (q.frontal_residual_pct, q.posterior_change_pct));
            }
            Ok(Parsed::Failure(f)) => g.failures.push(f),
            Ok(Parsed::Nothing) => {}
            Err(e) => g.unreadable.push((path, format!("{e:#}"))),
        }
    }
    for (key, d) in deblinks {
        let q = quality.get(&key.stem);
        g.blinks.push(Blinks {
            duration_s: d.duration_s,
            blinks: d.blinks.len(),
            eye_events: d.events.len(),
            frontal_residual_pct: q.map(|q| q.0),
            posterior_change_pct: q.map(|q| q.1),
            key,
        });
    }
    Ok(g)
}

/// What one file held.
enum Parsed {
    Xapen(Xapen),
    BandPower(BandPower),
    Hermite(Hermite),
    Ica(Ica),
    Deblink(Key, DeblinkFile),
    Quality(String, QualityFile),
    Failure(Failure),
    Nothing,
}

/// The parts of the reports the tables use (the rest is skipped unread).
#[derive(serde::Deserialize)]
struct XapenFile {
    channels: Vec<String>,
    matrix: Vec<Vec<f64>>,
}

#[derive(serde::Deserialize)]
struct HermiteFile {
    #[serde(default)]
    unit: String,
    beats: Vec<BeatRow>,
}

#[derive(serde::Deserialize)]
struct BeatRow {
    label: Option<String>,
    sigma: f64,
    mse: f64,
}

/// `ede ica --labels`.
#[derive(serde::Deserialize)]
struct LabelsFile {
    method: String,
    components: Vec<ComponentRow>,
    #[serde(default)]
    iclabel_error: Option<String>,
}

#[derive(serde::Deserialize)]
struct ComponentRow {
    explained_variance: f64,
    iclabel: Option<[f64; 7]>,
    excluded: bool,
}

impl LabelsFile {
    fn summary(self, key: Key) -> Ica {
        let mut classes = Vec::new();
        if self.components.iter().all(|c| c.iclabel.is_some()) {
            classes = vec![(0, 0.0, 0); 7];
            for c in &self.components {
                let p = c.iclabel.expect("checked above");
                let top = top_class(&p);
                classes[top].0 += 1;
                classes[top].1 += c.explained_variance;
                classes[top].2 += usize::from(c.excluded);
            }
        }
        Ica {
            key,
            method: self.method,
            classes,
            components: self.components.len(),
            excluded: self.components.iter().filter(|c| c.excluded).count(),
            iclabel_error: self.iclabel_error,
        }
    }
}

#[derive(serde::Deserialize)]
struct DeblinkFile {
    duration_s: Option<f64>,
    blinks: Vec<serde::de::IgnoredAny>,
    #[serde(default)]
    events: Vec<serde::de::IgnoredAny>,
}

#[derive(serde::Deserialize)]
struct QualityFile {
    frontal_residual_pct: f64,
    posterior_change_pct: f64,
}

/// File `path` (named `name`) of output folder `dir`, if it is one the group step reads.
fn parse(
    dir: &Path,
    path: &Path,
    name: &str,
    participants: Option<&Table>,
    columns: &[String],
) -> Option<anyhow::Result<Parsed>> {
    if let Some(stem) = name.strip_suffix(".status") {
        let analysis = path.parent()?.file_name()?.to_string_lossy().into_owned();
        let status = std::fs::read_to_string(path).unwrap_or_default();
        // "ok", "skipped" (nothing to do, such as Hermite fits without an ECG channel) or
        // "failed".
        if status.trim() != "failed" {
            return Some(Ok(Parsed::Nothing));
        }
        let log = dir.join("logs").join(&analysis).join(format!("{stem}.log"));
        return Some(Ok(Parsed::Failure(Failure {
            key: Key::of(stem, participants, columns),
            error: last_error(&log),
            analysis,
            log,
        })));
    }
    let (stem, kind) = OUTPUTS
        .iter()
        .find_map(|(end, kind)| Some((name.strip_suffix(end)?, *kind)))?;
    let key = Key::of(stem, participants, columns);
    let read = || -> anyhow::Result<Parsed> {
        if kind == Kind::BandPower {
            return Ok(Parsed::BandPower(read_band_power(path, key)?));
        }
        let text = std::fs::read(path)?;
        Ok(match kind {
            Kind::Xapen => {
                let f: XapenFile = serde_json::from_slice(&text)?;
                let n = f.channels.len();
                if f.matrix.len() != n || f.matrix.iter().any(|r| r.len() != n) {
                    anyhow::bail!("the matrix is not {n} x {n}");
                }
                Parsed::Xapen(Xapen {
                    key,
                    channels: f.channels,
                    matrix: f.matrix.concat(),
                })
            }
            Kind::Hermite => {
                let f: HermiteFile = serde_json::from_slice(&text)?;
                Parsed::Hermite(Hermite {
                    key,
                    unit: f.unit,
                    beats: (f.beats.into_iter())
                        .map(|b| {
                            (
                                b.label.unwrap_or_else(|| "unlabelled".into()),
                                b.sigma,
                                b.mse,
                            )
                        })
                        .collect(),
                })
            }
            Kind::Ica => Parsed::Ica(serde_json::from_slice::<LabelsFile>(&text)?.summary(key)),
            Kind::Deblink => Parsed::Deblink(key, serde_json::from_slice(&text)?),
            Kind::BlinkQuality => Parsed::Quality(stem.to_string(), serde_json::from_slice(&text)?),
            Kind::BandPower => unreachable!(),
        })
    };
    Some(read())
}

/// Every file under `dir`, but not what the group step itself writes.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = e.path();
        if path.is_dir() {
            if e.file_name() != "group" {
                walk(&path, out);
            }
        } else {
            out.push(path);
        }
    }
}

/// The last lines of a log that name an error (else its last line).
fn last_error(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let errors: Vec<&str> = (lines.iter())
        .filter(|l| l.to_ascii_lowercase().contains("error"))
        .copied()
        .collect();
    match (errors.last(), lines.last()) {
        (Some(e), _) => e.trim().to_string(),
        (None, Some(l)) => l.trim().to_string(),
        (None, None) => "no log".into(),
    }
}

/// A band-power table (`channel,start_s,<f>Hz,...`): each channel's power averaged over its
/// blocks and over the scales whose centre frequency lies in each band.
fn read_band_power(path: &Path, key: Key) -> anyhow::Result<BandPower> {
    let text = std::fs::read_to_string(path)?;
    let mut lines = text.lines();
    let head = lines.next().context("empty table")?;
    let freqs: Vec<f64> = (head.split(',').skip(2))
        .map(|h| h.trim_end_matches("Hz").parse::<f64>())
        .collect::<Result<_, _>>()
        .context("a column is not a frequency")?;
    // Per channel, the sum of each scale's power over blocks, and the block count.
    let mut sums: Vec<(String, Vec<f64>, usize)> = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let mut cells = line.split(',');
        let channel = cells.next().context("no channel")?;
        let values: Vec<f64> = cells
            .skip(1)
            .map(|c| c.parse().unwrap_or(f64::NAN))
            .collect();
        if values.len() != freqs.len() || values.iter().any(|v| !v.is_finite()) {
            continue;
        }
        match sums.iter_mut().find(|s| s.0 == channel) {
            Some(s) => {
                s.1.iter_mut().zip(&values).for_each(|(a, v)| *a += v);
                s.2 += 1;
            }
            None => sums.push((channel.to_string(), values, 1)),
        }
    }
    let mut rows = Vec::new();
    for (channel, sum, blocks) in sums {
        for (band, lo, hi) in BANDS {
            let inside: Vec<f64> = (freqs.iter().zip(&sum))
                .filter(|(f, _)| **f >= lo && **f < hi)
                .map(|(_, s)| s / blocks as f64)
                .collect();
            if !inside.is_empty() {
                rows.push((
                    channel.clone(),
                    band,
                    inside.iter().sum::<f64>() / inside.len() as f64,
                ));
            }
        }
    }
    Ok(BandPower { key, rows })
}

/// A CSV field, quoted where it must be.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A number and the end of its row.
fn write_number(body: &mut String, v: f64) {
    use std::fmt::Write;
    let _ = if v.is_finite() {
        writeln!(body, "{v}")
    } else {
        writeln!(body)
    };
}

/// A number as a CSV field: empty where there is none.
fn number(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map_or(String::new(), |v| format!("{v}"))
}

impl Group {
    /// The leading columns of every table: the entities and the participant's columns.
    fn key_header(&self) -> String {
        let mut h = vec!["subject", "session", "task", "run"];
        h.extend(self.participant_columns.iter().map(String::as_str));
        h.into_iter().map(field).collect::<Vec<_>>().join(",")
    }

    fn key_cells(key: &Key) -> String {
        let mut c = vec![&key.subject, &key.session, &key.task, &key.run];
        c.extend(key.participant.iter());
        c.into_iter()
            .map(|s| field(s))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Writes `xapen.csv`, `bandpower.csv`, `hermite.csv`, `blinks.csv`, `ica.csv` and
    /// `failures.csv`
    /// into `dir`, each whole or not at all. Returns the paths written.
    pub fn write_tables(&self, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        use std::fmt::Write;
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let head = self.key_header();
        let mut written = Vec::new();
        let mut table = |name: &str, columns: &str, body: String| -> anyhow::Result<()> {
            let path = dir.join(name);
            let text = format!("{head},{columns}\n{body}");
            crate::recording::write_whole(&path, text.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            written.push(path);
            Ok(())
        };
        // The long tables are written a recording at a time, in parallel.
        let body: String = (self.xapen.par_iter())
            .map(|x| {
                let mut body = String::new();
                let k = Self::key_cells(&x.key);
                let n = x.channels.len();
                for (i, a) in x.channels.iter().enumerate() {
                    let a = field(a);
                    for (j, b) in x.channels.iter().enumerate() {
                        let _ = write!(body, "{k},{a},{},", field(b));
                        write_number(&mut body, x.matrix[i * n + j]);
                    }
                }
                body
            })
            .collect();
        table("xapen.csv", "channel_a,channel_b,xapen", body)?;
        let body: String = (self.band_power.par_iter())
            .map(|b| {
                let mut body = String::new();
                let k = Self::key_cells(&b.key);
                for (channel, band, power) in &b.rows {
                    let _ = write!(body, "{k},{},{band},", field(channel));
                    write_number(&mut body, *power);
                }
                body
            })
            .collect();
        table("bandpower.csv", "channel,band,power", body)?;
        let mut body = String::new();
        for h in &self.hermite {
            let k = Self::key_cells(&h.key);
            for (label, beats) in beats_by_label(&h.beats) {
                let sigma: Vec<f64> = beats.iter().map(|b| b.0).collect();
                let mse: Vec<f64> = beats.iter().map(|b| b.1).collect();
                let ((sm, ss), (mm, ms)) = (mean_sd(&sigma), mean_sd(&mse));
                writeln!(
                    body,
                    "{k},{},{},{},{},{},{},{},{}",
                    field(&label),
                    beats.len(),
                    number(Some(sm * 1e3)),
                    number(Some(ss * 1e3)),
                    number(Some(median(&sigma) * 1e3)),
                    number(Some(mm)),
                    number(Some(ms)),
                    field(&h.unit),
                )?;
            }
        }
        table(
            "hermite.csv",
            "label,beats,sigma_mean_ms,sigma_sd_ms,sigma_median_ms,mse_mean,mse_sd,unit",
            body,
        )?;
        let mut body = String::new();
        for b in &self.blinks {
            let per_min = b
                .duration_s
                .filter(|&d| d > 0.0)
                .map(|d| b.blinks as f64 * 60.0 / d);
            writeln!(
                body,
                "{},{},{},{},{},{},{}",
                Self::key_cells(&b.key),
                number(b.duration_s),
                b.blinks,
                number(per_min),
                b.eye_events,
                number(b.frontal_residual_pct),
                number(b.posterior_change_pct),
            )?;
        }
        table(
            "blinks.csv",
            "duration_s,blinks,blinks_per_min,eye_events,frontal_residual_pct,posterior_change_pct",
            body,
        )?;
        let mut body = String::new();
        for i in &self.ica {
            let k = Self::key_cells(&i.key);
            let method = field(&i.method);
            if i.classes.is_empty() {
                let why = field(i.iclabel_error.as_deref().unwrap_or("no ICLabel"));
                writeln!(
                    body,
                    "{k},n/a,{},n/a,{},{method},{why}",
                    i.components, i.excluded
                )?;
            }
            for (c, (n, variance, excluded)) in i.classes.iter().enumerate() {
                writeln!(
                    body,
                    "{k},{},{n},{},{excluded},{method},",
                    CLASSES[c],
                    number(Some(100.0 * variance))
                )?;
            }
        }
        table(
            "ica.csv",
            "iclabel_class,components,variance_pct,excluded,method,note",
            body,
        )?;
        let mut body = String::new();
        for f in &self.failures {
            writeln!(
                body,
                "{},{},{},{}",
                Self::key_cells(&f.key),
                field(&f.analysis),
                field(&f.log.to_string_lossy()),
                field(&f.error)
            )?;
        }
        for (path, e) in &self.unreadable {
            let stem = path.file_name().unwrap_or_default().to_string_lossy();
            let key = Key::of(stem.split("_desc-").next().unwrap_or_default(), None, &[]);
            let mut k = Self::key_cells(&key);
            k.push_str(&",n/a".repeat(self.participant_columns.len()));
            writeln!(
                body,
                "{k},read,{},{}",
                field(&path.to_string_lossy()),
                field(e)
            )?;
        }
        table("failures.csv", "analysis,log,error", body)?;
        Ok(written)
    }
}

/// Beats grouped by label, labels in order: (label, [(sigma, mse)]).
pub fn beats_by_label(beats: &[(String, f64, f64)]) -> BTreeMap<String, Vec<(f64, f64)>> {
    let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (label, sigma, mse) in beats {
        by.entry(label.clone()).or_default().push((*sigma, *mse));
    }
    by
}

/// Mean and SD (ddof = 1; 0 for one value).
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var.sqrt())
}

/// The median (NaN for none).
pub fn median(v: &[f64]) -> f64 {
    quantile(v, 0.5)
}

/// The `q` quantile, linearly interpolated (NaN for none).
pub fn quantile(v: &[f64], q: f64) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(f64::total_cmp);
    let at = q.clamp(0.0, 1.0) * (s.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    s[lo] + (s[hi] - s[lo]) * (at - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_fields_and_quantiles() {
        let t = Table {
            columns: vec!["participant_id".into(), "group".into()],
            rows: vec![vec!["sub-01".into(), "control".into()]],
        };
        let k = Key::of("sub-01_ses-2_task-rest", Some(&t), &["group".into()]);
        assert_eq!((k.subject.as_str(), k.session.as_str()), ("01", "2"));
        assert_eq!((k.task.as_str(), k.run.as_str()), ("rest", ""));
        assert_eq!(k.participant, vec!["control"]);
        let k = Key::of("sub-09_task-rest", Some(&t), &["group".into()]);
        assert_eq!(k.participant, vec!["n/a"]);
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.5);
        assert_eq!(mean_sd(&[1.0, 3.0]), (2.0, 2f64.sqrt()));
        assert!(median(&[]).is_nan());
    }
}
