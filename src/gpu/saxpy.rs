//! `y = a * x + b` on the GPU (shaders/saxpy.wgsl) and its CPU twin: the context's self-test.

use eframe::wgpu;
use eframe::wgpu::util::DeviceExt;

use super::context::{compute_pipeline, entry};
use super::{GpuContext, GpuError};

pub fn saxpy_cpu(a: f32, x: &[f32], b: &[f32]) -> Vec<f32> {
    x.iter().zip(b).map(|(x, b)| a * x + b).collect()
}

pub fn saxpy(ctx: &GpuContext, a: f32, x: &[f32], b: &[f32]) -> Result<Vec<f32>, GpuError> {
    assert_eq!(x.len(), b.len(), "saxpy inputs differ in length");
    let n = x.len() as u32;
    let dev = &ctx.device;
    let module = dev.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("saxpy"),
        source: wgpu::ShaderSource::Wgsl(include_str!("../../shaders/saxpy.wgsl").into()),
    });
    let pipeline = compute_pipeline(ctx, &module, "main");
    let mut params = [0u8; 8];
    params[..4].copy_from_slice(&a.to_le_bytes());
    params[4..].copy_from_slice(&n.to_le_bytes());
    let init = |label, contents: &[u8], usage| {
        dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents,
            usage,
        })
    };
    let p = init("params", &params, wgpu::BufferUsages::UNIFORM);
    let xb = init("x", bytemuck::cast_slice(x), wgpu::BufferUsages::STORAGE);
    let bb = init("b", bytemuck::cast_slice(b), wgpu::BufferUsages::STORAGE);
    let bytes = (x.len() * 4).max(4) as u64;
    let yb = dev.create_buffer(&wgpu::BufferDescriptor {
        label: Some("y"),
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let bind = dev.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("saxpy"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[entry(0, &p), entry(1, &xb), entry(2, &bb), entry(3, &yb)],
    });
    let mut enc = dev.create_command_encoder(&Default::default());
    {
        let mut pass = ctx.pass(&mut enc, "saxpy");
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(n.div_ceil(64).max(1), 1, 1);
    }
    ctx.queue.submit([enc.finish()]);
    let out = ctx.read_back(&yb, bytes)?;
    Ok(bytemuck::cast_slice::<u8, f32>(&out)[..x.len()].to_vec())
}
