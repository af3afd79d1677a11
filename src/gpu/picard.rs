//! Picard's passes over the data on the GPU, where the device has f64 in shaders: the
//! whitened data are uploaded once and each pass (at every W the line search tries) runs
//! there, Y = W Z and the products psi(Y) Y^T and psi'(Y) (Y^2)^T in f32 on FastICA's kernels,
//! the density's sums and the sums of the products' sample chunks in f64
//! (shaders/picard.wgsl). Only r x r matrices and r-vectors come back; L-BFGS and the line
//! search stay on the CPU (`dsp::ica::picard::solve`, in f64). W goes up as f32 and the pass
//! hands back that W, so each loss is the loss of the W the device used. The f32 products
//! still leave the loss some 1e-9 off (`RESOLUTION`); where a step changes it by less, the
//! line search lets the exact gradient decide (`Pass::resolution`).

use eframe::wgpu;
use nalgebra::DMatrix;

use super::context::{compute_pipeline, entry};
use super::ica::{Dispatch, FastIcaPipelines, Params as GemmParams};
use super::{GpuContext, GpuError};
use crate::dsp::ica::picard::{Pass, PicardParams, solve};
use crate::dsp::ica::{Contrast, IcaError, Observations};

/// Samples per chunk of the split products: each chunk's r x r sum is f32, the chunks' sums
/// f64 (more chunks: more for `sum_chunks` to add one by one).
const K_CHUNK: usize = 4096;
/// The loss's rounding relative to its size: the f32 products and densities of a pass leave
/// it some 1e-9 off (standard Picard on 6 x 30,000 samples: losses of 4.27 a few 1e-9 apart
/// where the CPU's fell by 1e-10 a step), which the line search then leaves to the gradient
/// (`Pass::resolution`).
const RESOLUTION: f64 = 1e-8;
/// Samples per workgroup of `density` (the shader's TILE).
const TILE: usize = 1024;

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    r: u32,
    t: u32,
    density: u32,
    tiles: u32,
    chunks: u32,
    count: u32,
    pad: [u32; 2],
}

/// Picard on one device; pipelines are built once.
pub struct GpuPicard<'a> {
    ctx: &'a GpuContext,
    products: FastIcaPipelines,
    density: wgpu::ComputePipeline,
    row_totals: wgpu::ComputePipeline,
    sum_chunks: wgpu::ComputePipeline,
}

impl<'a> GpuPicard<'a> {
    /// Whether Picard runs on `ctx`: where it has f64 in shaders.
    pub fn supported(ctx: &GpuContext) -> bool {
        ctx.device.features().contains(wgpu::Features::SHADER_F64)
    }

    /// Picard's pipelines, where the device has f64 in shaders.
    pub fn new(ctx: &'a GpuContext) -> Option<Self> {
        if !Self::supported(ctx) {
            return None;
        }
        let module = ctx
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("picard"),
                source: wgpu::ShaderSource::Wgsl(include_str!("../../shaders/picard.wgsl").into()),
            });
        let picard = GpuPicard {
            ctx,
            products: FastIcaPipelines::compile(ctx),
            density: compute_pipeline(ctx, &module, "density"),
            row_totals: compute_pipeline(ctx, &module, "row_totals"),
            sum_chunks: compute_pipeline(ctx, &module, "sum_chunks"),
        };
        ctx.save_pipelines();
        Some(picard)
    }

    /// Whether `samples` fit the dispatches (Y = W Z takes a workgroup per 64 samples).
    pub fn takes(&self, samples: usize) -> bool {
        let most = self
            .ctx
            .device
            .limits()
            .max_compute_workgroups_per_dimension as usize;
        samples.div_ceil(64) <= most
    }

    /// As `dsp::ica::picard::picard`: the passes on the device until the tolerance or a stall
    /// (`solve`'s `until_stall`), then, after a stall, on the CPU in f64 to the tolerance.
    pub fn picard(
        &self,
        z: &Observations,
        p: &PicardParams,
        start: DMatrix<f64>,
    ) -> Result<(DMatrix<f64>, usize, bool), IcaError> {
        p.validate()?;
        let gpu = |e: GpuError| IcaError::Gpu(e.to_string());
        if !self.takes(z.cols) {
            return Err(IcaError::Gpu(format!(
                "{} samples are more than the device's dispatches take",
                z.cols
            )));
        }
        let passes = Passes::new(self, z, p).map_err(gpu)?;
        let cov = passes.covariance().map_err(gpu)?;
        let device = &mut |w: &DMatrix<f64>| passes.at(w).map_err(gpu);
        let (w, done, converged) = solve(device, &cov, p, start, true)?;
        drop(passes); // the device's buffers (four r x T) are not needed by the CPU
        if converged || done >= p.max_iter {
            return Ok((w, done, converged));
        }
        let rest = PicardParams {
            max_iter: p.max_iter - done,
            ..*p
        };
        let cpu = &mut |w: &DMatrix<f64>| Ok(Pass::at(z, w, p));
        let (w, more, converged) = solve(cpu, &cov, &rest, w, false)?;
        Ok((w, done + more, converged))
    }
}

/// The buffers and bind groups of one fit's passes.
struct Passes<'p, 'a> {
    picard: &'p GpuPicard<'a>,
    r: usize,
    samples: usize,
    w: wgpu::Buffer,
    standard: bool,
    /// The products' chunk sums and the f64 results read back: psi(Y) Y^T, psi'(Y) (Y^2)^T
    /// and the three row totals.
    out: [wgpu::Buffer; 2],
    totals: wgpu::Buffer,
    staging: wgpu::Buffer,
    /// Y = W Z, density and row totals, psi(Y) Y^T and its sum, psi'(Y) (Y^2)^T and its sum.
    groups: Vec<Dispatch<'p>>,
    /// Z Z^T and its sum (once, for the covariance).
    covariance: Vec<Dispatch<'p>>,
}

impl<'p, 'a> Passes<'p, 'a> {
    fn new(
        picard: &'p GpuPicard<'a>,
        z: &Observations,
        p: &PicardParams,
    ) -> Result<Self, GpuError> {
        let ctx = picard.ctx;
        let dev = &ctx.device;
        let (r, t) = (z.rows, z.cols);
        let (r32, t32) = (r as u32, t as u32);
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST;
        let empty = |label: &str, bytes: usize| ctx.empty_buffer(label, bytes, storage);
        let uniform =
            |bytes: &[u8]| ctx.buffer_with("picard params", bytes, wgpu::BufferUsages::UNIFORM);
        let group = |pipeline: &wgpu::ComputePipeline, entries: &[wgpu::BindGroupEntry<'_>]| {
            ctx.bind_group("picard", pipeline, entries)
        };
        ctx.guarded(|| {
            let zb = ctx.upload("z", bytemuck::cast_slice(&z.data), storage)?;
            let w = empty("w", r * r * 4);
            let [y, psi, psid, y2] = ["y", "psi(y)", "psi'(y)", "y^2"].map(|l| empty(l, r * t * 4));
            let tiles = t.div_ceil(TILE);
            let chunks = t.div_ceil(K_CHUNK);
            let part = empty("density sums", 3 * r * tiles * 8);
            let totals = empty("row totals", 3 * r * 8);
            let chunk = empty("chunk products", chunks * r * r * 4);
            let out = ["psi(y) y^T", "psi'(y) (y^2)^T"].map(|l| empty(l, r * r * 8));
            let unused = empty("unused", 4);
            let density = match p.density {
                Contrast::Tanh => 0,
                Contrast::Gauss => 1,
                Contrast::Cube => 2,
            };
            let params = uniform(bytemuck::bytes_of(&Params {
                r: r32,
                t: t32,
                density,
                tiles: tiles as u32,
                chunks: chunks as u32,
                count: r32 * r32,
                pad: [0; 2],
            }));
            let p_wz = uniform(bytemuck::bytes_of(&GemmParams::rotation(r32, t32)));
            let p_gram = uniform(bytemuck::bytes_of(&GemmParams::split_gram(
                r32,
                t32,
                K_CHUNK as u32,
            )));
            let pl = &picard.products;
            let (gram, gram_tile, binds_d) = pl.gram(r);
            let gram_tiles = r.div_ceil(gram_tile) as u32;
            let gram_of = |a: &wgpu::Buffer, b: &wgpu::Buffer| {
                let mut entries = vec![
                    entry(0, &p_gram),
                    entry(1, a),
                    entry(2, b),
                    entry(3, &chunk),
                ];
                if binds_d {
                    entries.push(entry(4, &unused));
                }
                Dispatch(
                    "a b^T",
                    gram,
                    group(gram, &entries),
                    (gram_tiles, gram_tiles, chunks as u32),
                )
            };
            let sum_into = |to: &wgpu::Buffer| {
                let g = group(
                    &picard.sum_chunks,
                    &[entry(0, &params), entry(7, &chunk), entry(8, to)],
                );
                let n = ((r * r).div_ceil(256) as u32, 1, 1);
                Dispatch("sum chunks", &picard.sum_chunks, g, n)
            };
            let standard = !p.ortho;
            let mut groups = vec![
                Dispatch(
                    "W Z",
                    &pl.gemm_wide,
                    group(
                        &pl.gemm_wide,
                        &[
                            entry(0, &p_wz),
                            entry(1, &w),
                            entry(2, &zb),
                            entry(3, &y),
                            entry(4, &unused),
                        ],
                    ),
                    (t.div_ceil(64) as u32, r.div_ceil(64) as u32, 1),
                ),
                Dispatch(
                    "density",
                    &picard.density,
                    group(
                        &picard.density,
                        &[
                            entry(0, &params),
                            entry(1, &y),
                            entry(2, &psi),
                            entry(3, &psid),
                            entry(4, &y2),
                            entry(5, &part),
                        ],
                    ),
                    (tiles as u32, r32, 1),
                ),
                Dispatch(
                    "row totals",
                    &picard.row_totals,
                    group(
                        &picard.row_totals,
                        &[entry(0, &params), entry(5, &part), entry(6, &totals)],
                    ),
                    (r32, 3, 1),
                ),
                gram_of(&psi, &y),
                sum_into(&out[0]),
            ];
            if standard {
                groups.push(gram_of(&psid, &y2));
                groups.push(sum_into(&out[1]));
            }
            let covariance = vec![gram_of(&zb, &zb), sum_into(&out[0])];
            let staging = dev.create_buffer(&wgpu::BufferDescriptor {
                label: Some("picard read-back"),
                size: ((2 * r * r + 3 * r) * 8) as u64,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            Ok(Passes {
                picard,
                r,
                samples: t,
                w,
                standard,
                out,
                totals,
                staging,
                groups,
                covariance,
            })
        })?
    }

    /// Runs `dispatches`, copies the results back and reads them as f64.
    fn run(&self, label: &'static str, dispatches: &[Dispatch]) -> Result<Vec<f64>, GpuError> {
        let ctx = self.picard.ctx;
        let rr = (self.r * self.r * 8) as u64;
        let submission = ctx.guarded(|| {
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            {
                let mut pass = ctx.pass(&mut enc, label);
                for d in dispatches {
                    d.run(&mut pass);
                }
            }
            enc.copy_buffer_to_buffer(&self.out[0], 0, &self.staging, 0, rr);
            enc.copy_buffer_to_buffer(&self.out[1], 0, &self.staging, rr, rr);
            let totals = 3 * self.r as u64 * 8;
            enc.copy_buffer_to_buffer(&self.totals, 0, &self.staging, 2 * rr, totals);
            ctx.queue.submit([enc.finish()])
        })?;
        let bytes = self.staging.size();
        ctx.with_mapped(&self.staging, bytes, Some(submission), |v| {
            bytemuck::pod_collect_to_vec::<u8, f64>(v)
        })
    }

    /// Z Z^T / T.
    fn covariance(&self) -> Result<DMatrix<f64>, GpuError> {
        let v = self.run("picard: covariance", &self.covariance)?;
        let t = self.samples as f64;
        Ok(DMatrix::from_row_slice(self.r, self.r, &v[..self.r * self.r]) / t)
    }

    /// The pass at `w` (rounded to f32, as the device holds it).
    fn at(&self, w: &DMatrix<f64>) -> Result<Pass, GpuError> {
        let r = self.r;
        let rows: Vec<f32> = (0..r * r).map(|q| w[(q / r, q % r)] as f32).collect();
        (self.picard.ctx.queue).write_buffer(&self.w, 0, bytemuck::cast_slice(&rows));
        let v = self.run("picard: pass", &self.groups)?;
        let rr = r * r;
        let totals = &v[2 * rr..];
        Ok(Pass {
            w: DMatrix::from_row_slice(r, r, &rows).map(|x| x as f64),
            psi_y: DMatrix::from_row_slice(r, r, &v[..rr]),
            psid_y2: match self.standard {
                true => DMatrix::from_row_slice(r, r, &v[rr..2 * rr]),
                false => DMatrix::zeros(r, r),
            },
            log_lik: totals[..r].to_vec(),
            psid: totals[r..2 * r].to_vec(),
            y2: totals[2 * r..3 * r].to_vec(),
            samples: self.samples as f64,
            resolution: RESOLUTION
                * (1.0 + totals[..r].iter().sum::<f64>().abs() / self.samples as f64),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::ica::picard::picard;
    use crate::dsp::ica::picard::tests::mixture;
    use crate::dsp::ica::{Whitening, amari_index, random_rotation};

    /// Laplacian, uniform and two-sided exponential-cubed sources mixed: the device's passes
    /// take both forms to the CPU's optimum, in about as many iterations.
    #[test]
    fn the_devices_passes_reach_the_cpus_optimum() {
        let Ok(ctx) = GpuContext::headless() else {
            eprintln!("no GPU adapter: skipped");
            return;
        };
        let Some(gpu) = GpuPicard::new(&ctx) else {
            eprintln!("no f64 in shaders on {}: skipped", ctx.describe());
            return;
        };
        let n = 6;
        let (x, a) = mixture(n, 30_000, 11);
        let wh = Whitening::of(&x, None).unwrap();
        let exp = PicardParams {
            density: Contrast::Gauss,
            ..PicardParams::extended_infomax()
        };
        for p in [
            PicardParams::default(),
            PicardParams::extended_infomax(),
            exp,
        ] {
            let start = random_rotation(n, 5);
            let (w_cpu, it_cpu, ok_cpu) = picard(&wh.z, &p, start.clone()).unwrap();
            let (w_gpu, it_gpu, ok_gpu) = gpu.picard(&wh.z, &p, start).unwrap();
            assert!(ok_cpu && ok_gpu, "{p:?}: converged {ok_cpu} {ok_gpu}");
            let apart = (&w_cpu - &w_gpu).amax();
            assert!(apart < 1e-5, "{p:?}: {apart} apart");
            let amari = amari_index(&(&w_gpu * &wh.k * &a));
            assert!(amari < 0.02, "{p:?}: Amari index {amari}");
            assert!(
                it_gpu.abs_diff(it_cpu) <= it_cpu / 5 + 2,
                "{p:?}: {it_gpu} iterations on the device, {it_cpu} on the CPU"
            );
        }
    }
}
