//! Mapped buffers that a stream's pieces go through to the device, reused: a thread fills the
//! next piece (`UploadRing::fill`, `fill_with`) while the GPU copies the last one, and each
//! buffer goes back to the ring once the GPU is done with it. The batch scalogram
//! (`gpu::cwt`) and the night's trends (`gpu::trend`) stream through it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eframe::wgpu;

use super::context::copy_in_parallel;

/// Mapped buffers a thread fills with the next pieces while another records the GPU's work on
/// the last ones, which maps each buffer again once the GPU has copied it.
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
    pub(crate) fn new(device: &wgpu::Device, label: &str, bytes: u64) -> Self {
        let (freed, free) = channel();
        let buffers = (0..RING)
            .map(|j| {
                let _ = freed.send(j);
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: bytes.next_multiple_of(4).max(4),
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

    pub(crate) fn bytes(&self) -> u64 {
        self.buffers[0].size()
    }

    /// Writes `data` into a free buffer, waiting for one, and gives it; `None` once `stop` is
    /// set or when the device could not map it. Safe to call from another thread than the one
    /// recording.
    pub fn fill(self: &Arc<Self>, data: &[f32], stop: &AtomicBool) -> Option<Filled> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        self.fill_with(bytes.len(), stop, |view| {
            copy_in_parallel(view.slice(..bytes.len()), bytes)
        })
    }

    /// As `fill`, the first `bytes` of a free buffer written by `write` (which sees the whole
    /// mapping).
    pub fn fill_with(
        self: &Arc<Self>,
        bytes: usize,
        stop: &AtomicBool,
        write: impl FnOnce(&mut wgpu::BufferViewMut),
    ) -> Option<Filled> {
        assert!(bytes as u64 <= self.bytes(), "a piece larger than the ring");
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
            bytes: bytes as u64,
            unmapped: false,
        };
        let mut view = view.ok()?;
        write(&mut view);
        drop(view);
        buffer.unmap();
        filled.unmapped = true;
        Some(filled)
    }
}

/// A buffer of the ring that `fill` wrote. Dropped (after the copy out of it is submitted, or
/// unused, as when a stream stops midway) it is mapped again and goes back to the ring once
/// the GPU is done with it: none is lost.
pub struct Filled {
    ring: Arc<UploadRing>,
    j: usize,
    bytes: u64,
    /// Written and unmapped (else its mapping could not be had, and it stays as it was).
    unmapped: bool,
}

impl Filled {
    /// The buffer, to copy from.
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.ring.buffers[self.j]
    }

    /// The bytes written.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
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
