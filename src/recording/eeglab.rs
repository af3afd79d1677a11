//! EEGLAB datasets: a `.set` (a MAT-file, level 5) with the `EEG` structure's fields, and the
//! samples either inside it or in a `.fdt` beside it (float32, channels x samples, column-major:
//! multiplexed). Channels with their types and positions (`chanlocs`), events (`event`: type,
//! latency counted from 1, duration), and epochs (`trials` > 1) shown as one segment each.
//! Samples are in microvolts, as EEGLAB keeps them. MATLAB v7.3 (HDF5) `.set` files are read
//! through `mat73`, their samples decoded on demand.

use std::path::Path;
use std::sync::Arc;

use super::binary::{MatrixSource, Orientation, SampleType};
use super::mat5::{self, Numbers, Value};
use super::mat73;
use super::{
    Annotation, ChannelType, Format, MemorySource, ReadError, Recording, Segment, SignalInfo,
    unknown_start,
};

/// Whether `path` is the `.fdt` of a dataset whose `.set` lies beside it.
pub fn is_companion(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("fdt"))
        && path.with_extension("set").is_file()
}

/// The EEG structure's fields: inside a variable `EEG` (older EEGLAB, MATLAB's `save`), or
/// the file's variables themselves (EEGLAB's `-struct` saves, eeglabio).
struct Fields(Vec<(String, Value)>);

impl Fields {
    fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    fn number(&self, name: &str) -> Option<f64> {
        self.get(name).and_then(Value::number)
    }
}

pub fn open(path: &Path) -> Result<Recording, ReadError> {
    if is_companion(path) {
        return open(&path.with_extension("set"));
    }
    let map = MatrixSource::map(path)?;
    if map.is_empty() {
        return Err(ReadError::invalid(path, "the file is empty"));
    }
    let bad = |reason: String| ReadError::invalid(path, reason);
    let unreadable = |e: String| bad(format!("not a readable EEGLAB .set: {e}"));
    // MATLAB v7.3 files (EEGLAB's choice for datasets over 2 GB) are HDF5.
    let (vars, map, v73) = if mat73::is_mat73(&map) {
        let m = mat73::Mat73::open(map).map_err(unreadable)?;
        (m.variables().map_err(unreadable)?, None, Some(m))
    } else {
        (mat5::read(&map).map_err(unreadable)?, Some(map), None)
    };
    let eeg = match vars.iter().find(|(n, _)| n == "EEG") {
        Some((_, Value::Struct { fields, items, .. })) if !items.is_empty() => Fields(
            fields
                .iter()
                .cloned()
                .zip(items[0].iter().cloned())
                .collect(),
        ),
        _ => Fields(vars),
    };
    let count = |name: &str, max: f64| -> Result<usize, ReadError> {
        let v = eeg
            .number(name)
            .ok_or_else(|| bad(format!("the EEG structure has no {name}")))?;
        if !(v.is_finite() && v >= 0.0 && v <= max && v.fract() == 0.0) {
            return Err(bad(format!("EEG.{name} = {v} is not a count up to {max}")));
        }
        Ok(v as usize)
    };
    let channels = count("nbchan", 1e5)?;
    let points = count("pnts", 1e12)?;
    let trials = count("trials", 1e7)?.max(1);
    let fs = eeg.number("srate").unwrap_or(f64::NAN);
    if !(fs.is_finite() && fs > 0.0) {
        return Err(bad(format!("EEG.srate = {fs} is not a sampling rate")));
    }
    if channels == 0 {
        return Err(bad("the dataset has no channels (EEG.nbchan = 0)".into()));
    }
    let samples = points
        .checked_mul(trials)
        .ok_or_else(|| bad("EEG.pnts x EEG.trials overflows".into()))?;
    if !(samples as f64 / fs).is_finite() {
        return Err(bad(format!("EEG.srate = {fs} is not a sampling rate")));
    }
    let mut warnings = Vec::new();

    let source: Arc<dyn super::SampleSource> = match eeg.get("data") {
        Some(Value::Numbers { numbers, dims }) => {
            let need = channels.saturating_mul(samples);
            let have = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
            if have != Some(need) {
                let have = have.map_or("too many".into(), |n| n.to_string());
                return Err(bad(format!(
                    "EEG.data holds {have} numbers, not nbchan x pnts x trials = {need}"
                )));
            }
            match (numbers, map, &v73) {
                (
                    Numbers::InFile {
                        offset,
                        sample,
                        big_endian,
                        ..
                    },
                    Some(map),
                    _,
                ) => Arc::new(MatrixSource::new(
                    path,
                    map,
                    *offset,
                    *sample,
                    *big_endian,
                    Orientation::Multiplexed,
                    samples,
                    vec![1.0; channels],
                )?),
                (Numbers::Deferred(at), _, Some(v73)) => {
                    v73.rows(path, at, channels).map_err(bad)?
                }
                (Numbers::InFile { .. } | Numbers::Deferred(_), ..) => {
                    return Err(bad("EEG.data lies where it cannot be read".into()));
                }
                (Numbers::Decoded(v), ..) => {
                    if channels.checked_mul(samples).is_none_or(|n| v.len() < n) {
                        return Err(bad(format!(
                            "EEG.data holds {} numbers, not {channels} channels x {samples} samples",
                            v.len()
                        )));
                    }
                    let rows = (0..channels)
                        .map(|c| (0..samples).map(|k| v[k * channels + c] as f32).collect())
                        .collect();
                    Arc::new(MemorySource { data: rows })
                }
            }
        }
        Some(Value::Text(name)) => {
            let fdt = path.with_file_name(name.trim());
            let fdt = if fdt.is_file() {
                fdt
            } else {
                // Renamed datasets keep the old name inside; EEGLAB looks beside the .set.
                path.with_extension("fdt")
            };
            if !fdt.is_file() {
                return Err(bad(format!(
                    "its samples are in {}, which is missing",
                    path.with_file_name(name.trim()).display()
                )));
            }
            let data = MatrixSource::map(&fdt)?;
            Arc::new(MatrixSource::new(
                &fdt,
                data,
                0,
                SampleType::F32,
                false,
                Orientation::Multiplexed,
                samples,
                vec![1.0; channels],
            )?)
        }
        _ => return Err(bad("the EEG structure has no data".into())),
    };

    let (labels, kinds, positions) = channel_info(&eeg, channels, &mut warnings);
    let signals: Vec<SignalInfo> = (0..channels)
        .map(|c| SignalInfo {
            kind: kinds[c],
            position: positions[c],
            // An epoch is a record.
            samples_per_record: points,
            ..SignalInfo::continuous(
                labels[c].clone(),
                "uV".into(),
                fs,
                samples,
                (-3200.0, 3200.0),
            )
        })
        .collect();

    let epoch_s = points as f64 / fs;
    let mut annotations = events(&eeg, fs);
    if trials > 1 {
        warnings.push(format!(
            "an epoched dataset: {trials} epochs of {epoch_s} s, shown one after another"
        ));
        annotations.extend((0..trials).map(|e| Annotation {
            onset: e as f64 * epoch_s,
            duration: 0.0,
            text: format!("Epoch {}", e + 1),
        }));
        annotations.sort_by(|a, b| a.onset.total_cmp(&b.onset));
    }
    let segments = (0..trials)
        .map(|e| Segment {
            start_s: e as f64 * epoch_s,
            first_record: e,
            records: 1,
        })
        .collect();
    let mut rec = Recording::new(
        Some(path.to_path_buf()),
        Format::Eeglab,
        unknown_start(),
        signals,
        annotations,
        warnings,
        trials,
        epoch_s,
        segments,
        source,
    );
    rec.recording_info = eeg
        .get("setname")
        .and_then(Value::text)
        .unwrap_or_default()
        .to_string();
    Ok(rec)
}

/// Labels, types and positions from `chanlocs`. Positions follow MNE-Python: EEGLAB's X
/// (nose), Y (left), Z (up) become (-Y, X, Z), scaled to metres by the mean radius's order of
/// magnitude (EEGLAB files come in mm, cm and unit spheres).
#[allow(clippy::type_complexity)]
fn channel_info(
    eeg: &Fields,
    n: usize,
    warnings: &mut Vec<String>,
) -> (Vec<String>, Vec<ChannelType>, Vec<Option<[f64; 3]>>) {
    let locs = eeg.get("chanlocs").filter(|l| l.len() == n);
    if eeg.get("chanlocs").is_some_and(|l| !l.is_empty()) && locs.is_none() {
        warnings.push("EEG.chanlocs does not list every channel; channels are numbered".into());
    }
    let text = |i: usize, f: &str| {
        locs.and_then(|l| l.field_of(i, f))
            .and_then(Value::text)
            .map(|t| t.trim().to_string())
            .unwrap_or_default()
    };
    // Unlabelled channels take MNE-Python's names (`read_raw_eeglab`): EEG 000, EEG 001, ...
    let labels: Vec<String> = (0..n)
        .map(|i| match text(i, "labels") {
            l if l.is_empty() => format!("EEG {i:03}"),
            l => l,
        })
        .collect();
    let kinds = (0..n)
        .map(|i| {
            ChannelType::parse(&text(i, "type"))
                .unwrap_or_else(|| ChannelType::from_label(&labels[i], "uV"))
        })
        .collect();
    let xyz: Vec<Option<[f64; 3]>> = (0..n)
        .map(|i| {
            let c = |f: &str| locs.and_then(|l| l.field_of(i, f)).and_then(Value::number);
            let (x, y, z) = (c("X")?, c("Y")?, c("Z")?);
            [x, y, z]
                .iter()
                .all(|v| v.is_finite())
                .then_some([-y, x, z])
        })
        .collect();
    let radii: Vec<f64> = (xyz.iter().flatten())
        .map(|p| p.iter().map(|v| v * v).sum::<f64>().sqrt())
        .collect();
    let mean = radii.iter().sum::<f64>() / radii.len().max(1) as f64;
    let scale = match mean {
        r if r < 0.25 => 1.0,
        r if r < 2.5 => 0.1,
        r if r < 25.0 => 0.01,
        _ => 0.001,
    };
    let positions = (xyz.into_iter())
        .map(|p| p.map(|p| p.map(|v| v * scale)))
        .collect();
    (labels, kinds, positions)
}

/// `EEG.event`: each event's type (text, or a number written as one), onset (latency counted
/// from 1, in samples) and duration (samples). Events without a latency are left out.
fn events(eeg: &Fields, fs: f64) -> Vec<Annotation> {
    let Some(ev) = eeg.get("event") else {
        return Vec::new();
    };
    (0..ev.len())
        .filter_map(|i| {
            let latency = ev.field_of(i, "latency").and_then(Value::number)?;
            if !latency.is_finite() {
                return None;
            }
            let text = match ev.field_of(i, "type") {
                Some(Value::Text(t)) => t.trim().to_string(),
                Some(v) => match v.number() {
                    Some(x) if x.fract() == 0.0 => format!("{x:.0}"),
                    Some(x) => x.to_string(),
                    None => String::new(),
                },
                None => String::new(),
            };
            let duration = (ev.field_of(i, "duration"))
                .and_then(Value::number)
                .filter(|d| d.is_finite() && *d > 0.0)
                .unwrap_or(0.0);
            Some(Annotation {
                onset: (latency - 1.0) / fs,
                duration: duration / fs,
                text,
            })
        })
        .collect()
}
