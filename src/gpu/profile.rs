//! Per-pass GPU times from timestamp queries, for benchmarks. Nsight does not see wgpu's
//! Vulkan compute; these do. On a device from `GpuContext::headless_profiled` (or `headless`
//! with `EDE_GPU_PROFILE` set) whose adapter has TIMESTAMP_QUERY, every compute pass begun
//! through `GpuContext::pass` writes a timestamp as it starts and ends, and
//! `GpuContext::pass_times` reads them back (and starts over).

use std::sync::Mutex;

use eframe::wgpu;

use super::{GpuContext, GpuError};

/// Passes timed between two reads; later ones run untimed.
const CAPACITY: u32 = 128;

pub(crate) struct PassProfiler {
    set: wgpu::QuerySet,
    resolved: wgpu::Buffer,
    /// The label of each timed pass since the last read, in the order they were begun.
    labels: Mutex<Vec<&'static str>>,
}

impl PassProfiler {
    /// The feature a headless device is opened with: timestamps, when wanted and the adapter
    /// can write them.
    pub(crate) fn feature(adapter: &wgpu::Adapter, wanted: bool) -> wgpu::Features {
        let feature = wgpu::Features::TIMESTAMP_QUERY;
        if wanted && adapter.features().contains(feature) {
            feature
        } else {
            wgpu::Features::empty()
        }
    }

    /// A profiler for a device opened with timestamps, else none.
    pub(crate) fn new(device: &wgpu::Device) -> Option<Self> {
        device
            .features()
            .contains(wgpu::Features::TIMESTAMP_QUERY)
            .then(|| PassProfiler {
                set: device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("pass times"),
                    ty: wgpu::QueryType::Timestamp,
                    count: 2 * CAPACITY,
                }),
                resolved: device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("pass times"),
                    size: 16 * CAPACITY as u64,
                    usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                }),
                labels: Mutex::new(Vec::new()),
            })
    }

    fn writes(&self, label: &'static str) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let mut labels = self.labels.lock().ok()?;
        let i = labels.len() as u32;
        (i < CAPACITY).then(|| {
            labels.push(label);
            wgpu::ComputePassTimestampWrites {
                query_set: &self.set,
                beginning_of_pass_write_index: Some(2 * i),
                end_of_pass_write_index: Some(2 * i + 1),
            }
        })
    }
}

impl GpuContext {
    /// Whether compute passes are timed.
    pub fn profiling(&self) -> bool {
        self.profiler.is_some()
    }

    /// A compute pass named `label`, timed when profiling.
    pub fn pass<'e>(
        &self,
        enc: &'e mut wgpu::CommandEncoder,
        label: &'static str,
    ) -> wgpu::ComputePass<'e> {
        let writes = self.profiler.as_ref().and_then(|p| p.writes(label));
        enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(label),
            timestamp_writes: writes,
        })
    }

    /// Each pass timed since the last call (label, microseconds on the GPU), once everything
    /// submitted is done; empty unless profiling. Passes begun but never submitted read as 0.
    pub fn pass_times(&self) -> Result<Vec<(&'static str, f64)>, GpuError> {
        let Some(p) = &self.profiler else {
            return Ok(Vec::new());
        };
        let labels =
            std::mem::take(&mut *p.labels.lock().map_err(|e| GpuError::Poll(e.to_string()))?);
        if labels.is_empty() {
            return Ok(Vec::new());
        }
        let n = labels.len() as u32;
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.resolve_query_set(&p.set, 0..2 * n, &p.resolved, 0);
        self.queue.submit([enc.finish()]);
        let bytes = self.read_back(&p.resolved, 16 * n as u64)?;
        let ticks: &[u64] = bytemuck::cast_slice(&bytes);
        let us = self.queue.get_timestamp_period() as f64 / 1e3;
        Ok(labels
            .into_iter()
            .zip(ticks.chunks_exact(2))
            .map(|(label, t)| (label, t[1].saturating_sub(t[0]) as f64 * us))
            .collect())
    }

    /// `pass_times` as one line for stderr: "what: label 12.3 us, ...", passes of one label
    /// summed ("label 4 x 3.1 = 12.3 us"), in the order each label first ran.
    pub fn report_pass_times(&self, what: &str) -> Result<(), GpuError> {
        let mut sums: Vec<(&str, usize, f64)> = Vec::new();
        for (label, us) in self.pass_times()? {
            match sums.iter_mut().find(|s| s.0 == label) {
                Some(s) => (s.1, s.2) = (s.1 + 1, s.2 + us),
                None => sums.push((label, 1, us)),
            }
        }
        if !sums.is_empty() {
            let list: Vec<String> = (sums.iter())
                .map(|&(label, n, us)| match n {
                    1 => format!("{label} {us:.1} us"),
                    _ => format!("{label} {n} x {:.1} = {us:.1} us", us / n as f64),
                })
                .collect();
            eprintln!("{what}: {}", list.join(", "));
        }
        Ok(())
    }
}
