//! Uniform buffers and bind groups kept from one call of a kernel to the next.
//!
//! An interactive recompute repeats the same dispatches, with the same parameters, on the same
//! kept buffers. Making each dispatch's uniform buffer and bind group anew cost about 9 us a
//! dispatch on the H100 (a buffer, the copy that fills it and a descriptor set): a tenth of a
//! Hermite refit. Kept, a repeated dispatch costs a hash lookup.
//!
//! A kept uniform buffer is never written again: a dispatch with other parameters gets a
//! uniform buffer of its own, so a dispatch recorded earlier (submitted or not) always reads
//! the parameters it was recorded with.

use std::collections::HashMap;

use eframe::wgpu;

use super::context::{GpuContext, entry};

#[derive(PartialEq, Eq, Hash)]
struct Key {
    pipeline: wgpu::ComputePipeline,
    params: Vec<u8>,
    buffers: Vec<(u32, wgpu::Buffer)>,
}

struct Kept {
    bind: wgpu::BindGroup,
    /// The call that last used it.
    call: u64,
}

/// A kernel family's kept bind groups (binding 0 its parameters, then its buffers).
#[derive(Default)]
pub(crate) struct Binds {
    kept: HashMap<Key, Kept>,
    call: u64,
}

impl Binds {
    /// The bind group of a dispatch of `pipeline` with `params` at binding 0 and `buffers`
    /// at theirs: the kept one, or a new one kept for the next call.
    pub fn group(
        &mut self,
        ctx: &GpuContext,
        pipeline: &wgpu::ComputePipeline,
        params: &[u8],
        buffers: &[(u32, &wgpu::Buffer)],
    ) -> wgpu::BindGroup {
        let key = Key {
            pipeline: pipeline.clone(),
            params: params.to_vec(),
            buffers: buffers.iter().map(|&(b, buf)| (b, buf.clone())).collect(),
        };
        let call = self.call;
        let kept = self.kept.entry(key).or_insert_with(|| {
            use wgpu::util::DeviceExt;
            let uniform = ctx
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("kernel params"),
                    contents: params,
                    usage: wgpu::BufferUsages::UNIFORM,
                });
            let mut entries = vec![entry(0, &uniform)];
            entries.extend(buffers.iter().map(|&(b, buf)| entry(b, buf)));
            let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("kept"),
                layout: &pipeline.get_bind_group_layout(0),
                entries: &entries,
            });
            Kept { bind, call }
        });
        kept.call = call;
        kept.bind.clone()
    }

    /// Ends a call: what it did not use is let go (with the buffers it held), so that a
    /// kernel holds no more than one call's bind groups.
    pub fn end_call(&mut self) {
        let call = self.call;
        self.kept.retain(|_, k| k.call == call);
        self.call += 1;
    }
}
