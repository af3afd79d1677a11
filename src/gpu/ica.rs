//! Symmetric FastICA on the GPU (shaders/fastica.wgsl). The whitening (an eigendecomposition
//! of an n x n covariance) stays on the CPU; the whitened data are uploaded once and every
//! iteration runs on the device: W Z with the contrast, g(W Z) Z^T split over sample chunks,
//! the fixed-point update, and the symmetric decorrelation as polynomial steps (`DECORRELATION`,
//! after scaling W so that its singular values are at most 1), which need only matrix products
//! where the CPU uses an eigendecomposition; both reach (W W^T)^-1/2 W.
//! `ITERATIONS_PER_SUBMIT` iterations are recorded per submission and the convergence
//! measures of all of them read back at once; the result is the rotation after the batch in
//! which the measure first fell below the tolerance (iterations past convergence only refine
//! the fixed point). Deflation runs on the CPU.

use eframe::wgpu;
use nalgebra::DMatrix;

use super::context::{compute_pipeline, entry};
use super::whiten::{GpuWhitening, WhiteningPipelines};
use super::{GpuContext, GpuError};
use crate::dsp::ica::{
    self, Approach, Contrast, FastIcaParams, Ica, IcaError, Observations, Whitening,
    finish_ordered, means_under, order_components, unmix, whiten_beside_start,
};

/// Channels from which the device whitens (where it has f64 in shaders): below, its passes and
/// read-backs cost more than the CPU's products (measured with a read-back each for the means
/// and the covariance, since joined) (H100, 32 x 20000: 0.014-0.015 s against
/// 0.012-0.013 s whitening on the CPU; 64 x 20000: 0.061-0.062 against 0.062-0.066 s).
pub const DEVICE_WHITENING_CHANNELS: usize = 64;

/// Iterations recorded per submission.
pub const ITERATIONS_PER_SUBMIT: usize = 10;
/// The symmetric decorrelation's steps X' = a X + b (X X^T) X + c (X X^T)^2 X: each applies
/// the odd quintic a s + b s^3 + c s^5 to every singular value s of X. The first eight are the
/// Polar Express sequence (Amsel, Persson, Musco and Gower, 2025, arXiv 2505.16932, Algorithm 1;
/// without its 1.01 safety factor: the row-sum bound already keeps s <= 1) for singular values in
/// [1e-3, 1], minimax-optimal for each step's interval: small singular values grow up to 8x a
/// step where Newton-Schulz's 1.5 X - 0.5 X X^T X grows them 1.5x. Two more of its fixed point
/// (15/8, -5/4, 3/8), which converges cubically, reach down to 2e-4 as the 24 Newton-Schulz
/// steps before them did (near convergence the update's smallest singular values are small):
/// every s in [2e-4, 1] reaches 1 within 1e-7 (`tests::decorrelation_reaches_one`), in 29
/// products where Newton-Schulz took 47.
#[allow(clippy::excessive_precision)] // the published digits
pub const DECORRELATION: [[f64; 3]; 10] = [
    [8.28721201814563, -23.595886519098837, 17.300387312530933],
    [4.107059111542203, -2.9478499167379106, 0.5448431082926601],
    [3.9486908534822946, -2.908902115962949, 0.5518191394370137],
    [3.3184196573706015, -2.488488024314874, 0.51004894012372],
    [2.300652019954817, -1.6689039845747493, 0.4188073119525673],
    [1.891301407787398, -1.2679958271945868, 0.37680408948524835],
    [1.8750014808534479, -1.2500016453999487, 0.3750001645474248],
    [1.875, -1.25, 0.375],
    [1.875, -1.25, 0.375],
    [1.875, -1.25, 0.375],
];
/// Samples per chunk of the split-K product g(W Z) Z^T: more chunks fill more of the GPU (H100,
/// 256 x 20000: 1024 -> 512 took the product from 294 to 207 us; 2048: 527 us).
const K_CHUNK: usize = 512;

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct Params {
    m: u32,
    n: u32,
    k: u32,
    contrast: u32,
    a_rs: u32,
    a_cs: u32,
    b_rs: u32,
    b_cs: u32,
    c_rs: u32,
    k_chunk: u32,
    c_batch: u32,
    mode: u32,
    alpha: f32,
    beta: f32,
    pad: [u32; 2],
}

impl Params {
    /// A B^T for A and B r x t, row-major, split over sample chunks of `chunk`: an r x r
    /// product per chunk, one after the other (`FastIcaPipelines::gram`'s kernel).
    pub(super) fn split_gram(r: u32, t: u32, chunk: u32) -> Params {
        Params {
            m: r,
            n: r,
            k: t,
            a_rs: t,
            a_cs: 1,
            b_rs: 1,
            b_cs: t,
            c_rs: r,
            k_chunk: chunk,
            c_batch: r * r,
            alpha: 1.0,
            ..Default::default()
        }
    }

    /// W Z for an r x r W and r x t Z, both row-major (`gemm_wide`, mode 0).
    pub(super) fn rotation(r: u32, t: u32) -> Params {
        Params {
            m: r,
            n: t,
            k: r,
            a_rs: r,
            a_cs: 1,
            b_rs: t,
            b_cs: 1,
            c_rs: t,
            k_chunk: r,
            alpha: 1.0,
            ..Default::default()
        }
    }
}

/// FastICA's pipelines, compiled once (`GpuContext::prepare` can compile them ahead).
pub struct FastIcaPipelines {
    gemm: wgpu::ComputePipeline,
    gemm_direct: wgpu::ComputePipeline,
    pub(super) gemm_wide: wgpu::ComputePipeline,
    update: wgpu::ComputePipeline,
    row_sums: wgpu::ComputePipeline,
    scale: wgpu::ComputePipeline,
    change: wgpu::ComputePipeline,
    /// The whitening in f64, where the device has f64 in shaders.
    whitening: Option<WhiteningPipelines>,
}

/// One dispatch of an iteration: (label, pipeline, bind group, workgroups).
pub(super) struct Dispatch<'a>(
    pub(super) &'static str,
    pub(super) &'a wgpu::ComputePipeline,
    pub(super) wgpu::BindGroup,
    pub(super) (u32, u32, u32),
);

impl Dispatch<'_> {
    pub(super) fn run(&self, pass: &mut wgpu::ComputePass<'_>) {
        pass.set_pipeline(self.1);
        pass.set_bind_group(0, &self.2, &[]);
        pass.dispatch_workgroups(self.3.0, self.3.1, self.3.2);
    }
}

/// FastICA on one device; pipelines are built once.
pub struct GpuFastIca<'a> {
    ctx: &'a GpuContext,
    pipelines: FastIcaPipelines,
    /// Channels from which the whitening and the sources run on the device, where it has f64
    /// in shaders (`DEVICE_WHITENING_CHANNELS`; none: always on the CPU).
    pub whitening_from: Option<usize>,
}

impl FastIcaPipelines {
    /// Compiles every pipeline (and saves them to the disk cache).
    pub fn compile(ctx: &GpuContext) -> Self {
        let module = ctx
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("fastica"),
                source: wgpu::ShaderSource::Wgsl(include_str!("../../shaders/fastica.wgsl").into()),
            });
        let pipelines = FastIcaPipelines {
            gemm: compute_pipeline(ctx, &module, "gemm"),
            gemm_direct: compute_pipeline(ctx, &module, "gemm_direct"),
            gemm_wide: compute_pipeline(ctx, &module, "gemm_wide"),
            update: compute_pipeline(ctx, &module, "update"),
            row_sums: compute_pipeline(ctx, &module, "row_sums"),
            scale: compute_pipeline(ctx, &module, "scale"),
            change: compute_pipeline(ctx, &module, "change"),
            whitening: WhiteningPipelines::compile(ctx),
        };
        ctx.save_pipelines();
        pipelines
    }

    /// The kernel of `Params::split_gram` at r rows, its output tile, and whether it binds D
    /// (binding 4, which `gemm_wide` writes in mode 1 and `gemm` lacks). Wide tiles pay from
    /// r = 128 (H100, FastICA at 256 x 20000: 0.77-0.85 s -> 0.71 s); at r = 64 they leave too
    /// few workgroups (0.13-0.14 s -> 0.16-0.17 s).
    pub(super) fn gram(&self, r: usize) -> (&wgpu::ComputePipeline, usize, bool) {
        match r >= 128 {
            true => (&self.gemm_wide, 64, true),
            false => (&self.gemm, 16, false),
        }
    }
}

impl<'a> GpuFastIca<'a> {
    /// FastICA with the pipelines `prepare` compiled ahead, else compiled now.
    pub fn new(ctx: &'a GpuContext) -> Self {
        let pipelines: FastIcaPipelines = ctx
            .take_prepared()
            .unwrap_or_else(|| FastIcaPipelines::compile(ctx));
        GpuFastIca {
            ctx,
            whitening_from: (pipelines.whitening.as_ref()).map(|_| DEVICE_WHITENING_CHANNELS),
            pipelines,
        }
    }

    pub fn context(&self) -> &GpuContext {
        self.ctx
    }

    /// Whether a fit of `channels` channels is whitened on the device (`whitening_from`).
    pub fn whitens_on_device(&self, channels: usize) -> bool {
        self.pipelines.whitening.is_some() && self.whitening_from.is_some_and(|k| channels >= k)
    }

    /// As `dsp::ica::fastica`: the iterations here, and the whitening and the sources too where
    /// the device has f64 in shaders (`whitening_from`), else on the CPU.
    pub fn fastica(
        &self,
        x: &Observations,
        p: &FastIcaParams,
        warm: Option<&DMatrix<f64>>,
    ) -> Result<Ica, IcaError> {
        self.fastica_with_sources_of(x, None, p, warm)
    }

    /// As `dsp::ica::fastica::fastica_with_sources_of`: with `data` (`x` a subsample of its
    /// samples), the sources of its first rows, on the CPU, instead of `x`'s.
    pub fn fastica_with_sources_of(
        &self,
        x: &Observations,
        data: Option<(&Observations, usize)>,
        p: &FastIcaParams,
        warm: Option<&DMatrix<f64>>,
    ) -> Result<Ica, IcaError> {
        if p.approach == Approach::Deflation {
            return ica::fastica::fastica_with_sources_of(x, data, p, warm);
        }
        p.validate()?;
        let gpu = |e: GpuError| IcaError::Gpu(e.to_string());
        if let Some(pipelines) =
            (self.pipelines.whitening.as_ref()).filter(|_| self.whitens_on_device(x.rows))
        {
            let whiten = || pipelines.whiten(self.ctx, x, p.components);
            let (wh, w0) = whiten_beside_start(x, p, warm, whiten, |wh| &wh.k_inv)?;
            let r = wh.k.nrows();
            let (w, iterations, converged) = self
                .symmetric_on(&wh.z, (r, wh.samples), p, &w0)
                .map_err(gpu)?;
            let w = order_components(&wh.k_inv, &w);
            let sources = match data {
                Some(_) => None,
                None => Some(self.sources(&wh, &w).map_err(gpu)?),
            };
            let state = (iterations, converged);
            return Ok(finish_ordered(
                (&wh.k, &wh.k_inv),
                &w,
                state,
                |unmixing| match (data, sources) {
                    (Some((data, rows)), _) => unmix(unmixing, data, rows),
                    (None, sources) => {
                        let source_means = means_under(unmixing, &wh.means);
                        (wh.means.clone(), sources.expect("made above"), source_means)
                    }
                },
            ));
        }
        let whiten = || Whitening::of(x, p.components);
        let (wh, w0) = whiten_beside_start(x, p, warm, whiten, |wh| &wh.k_inv)?;
        let (w, iterations, converged) = self.symmetric(&wh.z, p, &w0).map_err(gpu)?;
        Ok(wh.finish_with_sources_of(&w, (iterations, converged), data))
    }

    /// Symmetric FastICA of whitened `z` from rotation `w0`: (rotation, iterations, converged).
    pub fn symmetric(
        &self,
        z: &Observations,
        p: &FastIcaParams,
        w0: &DMatrix<f64>,
    ) -> Result<(DMatrix<f64>, usize, bool), GpuError> {
        let zb = (self.ctx).upload(
            "z",
            bytemuck::cast_slice(&z.data),
            wgpu::BufferUsages::STORAGE,
        )?;
        self.symmetric_on(&zb, (z.rows, z.cols), p, w0)
    }

    /// `symmetric` of the `r` x `t` whitened data in `zb` (f32, row-major) on the device.
    fn symmetric_on(
        &self,
        zb: &wgpu::Buffer,
        (r, t): (usize, usize),
        p: &FastIcaParams,
        w0: &DMatrix<f64>,
    ) -> Result<(DMatrix<f64>, usize, bool), GpuError> {
        let dev = &self.ctx.device;
        let chunks = t.div_ceil(K_CHUNK);
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST;
        let ctx = self.ctx;
        let zeros = |label: &str, floats: usize| ctx.empty_buffer(label, floats * 4, storage);
        let w_rows: Vec<f32> = (0..r * r).map(|q| w0[(q / r, q % r)] as f32).collect();
        let init =
            |label: &str, data: &[f32]| ctx.buffer_with(label, bytemuck::cast_slice(data), storage);
        // W ping-pongs between two buffers: iteration i reads w[i % 2] and writes w[1 - i % 2].
        let w = [init("w 0", &w_rows), zeros("w 1", r * r)];
        // g(W Z), and the sums of g'(W Z) over each block of 64 samples (per row).
        let (y, gp) = (zeros("g(y)", r * t), zeros("g'(y)", r * t.div_ceil(64)));
        let partial = zeros("partials", chunks * r * r);
        // The decorrelation's input and its intermediate steps, and M = X X^T.
        let x = [
            zeros("decorrelation a", r * r),
            zeros("decorrelation b", r * r),
        ];
        let m = zeros("x x^T", r * r);
        let q = zeros("b M + c M^2", r * r);
        // Per-row sums: M's absolute row sums, then the dot products of W's old and new rows.
        let sums = zeros("row sums", r);
        let lims = zeros("lims", 1 + p.max_iter);
        let contrast = match p.contrast {
            Contrast::Tanh => 0,
            Contrast::Cube => 1,
            Contrast::Gauss => 2,
        };
        let uniform = |q: Params| {
            ctx.buffer_with(
                "fastica params",
                bytemuck::bytes_of(&q),
                wgpu::BufferUsages::UNIFORM,
            )
        };
        let (r32, t32) = (r as u32, t as u32);
        let square = |alpha: f32, beta: f32, b_rs: u32, b_cs: u32, mode: u32| Params {
            m: r32,
            n: r32,
            k: r32,
            a_rs: r32,
            a_cs: 1,
            b_rs,
            b_cs,
            c_rs: r32,
            k_chunk: r32,
            mode,
            alpha,
            beta,
            ..Default::default()
        };
        // The logcosh contrast's alpha scales the projections (the shader's tanh(alpha y)).
        let p_wz = uniform(Params {
            contrast,
            mode: 1,
            alpha: p.alpha as f32,
            ..Params::rotation(r32, t32)
        });
        let p_gz = uniform(Params::split_gram(r32, t32, K_CHUNK as u32));
        let p_update = uniform(Params {
            m: r32,
            n: chunks as u32,
            k: t32,
            ..Default::default()
        });
        let p_small = uniform(Params {
            m: r32,
            ..Default::default()
        });
        let p_dots = uniform(Params {
            m: r32,
            mode: 1,
            ..Default::default()
        });
        let p_xxt = uniform(square(1.0, 0.0, 1, r32, 0));
        // Step k's two polynomial products: Q = c M M + b M, X' = Q X + a X.
        let p_poly = DECORRELATION.map(|[a, b, c]| {
            [
                uniform(square(c as f32, b as f32, r32, 1, 2)),
                uniform(square(1.0, a as f32, r32, 1, 2)),
            ]
        });
        let group = |pipeline: &wgpu::ComputePipeline, entries: &[wgpu::BindGroupEntry<'_>]| {
            ctx.bind_group("fastica", pipeline, entries)
        };
        let pl = &self.pipelines;
        // Per parity of the iteration (which w buffer holds W).
        let g_wz = w.each_ref().map(|wc| {
            group(
                &pl.gemm_wide,
                &[
                    entry(0, &p_wz),
                    entry(1, wc),
                    entry(2, zb),
                    entry(3, &y),
                    entry(4, &gp),
                ],
            )
        });
        let (gz_pipe, gz_tile, gz_wide) = pl.gram(r);
        let gz_tiles = r.div_ceil(gz_tile) as u32;
        let mut gz_entries = vec![
            entry(0, &p_gz),
            entry(1, &y),
            entry(2, zb),
            entry(3, &partial),
        ];
        if gz_wide {
            // gemm_wide also writes D (in mode 1); gemm has no binding 4.
            gz_entries.push(entry(4, &gp));
        }
        let g_gz = group(gz_pipe, &gz_entries);
        let g_update = w.each_ref().map(|wc| {
            group(
                &pl.update,
                &[
                    entry(0, &p_update),
                    entry(1, &partial),
                    entry(2, wc),
                    entry(3, &x[0]),
                    entry(4, &gp),
                ],
            )
        });
        let g_abs_sums = group(
            &pl.row_sums,
            &[
                entry(0, &p_small),
                entry(1, &m),
                entry(2, &m),
                entry(3, &sums),
            ],
        );
        let g_scale = group(
            &pl.scale,
            &[
                entry(0, &p_small),
                entry(1, &sums),
                entry(3, &x[0]),
                entry(4, &m),
            ],
        );
        let g_dots = [0, 1].map(|c| {
            group(
                &pl.row_sums,
                &[
                    entry(0, &p_dots),
                    entry(1, &w[c]),
                    entry(2, &w[1 - c]),
                    entry(3, &sums),
                ],
            )
        });
        // M = X X^T for X in x[0] or x[1].
        let g_xxt = x.each_ref().map(|xi| {
            group(
                &pl.gemm,
                &[entry(0, &p_xxt), entry(1, xi), entry(2, xi), entry(3, &m)],
            )
        });
        // Step k's Q = c M M + b M (`g_mm[k]`), and X' = Q X + a X from x[k % 2] into
        // x[1 - k % 2], the last step into w[next] (`g_last[next]`); their B is read along j,
        // as `gemm_direct` reads it best.
        let poly_x = |k: usize, to: &wgpu::Buffer| {
            group(
                &pl.gemm_direct,
                &[
                    entry(0, &p_poly[k][1]),
                    entry(1, &q),
                    entry(2, &x[k % 2]),
                    entry(3, to),
                ],
            )
        };
        let steps = DECORRELATION.len();
        let g_mm: Vec<_> = (0..steps)
            .map(|k| {
                group(
                    &pl.gemm_direct,
                    &[
                        entry(0, &p_poly[k][0]),
                        entry(1, &m),
                        entry(2, &m),
                        entry(3, &q),
                    ],
                )
            })
            .collect();
        let g_inner: Vec<_> = (0..steps - 1).map(|k| poly_x(k, &x[1 - k % 2])).collect();
        let g_last = w.each_ref().map(|wn| poly_x(steps - 1, wn));
        let g_change = group(
            &pl.change,
            &[entry(0, &p_small), entry(1, &sums), entry(4, &lims)],
        );
        let tiles = |n: usize| n.div_ceil(16) as u32;
        let wide = |n: usize| n.div_ceil(64) as u32;
        let square_tiles = (tiles(r), tiles(r), 1);
        // One iteration's dispatches, for each parity (which w buffer holds W).
        let iteration = [0, 1].map(|cur| {
            let next = 1 - cur;
            let mut list = vec![
                Dispatch(
                    "W Z",
                    &pl.gemm_wide,
                    g_wz[cur].clone(),
                    (wide(t), wide(r), 1),
                ),
                Dispatch(
                    "g Z^T",
                    gz_pipe,
                    g_gz.clone(),
                    (gz_tiles, gz_tiles, chunks as u32),
                ),
                Dispatch("update", &pl.update, g_update[cur].clone(), (r32, 1, 1)),
                Dispatch("X X^T", &pl.gemm, g_xxt[0].clone(), square_tiles),
                Dispatch("row sums", &pl.row_sums, g_abs_sums.clone(), (r32, 1, 1)),
                Dispatch("scale", &pl.scale, g_scale.clone(), (r32, 1, 1)),
            ];
            for k in 0..steps {
                // Step k's M is computed here from the second step on.
                if k > 0 {
                    list.push(Dispatch(
                        "X X^T",
                        &pl.gemm,
                        g_xxt[k % 2].clone(),
                        square_tiles,
                    ));
                }
                list.push(Dispatch(
                    "b M + c M^2",
                    &pl.gemm_direct,
                    g_mm[k].clone(),
                    square_tiles,
                ));
                let g = if k + 1 == steps {
                    &g_last[next]
                } else {
                    &g_inner[k]
                };
                list.push(Dispatch(
                    "a X + Q X",
                    &pl.gemm_direct,
                    g.clone(),
                    square_tiles,
                ));
            }
            list.push(Dispatch(
                "row sums",
                &pl.row_sums,
                g_dots[cur].clone(),
                (r32, 1, 1),
            ));
            list.push(Dispatch("change", &pl.change, g_change.clone(), (1, 1, 1)));
            list
        });
        // Once the first batch has not converged, each batch is submitted before the host checks
        // the one before it, so that the GPU does not wait for the check or for the next batch's
        // recording (a fit that converges in its first batch, as warm-started ones do, computes
        // no batch in vain). A batch copies the convergence measures and the W it ends with into
        // staging buffers of its own slot; the result is the W after the batch in which the
        // measure first fell below the tolerance.
        let lims_bytes = ((1 + p.max_iter) * 4) as u64;
        let w_bytes = (r * r * 4) as u64;
        let staging = |label: &str, bytes: u64| {
            dev.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let slots = [0, 1].map(|_| (staging("lims", lims_bytes), staging("w", w_bytes)));
        let mut in_flight = std::collections::VecDeque::new();
        let (mut submitted, mut batches) = (0, 0);
        loop {
            let ahead = if batches == 0 { 1 } else { 2 };
            while submitted < p.max_iter && in_flight.len() < ahead {
                let batch = ITERATIONS_PER_SUBMIT.min(p.max_iter - submitted);
                let mut enc = dev.create_command_encoder(&Default::default());
                let dispatches = (submitted..submitted + batch).flat_map(|i| &iteration[i % 2]);
                if self.ctx.profiling() {
                    // A pass of its own for each dispatch, so each is timed.
                    for d in dispatches {
                        d.run(&mut self.ctx.pass(&mut enc, d.0));
                    }
                } else {
                    let mut pass = self.ctx.pass(&mut enc, "fastica iterations");
                    for d in dispatches {
                        d.run(&mut pass);
                    }
                }
                submitted += batch;
                let (slot_lims, slot_w) = &slots[batches % 2];
                enc.copy_buffer_to_buffer(&lims, 0, slot_lims, 0, lims_bytes);
                enc.copy_buffer_to_buffer(&w[submitted % 2], 0, slot_w, 0, w_bytes);
                let submission = self.ctx.queue.submit([enc.finish()]);
                in_flight.push_back((submitted, batches % 2, submission));
                batches += 1;
            }
            let (done, slot, submission) = in_flight.pop_front().expect("a batch in flight");
            let (slot_lims, slot_w) = &slots[slot];
            let converged_at =
                self.ctx
                    .with_mapped(slot_lims, lims_bytes, Some(submission.clone()), |v| {
                        let values: &[f32] = bytemuck::cast_slice(v);
                        (0..done).find(|&k| (values[1 + k] as f64) < p.tol)
                    })?;
            if converged_at.is_some() || done == p.max_iter {
                // Mapped once this batch is done, not the one after it.
                let w = self
                    .ctx
                    .with_mapped(slot_w, w_bytes, Some(submission), |v| {
                        let v: &[f32] = bytemuck::cast_slice(v);
                        DMatrix::from_fn(r, r, |i, j| v[i * r + j] as f64)
                    })?;
                return Ok(match converged_at {
                    Some(k) => (w, k + 1, true),
                    None => (w, p.max_iter, false),
                });
            }
        }
    }

    /// The sources S = w Z of data whitened on the device (f32, as `ica::rotate` on the CPU).
    fn sources(&self, wh: &GpuWhitening, w: &DMatrix<f64>) -> Result<Observations, GpuError> {
        let dev = &self.ctx.device;
        let (r, t) = (w.nrows(), wh.samples);
        let (r32, t32) = (r as u32, t as u32);
        let w_rows: Vec<f32> = (0..r * r).map(|q| w[(q / r, q % r)] as f32).collect();
        let params = Params::rotation(r32, t32);
        let params = self.ctx.buffer_with(
            "sources params",
            bytemuck::bytes_of(&params),
            wgpu::BufferUsages::UNIFORM,
        );
        let wb = self.ctx.buffer_with(
            "w",
            bytemuck::cast_slice(&w_rows),
            wgpu::BufferUsages::STORAGE,
        );
        let s = dev.create_buffer(&wgpu::BufferDescriptor {
            label: Some("sources"),
            size: (r * t * 4) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        // gemm_wide's binding 4 (g' sums) is written only in mode 1; it is bound, not used.
        let unused = dev.create_buffer(&wgpu::BufferDescriptor {
            label: Some("unused"),
            size: 4,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let pipeline = &self.pipelines.gemm_wide;
        let group = self.ctx.bind_group(
            "sources",
            pipeline,
            &[
                entry(0, &params),
                entry(1, &wb),
                entry(2, &wh.z),
                entry(3, &s),
                entry(4, &unused),
            ],
        );
        self.ctx.guarded(|| {
            let mut enc = dev.create_command_encoder(&Default::default());
            Dispatch(
                "sources",
                pipeline,
                group,
                (t.div_ceil(64) as u32, r.div_ceil(64) as u32, 1),
            )
            .run(&mut self.ctx.pass(&mut enc, "sources"));
            self.ctx.queue.submit([enc.finish()]);
        })?;
        Ok(Observations::new(r, t, self.ctx.read_back_f32(&s, r * t)?))
    }
}

#[cfg(test)]
mod tests {
    use super::DECORRELATION;

    /// The steps take every singular value in [2e-4, 1] to 1: the decorrelation's contract
    /// for a W scaled to singular values at most 1.
    #[test]
    fn decorrelation_reaches_one() {
        let low = 2e-4f64.log10();
        for i in 0..=30_000 {
            let s0 = 10f64.powf(low * i as f64 / 30_000.0);
            let s = DECORRELATION
                .iter()
                .fold(s0, |s, [a, b, c]| a * s + b * s.powi(3) + c * s.powi(5));
            assert!((s - 1.0).abs() < 1e-7, "{s0} -> {s}");
        }
    }
}
