//! Signals onto the device and their spectra. Pieces of a stream go through mapped buffers that
//! are reused: from the caller's slice through a staging belt (`spectra_rows`), or filled by
//! a thread of the caller's beforehand (`gpu::upload::UploadRing`, `spectra_from_ring`), so
//! that the copy into mapped memory (about 2 ms for a batch segment of 33 MB on the H100's
//! host) is off the thread that records the GPU's work.

use std::sync::Arc;

use eframe::wgpu;

use super::{CwtKernels, GpuCwtError, Params, Slot, Spectra};
use crate::dsp::cwt::{self, CwtError};
use crate::gpu::context::copy_in_parallel;
use crate::gpu::upload::{Filled, UploadRing};

impl CwtKernels {
    /// Uploads `signals` (all of one length) and computes their spectra, after removing each
    /// one's mean or the given `means` (a whole recording's, for a piece of it).
    pub fn spectra(
        &mut self,
        signals: &[&[f32]],
        means: Option<&[f64]>,
    ) -> Result<Spectra, GpuCwtError> {
        let n = signals.first().map_or(0, |s| s.len());
        assert!(
            signals.iter().all(|s| s.len() == n),
            "signals of one length"
        );
        let means: Vec<f64> = match means {
            Some(m) => m.to_vec(),
            None => signals.iter().map(|s| cwt::mean(s)).collect(),
        };
        self.spectra_rows(&signals.concat(), n, &means)
    }

    /// As `spectra`, for signals of `n` samples held one after another in `flat`, one mean
    /// each: a stream of pieces uploads them without gathering them first. The device buffers
    /// are reused: the upload's and the FFT's scratch from call to call, the spectra's from
    /// those given back with `recycle`.
    pub fn spectra_rows(
        &mut self,
        flat: &[f32],
        n: usize,
        means: &[f64],
    ) -> Result<Spectra, GpuCwtError> {
        assert_eq!(flat.len(), means.len() * n, "channels x n samples");
        self.spectra_of(n, means, |k, enc, samples| {
            // Through the belt's mapped buffers, reused: `Queue::write_buffer` makes a new
            // staging allocation each time (3 ms a batch segment of 33 MB on the H100's host).
            let data: &[u8] = bytemuck::cast_slice(flat);
            if let Some(size) = wgpu::BufferSize::new(data.len() as u64) {
                let mut view = k.belt.write_buffer(enc, samples, 0, size);
                copy_in_parallel(view.slice(..), data);
            }
            k.belt.finish();
        })
        .inspect(|_| self.belt.recall())
    }

    /// A ring for pieces of `channels` x `n` samples, kept while large enough.
    pub fn upload_ring(&mut self, channels: usize, n: usize) -> Arc<UploadRing> {
        let bytes = ((channels * n * 4) as u64).max(4);
        match &self.ring {
            Some(ring) if ring.bytes() >= bytes => ring.clone(),
            _ => {
                let ring = Arc::new(UploadRing::new(&self.ctx.device, "cwt upload ring", bytes));
                self.ring = Some(ring.clone());
                ring
            }
        }
    }

    /// As `spectra_rows`, for a piece that `UploadRing::fill` wrote; its buffer goes back to
    /// the ring once the GPU has copied it.
    pub fn spectra_from_ring(
        &mut self,
        filled: Filled,
        n: usize,
        means: &[f64],
    ) -> Result<Spectra, GpuCwtError> {
        let bytes = (means.len() * n * 4) as u64;
        assert_eq!(bytes, filled.bytes(), "the piece as filled");
        let buffer = filled.buffer();
        self.spectra_of(n, means, |_, enc, samples| {
            enc.copy_buffer_to_buffer(buffer, 0, samples, 0, bytes);
        })
    }

    /// Spectra of `means.len()` signals of `n` samples that `upload(kernels, encoder,
    /// samples)` puts into the buffer `samples` (in order, in one buffer), each less its mean.
    fn spectra_of(
        &mut self,
        n: usize,
        means: &[f64],
        upload: impl FnOnce(&mut Self, &mut wgpu::CommandEncoder, &wgpu::Buffer),
    ) -> Result<Spectra, GpuCwtError> {
        let channels = means.len();
        if n < cwt::MIN_SAMPLES {
            return Err(CwtError::TooShort { n }.into());
        }
        let m = cwt::padded_len(n);
        let bytes = (channels * m * 8) as u64;
        if bytes > self.max_buffer_bytes {
            return Err(GpuCwtError::TooLarge(format!(
                "{channels} channels x {m} padded samples need {bytes} bytes in one GPU buffer; \
                 this device allows {}: transform fewer channels or a shorter stretch at once",
                self.max_buffer_bytes
            )));
        }
        let ctx = self.ctx.clone();
        let buffer = ctx.guarded(|| {
            let means: Vec<f32> = means.iter().map(|&v| v as f32).collect();
            let upload_usage = wgpu::BufferUsages::COPY_DST;
            let samples = self.reused(Slot::Upload, (channels * n * 4) as u64, upload_usage);
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            upload(self, &mut enc, &samples);
            let means = self.init(
                "cwt means",
                bytemuck::cast_slice(&means),
                wgpu::BufferUsages::STORAGE,
            );
            let a = self.reused(Slot::Spectra, bytes, wgpu::BufferUsages::empty());
            let b = self.reused(Slot::Scratch, bytes, wgpu::BufferUsages::empty());
            // A recycled buffer serves one spectra only.
            self.buffers[Slot::Spectra as usize] = None;
            let params = Params {
                n: n as u32,
                m: m as u32,
                rows: channels as u32,
                ..Default::default()
            };
            self.dispatch(
                &mut enc,
                &self.load,
                &params,
                &[(1, &samples), (2, &means), (3, &a)],
                None,
                (m, channels),
            );
            let in_b = self.fft.encode(&mut enc, &a, &b, m, channels, false);
            ctx.queue.submit([enc.finish()]);
            if in_b {
                // The stage kernels left the spectra in the scratch buffer: swap the roles.
                self.buffers[Slot::Scratch as usize] = Some(a);
                b
            } else {
                a
            }
        })?;
        Ok(Spectra {
            channels,
            n,
            m,
            buffer,
        })
    }

    /// Gives spectra no longer needed back, for the next `spectra_rows` to fill (the GPU's
    /// queue order keeps work already submitted on them right).
    pub fn recycle(&mut self, sp: Spectra) {
        self.buffers[Slot::Spectra as usize] = Some(sp.buffer);
    }
}
