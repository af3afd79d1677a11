//! A decomposition as MNE-Python's `ICA.save` writes one (`-ica.fif`), for
//! `mne.preprocessing.read_ica`: the measurement info of the fitted channels (EEG, in volts),
//! then the ICA block: MNE's pre-whitener, PCA (components, mean, variances), unmixing matrix
//! (`Decomposition::mne_unmixing`), excluded components, and the fit's parameters. FIF tags
//! are big-endian: kind, type, size, next (0: the following tag), then the data.

use std::path::Path;

use super::Decomposition;
use crate::recording::ChannelType;
use crate::recording::electrodes::electrode_position;

const FILE_ID: i32 = 100;
const DIR_POINTER: i32 = 101;
const BLOCK_ID: i32 = 103;
const BLOCK_START: i32 = 104;
const BLOCK_END: i32 = 105;
const NOP: i32 = 108;
const NCHAN: i32 = 200;
const SFREQ: i32 = 201;
const CH_INFO: i32 = 203;
const LOWPASS: i32 = 219;
const HIGHPASS: i32 = 223;
const B_MEAS: i32 = 100;
const B_MEAS_INFO: i32 = 101;
const B_MNE_ICA: i32 = 374;
const ROW_NAMES: i32 = 3502;
const ICA_INTERFACE_PARAMS: i32 = 3601;
const ICA_WHITENER: i32 = 3603;
const ICA_PCA_COMPONENTS: i32 = 3604;
const ICA_PCA_EXPLAINED_VAR: i32 = 3605;
const ICA_PCA_MEAN: i32 = 3606;
const ICA_MATRIX: i32 = 3607;
const ICA_BADS: i32 = 3608;
const ICA_MISC_PARAMS: i32 = 3609;
const T_INT: u32 = 3;
const T_FLOAT: u32 = 4;
const T_STRING: u32 = 10;
const T_CH_INFO: u32 = 30;
const T_ID: u32 = 31;
const T_DOUBLE_MATRIX: u32 = 0x4000_0005;
/// FIFFV_EEG_CH, FIFFV_COIL_EEG, FIFF_UNIT_V.
const EEG_CH: i32 = 2;
const COIL_EEG: i32 = 1;
const UNIT_V: i32 = 107;
/// MNE's spherical head's radius (m): where positions known only by their direction go.
const HEAD_RADIUS_M: f64 = 0.095;

/// What the file says besides the decomposition: the components excluded, the automatic marks
/// (MNE's `labels_`, e.g. {"eog": [0], "eog/0/EOG1": [0]}), and the filter the data had.
pub struct FifExtras<'a> {
    pub exclude: &'a [usize],
    pub labels: &'a serde_json::Map<String, serde_json::Value>,
    pub highpass_hz: f32,
    pub lowpass_hz: f32,
}

/// Why a decomposition cannot be written as MNE's ICA.
#[derive(Debug, thiserror::Error)]
pub enum FifError {
    #[error(
        "only EEG decompositions can be written as MNE ICA files here; {0} is {1:?} (MEG channels need their coil definitions)"
    )]
    NotEeg(String, ChannelType),
    #[error("channel name {0:?} is longer than the 15 bytes a FIF channel record holds")]
    LongName(String),
    #[error("writing {0}: {1}")]
    Write(String, std::io::Error),
}

/// Writes `d` to `path` (whole or not at all).
pub fn write(path: &Path, d: &Decomposition, extras: &FifExtras) -> Result<(), FifError> {
    let bytes = encode(d, extras)?;
    crate::recording::write_whole(path, &bytes)
        .map_err(|e| FifError::Write(path.display().to_string(), e))
}

/// The file's bytes.
pub fn encode(d: &Decomposition, extras: &FifExtras) -> Result<Vec<u8>, FifError> {
    for (label, &kind) in d.labels.iter().zip(&d.kinds) {
        if kind != ChannelType::Eeg {
            return Err(FifError::NotEeg(label.clone(), kind));
        }
        if label.len() > 15 {
            return Err(FifError::LongName(label.clone()));
        }
    }
    let n = d.labels.len();
    let r = d.components();
    let mut f = Vec::new();
    let id = file_id();
    tag(&mut f, FILE_ID, T_ID, &id);
    tag(&mut f, DIR_POINTER, T_INT, &(-1i32).to_be_bytes());
    block(&mut f, BLOCK_START, B_MEAS);
    tag(&mut f, BLOCK_ID, T_ID, &id);
    block(&mut f, BLOCK_START, B_MEAS_INFO);
    tag(&mut f, NCHAN, T_INT, &(n as i32).to_be_bytes());
    tag(&mut f, SFREQ, T_FLOAT, &(d.fs as f32).to_be_bytes());
    tag(&mut f, LOWPASS, T_FLOAT, &extras.lowpass_hz.to_be_bytes());
    tag(&mut f, HIGHPASS, T_FLOAT, &extras.highpass_hz.to_be_bytes());
    for (c, label) in d.labels.iter().enumerate() {
        tag(
            &mut f,
            CH_INFO,
            T_CH_INFO,
            &channel(c, label, d.positions[c]),
        );
    }
    block(&mut f, BLOCK_END, B_MEAS_INFO);
    block(&mut f, BLOCK_END, B_MEAS);

    block(&mut f, BLOCK_START, B_MNE_ICA);
    let interface = format!(
        "noise_cov:null;n_components:{r};n_pca_components:null;max_pca_components:null;\
         current_fit:\"raw\";allow_ref_meg:false"
    );
    tag(&mut f, ICA_INTERFACE_PARAMS, T_STRING, interface.as_bytes());
    tag(&mut f, ROW_NAMES, T_STRING, d.labels.join(":").as_bytes());
    let s = &d.settings;
    let (method, fit_params) = match s.method {
        super::IcaMethod::Fastica => (
            "fastica",
            serde_json::json!({
                "algorithm": "parallel",
                "fun": match s.contrast {
                    crate::dsp::ica::Contrast::Tanh => "logcosh",
                    crate::dsp::ica::Contrast::Cube => "cube",
                    crate::dsp::ica::Contrast::Gauss => "exp",
                },
                "fun_args": {"alpha": s.alpha},
                "max_iter": s.max_iter,
                "tol": s.tol,
            }),
        ),
        super::IcaMethod::Infomax => (
            "infomax",
            serde_json::json!({"extended": true, "max_iter": s.max_iter}),
        ),
        super::IcaMethod::Picard => (
            "picard",
            serde_json::json!({
                "ortho": s.picard == super::PicardForm::Fastica,
                "extended": true,
                "fun": match s.contrast {
                    crate::dsp::ica::Contrast::Tanh => "tanh",
                    crate::dsp::ica::Contrast::Cube => "cube",
                    crate::dsp::ica::Contrast::Gauss => "exp",
                },
                "max_iter": s.max_iter,
                "tol": s.tol,
            }),
        ),
    };
    let misc = format!(
        "n_samples_:{};labels_:{};method:\"{method}\";n_iter_:{};fit_params:{}",
        d.samples,
        serde_json::Value::Object(extras.labels.clone()),
        d.iterations,
        fit_params
    );
    tag(&mut f, ICA_MISC_PARAMS, T_STRING, misc.as_bytes());
    // MNE applies the pre-whitener to data in volts; ede's rows are in microvolts.
    let volts: Vec<f64> = (d.pre_whitener.iter().zip(&d.units))
        .map(|(p, u)| p * volts_per(u))
        .collect();
    matrix(&mut f, ICA_WHITENER, &volts, &[n, 1]);
    let components: Vec<f64> = (0..n)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .map(|(i, j)| d.pca_components[(i, j)])
        .collect();
    matrix(&mut f, ICA_PCA_COMPONENTS, &components, &[n, n]);
    matrix(&mut f, ICA_PCA_MEAN, &d.pca_mean, &[n]);
    matrix(
        &mut f,
        ICA_PCA_EXPLAINED_VAR,
        &d.pca_explained_variance,
        &[n],
    );
    let unmixing: Vec<f64> = (0..r)
        .flat_map(|i| (0..r).map(move |j| (i, j)))
        .map(|(i, j)| d.mne_unmixing[(i, j)])
        .collect();
    matrix(&mut f, ICA_MATRIX, &unmixing, &[r, r]);
    let bads: Vec<u8> = (extras.exclude.iter())
        .flat_map(|&c| (c as i32).to_be_bytes())
        .collect();
    tag(&mut f, ICA_BADS, T_INT, &bads);
    block(&mut f, BLOCK_END, B_MNE_ICA);
    f.extend(NOP.to_be_bytes());
    f.extend(0u32.to_be_bytes());
    f.extend(0i32.to_be_bytes());
    f.extend((-1i32).to_be_bytes());
    Ok(f)
}

fn volts_per(unit: &str) -> f64 {
    match unit {
        "uV" => 1e-6,
        "mV" => 1e-3,
        _ => 1.0,
    }
}

fn tag(out: &mut Vec<u8>, kind: i32, dtype: u32, data: &[u8]) {
    out.extend(kind.to_be_bytes());
    out.extend(dtype.to_be_bytes());
    out.extend((data.len() as i32).to_be_bytes());
    out.extend(0i32.to_be_bytes());
    out.extend(data);
}

fn block(out: &mut Vec<u8>, which: i32, kind: i32) {
    tag(out, which, T_INT, &kind.to_be_bytes());
}

/// A double matrix: the values row-major, then the dimensions last first, then their count.
fn matrix(out: &mut Vec<u8>, kind: i32, values: &[f64], dims: &[usize]) {
    let mut data: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
    for &d in dims.iter().rev() {
        data.extend((d as i32).to_be_bytes());
    }
    data.extend((dims.len() as i32).to_be_bytes());
    tag(out, kind, T_DOUBLE_MATRIX, &data);
}

/// FIFF's id: version 1.4, no machine id, the time now.
fn file_id() -> Vec<u8> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut id = Vec::with_capacity(20);
    id.extend(0x0001_0004i32.to_be_bytes());
    id.extend([0u8; 8]);
    id.extend((now.as_secs() as i32).to_be_bytes());
    id.extend((now.subsec_micros() as i32).to_be_bytes());
    id
}

/// One EEG channel's 96-byte record: numbers, kind, range and calibration 1 (values in volts),
/// its position (the file's direction or its 10-05 name's, on MNE's 9.5 cm sphere; unknown:
/// NaN), unit V.
fn channel(c: usize, label: &str, position: Option<[f64; 3]>) -> Vec<u8> {
    let mut ch = Vec::with_capacity(96);
    ch.extend((c as i32 + 1).to_be_bytes());
    ch.extend((c as i32 + 1).to_be_bytes());
    ch.extend(EEG_CH.to_be_bytes());
    ch.extend(1f32.to_be_bytes());
    ch.extend(1f32.to_be_bytes());
    ch.extend(COIL_EEG.to_be_bytes());
    let direction = position
        .and_then(|p| {
            let norm = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
            (norm > 0.0).then(|| p.map(|v| v / norm))
        })
        .or_else(|| electrode_position(label));
    let mut loc = [f32::NAN; 12];
    if let Some(p) = direction {
        for k in 0..3 {
            loc[k] = (p[k] * HEAD_RADIUS_M) as f32;
            loc[3 + k] = 0.0;
        }
    }
    loc.iter().for_each(|v| ch.extend(v.to_be_bytes()));
    ch.extend(UNIT_V.to_be_bytes());
    ch.extend(0i32.to_be_bytes());
    let mut name = label.as_bytes().to_vec();
    name.resize(16, 0);
    ch.extend(name);
    ch
}
