//! Hermite beat fits on the GPU (shaders/hermite.wgsl): the basis and its padding Gram
//! matrices are computed on the device for each (rate, order, sigma grid), then one thread
//! per beat and group of sigmas fits and keeps the best, and a last pass picks each beat's
//! best over the groups and writes its coefficients. Beats are uploaded once (`GpuBeats`), so
//! a new order or sigma range refits them without another upload.

use std::collections::HashMap;

use eframe::wgpu;
use eframe::wgpu::util::DeviceExt;
use rayon::prelude::*;

use super::binds::Binds;
use super::context::compute_pipeline;
use super::fft::grid_of;
use super::{GpuContext, GpuError};
use crate::dsp::hermite::{BeatWindow, Fits, HermiteError, HermiteParams, MAX_ORDER};

#[derive(Debug, thiserror::Error)]
pub enum GpuHermiteError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Params(#[from] HermiteError),
    #[error("the beats were uploaded with {got} samples each; this rate needs {want}")]
    Width { got: usize, want: usize },
}

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    beats: u32,
    width: u32,
    half: u32,
    len: u32,
    sigmas: u32,
    order: u32,
    group: u32,
    groups: u32,
    fs: f32,
    /// Beats apart of one `fit` thread's beats: ceil(beats / BEATS).
    stride: u32,
    /// Floats of a row of x (`x_row`).
    row: u32,
    pad: u32,
}

/// Aim for about this many threads per fit dispatch (the H100 holds ~270k at once): few
/// beats get more, smaller groups of sigmas.
const TARGET_THREADS: usize = 1 << 20;

/// Most beats of an uploaded chunk. A fit runs chunk by chunk, each read back while the next
/// is fitted, so that copying the results out of the mapped buffer (0.5-0.6 ms of 1e5 beats'
/// 3.6 ms at N = 30 on the H100) hides behind the GPU's work but for the last chunk's. Smaller
/// chunks fit less efficiently: 1e5 beats at N = 30 took 3.40-3.48 ms in two chunks, 3.52-3.64
/// in four, 3.52-3.62 in seven (one call, alternated three times), 3.69-3.84 in one.
const PIPELINE_CHUNK: usize = 65_536;

/// Coefficients from which the results are copied out of the mapped buffer on every core (new
/// pages for the vector: at N = 30, 1e5 beats took 1.7 ms on one core, 0.5 ms on 16; 2,272
/// beats 27 us on one, 0.14 ms once rayon's threads had to wake).
const PARALLEL_COPY: usize = 1 << 20;

/// Beats per `fit` thread. On the H100 at N = 30 (1e5 beats, 100 sigmas, whole call with
/// readback): 1 -> 18.2 ms, 2 -> 14.2, 3 -> 13.5, 4 -> 11.5 before the parity split. After it,
/// the fit pass alone (timestamp queries): 1 -> 4.18 ms, 2 -> 3.52, 4 -> 3.60, 8 -> about 9
/// (registers spill); for record 100's 2,272 beats 110, 102 and 133 us at N = 30 but 49, 51
/// and 44 us at N = 6 (docs/BENCHMARKS.md).
const BEATS_PER_THREAD: usize = 4;

/// Threads of each group of sigmas in a `fit` workgroup, which holds `share_for` groups
/// (`FIT_WG` = groups x this in the shader). One group a workgroup, on the H200, 256 -> 128:
/// record 100's refit at N = 30 0.30 -> 0.235 ms, 1e5 beats' fit 4.7 -> 3.8 ms; 64 was about
/// the same as 128 (docs/BENCHMARKS.md). Smaller workgroups spread a refit's few threads over
/// more of the SMs. Two groups of 64 (workgroups of 128) against two of 128 (of 256), H100,
/// fit pass, three alternations: 1e5 beats at N = 6 628-629 -> 544-546 us, N = 10 771-775 ->
/// 683-684 us; record 100's refit 26.2-26.6 -> 20.4-20.6 us and 31.9-32.1 -> 24.4-24.5 us.
const GROUP_THREADS: usize = 128;

/// Beats on the device, `[2][h][beats]` per chunk (u then w, see `upload`).
pub struct GpuBeats {
    pub width: usize,
    pub beats: usize,
    chunks: Vec<(wgpu::Buffer, usize)>,
}

#[derive(Clone)]
struct Pipelines {
    basis_gram: wgpu::ComputePipeline,
    fit: wgpu::ComputePipeline,
    select: wgpu::ComputePipeline,
}

pub struct HermiteKernels {
    ctx: GpuContext,
    /// Pipelines by order, beats per thread, whether `fit` stages the basis and the groups of
    /// sigmas a `fit` workgroup, built when first needed.
    pipelines: HashMap<(usize, usize, bool, usize), Pipelines>,
    /// Beats one `fit` thread fits at once (1 to 8; tests try each).
    pub beats_per_thread: usize,
    /// Whether `fit` reads each sigma's basis from workgroup memory where it fits there (tests
    /// try both).
    pub stage_basis: bool,
    /// Largest buffer a chunk may use; the device's binding limit unless a test lowers it.
    pub max_buffer_bytes: u64,
    /// Beats from which the last chunk is split (`chunk_sizes`); tests lower it.
    pub tail_split: usize,
    /// Threads a fit dispatch aims for (`TARGET_THREADS`); tests lower it, so that few beats
    /// take groups of several sigmas.
    pub target_threads: usize,
    /// Buffers kept between fits, by `Slot`.
    buffers: [Option<wgpu::Buffer>; Slot::COUNT],
    /// The last fit's bind groups: a refit of the same beats makes none.
    binds: Binds,
}

impl HermiteKernels {
    /// The kernels `prepare` compiled ahead, else kernels that compile each order's
    /// pipelines on its first fit.
    pub fn new(ctx: &GpuContext) -> Self {
        ctx.take_prepared()
            .unwrap_or_else(|| Self::with_pipelines_for(ctx, &[]))
    }

    /// Kernels with the pipelines of `orders` compiled (and saved to the disk cache).
    pub fn with_pipelines_for(ctx: &GpuContext, orders: &[usize]) -> Self {
        let mut kernels = Self::empty(ctx);
        for &order in orders {
            let (ne4, no4) = parity_vec4s(order);
            kernels.pipelines(order, true, share_for(ne4 + no4, None));
        }
        kernels
    }

    fn empty(ctx: &GpuContext) -> Self {
        let limits = ctx.device.limits();
        HermiteKernels {
            ctx: ctx.clone(),
            pipelines: HashMap::new(),
            beats_per_thread: BEATS_PER_THREAD,
            stage_basis: true,
            max_buffer_bytes: limits
                .max_storage_buffer_binding_size
                .min(limits.max_buffer_size),
            tail_split: TAIL_SPLIT,
            target_threads: TARGET_THREADS,
            buffers: Default::default(),
            binds: Binds::default(),
        }
    }

    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// The pipelines of `order`, `staged` or not, with `share` groups of sigmas a `fit`
    /// workgroup (`share_for`).
    fn pipelines(&mut self, order: usize, staged: bool, share: usize) -> &Pipelines {
        let ctx = &self.ctx;
        let per_thread = self.beats_per_thread.clamp(1, 8);
        self.pipelines
            .entry((order, per_thread, staged, share))
            .or_insert_with(|| {
                let source =
                    fit_source(order, per_thread, staged.then(|| staged_vec4s(ctx)), share);
                // For tools/pipeline-stats: what the driver makes of each generated source.
                if let Some(dir) = std::env::var_os("EDE_HERMITE_SHADER_DUMP") {
                    let name = format!("hermite-n{order}-b{per_thread}-s{share}-{staged}.wgsl");
                    if let Err(e) = std::fs::write(std::path::Path::new(&dir).join(&name), &source)
                    {
                        eprintln!("note: EDE_HERMITE_SHADER_DUMP: {name}: {e}");
                    }
                }
                let module = ctx
                    .device
                    .create_shader_module(wgpu::ShaderModuleDescriptor {
                        label: Some("hermite"),
                        source: wgpu::ShaderSource::Wgsl(source.into()),
                    });
                let pipelines = Pipelines {
                    basis_gram: compute_pipeline(ctx, &module, "basis_gram"),
                    fit: compute_pipeline(ctx, &module, "fit"),
                    select: compute_pipeline(ctx, &module, "select_best"),
                };
                ctx.save_pipelines();
                pipelines
            })
    }

    /// Uploads `beats` (`[beat][width]`, width = 2h) in chunks that fit a binding, as the
    /// shader reads them: beat-minor, each sample right of the centre paired with its mirror
    /// (u_j = (x_a + x_b) / 2, then w_j = (x_a - x_b) / 2).
    pub fn upload(&self, beats: &[f32], width: usize) -> Result<GpuBeats, GpuError> {
        let count = beats.len() / width.max(1);
        // Per beat: its samples, and at worst 2 floats per sigma group and 2 + order results.
        let per_beat = (width.max(2 + MAX_ORDER) * 4 + 16) as u64;
        let most = ((self.max_buffer_bytes / per_beat) as usize).clamp(1, PIPELINE_CHUNK);
        let sizes = chunk_sizes(count, most, self.tail_split);
        let firsts = sizes.iter().scan(0, |first, &n| {
            *first += n;
            Some(*first - n)
        });
        let ctx = &self.ctx;
        let chunks = ctx.guarded(|| {
            (firsts.zip(&sizes))
                .map(|(first, &n)| {
                    let (h, row) = (width / 2, x_row(n));
                    let mut t = vec![0f32; row * 2 * h];
                    for b in 0..n {
                        let beat = &beats[(first + b) * width..][..width];
                        for j in 0..h {
                            let (xa, xb) = (beat[h + j], beat[h - 1 - j]);
                            t[j * row + b] = 0.5 * (xa + xb);
                            t[(h + j) * row + b] = 0.5 * (xa - xb);
                        }
                    }
                    let buf = ctx
                        .device
                        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                            label: Some("hermite beats"),
                            contents: bytemuck::cast_slice(&t),
                            usage: wgpu::BufferUsages::STORAGE,
                        });
                    (buf, n)
                })
                .collect()
        })?;
        Ok(GpuBeats {
            width,
            beats: count,
            chunks,
        })
    }

    /// The buffer kept in `slot` (`GpuContext::kept_buffer`).
    fn reused(&mut self, slot: Slot, bytes: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
        let kept = &mut self.buffers[slot as usize];
        self.ctx.kept_buffer(kept, slot.label(), bytes, usage)
    }

    /// The best sigma, MSE and coefficients of every uploaded beat.
    pub fn fit(
        &mut self,
        beats: &GpuBeats,
        fs: f64,
        params: &HermiteParams,
    ) -> Result<Fits, GpuHermiteError> {
        let window = BeatWindow::new(fs)?;
        let sigmas = params.sigma_grid()?;
        if beats.width != window.width() {
            return Err(GpuHermiteError::Width {
                got: beats.width,
                want: window.width(),
            });
        }
        let order = params.order;
        let (ne4, no4) = parity_vec4s(order);
        let n4 = ne4 + no4;
        let s = sigmas.len();
        let l = window.len();
        let per_thread = self.beats_per_thread.clamp(1, 8);
        // Each chunk's fits: [n] MSE, [n] sigma index, [n][order] coefficients, the layout of
        // `Fits`, so that reading them back is three copies.
        let result_bytes = |n: usize| (n * (2 + order) * 4) as u64;
        let largest = beats.chunks.iter().map(|c| c.1).max().unwrap_or(0);
        let target_threads = self.target_threads;
        let groups_for = |n: usize| {
            let groups = target_threads.div_ceil(n.div_ceil(per_thread)).clamp(1, s);
            // Equal groups: the last may be short, never empty.
            let group = s.div_ceil(groups);
            (group, s.div_ceil(group))
        };
        let storage = wgpu::BufferUsages::STORAGE;
        let copy_dst = wgpu::BufferUsages::COPY_DST;
        let ctx = self.ctx.clone();
        let (sigma_buf, basis, gram, partial, fits, stagings) = ctx.guarded(|| {
            (
                self.reused(Slot::Sigmas, (s * 4) as u64, storage | copy_dst),
                self.reused(Slot::Basis, (s * l / 2 * n4 * 16) as u64, storage),
                self.reused(Slot::Gram, (s * 4 * n4 * n4 * 16) as u64, storage),
                self.reused(
                    Slot::Partial,
                    (beats.chunks.iter())
                        .map(|c| (groups_for(c.1).1 * c.1 * 8) as u64)
                        .max()
                        .unwrap_or(0),
                    storage,
                ),
                self.reused(
                    Slot::Fits,
                    result_bytes(largest),
                    storage | wgpu::BufferUsages::COPY_SRC,
                ),
                [Slot::Staging, Slot::Staging2].map(|slot| {
                    let usage = wgpu::BufferUsages::MAP_READ | copy_dst;
                    self.reused(slot, result_bytes(largest), usage)
                }),
            )
        })?;
        // A sigma's basis in workgroup memory where it fits there (at N = 30 up to 128 samples
        // a side, 1,280 Hz): 1e5 beats at N = 30 on the H100, fit pass 1,851-1,858 -> 1,555-1,560
        // us (three alternations).
        let staged = self.stage_basis && window.half * n4 <= staged_vec4s(&ctx);
        let share = share_for(n4, staged.then(|| staged_vec4s(&ctx) / (window.half * n4)));
        let pipes = self.pipelines(order, staged, share).clone();
        let binds = &mut self.binds;
        let out = ctx.guarded(|| -> Result<Fits, GpuError> {
            let sigma_f32: Vec<f32> = sigmas.iter().map(|&v| v as f32).collect();
            ctx.queue
                .write_buffer(&sigma_buf, 0, bytemuck::cast_slice(&sigma_f32));
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            let params_for = |chunk: usize, (group, groups): (usize, usize)| Params {
                beats: chunk as u32,
                width: window.width() as u32,
                half: window.half as u32,
                len: l as u32,
                sigmas: s as u32,
                order: order as u32,
                group: group as u32,
                groups: groups as u32,
                fs: fs as f32,
                stride: chunk.div_ceil(per_thread) as u32,
                row: x_row(chunk) as u32,
                pad: 0,
            };
            let mut run = |enc: &mut wgpu::CommandEncoder,
                           (pipeline, label): (&wgpu::ComputePipeline, &'static str),
                           params: Params,
                           buffers: &[(u32, &wgpu::Buffer)],
                           (threads, rows, size): (usize, usize, usize)| {
                let bind = binds.group(&ctx, pipeline, bytemuck::bytes_of(&params), buffers);
                let mut pass = ctx.pass(enc, label);
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, &bind, &[]);
                let (x, y, z) = grid_of(threads, rows, size);
                pass.dispatch_workgroups(x, y, z);
            };
            // One workgroup a sigma (256 threads along x).
            run(
                &mut enc,
                (&pipes.basis_gram, "hermite basis and gram"),
                params_for(0, (s, 1)),
                &[(1, &sigma_buf), (2, &basis), (3, &gram)],
                (256, s, 256),
            );
            // The chunks share `partial` and `fits`: each chunk's fits are copied out before
            // the next chunk's passes (the queue keeps the order), into one of two staging
            // buffers in turn. Each chunk is submitted, then the one before it read back while
            // the GPU fits this one.
            let mut out = Fits {
                order,
                mse: Vec::with_capacity(beats.beats),
                sigma_index: Vec::with_capacity(beats.beats),
                coefficients: Vec::with_capacity(beats.beats * order),
            };
            let mut read =
                |(submission, staging, n): (wgpu::SubmissionIndex, &wgpu::Buffer, usize)| {
                    ctx.with_mapped(staging, result_bytes(n), Some(submission), |bytes| {
                        let (mse, rest) = bytes.split_at(n * 4);
                        let (sigma, coefficients) = rest.split_at(n * 4);
                        out.mse.extend_from_slice(bytemuck::cast_slice(mse));
                        out.sigma_index
                            .extend_from_slice(bytemuck::cast_slice(sigma));
                        let coefficients: &[f32] = bytemuck::cast_slice(coefficients);
                        if coefficients.len() < PARALLEL_COPY {
                            out.coefficients.extend_from_slice(coefficients);
                        } else {
                            (out.coefficients).par_extend(coefficients.par_iter().copied());
                        }
                    })
                };
            let mut pending = None;
            for (i, (x, n)) in beats.chunks.iter().enumerate() {
                let n = *n;
                let params = params_for(n, groups_for(n));
                run(
                    &mut enc,
                    (&pipes.fit, "hermite fit"),
                    params,
                    &[(2, &basis), (3, &gram), (7, x), (5, &partial)],
                    (
                        n.div_ceil(per_thread).div_ceil(GROUP_THREADS) * share * GROUP_THREADS,
                        (params.groups as usize).div_ceil(share),
                        share * GROUP_THREADS,
                    ),
                );
                run(
                    &mut enc,
                    (&pipes.select, "hermite select"),
                    params,
                    &[(2, &basis), (4, x), (5, &partial), (6, &fits)],
                    select_shape(n),
                );
                // The staging buffer of two chunks ago, read back (and unmapped) by now.
                let staging = &stagings[i % 2];
                enc.copy_buffer_to_buffer(&fits, 0, staging, 0, result_bytes(n));
                let done = std::mem::replace(
                    &mut enc,
                    ctx.device.create_command_encoder(&Default::default()),
                );
                let submission = ctx.queue.submit([done.finish()]);
                if let Some(before) = pending.replace((submission, staging, n)) {
                    read(before)?;
                }
            }
            if let Some(last) = pending {
                read(last)?;
            }
            Ok(out)
        })??;
        self.binds.end_call();
        Ok(out)
    }
}

/// The buffers `fit` keeps for the next call.
#[derive(Clone, Copy)]
enum Slot {
    Sigmas,
    Basis,
    Gram,
    /// Each group of sigmas' best, per beat.
    Partial,
    /// A chunk's results.
    Fits,
    /// Chunks' results, read back: two, used in turn.
    Staging,
    Staging2,
}

impl Slot {
    const COUNT: usize = 7;

    fn label(self) -> &'static str {
        match self {
            Slot::Sigmas => "hermite sigmas",
            Slot::Basis => "hermite basis",
            Slot::Gram => "hermite gram",
            Slot::Partial => "hermite partial",
            Slot::Fits => "hermite fits",
            Slot::Staging | Slot::Staging2 => "hermite fits read back",
        }
    }
}

/// Beats of each uploaded chunk, in order, for `count` beats and at most `most` a chunk.
/// Equal chunks (the last may be short), then the last cut in halves and its second half
/// again (c/2, c/4, c/4) where it holds `tail_split` beats or more: the last chunk's results
/// cross PCIe and leave the mapped buffer after the GPU is done, the others' while it fits
/// the next. Whole rows of x (`x_row`, multiples of 8) where `most` holds 8.
fn chunk_sizes(count: usize, most: usize, tail_split: usize) -> Vec<usize> {
    let round = |n: usize| match most >= 8 {
        true => n.div_ceil(8).saturating_mul(8).min(most / 8 * 8),
        false => n,
    };
    let chunk = round(count.div_ceil(count.div_ceil(most).max(1)).max(1));
    let mut sizes: Vec<usize> = (0..count)
        .step_by(chunk)
        .map(|first| chunk.min(count - first))
        .collect();
    let down = |n: usize| if most >= 8 { n / 8 * 8 } else { n };
    if let Some(&last) = sizes.last().filter(|&&n| n >= tail_split) {
        let half = down(last / 2);
        let quarter = down(half / 2);
        if quarter > 0 {
            sizes.pop();
            sizes.extend([half, quarter, last - half - quarter]);
        }
    }
    sizes
}

/// Chunks of at least this many beats are split at the end (`chunk_sizes`). 1e5 beats at
/// N = 30 on the H100: 2.61-2.62 ms in chunks of 50,000, 25,000, 12,496 and 12,504 against
/// 2.71-2.73 in two of 50,000 (one call, alternated twice). A refit's few beats stay whole.
const TAIL_SPLIT: usize = 16_384;

/// Threads of `select_best` per beat (SEL in the shader).
const SELECT_THREADS: usize = 8;

/// `select_best`'s grid for `beats` beats, as (threads along x, rows, workgroup size): its
/// workgroups are counted over x and then y.
fn select_shape(beats: usize) -> (usize, usize, usize) {
    let groups = (beats * SELECT_THREADS).div_ceil(256).max(1);
    let x = groups.min(1 << 15);
    (x * 256, groups.div_ceil(x), 256)
}

/// Floats of a row of the uploaded beats' x for `beats` beats: a multiple of 8, so that `fit`
/// reads 4 or 8 consecutive beats as vec4s.
fn x_row(beats: usize) -> usize {
    beats.div_ceil(8) * 8
}

/// Vec4s of workgroup memory `fit` may stage a sigma's basis in: the device's limit, at most
/// 16 KiB (wgpu's default; ede asks for no more).
fn staged_vec4s(ctx: &GpuContext) -> usize {
    (ctx.device.limits().max_compute_workgroup_storage_size as usize).min(16_384) / 16
}

/// The module's source for `order`, `per_thread` beats a `fit` thread, `staged` vec4s of
/// workgroup memory (`staged_vec4s`) or none and `share` groups of sigmas a workgroup
/// (`share_for`). Pure, so that gpu::wgsl_grammar's tests check what the pipelines compile.
pub(crate) fn fit_source(
    order: usize,
    per_thread: usize,
    staged: Option<usize>,
    share: usize,
) -> String {
    format!(
        "const FIT_WG: u32 = {}u;\nconst SHARE: u32 = {share}u;\n{}\n{}",
        share * GROUP_THREADS,
        unrolled(order, per_thread, staged),
        include_str!("../../shaders/hermite.wgsl")
    )
}

/// Groups of sigmas a `fit` workgroup fits its beats for (`SHARE` in the shader): two where
/// the order has at most `SHARED_UP_TO` coefficient vec4s and workgroup memory holds two
/// sigmas' bases (`room`, where `fit` stages them), so that one group's threads read the beats'
/// samples from L1 after the other's; else one. Each group has `GROUP_THREADS` threads. (Where
/// there are fewer groups, the rest of a workgroup fits the last group's sigmas again and keeps
/// nothing.)
fn share_for(n4: usize, room: Option<usize>) -> usize {
    match n4 <= SHARED_UP_TO && room.is_none_or(|r| r >= 2) {
        true => 2,
        false => 1,
    }
}

/// Coefficient vec4s up to which two groups of sigmas share a workgroup's beats (`share_for`):
/// with few coefficients a sample, its reads weigh most. Fit pass of 1e5 beats on the H100,
/// one group -> two (three alternations in one call): N = 6 (2 vec4s) 757-762 -> 628-630 us,
/// N = 10 (4) 818-822 -> 768-769 us, N = 20 (6) 1,154-1,158 -> 1,189-1,194 us, N = 30 (8)
/// 1,555-1,567 -> 1,582-1,584 us; four groups at N = 6 as two. As kept (one group a constant
/// of the pipeline, compiled as before), against ec202d7: N = 6 745-748 -> 628-631 us, N = 10
/// 815-816 -> 772-774, N = 20 1,158 -> 1,161-1,168, N = 30 1,561-1,562 -> 1,561-1,564.
const SHARED_UP_TO: usize = 4;

/// Even and odd coefficient vec4s for `order` functions (shaders/hermite.wgsl's parity).
fn parity_vec4s(order: usize) -> (usize, usize) {
    (order.div_ceil(2).div_ceil(4), (order / 2).div_ceil(4))
}

const LANES: [&str; 4] = ["x", "y", "z", "w"];

/// Samples of a beat `fit` takes in one iteration of its loops. At N = 30 on the H100 (1e5
/// beats, fit pass by timestamps, alternated twice in one call): 1 -> 2,566-2,567 us, 2 ->
/// 1,939-1,966, 3 -> 1,851, 4 -> 1,833-1,842, 6 -> 1,784-1,792, 8 -> 1,843-1,846; at N = 6
/// 810 us at 1 against 734-749 from 2 on (docs/BENCHMARKS.md).
const UNROLL: usize = 6;

/// The shader's `mse_many` for `beats` beats a thread and `order` functions, unrolled over the
/// coefficient registers (see the header of shaders/hermite.wgsl): the MSEs of the beats at one
/// sigma. Registers are vec4s across four beats (groups g of beats 4g..4g+3): coefficient n of
/// every beat of a group is one FMA of the group's samples by the broadcast basis value, the
/// residual of four beats at a sample is a chain of FMAs from their samples (no horizontal
/// sums), and only the order's coefficients are computed. Each parity is a block of its own, so
/// only its coefficients are live at a time. c{g}_{m} holds minus twice the coefficients of
/// slot m (u and w are half sums; the sign makes the residual's FMAs subtract, and the padding
/// term is quadratic), a{g} the residual sums, t{g} half the padding term (the Gram matrix's
/// diagonal halved and its upper triangle). Beat j of a thread is BEATS first + j: with BEATS a
/// multiple of 4 each group's samples are one vec4 of x4 (rows of x hold a multiple of 8
/// floats), else they are read one by one, clamped to the last beat (results past it unused);
/// lanes past `beats` are zero.
///
/// With `staged` (vec4s of workgroup memory), the fit reads each sigma's basis from workgroup
/// memory, where `stage_basis` copies the current sigma of each of the workgroup's groups
/// (h x N4 vec4s each, at offset `so`; at most `staged` in all) before its threads fit them;
/// without, from the storage buffer (`stage_basis` does nothing).
fn unrolled(order: usize, beats: usize, staged: Option<usize>) -> String {
    let (ne4, no4) = parity_vec4s(order);
    let n4 = ne4 + no4;
    let groups = beats.div_ceil(4);
    let join = |r: std::ops::Range<usize>, f: &dyn Fn(usize) -> String, sep: &str| {
        r.map(f).collect::<Vec<_>>().join(sep)
    };
    let index = join(
        0..beats,
        &|j| format!("    let i{j} = min(first * BEATS + {j}u, p.beats - 1u);"),
        "\n",
    );
    let decl = join(
        0..groups,
        &|g| format!("    var a{g} = vec4<f32>(0.0);\n    var t{g} = vec4<f32>(0.0);"),
        "\n",
    );
    // The samples of each group of beats at sample j of a plane.
    let xs = join(
        0..groups,
        &|g| {
            if beats.is_multiple_of(4) {
                return format!(
                    "        let x{g} = x4[(row + first * BEATS + {}u) >> 2u];",
                    4 * g
                );
            }
            let lanes = join(
                4 * g..4 * g + 4,
                &|j| {
                    if j < beats {
                        format!("x4[(row + i{j}) >> 2u][(row + i{j}) & 3u]")
                    } else {
                        "0.0".into()
                    }
                },
                ", ",
            );
            format!("        let x{g} = vec4<f32>({lanes});")
        },
        "\n",
    );
    // One parity: `used` coefficient slots from slot `first_slot` (its vec4s `qs`), its plane.
    // (With none, as the odd parity at order 1, the plane's samples are all residual.)
    let parity = |used: usize, first_slot: usize, qs: std::ops::Range<usize>, plane: &str| {
        let slot = |m: usize| {
            let i = first_slot + m;
            (i / 4, LANES[i % 4])
        };
        let per_gm = |f: &dyn Fn(usize, usize) -> String| {
            join(0..groups, &|g| join(0..used, &|m| f(g, m), "\n"), "\n")
        };
        let loads = join(
            qs.clone(),
            &|q| match staged {
                Some(_) => format!("        let v{q} = staged[so + j * N4 + {q}u];"),
                None => format!("        let v{q} = basis[b + {q}u];"),
            },
            "\n",
        );
        let zero = per_gm(&|g, m| format!("    var c{g}_{m} = vec4<f32>(0.0);"));
        let fmas = per_gm(&|g, m| {
            let (q, lane) = slot(m);
            format!("        c{g}_{m} = fma(x{g}, vec4<f32>(v{q}.{lane}), c{g}_{m});")
        });
        let scale = per_gm(&|g, m| format!("    c{g}_{m} = -2.0 * c{g}_{m};"));
        let resid = join(
            0..groups,
            &|g| {
                let chain = join(
                    0..used,
                    &|m| {
                        let (q, lane) = slot(m);
                        format!("        y{g} = fma(c{g}_{m}, vec4<f32>(v{q}.{lane}), y{g});")
                    },
                    "\n",
                );
                format!("        var y{g} = x{g};\n{chain}\n        a{g} = fma(y{g}, y{g}, a{g});")
            },
            "\n",
        );
        // Half of c^T G_pad c: sum over rows i of c_i (G_ii c_i / 2 + sum_{k > i} G_ik c_k).
        let pad = join(
            0..used,
            &|i| {
                let (qi, li) = slot(i);
                let row = first_slot + i;
                let g = join(
                    qi..qs.end,
                    &|q| format!("        let gr{q} = gram[g0 + {}u];", row * n4 + q),
                    "\n",
                );
                let per_group = join(
                    0..groups,
                    &|gi| {
                        let upper = join(
                            i + 1..used,
                            &|k| {
                                let (qk, lk) = slot(k);
                                format!(
                                    "        s{gi} = fma(c{gi}_{k}, vec4<f32>(gr{qk}.{lk}), s{gi});"
                                )
                            },
                            "\n",
                        );
                        format!(
                            "        var s{gi} = c{gi}_{i} * (0.5 * gr{qi}.{li});\n{upper}\n        \
                             t{gi} = fma(c{gi}_{i}, s{gi}, t{gi});"
                        )
                    },
                    "\n",
                );
                format!("    {{\n{g}\n{per_group}\n    }}")
            },
            "\n",
        );
        // UNROLL samples an iteration, then the rest one by one (p.half is the rate's).
        let j_loop = |body: &str| {
            let at = |j: &str| {
                format!(
                    "        {{
        let j = {j};
        let b = b0 + j * N4;
        let row = {plane} + j * p.row;
{xs}
{loads}
{body}
        }}"
                )
            };
            let unrolled = join(0..UNROLL, &|k| at(&format!("j0 + {k}u")), "\n");
            format!(
                "    {{
    var j0 = 0u;
    for (; j0 + {UNROLL}u <= p.half; j0 += {UNROLL}u) {{
{unrolled}
    }}
    for (; j0 < p.half; j0++) {{
{}
    }}
    }}",
                at("j0")
            )
        };
        let coef_loop = j_loop(&fmas);
        let resid_loop = j_loop(&resid);
        format!(
            "    {{
{zero}
{coef_loop}
{scale}
{resid_loop}
{pad}
    }}"
        )
    };
    let even = parity(order.div_ceil(2), 0, 0..ne4, "0u");
    let odd = parity(order / 2, 4 * ne4, ne4..n4, "p.half * p.row");
    let ret = |g: usize| {
        if g < groups {
            format!("2.0 * (a{g} + t{g})")
        } else {
            "vec4<f32>(0.0)".into()
        }
    };
    let (lo, hi) = (ret(0), ret(1));
    let stage = match staged {
        Some(vec4s) => format!(
            "var<workgroup> staged: array<vec4<f32>, {vec4s}>;

// Sigma i of each of the workgroup's groups (row y), one after the other.
fn stage_basis(y: u32, i: u32, li: u32) {{
    workgroupBarrier();
    let per = p.half * N4;
    for (var sub = 0u; sub < SHARE; sub++) {{
        let b0 = group_sigma(y * SHARE + sub, i) * 2u * per;
        for (var k = li; k < per; k += FIT_WG) {{
            staged[sub * per + k] = basis[b0 + k];
        }}
    }}
    workgroupBarrier();
}}"
        ),
        None => "fn stage_basis(y: u32, i: u32, li: u32) {}".into(),
    };
    format!(
        "{stage}

const NE4: u32 = {ne4}u;
const NO4: u32 = {no4}u;
const N4: u32 = {n4}u;
const BEATS: u32 = {beats}u;
struct Many {{ lo: vec4<f32>, hi: vec4<f32> }}

fn mse_many(first: u32, s: u32, so: u32) -> Many {{
{index}
{decl}
    let b0 = s * 2u * p.half * N4;
    let g0 = s * 4u * N4 * N4;
{even}
{odd}
    return Many({lo}, {hi});
}}
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_beats_and_end_small() {
        let split = TAIL_SPLIT;
        // Two equal chunks, the second cut in halves and its second half again.
        assert_eq!(
            chunk_sizes(100_000, PIPELINE_CHUNK, split),
            [50_000, 25_000, 12_496, 12_504]
        );
        // A refit's beats stay in one chunk; under the split, equal chunks as before.
        assert_eq!(chunk_sizes(2_272, PIPELINE_CHUNK, split), [2_272]);
        assert_eq!(chunk_sizes(30_000, 16_000, split), [15_000, 15_000]);
        assert_eq!(chunk_sizes(37, 64, 8), [16, 8, 13]);
        for (count, most, split) in [
            (37, 9, 8),
            (37, 4, 8),
            (1, 1, 1),
            (5, 1, 2),
            (70_001, 65_536, split),
        ] {
            let sizes = chunk_sizes(count, most, split);
            assert_eq!(sizes.iter().sum::<usize>(), count, "{count} {most}");
            assert!(sizes.iter().all(|&n| n >= 1 && n <= most), "{sizes:?}");
            // Every chunk but the last holds whole rows of x.
            if most >= 8 {
                assert!(
                    sizes[..sizes.len() - 1].iter().all(|n| n % 8 == 0),
                    "{sizes:?}"
                );
            }
        }
    }
}
