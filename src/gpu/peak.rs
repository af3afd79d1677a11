//! The FP32 multiply-add rate WGSL reaches on the device (shaders/fma_peak.wgsl): independent
//! chains of FMAs a thread, nothing else. Benchmarks report the arithmetic-bound kernels
//! against it (`ede bench peak`), rather than against a datasheet's peak that no WGSL kernel
//! may reach.

use std::time::Instant;

use eframe::wgpu;
use eframe::wgpu::util::DeviceExt;

use super::context::{compute_pipeline, entry};
use super::{GpuContext, GpuError};

/// FMAs of each chain per loop iteration (the loop's own cost is then under 1 %).
const UNROLL: usize = 16;

/// One configuration's measured rate.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PeakRun {
    /// Independent vec4 accumulators a thread (4 chains each).
    pub vec4_chains: usize,
    pub threads: u64,
    pub flops: f64,
    /// Median of the timed runs, seconds.
    pub seconds: f64,
    pub flops_per_s: f64,
}

/// The shader's `chains`: `vec4s` vec4 accumulators, each `UNROLL` FMAs an iteration.
fn chains_source(vec4s: usize) -> String {
    let init: String = (0..vec4s)
        .map(|c| format!("    var c{c} = vec4<f32>(seed + {c}.0);\n"))
        .collect();
    let step: String = (0..UNROLL)
        .flat_map(|_| (0..vec4s).map(|c| format!("        c{c} = fma(c{c}, a, b);\n")))
        .collect();
    let sum: Vec<String> = (0..vec4s).map(|c| format!("c{c}")).collect();
    format!(
        "fn chains(seed: f32, a: vec4<f32>, b: vec4<f32>) -> f32 {{\n{init}    \
         for (var i = 0u; i < p.iterations; i++) {{\n{step}    }}\n    \
         return dot({}, vec4<f32>(1.0));\n}}\n",
        sum.join(" + ")
    )
}

/// The rate of `vec4s` chains a thread over `workgroups` workgroups of 256 threads, the
/// median of `repeats` timed runs of `iterations` loop iterations each (after one untimed).
pub fn fma_rate(
    ctx: &GpuContext,
    vec4s: usize,
    workgroups: u32,
    iterations: u32,
    repeats: usize,
) -> Result<PeakRun, GpuError> {
    let dev = &ctx.device;
    let source = format!(
        "{}\n{}",
        chains_source(vec4s),
        include_str!("../../shaders/fma_peak.wgsl")
    );
    let module = dev.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("fma peak"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = compute_pipeline(ctx, &module, "peak");
    let threads = workgroups as u64 * 256;
    // a close to 1 and a small b keep the values finite and normal whatever the count.
    let mut params = Vec::new();
    params.extend_from_slice(&iterations.to_le_bytes());
    params.extend_from_slice(&0.999_999f32.to_le_bytes());
    params.extend_from_slice(&1e-6f32.to_le_bytes());
    params.extend_from_slice(&0u32.to_le_bytes());
    let uniform = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("fma peak params"),
        contents: &params,
        usage: wgpu::BufferUsages::UNIFORM,
    });
    let out = dev.create_buffer(&wgpu::BufferDescriptor {
        label: Some("fma peak out"),
        size: threads * 4,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let bind = dev.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("fma peak"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[entry(0, &uniform), entry(1, &out)],
    });
    let run = || -> Result<f64, GpuError> {
        let mut enc = dev.create_command_encoder(&Default::default());
        {
            let mut pass = ctx.pass(&mut enc, "fma peak");
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(workgroups, 1, 1);
        }
        let t = Instant::now();
        ctx.queue.submit([enc.finish()]);
        ctx.wait()?;
        Ok(t.elapsed().as_secs_f64())
    };
    run()?;
    let mut times = (0..repeats.max(1))
        .map(|_| run())
        .collect::<Result<Vec<_>, _>>()?;
    times.sort_by(f64::total_cmp);
    let seconds = times[times.len() / 2];
    let flops = threads as f64 * (vec4s * 4 * 2 * UNROLL) as f64 * iterations as f64;
    Ok(PeakRun {
        vec4_chains: vec4s,
        threads,
        flops,
        seconds,
        flops_per_s: flops / seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chains_are_unrolled_and_summed() {
        let s = chains_source(3);
        assert_eq!(s.matches("= fma(").count(), 3 * UNROLL);
        assert!(s.contains("var c2 = vec4<f32>(seed + 2.0);"));
        assert!(s.contains("return dot(c0 + c1 + c2, vec4<f32>(1.0));"));
    }
}
