//! FastICA's centring and whitening on the GPU in f64 (shaders/whiten.wgsl), where the device
//! has SHADER_F64: the channel means, the covariance and the projection Z = K (X - mu) there,
//! the eigendecomposition between them on the CPU (`dsp::ica::whitening_map`, as
//! `Whitening::of`). The data go up once as f32 and the whitened data stay on the device for
//! the iterations. On a 256 x 20000 fit the CPU's two f64 products took 43-48 ms of the H100
//! machine's 16 threads (whitening_s in `bench deblink`).

use eframe::wgpu;
use nalgebra::DMatrix;

use super::context::{compute_pipeline, entry};
use super::{GpuContext, GpuError};
use crate::dsp::ica::{IcaError, Observations, check_shape, whitening_map};

/// Samples a workgroup of the covariance sums (the rest of the GPU takes the other chunks).
const CHUNK: usize = 1024;
/// Output tile of the covariance and the projection (rows and columns).
const TILE: usize = 32;

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    t: u32,
    r: u32,
    chunk: u32,
    chunks: u32,
    pad: [u32; 3],
}

/// The whitening's pipelines.
pub struct WhiteningPipelines {
    means: wgpu::ComputePipeline,
    covariance: wgpu::ComputePipeline,
    sum_chunks: wgpu::ComputePipeline,
    project: wgpu::ComputePipeline,
}

/// Data whitened on the device: the map, and Z (r x T, f32) in `z`.
pub struct GpuWhitening {
    pub means: Vec<f64>,
    /// K, r x n.
    pub k: DMatrix<f64>,
    /// K's pseudo-inverse, n x r.
    pub k_inv: DMatrix<f64>,
    pub z: wgpu::Buffer,
    pub samples: usize,
}

impl WhiteningPipelines {
    /// The pipelines, where the device has f64 in shaders.
    pub fn compile(ctx: &GpuContext) -> Option<Self> {
        if !ctx.device.features().contains(wgpu::Features::SHADER_F64) {
            return None;
        }
        let module = ctx
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("whiten"),
                source: wgpu::ShaderSource::Wgsl(include_str!("../../shaders/whiten.wgsl").into()),
            });
        Some(WhiteningPipelines {
            means: compute_pipeline(ctx, &module, "means"),
            covariance: compute_pipeline(ctx, &module, "covariance"),
            sum_chunks: compute_pipeline(ctx, &module, "sum_chunks"),
            project: compute_pipeline(ctx, &module, "project"),
        })
    }

    /// Whitens `x` onto at most `components` leading principal components, as
    /// `Whitening::of` does (the same checks and errors).
    pub fn whiten(
        &self,
        ctx: &GpuContext,
        x: &Observations,
        components: Option<usize>,
    ) -> Result<GpuWhitening, IcaError> {
        check_shape(x)?;
        let (n, t) = (x.rows, x.cols);
        let gpu = |e: GpuError| IcaError::Gpu(e.to_string());
        let dev = &ctx.device;
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
        let empty = |label: &str, bytes: usize| ctx.empty_buffer(label, bytes, storage);
        let chunks = t.div_ceil(CHUNK);
        let params = |r: usize| {
            let params = Params {
                n: n as u32,
                t: t as u32,
                r: r as u32,
                chunk: CHUNK as u32,
                chunks: chunks as u32,
                pad: [0; 3],
            };
            let bytes = bytemuck::bytes_of(&params);
            ctx.buffer_with("whiten params", bytes, wgpu::BufferUsages::UNIFORM)
        };
        let group = |pipeline: &wgpu::ComputePipeline, entries: &[wgpu::BindGroupEntry<'_>]| {
            ctx.bind_group("whiten", pipeline, entries)
        };
        let xb = (ctx.upload("x", bytemuck::cast_slice(&x.data), storage)).map_err(gpu)?;
        let mu = empty("mu", n * 8);
        let (part, cov) = (
            empty("partial covariances", chunks * n * n * 8),
            empty("covariance", n * n * 8),
        );
        let p0 = params(0);
        let tiles = n.div_ceil(TILE) as u32;
        // The means and the covariance come back in one read-back.
        let back = dev.create_buffer(&wgpu::BufferDescriptor {
            label: Some("means and covariance"),
            size: ((n + n * n) * 8) as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let submission = ctx
            .guarded(|| {
                let mut enc = dev.create_command_encoder(&Default::default());
                {
                    let mut pass = ctx.pass(&mut enc, "whitening: means, covariance");
                    let g = group(&self.means, &[entry(0, &p0), entry(1, &xb), entry(2, &mu)]);
                    pass.set_pipeline(&self.means);
                    pass.set_bind_group(0, &g, &[]);
                    pass.dispatch_workgroups(n as u32, 1, 1);
                    let g = group(
                        &self.covariance,
                        &[entry(0, &p0), entry(1, &xb), entry(2, &mu), entry(3, &part)],
                    );
                    pass.set_pipeline(&self.covariance);
                    pass.set_bind_group(0, &g, &[]);
                    pass.dispatch_workgroups(tiles, tiles, chunks as u32);
                    let g = group(
                        &self.sum_chunks,
                        &[entry(0, &p0), entry(3, &part), entry(4, &cov)],
                    );
                    pass.set_pipeline(&self.sum_chunks);
                    pass.set_bind_group(0, &g, &[]);
                    pass.dispatch_workgroups((n * n).div_ceil(256) as u32, 1, 1);
                }
                enc.copy_buffer_to_buffer(&mu, 0, &back, 0, (n * 8) as u64);
                enc.copy_buffer_to_buffer(&cov, 0, &back, (n * 8) as u64, (n * n * 8) as u64);
                ctx.queue.submit([enc.finish()])
            })
            .map_err(gpu)?;
        let (means, mut c) = ctx
            .with_mapped(&back, back.size(), Some(submission), |bytes| {
                let all: Vec<f64> = bytemuck::pod_collect_to_vec(bytes);
                (all[..n].to_vec(), all[n..].to_vec())
            })
            .map_err(gpu)?;
        // A value that is not finite makes its channel's sum not finite.
        if means.iter().any(|m| !m.is_finite()) {
            return Err(IcaError::NotFinite);
        }
        // Only the tiles on and above the diagonal were summed.
        for i in 0..n {
            for j in 0..i {
                c[i * n + j] = c[j * n + i];
            }
        }
        let (k, k_inv) = whitening_map(n, &c, components)?;
        let r = k.nrows();
        let k_rows: Vec<f64> = (0..r * n).map(|q| k[(q / n, q % n)]).collect();
        let kb = (ctx.upload("K", bytemuck::cast_slice(&k_rows), storage)).map_err(gpu)?;
        let z = empty("z", r * t * 4);
        let pr = params(r);
        ctx.guarded(|| {
            let mut enc = dev.create_command_encoder(&Default::default());
            {
                let mut pass = ctx.pass(&mut enc, "whitening: projection");
                let g = group(
                    &self.project,
                    &[
                        entry(0, &pr),
                        entry(1, &xb),
                        entry(2, &mu),
                        entry(5, &kb),
                        entry(6, &z),
                    ],
                );
                pass.set_pipeline(&self.project);
                pass.set_bind_group(0, &g, &[]);
                pass.dispatch_workgroups(t.div_ceil(TILE) as u32, r.div_ceil(TILE) as u32, 1);
            }
            ctx.queue.submit([enc.finish()]);
        })
        .map_err(gpu)?;
        Ok(GpuWhitening {
            means,
            k,
            k_inv,
            z,
            samples: t,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::ica::Whitening;

    /// The GPU's whitening is the CPU's: the same means, map and whitened data, on mixed
    /// sources with a rank-deficient channel (an average reference drops one direction).
    #[test]
    fn whitening_on_the_gpu_is_the_cpus() {
        let Ok(ctx) = GpuContext::headless() else {
            return;
        };
        let Some(pipelines) = WhiteningPipelines::compile(&ctx) else {
            eprintln!("no f64 in shaders on {}: skipped", ctx.describe());
            return;
        };
        let (n, t) = (37, 3001);
        let mut rng = crate::recording::demo::SplitMix(3);
        let src: Vec<f64> = (0..n * t).map(|_| rng.gauss().powi(3)).collect();
        let mut data = vec![0.0f32; n * t];
        let mix: Vec<f64> = (0..n * n).map(|_| rng.gauss()).collect();
        for i in 0..n {
            for s in 0..t {
                let v: f64 = (0..n).map(|c| mix[i * n + c] * src[c * t + s]).sum();
                data[i * t + s] = (v + 10.0 * i as f64) as f32;
            }
        }
        // Channel 0 becomes minus the sum of the others: rank n - 1.
        for s in 0..t {
            let rest: f32 = (1..n).map(|i| data[i * t + s] - 10.0 * i as f32).sum();
            data[s] = -rest;
        }
        let x = Observations::new(n, t, data);
        let cpu = Whitening::of(&x, None).unwrap();
        let gpu = pipelines.whiten(&ctx, &x, None).unwrap();
        assert_eq!(gpu.k.shape(), cpu.k.shape(), "rank");
        assert_eq!(cpu.k.nrows(), n - 1);
        for (g, c) in gpu.means.iter().zip(&cpu.means) {
            assert!(
                (g - c).abs() < 1e-9 * c.abs().max(1.0),
                "mean {g} against {c}"
            );
        }
        // Eigenvectors of near-equal eigenvalues may turn within their plane: compare the
        // whitened data's span through K K^T... and Z itself, which is K (X - mu).
        let kk = |k: &DMatrix<f64>| k.transpose() * k;
        let (a, b) = (kk(&gpu.k), kk(&cpu.k));
        let worst = (&a - &b).abs().max() / b.abs().max();
        assert!(worst < 1e-9, "K^T K differs by {worst:e}");
        let z = ctx.read_back_f32(&gpu.z, cpu.z.data.len()).unwrap();
        let r = cpu.k.nrows();
        for i in 0..r {
            // Rows may differ in sign where the solvers' eigenvectors do.
            let sign = if (0..t)
                .map(|s| z[i * t + s] * cpu.z.data[i * t + s])
                .sum::<f32>()
                < 0.0
            {
                -1.0
            } else {
                1.0
            };
            for s in 0..t {
                let (g, c) = (sign * z[i * t + s], cpu.z.data[i * t + s]);
                assert!((g - c).abs() < 1e-4, "z[{i}][{s}]: {g} against {c}");
            }
        }
    }
}
