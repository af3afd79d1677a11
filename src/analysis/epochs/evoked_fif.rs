//! Averages as MNE-Python's `write_evokeds` writes them (`-ave.fif`), for `mne.read_evokeds`:
//! the measurement info of the channels (voltages, in volts), then one evoked block per
//! condition: its name, first and last sample, baseline, and the average (aspect "average",
//! with the number of epochs) as one float matrix.

use std::path::Path;

use super::Epochs;
use crate::recording::channel::volts_per_unit;
use crate::recording::fif_write::{
    B_MEAS, BLOCK_END, BLOCK_ID, BLOCK_START, FifChannel, FifChannelError, T_ID, T_STRING, block,
    end, float, float_matrix, int, meas_info, start, tag,
};

const B_PROCESSED_DATA: i32 = 103;
const B_EVOKED: i32 = 104;
const B_ASPECT: i32 = 105;
const COMMENT: i32 = 206;
const NAVE: i32 = 207;
const FIRST_SAMPLE: i32 = 208;
const LAST_SAMPLE: i32 = 209;
const ASPECT_KIND: i32 = 210;
const EPOCH: i32 = 302;
const BASELINE_MIN: i32 = 3568;
const BASELINE_MAX: i32 = 3569;
/// FIFFV_ASPECT_AVERAGE.
const ASPECT_AVERAGE: i32 = 100;

/// Why averages cannot be written as MNE's evoked file.
#[derive(Debug, thiserror::Error)]
pub enum EvokedFifError {
    #[error(transparent)]
    Channel(#[from] FifChannelError),
    #[error("{0} is in {1:?}: the evoked file holds voltages only")]
    NotVoltage(String, String),
    #[error("writing {0}: {1}")]
    Write(String, std::io::Error),
}

/// Writes the averages of `e` to `path` (whole or not at all); `filter` is the band the data
/// had (high-pass, low-pass in Hz), `baseline` its interval in seconds.
pub fn write(
    path: &Path,
    e: &Epochs,
    band: (f32, f32),
    baseline: Option<(f64, f64)>,
) -> Result<(), EvokedFifError> {
    let bytes = encode(e, band, baseline)?;
    crate::recording::write_whole(path, &bytes)
        .map_err(|err| EvokedFifError::Write(path.display().to_string(), err))
}

/// The file's bytes.
pub fn encode(
    e: &Epochs,
    band: (f32, f32),
    baseline: Option<(f64, f64)>,
) -> Result<Vec<u8>, EvokedFifError> {
    let mut volts = Vec::with_capacity(e.labels.len());
    for (label, unit) in e.labels.iter().zip(&e.units) {
        let v = volts_per_unit(unit)
            .ok_or_else(|| EvokedFifError::NotVoltage(label.clone(), unit.clone()))?;
        volts.push(v);
    }
    let channels: Vec<FifChannel> = (0..e.labels.len())
        .map(|c| FifChannel {
            label: &e.labels[c],
            kind: e.kinds[c],
            position: e.positions[c],
        })
        .collect();
    FifChannel::check(&channels)?;
    let mut f = Vec::new();
    let id = start(&mut f);
    block(&mut f, BLOCK_START, B_MEAS);
    tag(&mut f, BLOCK_ID, T_ID, &id);
    meas_info(&mut f, &channels, e.fs, band)?;
    block(&mut f, BLOCK_START, B_PROCESSED_DATA);
    let n = e.len();
    for c in &e.conditions {
        block(&mut f, BLOCK_START, B_EVOKED);
        tag(&mut f, COMMENT, T_STRING, c.name.as_bytes());
        int(&mut f, FIRST_SAMPLE, e.window.0 as i32);
        int(&mut f, LAST_SAMPLE, e.window.1 as i32);
        if let Some((lo, hi)) = baseline {
            float(&mut f, BASELINE_MIN, lo as f32);
            float(&mut f, BASELINE_MAX, hi as f32);
        }
        block(&mut f, BLOCK_START, B_ASPECT);
        int(&mut f, ASPECT_KIND, ASPECT_AVERAGE);
        int(&mut f, NAVE, c.average.n_epochs as i32);
        let data: Vec<f32> = (c.average.mean.chunks_exact(n).zip(&volts))
            .flat_map(|(row, v)| row.iter().map(move |x| (x * v) as f32))
            .collect();
        float_matrix(&mut f, EPOCH, &data, &[e.labels.len(), n]);
        block(&mut f, BLOCK_END, B_ASPECT);
        block(&mut f, BLOCK_END, B_EVOKED);
    }
    block(&mut f, BLOCK_END, B_PROCESSED_DATA);
    block(&mut f, BLOCK_END, B_MEAS);
    end(&mut f);
    Ok(f)
}
