//! Uploads of large pieces through two mapped staging buffers kept between calls and used in
//! turn: a piece is copied in on every core while the GPU still works on the one before, and
//! nothing is allocated per piece. (`Queue::write_buffer` makes a staging buffer for every
//! call: for the scalogram batch's 33 MB segments that, and its copy on one core, cost more
//! than the GPU's work on them.)

use eframe::wgpu;
use rayon::prelude::*;

use super::{GpuContext, GpuError};

/// Bytes each thread copies at a time.
const CHUNK: usize = 1 << 20;

/// The start of a mapped view, shared by the threads that copy into its chunks.
#[derive(Clone, Copy)]
struct Mapped(*mut u8);
// SAFETY: the threads write disjoint ranges of the view (see `UploadRing::upload`).
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl Mapped {
    /// # Safety
    /// `offset` must lie inside the view.
    unsafe fn at(self, offset: usize) -> *mut u8 {
        // SAFETY: as the caller promises.
        unsafe { self.0.add(offset) }
    }
}

struct Staging {
    buffer: wgpu::Buffer,
    /// The submission that last copied out of it; none while it is mapped.
    last_use: Option<wgpu::SubmissionIndex>,
}

#[derive(Default)]
pub struct UploadRing {
    slots: [Option<Staging>; 2],
    next: usize,
}

impl UploadRing {
    /// Copies `data` (a multiple of 4 bytes) into the next staging buffer, once the GPU is done
    /// with its last piece, and records its copy into `dst` in `enc`. The submission of `enc`
    /// must be passed to `submitted` before the next upload.
    pub fn upload(
        &mut self,
        ctx: &GpuContext,
        enc: &mut wgpu::CommandEncoder,
        data: &[u8],
        dst: &wgpu::Buffer,
    ) -> Result<(), GpuError> {
        let bytes = data.len() as u64;
        let slot = &mut self.slots[self.next];
        match slot {
            Some(s) if s.buffer.size() >= bytes => {
                let last = s.last_use.take();
                ctx.map_after(&s.buffer, wgpu::MapMode::Write, last)?;
            }
            _ => {
                *slot = Some(Staging {
                    buffer: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("upload staging"),
                        size: bytes.max(4),
                        usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                        mapped_at_creation: true,
                    }),
                    last_use: None,
                });
            }
        }
        let buffer = &slot.as_ref().expect("just filled").buffer;
        {
            let mut view = (buffer.slice(..bytes).get_mapped_range_mut())
                .map_err(|e| GpuError::Poll(e.to_string()))?;
            let to = Mapped(view.slice(..).as_raw_element_ptr().as_ptr());
            data.par_chunks(CHUNK).enumerate().for_each(|(k, from)| {
                // SAFETY: the view is mapped for `bytes` = data.len() bytes and lives until
                // the copies end; each chunk writes its own range of it, and nothing reads it.
                unsafe {
                    std::ptr::copy_nonoverlapping(from.as_ptr(), to.at(k * CHUNK), from.len())
                }
            });
        }
        buffer.unmap();
        enc.copy_buffer_to_buffer(buffer, 0, dst, 0, bytes);
        Ok(())
    }

    /// The submission that holds the last upload's copy.
    pub fn submitted(&mut self, index: wgpu::SubmissionIndex) {
        if let Some(s) = &mut self.slots[self.next] {
            s.last_use = Some(index);
        }
        self.next = 1 - self.next;
    }
}
