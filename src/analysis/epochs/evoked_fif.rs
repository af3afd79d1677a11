//! Averages as MNE-Python's `write_evokeds` writes them (`-ave.fif`), for `mne.read_evokeds`:
//! the measurement info of the voltage channels (EEG, EOG, ECG, EMG, in volts; others are left
//! out and named), then one evoked block per condition: its name, first and last sample,
//! baseline, and the average (aspect "average", with the number of epochs) as one float matrix.

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
    #[error("no channel is a voltage of EEG, EOG, ECG or EMG: the evoked file holds those only")]
    NoVoltage,
    #[error("writing {0}: {1}")]
    Write(String, std::io::Error),
}

/// Writes the averages of `e` to `path` (whole or not at all); `band` is the band the data
/// had (high-pass, low-pass in Hz), `baseline` its interval in seconds. Returns the channels
/// left out (not voltages of a type a FIF channel record here describes).
pub fn write(
    path: &Path,
    e: &Epochs,
    band: (f32, f32),
    baseline: Option<(f64, f64)>,
) -> Result<Vec<String>, EvokedFifError> {
    let (bytes, left_out) = encode(e, band, baseline)?;
    crate::recording::write_whole(path, &bytes)
        .map_err(|err| EvokedFifError::Write(path.display().to_string(), err))?;
    Ok(left_out)
}

/// The file's bytes and the channels left out.
pub fn encode(
    e: &Epochs,
    band: (f32, f32),
    baseline: Option<(f64, f64)>,
) -> Result<(Vec<u8>, Vec<String>), EvokedFifError> {
    let mut picked = Vec::new();
    let mut left_out = Vec::new();
    for c in 0..e.labels.len() {
        let ch = FifChannel {
            label: &e.labels[c],
            kind: e.kinds[c],
            position: e.positions[c],
        };
        match (volts_per_unit(&e.units[c]), FifChannel::check(&[ch])) {
            (Some(v), Ok(())) => picked.push((c, v)),
            _ => left_out.push(e.labels[c].clone()),
        }
    }
    if picked.is_empty() {
        return Err(EvokedFifError::NoVoltage);
    }
    let channels: Vec<FifChannel> = (picked.iter())
        .map(|&(c, _)| FifChannel {
            label: &e.labels[c],
            kind: e.kinds[c],
            position: e.positions[c],
        })
        .collect();
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
        let data: Vec<f32> = (picked.iter())
            .flat_map(|&(ch, v)| {
                c.average.mean[ch * n..(ch + 1) * n]
                    .iter()
                    .map(move |x| (x * v) as f32)
            })
            .collect();
        float_matrix(&mut f, EPOCH, &data, &[picked.len(), n]);
        block(&mut f, BLOCK_END, B_ASPECT);
        block(&mut f, BLOCK_END, B_EVOKED);
    }
    block(&mut f, BLOCK_END, B_PROCESSED_DATA);
    block(&mut f, BLOCK_END, B_MEAS);
    end(&mut f);
    Ok((f, left_out))
}
