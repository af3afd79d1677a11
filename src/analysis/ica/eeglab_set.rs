//! A decomposition as an EEGLAB dataset (`.set`, one file, MAT level 5): the fitted channels
//! (under the fit's reference and filter, in microvolts), their positions, the recording's
//! events, and EEGLAB's ICA fields, so that EEGLAB (and MNE's `read_raw_eeglab` /
//! `read_ica_eeglab`) opens the fit ede made:
//!
//! - `icaweights` (r x r) = MNE's unmixing, `icasphere` (r x n) = MNE's PCA components, so that
//!   `icaweights * icasphere * data` (EEGLAB's activations, no mean removed) are the activations
//!   ede's ICLabel and mne-icalabel read (MNE's sources times the pre-whitener: a scale ICA
//!   leaves free, and the one ICLabel's spectrum depends on); `icawinv` = pinv(icaweights *
//!   icasphere), so `icawinv * activations` is the data;
//! - `reject.gcompreject`: the excluded components;
//! - `etc.ic_classification.ICLabel`: ICLabel's classes and probabilities, as the ICLabel
//!   plug-in stores them.
//!
//! Positions in EEGLAB's frame (X nose, Y left, Z up, millimetres) with the polar and
//! spherical coordinates topoplot uses.

use std::path::Path;

use nalgebra::DMatrix;

use super::IcaData;
use super::report::Fitted;
use crate::dsp::montage::Reference;
use crate::recording::Recording;
use crate::recording::electrodes::{eeglab_position, template_1005_position};
use crate::recording::mat5_write::{Mat, file};

/// ICLabel's class names as its EEGLAB plug-in stores them.
const ICLABEL_CLASSES: [&str; 7] = [
    "Brain",
    "Muscle",
    "Eye",
    "Heart",
    "Line Noise",
    "Channel Noise",
    "Other",
];

/// Writes `fitted` (a fit of `rec`) with `excluded` marked to `path`, whole or not at all.
pub fn write(
    path: &Path,
    rec: &Recording,
    fitted: &Fitted,
    excluded: &[usize],
) -> anyhow::Result<()> {
    let d = &fitted.decomposition;
    let data: &IcaData = &fitted.data;
    let (n, t, r) = (data.data.rows, data.data.cols, d.components());
    // Samples column-major (channels vary fastest), as MATLAB stores nbchan x pnts.
    let mut samples = Vec::with_capacity(n * t);
    for k in 0..t {
        samples.extend((0..n).map(|c| data.data.data[c * t + k]));
    }
    let weights = d.mne_unmixing.clone();
    let sphere = d.pca_components.rows(0, r).into_owned();
    let winv = (&weights * &sphere)
        .pseudo_inverse(1e-12)
        .map_err(anyhow::Error::msg)?;
    let col_major =
        |m: &DMatrix<f64>| Mat::Doubles(vec![m.nrows(), m.ncols()], m.as_slice().to_vec());
    let chanlocs = Mat::Struct(
        vec![1, n],
        vec![
            "labels",
            "type",
            "X",
            "Y",
            "Z",
            "theta",
            "radius",
            "sph_theta",
            "sph_phi",
            "sph_radius",
            "urchan",
            "ref",
        ],
        (0..n).map(|c| channel(data, c)).collect(),
    );
    let fs = data.fs;
    let events: Vec<Vec<Mat>> = (rec.annotations.iter())
        .map(|a| {
            vec![
                Mat::text(&a.text),
                Mat::scalar(a.onset * fs + 1.0),
                Mat::scalar(a.duration.max(0.0) * fs),
            ]
        })
        .collect();
    let event = Mat::Struct(
        vec![1, events.len()],
        vec!["type", "latency", "duration"],
        events,
    );
    let mut reject = vec![0.0; r];
    for &k in excluded.iter().filter(|&&k| k < r) {
        reject[k] = 1.0;
    }
    let etc = match &fitted.iclabel {
        Ok(p) => {
            let classifications = DMatrix::from_fn(r, 7, |i, j| p[i][j]);
            let iclabel = Mat::Struct(
                vec![1, 1],
                vec!["classes", "classifications", "version"],
                vec![vec![
                    Mat::Cell(
                        vec![1, 7],
                        ICLABEL_CLASSES.iter().map(|c| Mat::text(c)).collect(),
                    ),
                    col_major(&classifications),
                    Mat::text("default"),
                ]],
            );
            let classification = Mat::Struct(vec![1, 1], vec!["ICLabel"], vec![vec![iclabel]]);
            Mat::Struct(
                vec![1, 1],
                vec!["ic_classification"],
                vec![vec![classification]],
            )
        }
        Err(_) => Mat::empty(),
    };
    let name = path
        .file_name()
        .map_or(String::new(), |f| f.to_string_lossy().into_owned());
    let stem = rec
        .path
        .as_ref()
        .and_then(|p| p.file_stem())
        .map_or("ede".into(), |s| s.to_string_lossy().into_owned());
    let fields: Vec<(&'static str, Mat)> = vec![
        ("setname", Mat::text(&format!("{stem} (ICA by ede)"))),
        ("filename", Mat::Text(name)),
        ("filepath", Mat::text("")),
        ("subject", Mat::text("")),
        ("group", Mat::text("")),
        ("condition", Mat::text("")),
        ("session", Mat::empty()),
        (
            "comments",
            Mat::text(&format!(
                "ede ica: {}; filter {}",
                d.settings.describe(),
                data.filter.describe()
            )),
        ),
        ("nbchan", Mat::scalar(n as f64)),
        ("trials", Mat::scalar(1.0)),
        ("pnts", Mat::scalar(t as f64)),
        ("srate", Mat::scalar(fs)),
        ("xmin", Mat::scalar(0.0)),
        ("xmax", Mat::scalar(t.saturating_sub(1) as f64 / fs)),
        (
            "times",
            Mat::Doubles(vec![1, t], (0..t).map(|k| k as f64 * 1000.0 / fs).collect()),
        ),
        ("data", Mat::Singles(vec![n, t], &samples)),
        ("icaact", Mat::empty()),
        ("icawinv", col_major(&winv)),
        ("icasphere", col_major(&sphere)),
        ("icaweights", col_major(&weights)),
        (
            "icachansind",
            Mat::Doubles(vec![1, n], (1..=n).map(|c| c as f64).collect()),
        ),
        ("chanlocs", chanlocs),
        ("urchanlocs", Mat::empty()),
        (
            "chaninfo",
            Mat::Struct(
                vec![1, 1],
                vec!["plotrad", "shrink", "nosedir", "icachansind"],
                vec![vec![
                    Mat::empty(),
                    Mat::empty(),
                    Mat::text("+X"),
                    Mat::empty(),
                ]],
            ),
        ),
        (
            "ref",
            Mat::text(match data.reference {
                Reference::Average => "average",
                _ => "common",
            }),
        ),
        ("event", event),
        ("urevent", Mat::empty()),
        ("eventdescription", Mat::Cell(vec![0, 0], Vec::new())),
        ("epoch", Mat::empty()),
        ("epochdescription", Mat::Cell(vec![0, 0], Vec::new())),
        (
            "reject",
            Mat::Struct(
                vec![1, 1],
                vec!["gcompreject"],
                vec![vec![Mat::Doubles(vec![1, r], reject)]],
            ),
        ),
        ("stats", Mat::empty()),
        ("specdata", Mat::empty()),
        ("specicaact", Mat::empty()),
        ("splinefile", Mat::text("")),
        ("icasplinefile", Mat::text("")),
        ("dipfit", Mat::empty()),
        ("history", Mat::text("ede ica")),
        ("saved", Mat::text("justloaded")),
        ("etc", etc),
        ("datfile", Mat::text("")),
        ("run", Mat::empty()),
    ];
    let (names, values): (Vec<&'static str>, Vec<Mat>) = fields.into_iter().unzip();
    let eeg = Mat::Struct(vec![1, 1], names, vec![values]);
    crate::recording::write_whole(path, &file(&[("EEG", eeg)]))?;
    Ok(())
}

/// Channel `c`'s `chanlocs` entry: its position (the file's, else MNE's 10-05 template) in
/// EEGLAB's frame and units, or empty coordinates.
fn channel(data: &IcaData, c: usize) -> Vec<Mat<'static>> {
    let label = &data.labels[c];
    let at = data.positions[c].or_else(|| template_1005_position(label));
    let mut v = vec![
        Mat::text(label),
        Mat::text(data.kinds[c].mne_name().to_ascii_uppercase().as_str()),
    ];
    match at {
        Some(p) => {
            let ([x, y, z], azimuth, elevation) = eeglab_position(&p);
            let (sph_theta, sph_phi) = (azimuth.to_degrees(), elevation.to_degrees());
            for value in [
                x,
                y,
                z,
                -sph_theta,
                0.5 - sph_phi / 180.0,
                sph_theta,
                sph_phi,
                (x * x + y * y + z * z).sqrt(),
            ] {
                v.push(Mat::scalar(value));
            }
        }
        None => v.extend((0..8).map(|_| Mat::empty())),
    }
    v.push(Mat::scalar(
        (data.signals.get(c).copied().unwrap_or(c) + 1) as f64,
    ));
    v.push(Mat::text(""));
    v
}
