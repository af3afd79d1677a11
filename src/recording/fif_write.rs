//! Pieces of FIF files as MNE-Python reads them, for the writers of MNE's ICA (`-ica.fif`) and
//! evoked (`-ave.fif`) files. FIF tags are big-endian: kind, type, size, next (0: the following
//! tag), then the data.

use super::ChannelType;
use super::electrodes::{direction, head_position};

pub const FILE_ID: i32 = 100;
pub const DIR_POINTER: i32 = 101;
pub const BLOCK_ID: i32 = 103;
pub const BLOCK_START: i32 = 104;
pub const BLOCK_END: i32 = 105;
pub const NOP: i32 = 108;
pub const NCHAN: i32 = 200;
pub const SFREQ: i32 = 201;
pub const CH_INFO: i32 = 203;
pub const LOWPASS: i32 = 219;
pub const HIGHPASS: i32 = 223;
pub const B_MEAS: i32 = 100;
pub const B_MEAS_INFO: i32 = 101;
pub const T_INT: u32 = 3;
pub const T_FLOAT: u32 = 4;
pub const T_STRING: u32 = 10;
pub const T_CH_INFO: u32 = 30;
pub const T_ID: u32 = 31;
const T_FLOAT_MATRIX: u32 = 0x4000_0004;
const T_DOUBLE_MATRIX: u32 = 0x4000_0005;
/// FIFF_UNIT_V.
const UNIT_V: i32 = 107;

/// MNE's spherical head's radius (m): where positions known only by their direction go.
const HEAD_RADIUS_M: f64 = 0.095;

/// Why channels cannot go into a FIF file written here.
#[derive(Debug, thiserror::Error)]
pub enum FifChannelError {
    #[error(
        "{0} is {1:?}: only voltage channels (EEG, EOG, ECG, EMG) are written to FIF files here (MEG channels need their coil definitions)"
    )]
    NotVoltage(String, ChannelType),
    #[error("channel name {0:?} is longer than the 15 bytes a FIF channel record holds")]
    LongName(String),
}

/// A channel as a FIF channel record describes it.
pub struct FifChannel<'a> {
    pub label: &'a str,
    pub kind: ChannelType,
    /// The file's position (any head frame, metres), if any.
    pub position: Option<[f64; 3]>,
}

impl FifChannel<'_> {
    /// FIFF's channel kind and coil type; an error for what ede cannot describe.
    fn codes(&self) -> Result<(i32, i32), FifChannelError> {
        if self.label.len() > 15 {
            return Err(FifChannelError::LongName(self.label.to_string()));
        }
        Ok(match self.kind {
            // FIFFV_EEG_CH with FIFFV_COIL_EEG.
            ChannelType::Eeg => (2, 1),
            ChannelType::Eog => (202, 0),
            ChannelType::Emg => (302, 0),
            ChannelType::Ecg => (402, 0),
            other => return Err(FifChannelError::NotVoltage(self.label.to_string(), other)),
        })
    }

    /// Checks every channel can be written, before anything is.
    pub fn check(channels: &[FifChannel]) -> Result<(), FifChannelError> {
        channels.iter().try_for_each(|c| c.codes().map(|_| ()))
    }

    /// The 96-byte record of channel `c` (numbered from 0): range and calibration 1 (values in
    /// volts), an EEG electrode's position (the file's direction or its 10-05 name's, on MNE's
    /// 9.5 cm sphere; unknown: NaN), unit V.
    pub fn record(&self, c: usize) -> Result<Vec<u8>, FifChannelError> {
        let (kind, coil) = self.codes()?;
        let mut ch = Vec::with_capacity(96);
        ch.extend((c as i32 + 1).to_be_bytes());
        ch.extend((c as i32 + 1).to_be_bytes());
        ch.extend(kind.to_be_bytes());
        ch.extend(1f32.to_be_bytes());
        ch.extend(1f32.to_be_bytes());
        ch.extend(coil.to_be_bytes());
        let direction = (self.kind == ChannelType::Eeg)
            .then(|| head_position(self.label, self.position))
            .flatten()
            .and_then(direction);
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
        let mut name = self.label.as_bytes().to_vec();
        name.resize(16, 0);
        ch.extend(name);
        Ok(ch)
    }
}

pub fn tag(out: &mut Vec<u8>, kind: i32, dtype: u32, data: &[u8]) {
    out.extend(kind.to_be_bytes());
    out.extend(dtype.to_be_bytes());
    out.extend((data.len() as i32).to_be_bytes());
    out.extend(0i32.to_be_bytes());
    out.extend(data);
}

pub fn block(out: &mut Vec<u8>, which: i32, kind: i32) {
    tag(out, which, T_INT, &kind.to_be_bytes());
}

pub fn int(out: &mut Vec<u8>, kind: i32, value: i32) {
    tag(out, kind, T_INT, &value.to_be_bytes());
}

pub fn float(out: &mut Vec<u8>, kind: i32, value: f32) {
    tag(out, kind, T_FLOAT, &value.to_be_bytes());
}

/// A double matrix: the values row-major, then the dimensions last first, then their count.
pub fn matrix(out: &mut Vec<u8>, kind: i32, values: &[f64], dims: &[usize]) {
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
    matrix_tag(out, kind, T_DOUBLE_MATRIX, data, dims);
}

/// A float matrix, laid out as `matrix`.
pub fn float_matrix(out: &mut Vec<u8>, kind: i32, values: &[f32], dims: &[usize]) {
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
    matrix_tag(out, kind, T_FLOAT_MATRIX, data, dims);
}

fn matrix_tag(out: &mut Vec<u8>, kind: i32, dtype: u32, mut data: Vec<u8>, dims: &[usize]) {
    for &d in dims.iter().rev() {
        data.extend((d as i32).to_be_bytes());
    }
    data.extend((dims.len() as i32).to_be_bytes());
    tag(out, kind, dtype, &data);
}

/// The file's start: its id and no directory; returns the id (blocks repeat it).
pub fn start(out: &mut Vec<u8>) -> Vec<u8> {
    let id = file_id();
    tag(out, FILE_ID, T_ID, &id);
    tag(out, DIR_POINTER, T_INT, &(-1i32).to_be_bytes());
    id
}

/// The file's end: a NOP tag whose `next` is -1.
pub fn end(out: &mut Vec<u8>) {
    out.extend(NOP.to_be_bytes());
    out.extend(0u32.to_be_bytes());
    out.extend(0i32.to_be_bytes());
    out.extend((-1i32).to_be_bytes());
}

/// The measurement info block: channel count, rate, filter band and one record per channel.
pub fn meas_info(
    out: &mut Vec<u8>,
    channels: &[FifChannel],
    fs: f64,
    (highpass_hz, lowpass_hz): (f32, f32),
) -> Result<(), FifChannelError> {
    block(out, BLOCK_START, B_MEAS_INFO);
    int(out, NCHAN, channels.len() as i32);
    float(out, SFREQ, fs as f32);
    float(out, LOWPASS, lowpass_hz);
    float(out, HIGHPASS, highpass_hz);
    for (c, ch) in channels.iter().enumerate() {
        tag(out, CH_INFO, T_CH_INFO, &ch.record(c)?);
    }
    block(out, BLOCK_END, B_MEAS_INFO);
    Ok(())
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
