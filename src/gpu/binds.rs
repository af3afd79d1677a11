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
    uniforms: Vec<(u32, Vec<u8>)>,
    buffers: Vec<(u32, wgpu::Buffer)>,
    view: Option<(u32, wgpu::TextureView)>,
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

/// What a bind group binds: uniform buffers made of bytes, storage buffers and at most one
/// texture view, each at its binding.
#[derive(Clone, Copy)]
pub(crate) struct Bound<'a> {
    pub uniforms: &'a [(u32, &'a [u8])],
    pub buffers: &'a [(u32, &'a wgpu::Buffer)],
    pub view: Option<(u32, &'a wgpu::TextureView)>,
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
        let bound = Bound {
            uniforms: &[(0, params)],
            buffers,
            view: None,
        };
        self.bound(ctx, pipeline, bound)
    }

    /// As `group`, for any uniforms, buffers and view.
    pub fn bound(
        &mut self,
        ctx: &GpuContext,
        pipeline: &wgpu::ComputePipeline,
        bound: Bound,
    ) -> wgpu::BindGroup {
        let key = Key {
            pipeline: pipeline.clone(),
            uniforms: (bound.uniforms.iter())
                .map(|&(b, bytes)| (b, bytes.to_vec()))
                .collect(),
            buffers: (bound.buffers.iter())
                .map(|&(b, buf)| (b, buf.clone()))
                .collect(),
            view: bound.view.map(|(b, v)| (b, v.clone())),
        };
        let call = self.call;
        let kept = self.kept.entry(key).or_insert_with(|| {
            use wgpu::util::DeviceExt;
            let uniforms: Vec<(u32, wgpu::Buffer)> = (bound.uniforms.iter())
                .map(|&(b, contents)| {
                    let buffer = ctx
                        .device
                        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                            label: Some("kernel params"),
                            contents,
                            usage: wgpu::BufferUsages::UNIFORM,
                        });
                    (b, buffer)
                })
                .collect();
            let mut entries: Vec<_> = uniforms.iter().map(|(b, u)| entry(*b, u)).collect();
            entries.extend(bound.buffers.iter().map(|&(b, buf)| entry(b, buf)));
            if let Some((binding, view)) = bound.view {
                entries.push(wgpu::BindGroupEntry {
                    binding,
                    resource: wgpu::BindingResource::TextureView(view),
                });
            }
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
