//! Signals onto the device and their spectra. Pieces of a stream go through mapped buffers that
//! are reused: from the caller's slice through a staging belt (`spectra_rows`), or filled by
//! a thread of the caller's beforehand (`UploadRing`, `spectra_from_ring`), so that the copy
//! into mapped memory (about 2 ms for a batch segment of 33 MB on the H100's host) is off the
//! thread that records the GPU's work.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eframe::wgpu;

use super::{CwtKernels, GpuCwtError, Params, Slot, Spectra};
use crate::dsp::cwt::{self, CwtError};
use crate::gpu::context::copy_in_parallel;

/// Mapped buffers a thread fills with the next pieces' samples (`fill`) while another records
/// the GPU's work on the last ones (`CwtKernels::spectra_from_ring`), which maps each buffer
/// again once the GPU has copied it.
pub struct UploadRing {
    buffers: Vec<wgpu::Buffer>,
    device: wgpu::Device,
    /// Buffers mapped and free to fill, by index.
    free: Mutex<Receiver<usize>>,
    freed: Sender<usize>,
}

/// Buffers in a ring: one being filled, one waiting to be recorded, one the GPU copies.
const RING: usize = 3;

impl UploadRing {
    fn new(device: &wgpu::Device, bytes: u64) -> Self {
        let (freed, free) = channel();
        let buffers = (0..RING)
            .map(|j| {
                let _ = freed.send(j);
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("cwt upload ring"),
                    size: bytes,
                    usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: true,
                })
            })
            .collect();
        UploadRing {
            buffers,
            device: device.clone(),
            free: Mutex::new(free),
            freed,
        }
    }

    fn bytes(&self) -> u64 {
        self.buffers[0].size()
    }

    /// Writes `data` into a free buffer, waiting for one, and gives it; `None` once `stop` is
    /// set or when the device could not map it. Safe to call from another thread than the one
    /// recording.
    pub fn fill(self: &Arc<Self>, data: &[f32], stop: &AtomicBool) -> Option<Filled> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        assert!(
            bytes.len() as u64 <= self.bytes(),
            "a piece larger than the ring"
        );
        let j = {
            let free = self.free.lock().ok()?;
            loop {
                match free.recv_timeout(Duration::from_millis(1)) {
                    Ok(j) => break j,
                    Err(RecvTimeoutError::Timeout) if !stop.load(Ordering::Relaxed) => {
                        // Mappings complete when the device is polled: do it here too, lest
                        // this thread wait on the one that waits for it.
                        let _ = self.device.poll(wgpu::PollType::Poll);
                    }
                    Err(_) => return None,
                }
            }
        };
        let buffer = &self.buffers[j];
        // Free buffers are mapped (a `Filled` frees its buffer only then).
        let view = buffer.slice(..).get_mapped_range_mut();
        let mut filled = Filled {
            ring: self.clone(),
            j,
            bytes: bytes.len() as u64,
            unmapped: false,
        };
        let mut view = view.ok()?;
        copy_in_parallel(view.slice(..bytes.len()), bytes);
        drop(view);
        buffer.unmap();
        filled.unmapped = true;
        Some(filled)
    }
}

/// A buffer of the ring that `fill` wrote. Dropped (after `CwtKernels::spectra_from_ring` has
/// submitted its copy, or unused, as when a stream stops midway) it is mapped again and goes
/// back to the ring once the GPU is done with it: none is lost.
pub struct Filled {
    ring: Arc<UploadRing>,
    j: usize,
    bytes: u64,
    /// Written and unmapped (else its mapping could not be had, and it stays as it was).
    unmapped: bool,
}

impl Drop for Filled {
    fn drop(&mut self) {
        let (freed, j) = (self.ring.freed.clone(), self.j);
        if !self.unmapped {
            let _ = freed.send(j);
            return;
        }
        self.ring.buffers[j]
            .slice(..)
            .map_async(wgpu::MapMode::Write, move |mapped| {
                if mapped.is_ok() {
                    let _ = freed.send(j);
                }
            });
    }
}

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
                let ring = Arc::new(UploadRing::new(&self.ctx.device, bytes));
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
        assert_eq!(bytes, filled.bytes, "the piece as filled");
        let buffer = &filled.ring.buffers[filled.j];
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
