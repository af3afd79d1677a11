//! CTF MEG (VSM MedTech / CTF Systems, the Omega and the 275-channel whole-head systems). A run
//! is a folder `NAME.ds` holding `NAME.res4` (the header: rate, samples per trial, every
//! channel's name, type, gains and coil geometry), `NAME.meg4` (the samples; runs over 2 GB go
//! on in `NAME.1_meg4`, `NAME.2_meg4`, ...) and, where the head was localised, `NAME.hc` (the
//! fiducial coils in the dewar's and the head's frames). `MarkerFile.mrk`, `bad.segments`,
//! `BadChannels` and `NAME.eeg` (electrode positions) may lie beside them. ede opens the folder
//! or any of those files inside it.
//!
//! Each `.meg4` starts with 8 bytes ("MEG41CP\0" or "MEG42CP\0"), then holds trials one after
//! another, each every channel's samples of the trial in turn (channel by channel), as big-endian
//! 32-bit integers; a value is the integer divided by the channel's proper gain x q-gain.
//! Everything is read as MNE-Python's `read_raw_ctf` reads it (`system_clock="truncate"`,
//! `clean_names=False`): names are the res4's cut to 15 characters (the "-4304" style suffix kept);
//! sensor type 5 is a magnetometer (MNE's "mag", CTF's axial gradiometers), 0 and 1 references, 9
//! EEG, 11 stimulus, the rest and any sensor without a coil position misc; the trials of a
//! discontinuous run follow one another with nothing marking where one ends (MNE adds no annotation
//! there either), and the data end where the system clock channel (SCLK01-177) first reads 0.
//! Samples are as stored, in the file's own third-order gradient compensation grade (MNE's
//! `compensation_grade`, reported in the recording's description): nothing is compensated here. MEG
//! and references read in T (as MNE, FIF and 4D), EEG in uV (MNE: V), stimulus and misc channels as MNE's
//! numbers, unit "" (MNE calls them volts). MEG and reference positions are MNE's `loc` (the first
//! coil, in MNE's Neuromag-like device frame) carried into the head frame by MNE's `dev_head_t`
//! (from the `.hc` coils: a least-squares fit of the dewar points onto the head points, then the
//! fiducials' frame); EEG positions are the res4's (or `NAME.eeg`'s) carried from CTF's head frame
//! into MNE's. Markers become annotations at trial x trial length + time + pre-trigger time, as MNE
//! places them, and bad segments "bad_N" annotations; the stimulus channels' steps become events.
//! ede differs only where MNE refuses a file: a data file that is not whole trials, an unreadable
//! date, `.hc` or marker file open with a warning (whole trials, no date, no head positions, no
//! markers).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use memmap2::Mmap;
use nalgebra::{Matrix3, Matrix4, SymmetricEigen, Vector3};

use super::binary::MatrixSource;
use super::cursor::Cursor;
use super::{
    Annotation, ChannelType, Format, ReadError, Recording, SampleSource, SignalInfo, stim_events,
    unknown_start,
};

/// The bytes before the first trial of every `.meg4`.
const MEG4_HEADER: usize = 8;
/// Where the run description starts in the res4 (MNE's `FUNNY_POS`).
const RUN_DESCRIPTION_AT: usize = 1844;
const NAME_BYTES: usize = 32;
/// One channel's record in the res4: 48 bytes of gains and flags, then 8 + 8 coils of 80.
const CHANNEL_BYTES: usize = 48 + 16 * COIL_BYTES;
const COIL_BYTES: usize = 80;
/// The channel whose first 0 ends the valid data.
const CLOCK: &str = "SCLK01-177";
/// No res4 is near this large (the compensation tables make a few MB).
const MAX_RES4_BYTES: u64 = 256 << 20;
const MAX_DATA_FILES: usize = 10_000;
const MAX_MARKERS: usize = 1 << 20;

/// CTF's sensor types (`ctf_types.h`).
const REF_MAG: i16 = 0;
const REF_GRAD: i16 = 1;
const MEG: i16 = 5;
const EEG: i16 = 9;
const STIM: i16 = 11;

/// CTF runs are folders, told by their names.
pub fn sniff(_head: &[u8]) -> bool {
    false
}

/// Whether `path` is a `NAME.ds` folder holding `NAME.res4`, or one of its res4, meg4, hc or
/// infods files.
pub fn is_companion(path: &Path) -> bool {
    dataset_of(path).is_some()
}

/// The `.ds` folder `path` is or lies in, with the name its files share.
fn dataset_of(path: &Path) -> Option<(PathBuf, String)> {
    let run = |dir: &Path| -> Option<(PathBuf, String)> {
        let name = dir.file_name()?.to_str()?;
        let cut = name.len().checked_sub(3)?;
        let stem = name.get(..cut)?;
        let is_ds = name.get(cut..)?.eq_ignore_ascii_case(".ds");
        (is_ds && dir.join(format!("{stem}.res4")).is_file())
            .then(|| (dir.to_path_buf(), stem.to_string()))
    };
    if path.is_dir() {
        return run(path);
    }
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    let ours = ["res4", "meg4", "hc", "infods"].contains(&ext.as_str())
        || (ext.strip_suffix("_meg4")).is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
    if !ours {
        return None;
    }
    run(path.parent()?)
}

impl Cursor<'_> {
    fn vector(&mut self) -> Result<Vector3<f64>, ReadError> {
        Ok(Vector3::new(self.f64()?, self.f64()?, self.f64()?))
    }
}

/// A channel of the res4.
struct Res4Channel {
    name: String,
    sensor_type: i16,
    proper_gain: f64,
    qgain: f64,
    grad_order: i16,
    /// The first two coils' centres (metres) and the first one's normal, in CTF's frame.
    coil: [Vector3<f64>; 2],
    normal: Vector3<f64>,
}

struct Res4 {
    date: String,
    time: String,
    samples_per_trial: usize,
    fs: f64,
    pre_trigger: i32,
    subject: String,
    title: String,
    channels: Vec<Res4Channel>,
}

fn read_res4(path: &Path, b: &[u8]) -> Result<Res4, ReadError> {
    let mut c = Cursor::big_endian(b, 0, path, "header");
    let head = c.take(8)?;
    if !head.starts_with(b"MEG4") {
        return Err(ReadError::invalid(
            path,
            "not a CTF header: it does not start with \"MEG4\"",
        ));
    }
    c.at = 8 + 3 * 256 + 2;
    let mut time = c.nul_text(255)?;
    let mut date = c.nul_text(255)?;
    // Some systems swap the two fields (MNE-Python swaps them back the same way).
    if time.contains('/') && date.contains(':') {
        std::mem::swap(&mut time, &mut date);
    }
    let nsamp = c.i32()?;
    let nchan = c.i16()?;
    c.at = 1296;
    let fs = c.f64()?;
    c.at = 1316;
    let pre_trigger = c.i32()?;
    c.at = 1712;
    let subject = c.nul_text(32)?;
    c.at = 1392;
    let title = c.nul_text(256)?;
    c.at = 1836;
    let rdlen = c.i32()?;
    c.at = RUN_DESCRIPTION_AT;
    c.take(usize::try_from(rdlen).unwrap_or(0))?;
    let samples_per_trial = usize::try_from(nsamp).ok().filter(|&n| n > 0);
    let Some(samples_per_trial) = samples_per_trial else {
        return Err(ReadError::invalid(
            path,
            format!("the header gives {nsamp} samples per trial"),
        ));
    };
    let nchan = usize::try_from(nchan).ok().filter(|&n| n > 0);
    let Some(nchan) = nchan else {
        return Err(ReadError::invalid(path, "the header lists no channels"));
    };
    if !(fs.is_finite() && fs > 0.0) {
        return Err(ReadError::invalid(
            path,
            format!("the sampling rate {fs} Hz is not a positive number"),
        ));
    }
    let filters = c.i16()?.max(0);
    for _ in 0..filters {
        c.take(8 + 4 + 4)?;
        let parameters = usize::try_from(c.i16()?)
            .map_err(|_| ReadError::invalid(path, "a filter has a negative parameter count"))?;
        c.take(parameters * 8)?;
    }
    let mut names = Vec::with_capacity(nchan);
    for _ in 0..nchan {
        names.push(c.nul_text(NAME_BYTES)?);
    }
    let mut channels = Vec::with_capacity(nchan);
    for name in names {
        let record = c.at;
        let sensor_type = c.i16()?;
        c.take(2 + 4)?;
        let proper_gain = c.f64()?;
        let qgain = c.f64()?;
        c.take(8 + 8 + 2)?;
        let grad_order = c.i16()?;
        c.take(4)?;
        let first = c.vector()? / 100.0;
        c.take(8)?;
        let normal = c.vector()?;
        c.at = record + 48 + COIL_BYTES;
        let second = c.vector()? / 100.0;
        c.at = record;
        c.take(CHANNEL_BYTES)?;
        channels.push(Res4Channel {
            name,
            sensor_type,
            proper_gain,
            qgain,
            grad_order,
            coil: [first, second],
            normal,
        });
    }
    Ok(Res4 {
        date,
        time,
        samples_per_trial,
        fs,
        pre_trigger,
        subject,
        title,
        channels,
    })
}

/// The measurement's start as MNE-Python reads the res4's date and time (taken as UTC);
/// neither given is 1970-01-01 00:00, as in MNE.
fn parse_start(date: &str, time: &str) -> Option<NaiveDateTime> {
    let (date, time) = (date.trim(), time.trim());
    if date.is_empty() && time.is_empty() {
        return NaiveDate::from_ymd_opt(1970, 1, 1)?.and_hms_opt(0, 0, 0);
    }
    let day = ["%d/%m/%Y", "%d-%b-%Y", "%a, %b %d, %Y", "%Y/%m/%d"]
        .iter()
        .find_map(|f| NaiveDate::parse_from_str(date, f).ok())?;
    let clock = ["%H:%M:%S", "%H:%M"]
        .iter()
        .find_map(|f| NaiveTime::parse_from_str(time, f).ok())?;
    Some(day.and_time(clock))
}

/// A fiducial coil of the `.hc`: which one, whether in the head's (else the dewar's) frame,
/// where (metres).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Coil {
    kind: CoilKind,
    head_frame: bool,
    r: Vector3<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CoilKind {
    Nasion,
    Left,
    Right,
    Spare,
}

/// The measured coils of a `.hc` (its "standard" ones are the dewar's nominal places), in
/// file order, as MNE-Python reads them: a descriptor line, then "x = ...", "y = ...",
/// "z = ..." in centimetres.
fn read_hc(text: &str) -> Result<Vec<Coil>, String> {
    let mut coils = Vec::new();
    let mut current: Option<(String, [Option<f64>; 3])> = None;
    let mut finish = |c: Option<(String, [Option<f64>; 3])>| {
        let Some((d, [Some(x), Some(y), Some(z)])) = c else {
            return;
        };
        let head_frame = if d.contains("relative to head") {
            true
        } else if d.contains("relative to dewar") {
            false
        } else {
            return;
        };
        let kind = if d.contains("nasion") {
            CoilKind::Nasion
        } else if d.contains("left ear") || d.contains("lpa") {
            CoilKind::Left
        } else if d.contains("right ear") || d.contains("rpa") {
            CoilKind::Right
        } else if d.contains("spare") {
            CoilKind::Spare
        } else {
            return;
        };
        if d.contains("measured") {
            let r = Vector3::new(x, y, z) / 100.0;
            coils.push(Coil {
                kind,
                head_frame,
                r,
            });
        }
    };
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let coordinate = (line.split_once('=')).and_then(|(axis, v)| {
            let axis = ["x", "y", "z"].iter().position(|a| *a == axis.trim())?;
            Some((axis, v.trim().parse::<f64>().ok()?))
        });
        match (coordinate, current.as_mut()) {
            (Some((axis, v)), Some((_, xyz))) => xyz[axis] = Some(v),
            (Some(_), None) => return Err(format!("a coordinate before any coil: {line:?}")),
            (None, _) => {
                let d = line.to_lowercase();
                if d.contains("unable") {
                    return Err("the head localisation failed (\"unable\")".into());
                }
                finish(current.replace((d, [None; 3])));
            }
        }
    }
    finish(current);
    Ok(coils)
}

/// MNE-Python's frame for CTF sensors (`t_ctf_dev_dev`): CTF's dewar frame turned 45 degrees
/// about z and its origin 19 cm down.
fn ctf_to_device() -> Matrix4<f64> {
    let v = 0.5 * 2f64.sqrt();
    Matrix4::new(
        v, -v, 0.0, 0.0, //
        v, v, 0.0, 0.0, //
        0.0, 0.0, 1.0, 0.19, //
        0.0, 0.0, 0.0, 1.0,
    )
}

fn apply(t: &Matrix4<f64>, p: &Vector3<f64>) -> Vector3<f64> {
    t.transform_point(&(*p).into()).coords
}

/// MNE's head frame from the fiducials (`get_ras_to_neuromag_trans`): x through the ears to
/// the right, y to the nasion, z up.
fn fiducial_frame(nas: &Vector3<f64>, lpa: &Vector3<f64>, rpa: &Vector3<f64>) -> Matrix4<f64> {
    let right = (rpa - lpa).normalize();
    let origin = lpa + (nas - lpa).dot(&right) * right;
    let anterior = (nas - origin).normalize();
    let up = right.cross(&anterior);
    let r = Matrix3::from_rows(&[right.transpose(), anterior.transpose(), up.transpose()]);
    let mut t = r.to_homogeneous();
    t.fixed_view_mut::<3, 1>(0, 3).copy_from(&(-(r * origin)));
    t
}

/// The rigid motion carrying `from` onto `to` best in least squares: Horn's quaternion
/// method, as MNE-Python's `_fit_matched_points`.
fn fit_points(from: &[Vector3<f64>], to: &[Vector3<f64>]) -> Option<Matrix4<f64>> {
    let n = from.len().max(1) as f64;
    let mu_p: Vector3<f64> = from.iter().sum::<Vector3<f64>>() / n;
    let mu_x: Vector3<f64> = to.iter().sum::<Vector3<f64>>() / n;
    let mut sigma = Matrix3::zeros();
    for (p, x) in from.iter().zip(to) {
        sigma += p * x.transpose() / n;
    }
    sigma -= mu_p * mu_x.transpose();
    let a = sigma - sigma.transpose();
    let delta = Vector3::new(a[(1, 2)], a[(2, 0)], a[(0, 1)]);
    let tr = sigma.trace();
    let mut q = Matrix4::zeros();
    q[(0, 0)] = tr;
    for i in 0..3 {
        q[(0, i + 1)] = delta[i];
        q[(i + 1, 0)] = delta[i];
    }
    let lower = sigma + sigma.transpose() - Matrix3::identity() * tr;
    q.fixed_view_mut::<3, 3>(1, 1).copy_from(&lower);
    // Bounded: the iteration would not end on a matrix of NaN (coils of a damaged .hc).
    let eig = SymmetricEigen::try_new(q, f64::EPSILON, 10_000)?;
    let best = (0..4)
        .max_by(|&i, &j| eig.eigenvalues[i].total_cmp(&eig.eigenvalues[j]))
        .unwrap_or(0);
    let v = eig.eigenvectors.column(best);
    let sign = if v[0] < 0.0 { -1.0 } else { 1.0 };
    let (q1, q2, q3) = (v[1] * sign, v[2] * sign, v[3] * sign);
    let q0 = (1.0 - q1 * q1 - q2 * q2 - q3 * q3).max(0.0).sqrt();
    let rot = Matrix3::new(
        q0 * q0 + q1 * q1 - q2 * q2 - q3 * q3,
        2.0 * (q1 * q2 - q0 * q3),
        2.0 * (q1 * q3 + q0 * q2),
        2.0 * (q1 * q2 + q0 * q3),
        q0 * q0 + q2 * q2 - q1 * q1 - q3 * q3,
        2.0 * (q2 * q3 - q0 * q1),
        2.0 * (q1 * q3 - q0 * q2),
        2.0 * (q2 * q3 + q0 * q1),
        q0 * q0 + q3 * q3 - q1 * q1 - q2 * q2,
    );
    let mut t = rot.to_homogeneous();
    t.fixed_view_mut::<3, 1>(0, 3)
        .copy_from(&(mu_x - rot * mu_p));
    Some(t)
}

/// MNE's `dev_head_t` (its device frame to its head frame) and `ctf_head_t` (CTF's head frame
/// to MNE's), from the measured coils.
struct Frames {
    device_to_head: Matrix4<f64>,
    ctf_head_to_head: Matrix4<f64>,
}

fn frames(coils: &[Coil]) -> Result<Frames, String> {
    if !(coils.iter()).all(|c| c.r.iter().all(|v| v.abs() < 1e3)) {
        return Err("a coil position is not a number of a head's size".into());
    }
    let first = |kind: CoilKind, head: bool| {
        (coils.iter())
            .find(|c| c.kind == kind && c.head_frame == head)
            .map(|c| c.r)
    };
    use CoilKind::{Left, Nasion, Right, Spare};
    let (mut dewar, mut head) = (Vec::new(), Vec::new());
    for (k, kind) in [Left, Right, Nasion, Spare].into_iter().enumerate() {
        match (first(kind, false), first(kind, true)) {
            (Some(d), Some(h)) => {
                dewar.push(d);
                head.push(h);
            }
            _ if k < 3 => return Err(format!("the {kind:?} coil is not in both frames")),
            _ => {}
        }
    }
    let ctf_head_to_head = fiducial_frame(&head[2], &head[0], &head[1]);
    let fit = fit_points(&dewar, &head).ok_or("the coils' frames do not fit together")?;
    let worst = (dewar.iter().zip(&head))
        .map(|(d, h)| (apply(&fit, d) - h).norm())
        .fold(0.0, f64::max);
    if worst.is_nan() || worst > 1e-4 {
        return Err(format!(
            "the dewar and head coil positions do not match ({:.1} mm apart)",
            worst * 1e3
        ));
    }
    let inverse = ctf_to_device()
        .try_inverse()
        .unwrap_or_else(Matrix4::identity);
    Ok(Frames {
        device_to_head: ctf_head_to_head * fit * inverse,
        ctf_head_to_head,
    })
}

/// The channels of the res4 as MNE-Python types them, with unit, scale to it and position.
struct Channel {
    label: String,
    kind: ChannelType,
    unit: &'static str,
    gain: f64,
    position: Option<[f64; 3]>,
    bad: bool,
}

fn channel(ch: &Res4Channel, frames: Option<&Frames>, warnings: &mut Vec<String>) -> Channel {
    let label: String = ch.name.chars().take(15).collect();
    // MNE-Python's `cal`: a count over the proper gain times the q-gain.
    let cal = 1.0 / (ch.proper_gain * ch.qgain);
    let finite = |p: Vector3<f64>| p.iter().all(|v| v.is_finite()).then(|| p.into());
    let placed = ch.coil[0].norm_squared() >= 1e-6 && ch.normal.norm_squared() >= 1e-6;
    let (kind, unit, scale, position) = match ch.sensor_type {
        REF_MAG | REF_GRAD | MEG if placed => {
            let mut r0 = ch.coil[0];
            if ch.sensor_type == REF_GRAD {
                // MNE centres off-diagonal reference gradiometers between their coils.
                let diff = ch.coil[0] - ch.coil[1];
                let size = diff.norm();
                let unit = if size > 0.0 { diff / size } else { diff };
                if unit.dot(&ch.normal).abs() < 1e-3 {
                    r0 -= size * unit / 2.0;
                }
            }
            let loc = apply(&ctf_to_device(), &r0);
            let head = frames.map_or(loc, |f| apply(&f.device_to_head, &loc));
            let kind = match ch.sensor_type {
                MEG => ChannelType::Mag,
                _ => ChannelType::RefMeg,
            };
            (kind, "T", 1.0, finite(head))
        }
        REF_MAG | REF_GRAD | MEG => {
            warnings.push(format!(
                "{label}: a MEG sensor without a position, read as misc (as MNE-Python does)"
            ));
            (ChannelType::Misc, "", 1.0, None)
        }
        EEG => {
            let r = ch.coil[0];
            let position = match frames {
                Some(f) if r.norm_squared() >= 1e-8 => finite(apply(&f.ctf_head_to_head, &r)),
                _ => None,
            };
            (ChannelType::Eeg, "uV", 1e6, position)
        }
        STIM => (ChannelType::Stim, "", 1.0, None),
        _ => (ChannelType::Misc, "", 1.0, None),
    };
    Channel {
        label,
        kind,
        unit,
        gain: cal * scale,
        position,
        bad: false,
    }
}

/// Electrode positions of `NAME.eeg` (lines "number label x y z", centimetres, CTF's head
/// frame), by label; near the origin they are none.
fn read_eeg_positions(text: &str) -> Vec<(String, Vector3<f64>)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [_, label, x, y, z] = parts[..] else {
            continue;
        };
        let Ok(r) = [x, y, z]
            .map(str::parse::<f64>)
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
        else {
            continue;
        };
        let r = Vector3::new(r[0], r[1], r[2]) / 100.0;
        if r.norm_squared() > 1e-4 {
            out.push((label.to_string(), r));
        }
    }
    out
}

/// Marks the channels `BadChannels` lists, one a line by their names without CTF's "-4304"
/// suffix (MNE-Python's `_clean_names`; the full names where cutting them makes two alike).
fn mark_bad(text: &str, chans: &mut [Channel], warnings: &mut Vec<String>) {
    let clean = |name: &str| -> String {
        let name = name.split('-').next().unwrap_or(name);
        name.strip_suffix("_v").unwrap_or(name).to_string()
    };
    let cleaned: Vec<String> = chans.iter().map(|c| clean(&c.label)).collect();
    let mut unique = cleaned.clone();
    unique.sort();
    unique.dedup();
    let cut = unique.len() == cleaned.len();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let i = (0..chans.len()).rev().find(|&i| {
            if cut {
                cleaned[i] == line
            } else {
                chans[i].label == line
            }
        });
        match i {
            Some(i) => chans[i].bad = true,
            None => warnings.push(format!("BadChannels names {line}, which the run lacks")),
        }
    }
}

/// `MarkerFile.mrk`'s markers as MNE-Python reads them: (name, trial, time in the trial).
fn read_markers(text: &str) -> Result<Vec<(String, i64, f64)>, String> {
    /// The line after the next one starting with `key`.
    fn after(lines: &mut std::str::Lines, key: &str) -> Result<String, String> {
        (lines.by_ref())
            .find(|l| l.starts_with(key))
            .and_then(|_| lines.next())
            .map(str::to_string)
            .ok_or_else(|| format!("no {key:?} where one should be"))
    }
    let count = |s: String| -> Result<usize, String> {
        (s.trim().parse::<usize>().ok())
            .filter(|&n| n <= MAX_MARKERS)
            .ok_or_else(|| format!("{s:?} is not a count"))
    };
    let mut lines = text.lines();
    let markers = count(after(&mut lines, "NUMBER OF MARKERS:")?)?;
    let mut out = Vec::new();
    for _ in 0..markers {
        let name = after(&mut lines, "NAME:")?;
        let n = count(after(&mut lines, "NUMBER OF SAMPLES:")?)?;
        after(&mut lines, "LIST OF SAMPLES:")?; // the column heads
        for _ in 0..n {
            let line = lines.next().unwrap_or_default();
            let mut f = line.split_whitespace();
            let trial = f.next().and_then(|t| t.parse::<i64>().ok());
            let time = f.next().and_then(|t| t.parse::<f64>().ok());
            let (Some(trial), Some(time)) = (trial, time) else {
                return Err(format!("marker {name}: {line:?} is not a trial and a time"));
            };
            out.push((name.clone(), trial, time));
        }
    }
    Ok(out)
}

/// The samples of the run: its data files one after another, each whole trials of
/// `samples_per_trial` samples of every channel in turn.
struct CtfSource {
    files: Vec<DataFile>,
    channels: usize,
    samples_per_trial: usize,
    gains: Vec<f64>,
}

struct DataFile {
    map: Mmap,
    /// The recording's sample at which this file starts, and its valid samples.
    first: usize,
    samples: usize,
}

impl SampleSource for CtfSource {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        let gain = self.gains[signal];
        let (spt, mut k, mut done) = (self.samples_per_trial, start, 0);
        while done < out.len() {
            let file = (self.files.iter().rev()).find(|f| f.first <= k);
            let file = file.filter(|f| k - f.first < f.samples).ok_or_else(|| {
                ReadError::invalid(Path::new("CTF"), format!("no sample {k} in the data"))
            })?;
            let local = k - file.first;
            let (trial, within) = (local / spt, local % spt);
            let n = (spt - within)
                .min(file.samples - local)
                .min(out.len() - done);
            let at = MEG4_HEADER + ((trial * self.channels + signal) * spt + within) * 4;
            let bytes = file.map.get(at..at + n * 4).ok_or_else(|| {
                ReadError::invalid(Path::new("CTF"), "a sample lies past the data file's end")
            })?;
            for (o, b) in out[done..done + n].iter_mut().zip(bytes.chunks_exact(4)) {
                let v = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                *o = (v as f64 * gain) as f32;
            }
            done += n;
            k += n;
        }
        Ok(())
    }

    fn release_pages(&self) {
        for f in &self.files {
            super::release_mapped_pages(&f.map);
        }
    }
}

/// Reads `path` whole where it is a small side file; `None` where it is absent.
fn side_file(path: &Path) -> Result<Option<String>, ReadError> {
    if !path.is_file() {
        return Ok(None);
    }
    let bytes = std::fs::read(path).map_err(|e| ReadError::io(path, e))?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// Opens a CTF run from its `.ds` folder or a file in it.
pub fn open(path: &Path) -> Result<Recording, ReadError> {
    let Some((dir, stem)) = dataset_of(path) else {
        return Err(ReadError::invalid(
            path,
            "not a CTF run: a CTF run is a folder NAME.ds holding NAME.res4 and NAME.meg4",
        ));
    };
    let res4_path = dir.join(format!("{stem}.res4"));
    let res4_bytes = {
        use std::io::Read;
        let f = std::fs::File::open(&res4_path).map_err(|e| ReadError::io(&res4_path, e))?;
        let mut b = Vec::new();
        (f.take(MAX_RES4_BYTES).read_to_end(&mut b)).map_err(|e| ReadError::io(&res4_path, e))?;
        b
    };
    let res4 = read_res4(&res4_path, &res4_bytes)?;
    let mut warnings = Vec::new();
    let frames = match side_file(&dir.join(format!("{stem}.hc")))? {
        None => None,
        // No measured coil at all: no head frame, as for a run without a .hc (as in MNE).
        Some(text) => match read_hc(&text).and_then(|c| match c.is_empty() {
            true => Ok(None),
            false => frames(&c).map(Some),
        }) {
            Ok(f) => f,
            Err(why) => {
                warnings.push(format!(
                    "{stem}.hc: {why}; sensors kept in the device frame"
                ));
                None
            }
        },
    };
    let mut chans: Vec<Channel> = (res4.channels.iter())
        .map(|c| channel(c, frames.as_ref(), &mut warnings))
        .collect();
    // A separate electrode file replaces the res4's EEG positions (MNE reads one or the other).
    if let Some(text) = side_file(&dir.join(format!("{stem}.eeg")))? {
        for c in chans.iter_mut().filter(|c| c.kind == ChannelType::Eeg) {
            c.position = None;
        }
        for (label, r) in read_eeg_positions(&text) {
            let c = (chans.iter_mut()).find(|c| {
                c.label.eq_ignore_ascii_case(&label)
                    && !matches!(c.kind, ChannelType::Mag | ChannelType::RefMeg)
            });
            if let (Some(c), Some(f)) = (c, frames.as_ref()) {
                c.position = Some(apply(&f.ctf_head_to_head, &r).into());
            }
        }
    }
    let grades: Vec<i16> = (res4.channels.iter().zip(&chans))
        .filter(|(_, c)| c.kind == ChannelType::Mag)
        .map(|(r, _)| r.grad_order)
        .collect();
    let grade = grades.first().copied().unwrap_or(0);
    if grades.iter().any(|&g| g != grade) {
        warnings.push("the MEG channels are stored at different compensation grades".into());
    }

    // The data files, each whole trials up to the clock's first 0 (MNE-Python's "truncate").
    let nchan = res4.channels.len();
    let spt = res4.samples_per_trial;
    let trial_bytes = (spt.checked_mul(nchan))
        .and_then(|n| n.checked_mul(4))
        .ok_or_else(|| ReadError::invalid(&res4_path, "the trials are too large to address"))?;
    let clock = res4.channels.iter().position(|c| c.name == CLOCK);
    let mut files: Vec<DataFile> = Vec::new();
    let mut total = 0usize;
    while files.len() < MAX_DATA_FILES {
        let name = match files.len() {
            0 => format!("{stem}.meg4"),
            n => format!("{stem}.{n}_meg4"),
        };
        let file_path = dir.join(&name);
        if !file_path.is_file() {
            break;
        }
        let map = MatrixSource::map(&file_path)?;
        if !(map.starts_with(b"MEG41CP") || map.starts_with(b"MEG42CP")) {
            warnings.push(format!("{name} does not start with CTF's \"MEG41CP\""));
        }
        let body = map.len().saturating_sub(MEG4_HEADER);
        if body % trial_bytes != 0 {
            warnings.push(format!(
                "{name} ends inside a trial: its last {} bytes are left out",
                body % trial_bytes
            ));
        }
        let trials = body / trial_bytes;
        let mut samples = trials * spt;
        if let Some(c) = clock {
            for t in 0..trials {
                let at = MEG4_HEADER + (t * nchan + c) * spt * 4;
                let zero = (map
                    .get(at..at + spt * 4)
                    .unwrap_or_default()
                    .chunks_exact(4))
                .position(|b| b == [0; 4]);
                if let Some(j) = zero {
                    samples = t * spt + j;
                    break;
                }
            }
        }
        if samples == 0 {
            break;
        }
        files.push(DataFile {
            map,
            first: total,
            samples,
        });
        total += samples;
    }
    if files.is_empty() {
        return Err(ReadError::invalid(
            path,
            format!("the run has no samples: {stem}.meg4 is missing, empty or its clock is 0"),
        ));
    }

    if let Some(text) = side_file(&dir.join("BadChannels"))? {
        mark_bad(&text, &mut chans, &mut warnings);
    }
    let fs = res4.fs;
    let signals: Vec<SignalInfo> = (chans.iter())
        .map(|c| SignalInfo {
            kind: c.kind,
            position: c.position,
            bad: c.bad,
            ..SignalInfo::continuous(
                c.label.clone(),
                c.unit.to_string(),
                fs,
                total,
                super::nominal_range(c.unit),
            )
        })
        .collect();

    // Bad segments and markers, where MNE-Python puts them (the pre-trigger time added), kept
    // to the data as MNE's `set_annotations` keeps them.
    let offset = res4.pre_trigger as f64 / fs;
    let mut annotations = Vec::new();
    if let Some(text) = side_file(&dir.join("bad.segments"))? {
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let times = (f.get(1).and_then(|v| v.parse::<f64>().ok()))
                .zip(f.get(2).and_then(|v| v.parse::<f64>().ok()));
            if let (Some(n), Some((a, b))) = (f.first(), times) {
                annotations.push(Annotation {
                    onset: a + offset,
                    duration: b - a,
                    text: format!("bad_{n}"),
                });
            }
        }
    }
    if let Some(text) = side_file(&dir.join("MarkerFile.mrk"))? {
        match read_markers(&text) {
            Ok(markers) => {
                annotations.extend(markers.into_iter().map(|(name, trial, t)| Annotation {
                    onset: t + trial as f64 * (spt as f64 / fs) + offset,
                    duration: 0.0,
                    text: name,
                }))
            }
            Err(why) => warnings.push(format!("MarkerFile.mrk: {why}; its markers left out")),
        }
    }
    let end = total as f64 / fs;
    let micro = |t: f64| (t * 1e6).round() / 1e6;
    annotations.retain(|a| a.onset <= end && a.onset + a.duration >= 0.0);
    for a in &mut annotations {
        let (from, to) = (a.onset.max(0.0), (a.onset + a.duration).min(end));
        if (from, to) != (a.onset, a.onset + a.duration) {
            a.duration = micro(to - from);
        }
        a.onset = micro(from);
    }
    annotations.sort_by(|a, b| {
        (a.onset, a.duration)
            .partial_cmp(&(b.onset, b.duration))
            .unwrap_or(std::cmp::Ordering::Equal)
    });

    let source = CtfSource {
        files,
        channels: nchan,
        samples_per_trial: spt,
        gains: chans.iter().map(|c| c.gain).collect(),
    };
    let data_bytes = total.saturating_mul(nchan).saturating_mul(4);
    let time_of = |_: usize, k: usize| k as f64 / fs;
    stim_events(
        &source,
        &signals,
        &time_of,
        data_bytes,
        &mut annotations,
        &mut warnings,
    )?;
    let start = parse_start(&res4.date, &res4.time).unwrap_or_else(|| {
        warnings.push(format!(
            "the start date {:?} {:?} is unreadable",
            res4.date, res4.time
        ));
        unknown_start()
    });
    let mut rec = Recording::continuous(
        Some(dir),
        Format::Ctf,
        start,
        signals,
        annotations,
        warnings,
        end,
        Arc::new(source),
    );
    rec.patient = res4.subject;
    let grade = format!("gradient compensation grade {grade} (as stored)");
    rec.recording_info = [res4.title.trim(), &grade]
        .iter()
        .filter(|t| !t.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("; ");
    Ok(rec)
}

#[cfg(test)]
mod tests;
