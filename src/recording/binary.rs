//! A channels-by-samples matrix of plain numbers in a memory-mapped file, decoded on demand:
//! BrainVision's `.eeg`, EEGLAB's `.fdt` and the data matrix inside a `.set` are all one.

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use super::{ReadError, SampleSource};

/// How one sample is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleType {
    I16,
    U16,
    I32,
    F32,
    F64,
}

impl SampleType {
    pub fn bytes(self) -> usize {
        match self {
            SampleType::I16 | SampleType::U16 => 2,
            SampleType::I32 | SampleType::F32 => 4,
            SampleType::F64 => 8,
        }
    }

    /// The number in the first `bytes()` of `b`.
    pub fn decode(self, b: &[u8], big_endian: bool) -> f64 {
        macro_rules! num {
            ($t:ty, $n:literal) => {{
                let mut a = [0u8; $n];
                a.copy_from_slice(&b[..$n]);
                if big_endian {
                    <$t>::from_be_bytes(a) as f64
                } else {
                    <$t>::from_le_bytes(a) as f64
                }
            }};
        }
        match self {
            SampleType::I16 => num!(i16, 2),
            SampleType::U16 => num!(u16, 2),
            SampleType::I32 => num!(i32, 4),
            SampleType::F32 => num!(f32, 4),
            SampleType::F64 => num!(f64, 8),
        }
    }
}

/// Where the samples lie: one after another per time point (all channels of sample 0, then of
/// sample 1: "multiplexed", MATLAB's column-major channels x samples) or per channel
/// ("vectorized": all samples of channel 0, then of channel 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Orientation {
    Multiplexed,
    Vectorized,
}

/// A matrix of `channels` x `samples` numbers at `offset` in a mapped file; sample `k` of
/// channel `c` reads as `(value - zeros[c]) * gains[c]` (zeros are 0 unless set: unsigned and
/// offset-binary formats store a channel's zero as a number of its own).
pub struct MatrixSource {
    map: Mmap,
    offset: usize,
    sample: SampleType,
    big_endian: bool,
    orientation: Orientation,
    channels: usize,
    samples: usize,
    gains: Vec<f64>,
    zeros: Vec<f64>,
}

impl MatrixSource {
    /// Maps `path` read-only.
    pub fn map(path: &Path) -> Result<Mmap, ReadError> {
        let file = File::open(path).map_err(|e| ReadError::io(path, e))?;
        // SAFETY: read-only map; a file truncated by another program while open would fault,
        // the hazard every memory-mapping viewer accepts for instant opening (as for EDF).
        unsafe { Mmap::map(&file) }.map_err(|e| ReadError::io(path, e))
    }

    /// Checks that the matrix fits in the map; `path` names the file in the error.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        path: &Path,
        map: Mmap,
        offset: usize,
        sample: SampleType,
        big_endian: bool,
        orientation: Orientation,
        samples: usize,
        gains: Vec<f64>,
    ) -> Result<Self, ReadError> {
        let channels = gains.len();
        let need = (channels.checked_mul(samples))
            .and_then(|n| n.checked_mul(sample.bytes()))
            .and_then(|n| n.checked_add(offset));
        if need.is_none_or(|n| n > map.len()) {
            return Err(ReadError::invalid(
                path,
                format!(
                    "the file is truncated: {channels} channels of {samples} samples need {} \
                     bytes from byte {offset}, the file has {}",
                    channels
                        .saturating_mul(samples)
                        .saturating_mul(sample.bytes()),
                    map.len()
                ),
            ));
        }
        Ok(MatrixSource {
            map,
            offset,
            sample,
            big_endian,
            orientation,
            channels,
            samples,
            zeros: vec![0.0; gains.len()],
            gains,
        })
    }

    /// The stored number that reads as 0 in each channel (one per channel, in order).
    pub fn with_zeros(mut self, zeros: Vec<f64>) -> Self {
        debug_assert_eq!(zeros.len(), self.channels);
        self.zeros = zeros;
        self
    }
}

impl SampleSource for MatrixSource {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        let b = self.sample.bytes();
        let (first, stride) = match self.orientation {
            Orientation::Multiplexed => ((start * self.channels + signal) * b, self.channels * b),
            Orientation::Vectorized => ((signal * self.samples + start) * b, b),
        };
        let (gain, zero) = (self.gains[signal], self.zeros[signal]);
        let mut at = self.offset + first;
        for o in out.iter_mut() {
            let value = self.sample.decode(&self.map[at..at + b], self.big_endian);
            *o = ((value - zero) * gain) as f32;
            at += stride;
        }
        Ok(())
    }

    fn release_pages(&self) {
        super::release_mapped_pages(&self.map);
    }
}

/// A small text file (a header, a layout, a list of events) read whole and decoded as
/// `decode_text`; one over `max_bytes` is refused as not being `what` ("a Persyst layout").
pub fn read_small_text(path: &Path, max_bytes: u64, what: &str) -> Result<String, ReadError> {
    let size = std::fs::metadata(path)
        .map_err(|e| ReadError::io(path, e))?
        .len();
    if size > max_bytes {
        return Err(ReadError::invalid(
            path,
            format!("larger than {} MB: not {what}", max_bytes >> 20),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| ReadError::io(path, e))?;
    Ok(decode_text(&bytes))
}

/// The text of a header in a codepage the file names: UTF-8 where it decodes, else Latin-1
/// (Windows' default, which older BrainVision and EEGLAB files are written in).
pub fn decode_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.trim_start_matches('\u{feff}').to_string(),
        Err(_) => bytes.iter().map(|&c| c as char).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_orientations_decode_the_same_matrix() {
        let dir = tempfile::tempdir().unwrap();
        // 2 channels x 3 samples: channel 0 = 1, 2, 3; channel 1 = -1, -2, -3.
        let mux: Vec<i16> = vec![1, -1, 2, -2, 3, -3];
        let vec: Vec<i16> = vec![1, 2, 3, -1, -2, -3];
        for (data, orientation) in [
            (mux, Orientation::Multiplexed),
            (vec, Orientation::Vectorized),
        ] {
            let path = dir.path().join("m.bin");
            let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
            std::fs::write(&path, [&[9u8, 9][..], &bytes].concat()).unwrap();
            let map = MatrixSource::map(&path).unwrap();
            let src = MatrixSource::new(
                &path,
                map,
                2,
                SampleType::I16,
                false,
                orientation,
                3,
                vec![0.5, 2.0],
            )
            .unwrap();
            let mut out = [0.0f32; 2];
            src.read(1, 1, &mut out).unwrap();
            assert_eq!(out, [-4.0, -6.0], "{orientation:?}");
            src.read(0, 0, &mut out).unwrap();
            assert_eq!(out, [0.5, 1.0], "{orientation:?}");
        }
    }

    #[test]
    fn a_matrix_past_the_end_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.bin");
        std::fs::write(&path, [0u8; 10]).unwrap();
        let map = MatrixSource::map(&path).unwrap();
        let err = MatrixSource::new(
            &path,
            map,
            0,
            SampleType::F32,
            false,
            Orientation::Multiplexed,
            usize::MAX / 2,
            vec![1.0; 3],
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("truncated"), "{err}");
    }
}

/// The last window of rows (time points, every channel of them) a reader decoded, kept: the
/// browser reads each channel of the same span in turn, so one decode serves them all, and a
/// read inside the kept window is served from it.
#[derive(Default)]
pub struct LastWindow(std::sync::Mutex<Option<Window>>);

/// Rows `first..first + count`, decoded.
type Window = (usize, usize, std::sync::Arc<Vec<f32>>);

impl LastWindow {
    /// Rows `first..first + count`: the kept window where it holds them, else `decode()`'s
    /// (rows `first..first + count` exactly), kept. With the window comes the row of it at
    /// which `first` lies.
    pub fn rows<E>(
        &self,
        first: usize,
        count: usize,
        decode: impl FnOnce() -> Result<Vec<f32>, E>,
    ) -> Result<(std::sync::Arc<Vec<f32>>, usize), E> {
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((f, c, v)) = last.as_ref()
            && *f <= first
            && first + count <= f + c
        {
            return Ok((std::sync::Arc::clone(v), first - f));
        }
        let values = std::sync::Arc::new(decode()?);
        *last = Some((first, count, std::sync::Arc::clone(&values)));
        Ok((values, 0))
    }
}
