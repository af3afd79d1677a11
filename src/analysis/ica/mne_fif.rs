//! A decomposition as MNE-Python's `ICA.save` writes one (`-ica.fif`), for
//! `mne.preprocessing.read_ica`: the measurement info of the fitted channels (EEG, in volts),
//! then the ICA block: MNE's pre-whitener, PCA (components, mean, variances), unmixing matrix
//! (`Decomposition::mne_unmixing`), excluded components, and the fit's parameters.

use std::path::Path;

use super::Decomposition;
use crate::recording::ChannelType;
use crate::recording::fif_write::{
    B_MEAS, BLOCK_END, BLOCK_ID, BLOCK_START, FifChannel, FifChannelError, T_ID, T_INT, T_STRING,
    block, end, matrix, meas_info, start, tag,
};

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
    #[error(transparent)]
    Channel(#[from] FifChannelError),
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
    }
    let channels: Vec<FifChannel> = (d.labels.iter().enumerate())
        .map(|(c, label)| FifChannel {
            label,
            kind: ChannelType::Eeg,
            position: d.positions[c],
        })
        .collect();
    FifChannel::check(&channels)?;
    let n = d.labels.len();
    let r = d.components();
    let mut f = Vec::new();
    let id = start(&mut f);
    block(&mut f, BLOCK_START, B_MEAS);
    tag(&mut f, BLOCK_ID, T_ID, &id);
    meas_info(
        &mut f,
        &channels,
        d.fs,
        (extras.highpass_hz, extras.lowpass_hz),
    )?;
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
    end(&mut f);
    Ok(f)
}

fn volts_per(unit: &str) -> f64 {
    match unit {
        "uV" => 1e-6,
        "mV" => 1e-3,
        _ => 1.0,
    }
}
