//! BIDS datasets (the Brain Imaging Data Structure): a folder with `dataset_description.json`,
//! `participants.tsv` and `sub-<label>[/ses-<label>]/<eeg|meg|ieeg>/` data files named by their
//! entities (`sub-01_ses-1_task-rest_run-1_eeg.vhdr`). A run opens as its recording with the
//! sidecars applied: `_events.tsv` as the events, `_channels.tsv` types and bad channels,
//! `_electrodes.tsv` positions. Analyses of a dataset write to `derivatives/ede/`, in the BIDS
//! derivatives layout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Annotation, ChannelType, OpenOptions, ReadError, Recording};

/// Data types ede opens.
const DATATYPES: [&str; 3] = ["eeg", "meg", "ieeg"];
/// Data file extensions, by preference where a run has several (a `.eeg` beside its `.vhdr`):
/// BIDS' EEG, MEG and iEEG ones ede reads. CTF's `.ds` and EGI's `.mff` are folders.
const EXTENSIONS: [&str; 10] = [
    "vhdr", "edf", "bdf", "set", "fif", "con", "sqd", "ds", "mff", "cnt",
];

/// Whether `path` is the root of a BIDS dataset.
/// Opens a recording file; a run of a BIDS dataset (by its name and folder) with its sidecars
/// (the events, channel types and bad channels that ede saves beside it too).
pub fn open_file(path: &Path, options: &OpenOptions) -> Result<Recording, ReadError> {
    match Run::of_file(path) {
        Some(run) => run.open(),
        None => Recording::open(path, options),
    }
}

pub fn is_dataset(path: &Path) -> bool {
    path.is_dir() && path.join("dataset_description.json").is_file()
}

/// One recording of a dataset, by its entities.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Run {
    pub path: PathBuf,
    pub subject: String,
    pub session: Option<String>,
    pub task: Option<String>,
    pub acquisition: Option<String>,
    pub run: Option<String>,
    /// eeg, meg or ieeg.
    pub datatype: String,
}

impl Run {
    /// The run a data file is, by its name and folder (`.../sub-01/eeg/sub-01_task-rest_eeg.vhdr`),
    /// so that a file named alone on the command line (as a study workflow names each run)
    /// opens with its sidecars too; `None` for a file not named the BIDS way.
    pub fn of_file(path: &Path) -> Option<Run> {
        let datatype = path.parent()?.file_name()?.to_str()?;
        let name = path.file_name()?.to_str()?;
        let base = name.split('.').next()?;
        (DATATYPES.contains(&datatype) && base.ends_with(&format!("_{datatype}")))
            .then(|| Run::named(path.to_path_buf(), datatype))
            .flatten()
    }

    /// The run of data file `path` in a `datatype` folder, its entities from its name.
    fn named(path: PathBuf, datatype: &str) -> Option<Run> {
        let name = path.file_name()?.to_string_lossy().into_owned();
        let entity = |key: &str| {
            name.split(['_', '.'])
                .find_map(|p| p.strip_prefix(&format!("{key}-")).map(str::to_string))
        };
        Some(Run {
            subject: entity("sub")?,
            session: entity("ses"),
            task: entity("task"),
            acquisition: entity("acq"),
            run: entity("run"),
            datatype: datatype.to_string(),
            path,
        })
    }

    /// The file name without its suffix and extension: `sub-01_task-rest` (the stem BIDS
    /// sidecars and derivatives share).
    pub fn stem(&self) -> String {
        let name = self.path.file_name().unwrap_or_default().to_string_lossy();
        let base = name.split('.').next().unwrap_or_default();
        match base.rsplit_once('_') {
            Some((stem, _suffix)) => stem.to_string(),
            None => base.to_string(),
        }
    }

    /// `sub-01 · ses-1 · task-rest · run-1`.
    pub fn title(&self) -> String {
        let mut parts = vec![format!("sub-{}", self.subject)];
        for (key, v) in [
            ("ses", &self.session),
            ("task", &self.task),
            ("acq", &self.acquisition),
            ("run", &self.run),
        ] {
            if let Some(v) = v {
                parts.push(format!("{key}-{v}"));
            }
        }
        parts.join(" · ")
    }

    /// A sidecar of this run: `<stem>_<suffix>`, or, for files BIDS shares between runs
    /// (electrodes, coordsystem), the nearest one the inheritance principle finds.
    fn sidecar(&self, suffix: &str) -> Option<PathBuf> {
        let dir = self.path.parent()?;
        let own = dir.join(format!("{}_{suffix}", self.stem()));
        if own.is_file() {
            return Some(own);
        }
        // Shared files name fewer entities (sub-01_space-CapTrak_electrodes.tsv): take the
        // one whose entities this run has, with the most of them.
        let entities: Vec<String> = self.stem().split('_').map(str::to_string).collect();
        let mut best: Option<(usize, PathBuf)> = None;
        for e in std::fs::read_dir(dir).ok()?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(&format!("_{suffix}")) else {
                continue;
            };
            let parts: Vec<&str> = stem.split('_').collect();
            let fits = parts
                .iter()
                .all(|p| p.starts_with("space-") || entities.iter().any(|e| e == p));
            if fits && best.as_ref().is_none_or(|b| parts.len() > b.0) {
                best = Some((parts.len(), e.path()));
            }
        }
        best.map(|b| b.1)
    }

    /// Opens the recording with the sidecars applied; what a sidecar got wrong is a warning.
    pub fn open(&self) -> Result<Recording, ReadError> {
        let mut rec = Recording::open(&self.path, &OpenOptions::default())?;
        if let Some(p) = self.sidecar("channels.tsv") {
            match read_tsv(&p) {
                Ok(t) => apply_channels(&mut rec, &t),
                Err(e) => rec.warnings.push(e.to_string()),
            }
        }
        if let Some(p) = self.sidecar("events.tsv") {
            match read_tsv(&p) {
                Ok(t) => apply_events(&mut rec, &t),
                Err(e) => rec.warnings.push(e.to_string()),
            }
        }
        if let Some(p) = self.sidecar("electrodes.tsv") {
            let scale = self.coordinate_scale();
            match read_tsv(&p) {
                Ok(t) => apply_electrodes(&mut rec, &t, scale),
                Err(e) => rec.warnings.push(e.to_string()),
            }
        }
        Ok(rec)
    }

    /// Metres per unit of `_electrodes.tsv`, from `_coordsystem.json` (m when unsaid).
    fn coordinate_scale(&self) -> f64 {
        let unit = self
            .sidecar("coordsystem.json")
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|j| {
                (j.get("EEGCoordinateUnits").or(j.get("iEEGCoordinateUnits")))
                    .and_then(|u| u.as_str().map(str::to_string))
            });
        match unit.as_deref() {
            Some("mm") => 1e-3,
            Some("cm") => 1e-2,
            _ => 1.0,
        }
    }
}

/// A tab-separated table: column names and rows, "n/a" kept as written.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// The value of `column` in `row`, `None` for a missing column or "n/a".
    pub fn get<'a>(&'a self, row: &'a [String], column: &str) -> Option<&'a str> {
        let v = row.get(self.column(column)?)?.as_str();
        (v != "n/a" && !v.is_empty()).then_some(v)
    }
}

pub fn read_tsv(path: &Path) -> Result<Table, ReadError> {
    let text = std::fs::read_to_string(path).map_err(|e| ReadError::io(path, e))?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(head) = lines.next() else {
        return Err(ReadError::invalid(path, "the table is empty"));
    };
    let columns: Vec<String> = head
        .trim_start_matches('\u{feff}')
        .split('\t')
        .map(|c| c.trim().to_string())
        .collect();
    let rows = lines
        .map(|l| l.split('\t').map(|c| c.trim().to_string()).collect())
        .collect();
    Ok(Table { columns, rows })
}

/// `_channels.tsv`: each named channel's type, and its status (bad channels are marked).
fn apply_channels(rec: &mut Recording, t: &Table) {
    let mut bads = Vec::new();
    for row in &t.rows {
        let Some(i) = t.get(row, "name").and_then(|n| rec.signal_index(n)) else {
            continue;
        };
        if let Some(kind) = t.get(row, "type").and_then(ChannelType::parse) {
            rec.signals[i].kind = kind;
        }
        if t.get(row, "status") == Some("bad") {
            rec.signals[i].bad = true;
            bads.push(rec.signals[i].label.clone());
        }
    }
    if !bads.is_empty() {
        rec.warnings
            .push(format!("bad channels (channels.tsv): {}", bads.join(", ")));
    }
}

/// `_events.tsv`: onset, duration, `trial_type` (else `value`) as the text, and `channel`
/// where an event belongs to one (kept as EDF+ keeps it, `text@@channel`). They replace
/// the file's own markers: BIDS keeps the events there.
fn apply_events(rec: &mut Recording, t: &Table) {
    let events: Vec<Annotation> = (t.rows.iter())
        .filter_map(|row| {
            let onset: f64 = t.get(row, "onset")?.parse().ok()?;
            let duration = (t.get(row, "duration"))
                .and_then(|d| d.parse().ok())
                .filter(|d: &f64| d.is_finite() && *d >= 0.0)
                .unwrap_or(0.0);
            let text = t
                .get(row, "trial_type")
                .or(t.get(row, "value"))
                .unwrap_or("event");
            // BIDS' optional `channel` column ties an event to a channel (n/a: to none).
            let text = match t.get(row, "channel").map(str::trim) {
                Some(c) if !c.is_empty() && c != "n/a" => Annotation::on_channel(text, c),
                _ => text.to_string(),
            };
            onset.is_finite().then_some(Annotation {
                onset,
                duration,
                text,
            })
        })
        .collect();
    rec.annotations = events;
}

/// `_electrodes.tsv`: name, x, y, z (in the coordinate system's units).
fn apply_electrodes(rec: &mut Recording, t: &Table, metres_per_unit: f64) {
    for row in &t.rows {
        let Some(i) = t.get(row, "name").and_then(|n| rec.signal_index(n)) else {
            continue;
        };
        let xyz: Option<Vec<f64>> = ["x", "y", "z"]
            .iter()
            .map(|c| t.get(row, c).and_then(|v| v.parse::<f64>().ok()))
            .collect();
        if let Some(p) = xyz.filter(|p| p.iter().all(|v| v.is_finite())) {
            rec.signals[i].position = Some([
                p[0] * metres_per_unit,
                p[1] * metres_per_unit,
                p[2] * metres_per_unit,
            ]);
        }
    }
}

/// A dataset: its name, participants and runs.
#[derive(Debug, Clone, Serialize)]
pub struct Dataset {
    pub root: PathBuf,
    pub name: String,
    pub participants: Table,
    pub runs: Vec<Run>,
}

impl Dataset {
    /// Reads the dataset's description and participants and finds every run (files only:
    /// nothing is opened).
    pub fn scan(root: &Path) -> Result<Dataset, ReadError> {
        if !is_dataset(root) {
            return Err(ReadError::invalid(
                root,
                "not a BIDS dataset: it has no dataset_description.json",
            ));
        }
        let description = root.join("dataset_description.json");
        let text =
            std::fs::read_to_string(&description).map_err(|e| ReadError::io(&description, e))?;
        let name = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|j| j.get("Name")?.as_str().map(str::to_string))
            // mne-bids' placeholder says nothing; the folder's name does.
            .filter(|n| !n.trim().is_empty() && n != "[Unspecified]")
            .unwrap_or_else(|| {
                root.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into()
            });
        let participants = read_tsv(&root.join("participants.tsv")).unwrap_or_default();
        let mut runs = Vec::new();
        for sub in sorted_dirs(root, "sub-") {
            let mut places = vec![sub.clone()];
            places.extend(sorted_dirs(&sub, "ses-"));
            for place in places {
                for datatype in DATATYPES {
                    runs.extend(runs_in(&place.join(datatype), datatype));
                }
            }
        }
        Ok(Dataset {
            root: root.to_path_buf(),
            name,
            participants,
            runs,
        })
    }

    /// The runs a filter keeps.
    pub fn select(&self, filter: &Filter) -> Vec<&Run> {
        self.runs.iter().filter(|r| filter.keeps(r)).collect()
    }

    /// The participants.tsv row of a subject.
    pub fn participant(&self, subject: &str) -> Option<&[String]> {
        let id = format!("sub-{subject}");
        let col = self.participants.column("participant_id")?;
        (self.participants.rows.iter())
            .find(|r| r.get(col).is_some_and(|v| *v == id))
            .map(Vec::as_slice)
    }

    /// Where an analysis of `run` writes: `derivatives/ede/sub-01/[ses-1/]eeg/<stem>_desc-<desc>
    /// <suffix>` (suffix with its extension: `.json`, `_eeg.bdf`). The folders and the
    /// derivative dataset's `dataset_description.json` are created.
    pub fn derivative(&self, run: &Run, desc: &str, suffix: &str) -> std::io::Result<PathBuf> {
        let base = self.root.join("derivatives").join("ede");
        std::fs::create_dir_all(&base)?;
        let description = base.join("dataset_description.json");
        if !description.is_file() {
            let doc = serde_json::json!({
                "Name": format!("ede analyses of {}", self.name),
                "BIDSVersion": "1.9.0",
                "DatasetType": "derivative",
                "GeneratedBy": [{
                    "Name": "ede",
                    "Version": env!("CARGO_PKG_VERSION"),
                }],
                "SourceDatasets": [{ "URL": "../../" }],
            });
            std::fs::write(&description, serde_json::to_string_pretty(&doc)?)?;
        }
        let mut dir = base.join(format!("sub-{}", run.subject));
        if let Some(s) = &run.session {
            dir = dir.join(format!("ses-{s}"));
        }
        dir = dir.join(&run.datatype);
        std::fs::create_dir_all(&dir)?;
        Ok(dir.join(format!("{}_desc-{desc}{suffix}", run.stem())))
    }
}

/// `--subject/--session/--task/--run`: each unset one keeps every value.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Filter {
    /// Only this subject (its label, without "sub-"), for a BIDS dataset.
    #[arg(long)]
    pub subject: Option<String>,
    /// Only this session (without "ses-").
    #[arg(long)]
    pub session: Option<String>,
    /// Only this task (without "task-").
    #[arg(long)]
    pub task: Option<String>,
    /// Only this run (without "run-").
    #[arg(long)]
    pub run: Option<String>,
}

impl Filter {
    pub fn keeps(&self, r: &Run) -> bool {
        let ok = |want: &Option<String>, have: &Option<String>| {
            want.as_ref()
                .is_none_or(|w| have.as_deref().is_some_and(|h| same_label(w, h)))
        };
        self.subject
            .as_ref()
            .is_none_or(|s| same_label(s, &r.subject))
            && ok(&self.session, &r.session)
            && ok(&self.task, &r.task)
            && ok(&self.run, &r.run)
    }
}

/// Labels compare as written, and run indices as numbers ("1" is "01").
fn same_label(a: &str, b: &str) -> bool {
    let a = a.split_once('-').map_or(a, |x| x.1);
    a == b || matches!((a.parse::<u64>(), b.parse::<u64>()), (Ok(x), Ok(y)) if x == y)
}

fn sorted_dirs(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix) && e.path().is_dir())
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

/// The data files of one `eeg`/`meg`/`ieeg` folder, one per run.
fn runs_in(dir: &Path, datatype: &str) -> Vec<Run> {
    let mut found: BTreeMap<String, (usize, PathBuf)> = BTreeMap::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((base, ext)) = name.split_once('.') else {
            continue;
        };
        let Some(rank) = EXTENSIONS.iter().position(|x| x.eq_ignore_ascii_case(ext)) else {
            continue;
        };
        if !base.ends_with(&format!("_{datatype}")) {
            continue;
        }
        // Split FIF parts (`_split-02_meg.fif`) are read through the first.
        if base.contains("_split-") && !base.contains("_split-01") {
            continue;
        }
        if found.get(base).is_none_or(|(r, _)| rank < *r) {
            found.insert(base.to_string(), (rank, e.path()));
        }
    }
    (found.into_values())
        .filter_map(|(_, path)| Run::named(path, datatype))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_their_channel_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.tsv");
        std::fs::write(
            &path,
            "onset\tduration\ttrial_type\tchannel\n1.5\t0\tspike\tC3\n2\t0.5\tblink\tn/a\n",
        )
        .unwrap();
        let mut rec = crate::recording::demo::demo_recording();
        apply_events(&mut rec, &read_tsv(&path).unwrap());
        let channels: Vec<Option<&str>> = rec.annotations.iter().map(|a| a.channel()).collect();
        assert_eq!(channels, [Some("C3"), None]);
        assert_eq!(rec.annotations[0].description(), "spike");
    }

    #[test]
    fn labels_and_filters() {
        assert!(same_label("1", "01"));
        assert!(same_label("sub-01", "01"));
        assert!(!same_label("rest", "oddball"));
        let r = Run {
            path: PathBuf::from("sub-01_task-rest_run-2_eeg.vhdr"),
            subject: "01".into(),
            session: None,
            task: Some("rest".into()),
            acquisition: None,
            run: Some("2".into()),
            datatype: "eeg".into(),
        };
        assert_eq!(r.stem(), "sub-01_task-rest_run-2");
        let f = Filter {
            task: Some("rest".into()),
            ..Default::default()
        };
        assert!(f.keeps(&r));
        let f = Filter {
            session: Some("1".into()),
            ..Default::default()
        };
        assert!(!f.keeps(&r));
    }
}
