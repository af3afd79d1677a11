//! The Morlet wavelet transform on the GPU (shaders/cwt.wgsl with the FFTs of gpu::fft):
//! signals are uploaded and transformed once (`Spectra`), then each set of wavelet parameters
//! costs a multiply and a batch of inverse FFTs over channels x scales. Results leave the
//! device only where asked: |W| or block power for the CLI and tests, or a colour-mapped
//! texture that egui draws straight from the device, with single values read back on hover.

mod decimated;
mod upload;

pub use crate::gpu::upload::{Filled, UploadRing};
pub use decimated::{CHUNK as DECIMATED_CHUNK, transform_lengths};

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use eframe::wgpu;
use eframe::wgpu::util::DeviceExt;

use super::binds::{Binds, Bound};
use super::context::compute_pipeline;
use super::fft::{FftKernels, Hooks, Passes, TwoPass, grid, with_two_pass};
use super::{GpuContext, GpuError};
use crate::dsp::cwt::{self, CwtError, PaintSpec, Quantity};

#[derive(Debug, thiserror::Error)]
pub enum GpuCwtError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Cwt(#[from] CwtError),
    #[error("{0}")]
    TooLarge(String),
}

/// The upload belt's smallest buffers (larger uploads get buffers of their size, reused).
const UPLOAD_CHUNK: u64 = 8 << 20;

/// Signals uploaded, mean removed, padded and transformed: `[channel][M]` spectra.
pub struct Spectra {
    pub channels: usize,
    pub n: usize,
    pub m: usize,
    buffer: wgpu::Buffer,
}

/// Rows computed and on their way back to the host (`CwtKernels::finish`).
pub struct PendingRows {
    staging: wgpu::Buffer,
    bytes: u64,
    submission: wgpu::SubmissionIndex,
}

/// A scalogram painted on the device: the texture (channels x scales rows, smallest scale of
/// the first channel at the top) and the values behind each pixel.
pub struct Painted {
    pub texture: wgpu::Texture,
    pub width: usize,
    pub height: usize,
    values: wgpu::Buffer,
    qmax: wgpu::Buffer,
    /// Holds the canvas (texture and values) against reuse while this image lives.
    _held: Arc<()>,
}

/// A texture and the values behind its pixels, kept for the next image of its size once no
/// `Painted` holds it: a new texture's first use (wgpu clears it) cost 0.25 ms of a 0.9 ms
/// recompute on the H100. Its view and channels' tops are kept with it, so that the next
/// image's bind groups are too.
struct Canvas {
    texture: wgpu::Texture,
    view: wgpu::TextureView,
    values: wgpu::Buffer,
    qmax: wgpu::Buffer,
    /// Width, height and channels.
    shape: (usize, usize, usize),
    held: Arc<()>,
}

impl Canvas {
    fn free(&self) -> bool {
        Arc::strong_count(&self.held) == 1
    }
}

impl Painted {
    /// The shown value at pixel (x, row), read back alone: four bytes for a hover.
    pub fn value_at(&self, ctx: &GpuContext, x: usize, row: usize) -> Result<f32, GpuError> {
        let at = ((row * self.width + x.min(self.width - 1)) * 4) as u64;
        let v = ctx.read_back_range(&self.values, at, 4)?;
        Ok(f32::from_le_bytes([v[0], v[1], v[2], v[3]]))
    }

    /// Each channel's top (the shown value of its largest mean power), as the colour ranges
    /// use them (`PaintSpec::range`): a few bytes read back.
    pub fn tops(&self, ctx: &GpuContext, spec: &PaintSpec) -> Result<Vec<f32>, GpuError> {
        let bytes = ctx.read_back(&self.qmax, self.qmax.size())?;
        Ok(bytemuck::cast_slice::<u8, f32>(&bytes)
            .iter()
            .map(|&q| cwt::display_value(q as f64, 1.0, spec.quantity, false) as f32)
            .collect())
    }

    /// Every pixel's shown value, read back (an export of what is shown).
    pub fn values(&self, ctx: &GpuContext) -> Result<Vec<f32>, GpuError> {
        let bytes = ctx.read_back(&self.values, (self.width * self.height * 4) as u64)?;
        Ok(bytemuck::cast_slice::<u8, f32>(&bytes).to_vec())
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    m: u32,
    scales: u32,
    half: u32,
    c0: u32,
    j0: u32,
    sj: u32,
    rows: u32,
    width: u32,
    quantity: u32,
    per_scale: u32,
    first: u32,
    block: u32,
    count: u32,
    blocks: u32,
    range_db: f32,
    pad0: f32,
    per_trace: u32,
    channels: u32,
    /// 1 where pass 2 of the inverse FFTs sums blocks itself (`run_tiles`).
    sum_blocks: u32,
    /// 1 where rows of narrow daughters take the one-pass inverse FFT (`run_tiles`).
    direct: u32,
    /// 1 for rows computed at every `m / p`-th sample from bin `k_lo` (`decimated`).
    decimated: u32,
    k_lo: u32,
    p: u32,
    /// `decimated_sums`' chunks a row.
    chunks: u32,
    /// `windowed_sums`' reach (samples) and samples a block.
    reach: u32,
    taps: u32,
    pad: u32,
}

/// A block of rows computed together: channels `c0..c0 + channels`, scales `j0..j0 + sj`.
#[derive(Debug, Clone, Copy)]
struct Tile {
    c0: usize,
    channels: usize,
    j0: usize,
    sj: usize,
}

impl Tile {
    fn rows(&self) -> usize {
        self.channels * self.sj
    }

    /// The params every kernel of this tile of `w` over `sp` reads.
    fn params(&self, sp: &Spectra, w: &Wavelet) -> Params {
        Params {
            n: sp.n as u32,
            m: sp.m as u32,
            scales: w.scales.len() as u32,
            half: (sp.m / 2 + 1) as u32,
            c0: self.c0 as u32,
            j0: self.j0 as u32,
            sj: self.sj as u32,
            rows: self.rows() as u32,
            ..Default::default()
        }
    }
}

/// Samples `first..first + count` of each row in blocks of `block` (the last may be shorter).
#[derive(Debug, Clone, Copy)]
struct Blocks {
    first: usize,
    count: usize,
    block: usize,
}

impl Blocks {
    fn blocks(&self) -> usize {
        self.count.div_ceil(self.block)
    }

    fn samples(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.count
    }

    /// `params` with the blocks' fields set.
    fn set(&self, params: &mut Params) {
        params.first = self.first as u32;
        params.count = self.count as u32;
        params.block = self.block as u32;
        params.blocks = self.blocks() as u32;
    }
}

/// Pass 2's workgroups a row (M / TILE) where the inverse FFTs of rows of `m` values can sum
/// `count` samples in blocks of `block` themselves (`pass2_tile`, shaders/cwt.wgsl), leaving a
/// partial sum per workgroup and block that `block_sums` adds up: each workgroup must hold
/// values of one row only, and the partial sums must be few beside the |W|^2 values they keep
/// from memory. At least 8 values a partial sum, which also keeps a row's blocks within one
/// workgroup's threads (TILE / 8 = 256) and the partial sums within the tile's buffers.
pub fn fused_block_workgroups(m: usize, count: usize, block: usize) -> Option<usize> {
    let per_row = TwoPass::row_workgroups(m)?;
    (block > 0 && per_row * count.div_ceil(block) * 8 <= count).then_some(per_row)
}

/// What `rows_start` computes per row.
#[derive(Debug, Clone, Copy)]
enum RowOutput {
    Magnitude,
    BlockPower(Blocks),
}

/// The wavelet parameters of one run, checked.
struct Wavelet {
    dt: f64,
    scales: Vec<f64>,
    omega0: f64,
}

impl Wavelet {
    /// Each scale's (s dw, the daughter's norm / M) for rows of `m` values.
    fn daughters(&self, m: usize) -> Vec<[f32; 2]> {
        let dw = 2.0 * std::f64::consts::PI / (m as f64 * self.dt);
        let norm = |sc| cwt::daughter_norm(sc, self.dt) / m as f64;
        (self.scales.iter())
            .map(|&sc| [(sc * dw) as f32, norm(sc) as f32])
            .collect()
    }

    /// shaders/cwt.wgsl's `wavelet`: (s dw, norm / M, omega0, s) a scale.
    fn for_gpu(&self, m: usize) -> Vec<[f32; 4]> {
        (self.daughters(m).into_iter().zip(&self.scales))
            .map(|([x, norm], &sc)| [x, norm, self.omega0 as f32, sc as f32])
            .collect()
    }
}

/// The buffers reused from call to call (`CwtKernels::reused`).
#[derive(Clone, Copy)]
enum Slot {
    /// The samples as uploaded.
    Upload,
    /// Spectra given back by `recycle`.
    Spectra,
    /// The forward FFT's other buffer.
    Scratch,
    /// The inverse FFTs' two buffers; the coefficients end in one of them.
    CoefficientsA,
    CoefficientsB,
    /// Pass 2's partial block sums, or a stand-in for their binding.
    Partials,
}

impl Slot {
    fn label(self) -> &'static str {
        match self {
            Slot::Upload => "cwt samples",
            Slot::Spectra => "cwt spectra",
            Slot::Scratch => "cwt spectra scratch",
            Slot::CoefficientsA => "cwt coefficients a",
            Slot::CoefficientsB => "cwt coefficients b",
            Slot::Partials => "cwt partial block sums",
        }
    }
}

pub struct CwtKernels {
    ctx: GpuContext,
    fft: FftKernels,
    /// The multiply and inverse FFT in two passes (rows of up to 2^22 values).
    two_pass: TwoPass,
    load: wgpu::ComputePipeline,
    multiply: wgpu::ComputePipeline,
    to_power: wgpu::ComputePipeline,
    magnitude: wgpu::ComputePipeline,
    columns: wgpu::ComputePipeline,
    paint: wgpu::ComputePipeline,
    block_power: wgpu::ComputePipeline,
    block_sums: wgpu::ComputePipeline,
    decimated_sums: wgpu::ComputePipeline,
    windowed_sums: wgpu::ComputePipeline,
    /// Mapped buffers the signals are uploaded through, reused.
    belt: wgpu::util::StagingBelt,
    /// The last `upload_ring`.
    ring: Option<Arc<UploadRing>>,
    /// `decimated`'s tables of block weights.
    kappas: decimated::Tables,
    /// Buffers kept for the next call while big enough, by `Slot`.
    buffers: [Option<wgpu::Buffer>; 6],
    /// Textures and values of painted images, reused (`canvas`).
    canvases: Vec<Canvas>,
    /// The last wavelet parameters (`Wavelet::for_gpu`) and colour map, on the device.
    wavelet: Option<(Vec<[f32; 4]>, wgpu::Buffer)>,
    lut: Option<([u32; 256], wgpu::Buffer)>,
    /// The dispatches' bind groups, kept while each call uses them: with the buffers reused
    /// and the wavelet rewritten in place, a recompute makes none.
    binds: RefCell<Binds>,
    /// Largest buffer one tile may use; the device's binding limit unless a test lowers it.
    pub max_buffer_bytes: u64,
    /// Whether band power is summed in the inverse FFT's second pass where the shape allows
    /// (`fused_block_workgroups`); tests turn it off to reach the |W|^2 rows and
    /// `block_power` that other shapes take.
    pub fuse_block_sums: bool,
    /// Whether rows whose daughter's band fits a workgroup take the one-pass inverse FFT
    /// (fft_pass.wgsl's `pass_direct`); tests turn it off to compare.
    pub direct_rows: bool,
    /// Whether band power of scales whose band is narrow enough is computed from |W|^2 at
    /// every D-th sample (`decimated`); tests turn it off to compare.
    pub decimate_block_power: bool,
    /// Whether decimated rows' blocks take only the samples near them, through weights smooth
    /// across the bins where |W|^2 is zero (`windowed_sums`); tests turn it off to compare.
    pub window_block_sums: bool,
}

impl CwtKernels {
    /// The kernels `prepare` compiled ahead, else compiled now.
    pub fn new(ctx: &GpuContext) -> Self {
        ctx.take_prepared().unwrap_or_else(|| Self::compile(ctx))
    }

    /// Compiles every pipeline (and saves them to the disk cache).
    pub fn compile(ctx: &GpuContext) -> Self {
        let dev = &ctx.device;
        let module = ctx.trusted_shader(
            "cwt",
            with_two_pass(include_str!("../../../shaders/cwt.wgsl")),
        );
        let pipeline = |entry_point| compute_pipeline(ctx, &module, entry_point);
        let limits = dev.limits();
        let kernels = CwtKernels {
            ctx: ctx.clone(),
            fft: FftKernels::new(ctx),
            two_pass: TwoPass::with_direct(ctx, &module),
            load: pipeline("load"),
            multiply: pipeline("multiply"),
            to_power: pipeline("to_power"),
            magnitude: pipeline("magnitude"),
            columns: pipeline("columns"),
            paint: pipeline("paint"),
            block_power: pipeline("block_power"),
            block_sums: pipeline("block_sums"),
            decimated_sums: pipeline("decimated_sums"),
            windowed_sums: pipeline("windowed_sums"),
            kappas: HashMap::new(),
            belt: wgpu::util::StagingBelt::new(dev.clone(), UPLOAD_CHUNK),
            ring: None,
            buffers: Default::default(),
            canvases: Vec::new(),
            wavelet: None,
            lut: None,
            binds: RefCell::default(),
            max_buffer_bytes: limits
                .max_storage_buffer_binding_size
                .min(limits.max_buffer_size),
            fuse_block_sums: true,
            direct_rows: true,
            decimate_block_power: true,
            window_block_sums: true,
        };
        ctx.save_pipelines();
        kernels
    }

    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// The FFTs it runs (tests reach the stage kernels through `two_pass_up_to`).
    pub fn fft(&mut self) -> &mut FftKernels {
        &mut self.fft
    }

    fn storage(&self, label: &str, bytes: u64, extra: wgpu::BufferUsages) -> wgpu::Buffer {
        self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes.max(4),
            usage: wgpu::BufferUsages::STORAGE | extra,
            mapped_at_creation: false,
        })
    }

    fn init(&self, label: &str, contents: &[u8], usage: wgpu::BufferUsages) -> wgpu::Buffer {
        self.ctx
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage,
            })
    }

    /// One dispatch of `pipeline` over `(threads, rows)` (`grid`).
    fn dispatch(
        &self,
        enc: &mut wgpu::CommandEncoder,
        pipeline: &wgpu::ComputePipeline,
        params: &Params,
        buffers: &[(u32, &wgpu::Buffer)],
        texture: Option<&wgpu::TextureView>,
        (threads, rows): (usize, usize),
    ) {
        let groups = grid(threads, rows);
        self.dispatch_groups(enc, pipeline, params, buffers, texture, groups);
    }

    fn dispatch_groups(
        &self,
        enc: &mut wgpu::CommandEncoder,
        pipeline: &wgpu::ComputePipeline,
        params: &Params,
        buffers: &[(u32, &wgpu::Buffer)],
        texture: Option<&wgpu::TextureView>,
        (x, y, z): (u32, u32, u32),
    ) {
        let bound = Bound {
            uniforms: &[(0, bytemuck::bytes_of(params))],
            buffers,
            view: texture.map(|view| (14, view)),
        };
        let bind = self.binds.borrow_mut().bound(&self.ctx, pipeline, bound);
        // Timed passes (`EDE_GPU_PROFILE`) are told apart by their label.
        let named = [
            (&self.decimated_sums, "cwt decimated sums"),
            (&self.windowed_sums, "cwt windowed sums"),
            (&self.columns, "cwt pixel columns"),
            (&self.paint, "cwt paint"),
        ];
        let label = (named.iter())
            .find(|(p, _)| std::ptr::eq(pipeline, *p))
            .map_or("cwt", |&(_, label)| label);
        let mut pass = self.ctx.pass(enc, label);
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(x, y, z);
    }

    /// The storage buffer kept in `slot`, with `usage` besides (`GpuContext::kept_buffer`).
    fn reused(&mut self, slot: Slot, bytes: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
        let kept = &mut self.buffers[slot as usize];
        let usage = wgpu::BufferUsages::STORAGE | usage;
        self.ctx.kept_buffer(kept, slot.label(), bytes, usage)
    }

    /// The wavelet's parameters for rows of `m` values (`Wavelet::for_gpu`) on the device:
    /// the buffer of the last ones, rewritten in place where they changed, so that its bind
    /// groups stay. The write takes effect at the next submit, after all work submitted
    /// before, and every call submits its work before it returns: no recorded dispatch sees
    /// another call's wavelet.
    fn wavelet_buffer(&mut self, w: &Wavelet, m: usize) -> wgpu::Buffer {
        let daughters = w.for_gpu(m);
        let bytes: &[u8] = bytemuck::cast_slice(&daughters);
        let buffer = match self.wavelet.take() {
            Some((kept, buffer)) if kept == daughters => buffer,
            Some((_, buffer)) if buffer.size() >= bytes.len() as u64 => {
                self.ctx.queue.write_buffer(&buffer, 0, bytes);
                buffer
            }
            _ => {
                let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
                self.init("cwt wavelet", bytes, usage)
            }
        };
        self.wavelet = Some((daughters, buffer.clone()));
        buffer
    }

    /// Tiles of rows of scales `range` that fit one buffer: whole channels when a channel's
    /// scales fit.
    fn tiles(
        &self,
        channels: usize,
        range: std::ops::Range<usize>,
        m: usize,
    ) -> Result<Vec<Tile>, GpuCwtError> {
        let (first, scales) = (range.start, range.len());
        let row_bytes = (m * 8) as u64;
        let max_rows = (self.max_buffer_bytes / row_bytes) as usize;
        if max_rows == 0 {
            return Err(GpuCwtError::TooLarge(format!(
                "one row of {m} complex values is larger than this device's buffers"
            )));
        }
        let mut tiles = Vec::new();
        if scales <= max_rows {
            let per = (max_rows / scales).max(1);
            for c0 in (0..channels).step_by(per) {
                tiles.push(Tile {
                    c0,
                    channels: per.min(channels - c0),
                    j0: first,
                    sj: scales,
                });
            }
        } else {
            for c0 in 0..channels {
                for j0 in (0..scales).step_by(max_rows) {
                    tiles.push(Tile {
                        c0,
                        channels: 1,
                        j0: first + j0,
                        sj: max_rows.min(scales - j0),
                    });
                }
            }
        }
        Ok(tiles)
    }

    fn wavelet(dt: f64, scales: &[f64], omega0: f64) -> Result<Wavelet, CwtError> {
        if scales.is_empty() || scales.len() > cwt::MAX_SCALES {
            return Err(CwtError::Scales(format!(
                "1 to {} scales are needed, got {}",
                cwt::MAX_SCALES,
                scales.len()
            )));
        }
        Ok(Wavelet {
            dt,
            scales: scales.to_vec(),
            omega0,
        })
    }

    /// Pass 2's workgroups a row where it sums `blocks` itself for rows of `m` values
    /// (`fused_block_workgroups`); none where there are no blocks, or the rows take the stage
    /// kernels or a test turned it off.
    fn fused_workgroups(&self, m: usize, blocks: Option<Blocks>) -> Option<usize> {
        let spec = blocks.filter(|_| self.fuse_block_sums && self.fft.two_passes(m))?;
        fused_block_workgroups(m, spec.count, spec.block)
    }

    /// Records the multiply and the inverse FFTs of `shape` (length, rows) in two passes
    /// (fft_pass.wgsl) with `params`, from the spectra through the daughters into pass 2's
    /// output, `[spectra, daughters, partials, intermediate, output]`; pass 2 writes the
    /// values `keep` of each row; `passes` says which passes (`pass_direct` where `params.direct`).
    fn two_passes(
        &self,
        enc: &mut wgpu::CommandEncoder,
        params: &Params,
        [spectra, daughters, partials, inter, out]: [&wgpu::Buffer; 5],
        shape: (usize, usize),
        keep: std::ops::Range<usize>,
        passes: Passes,
    ) {
        let with = Hooks {
            uniforms: &[(0, bytemuck::bytes_of(params))],
            input: &[(4, spectra), (5, daughters)],
            hook: &[(5, daughters), (17, partials)],
        };
        let binds = &mut self.binds.borrow_mut();
        let buffers = (inter, out);
        (self.two_pass).encode(
            &self.ctx, binds, enc, with, buffers, shape, true, keep, passes,
        );
    }

    /// Records, for every tile, the multiply and inverse FFTs, then `each(encoder, tile, rows,
    /// base params)` to use the coefficients' squared magnitudes (`[rows][M]` f32, all their
    /// uses read), of which only the samples of `blocks` (all without) are sure to be written.
    /// With `blocks`, the params carry them, and where pass 2 sums them itself
    /// (`params.sum_blocks` is 1) `rows` holds its partial sums (`[rows][M / TILE][blocks]`
    /// f32) instead: no |W|^2 row is written. Only the rows of scales `range` are computed.
    fn run_tiles(
        &mut self,
        enc: &mut wgpu::CommandEncoder,
        sp: &Spectra,
        w: &Wavelet,
        range: std::ops::Range<usize>,
        blocks: Option<Blocks>,
        mut each: impl FnMut(&Self, &mut wgpu::CommandEncoder, Tile, &wgpu::Buffer, Params),
    ) -> Result<(), GpuCwtError> {
        let m = sp.m;
        let wavelet = self.wavelet_buffer(w, m);
        let tiles = self.tiles(sp.channels, range, m)?;
        let most = tiles.iter().map(Tile::rows).max().unwrap_or(0);
        let bytes = (most * m * 8) as u64;
        let a = self.reused(Slot::CoefficientsA, bytes, wgpu::BufferUsages::empty());
        let b = self.reused(Slot::CoefficientsB, bytes, wgpu::BufferUsages::empty());
        let per_row = self.fused_workgroups(m, blocks);
        // Pass 2's partial sums (an eighth of a tile's |W|^2 at most), or a stand-in: its
        // pipeline binds them either way.
        let partial_bytes = match (per_row, blocks) {
            (Some(workgroups), Some(spec)) => (most * workgroups * spec.blocks() * 4) as u64,
            _ => 4,
        };
        let partials = self.reused(Slot::Partials, partial_bytes, wgpu::BufferUsages::empty());
        for tile in tiles {
            let mut params = Params {
                sum_blocks: per_row.is_some() as u32,
                direct: (self.direct_rows && TwoPass::row_workgroups(m).is_some()) as u32,
                ..tile.params(sp, w)
            };
            if let Some(spec) = blocks {
                spec.set(&mut params);
            }
            // The multiply and inverse FFT: two passes, or a pass each, one per stage and
            // one for |W|^2.
            let rows = if self.fft.two_passes(m) {
                // Pass 2 writes |W|^2 of the samples read next; summing blocks, none.
                let keep = match (per_row, blocks) {
                    (Some(_), _) => 0..0,
                    (None, Some(spec)) => spec.samples(),
                    (None, None) => 0..sp.n,
                };
                let buffers = [&sp.buffer, &wavelet, &partials, &b, &a];
                let passes = TwoPass::passes(m, params.direct == 1);
                self.two_passes(enc, &params, buffers, (m, tile.rows()), keep, passes);
                if per_row.is_some() { &partials } else { &a }
            } else {
                self.dispatch(
                    enc,
                    &self.multiply,
                    &params,
                    &[(4, &sp.buffer), (5, &wavelet), (6, &a)],
                    None,
                    (m, tile.rows()),
                );
                let (w, w2) = match self.fft.encode(enc, &a, &b, m, tile.rows(), true) {
                    true => (&b, &a),
                    false => (&a, &b),
                };
                self.dispatch(
                    enc,
                    &self.to_power,
                    &params,
                    &[(6, w), (24, w2)],
                    None,
                    (sp.n, tile.rows()),
                );
                w2
            };
            each(self, enc, tile, rows, params);
        }
        Ok(())
    }

    /// |W|, `[channel][scale][n]`, read back.
    pub fn magnitude(
        &mut self,
        sp: &Spectra,
        dt: f64,
        scales: &[f64],
        omega0: f64,
    ) -> Result<Vec<f32>, GpuCwtError> {
        let w = Self::wavelet(dt, scales, omega0)?;
        let pending = self.rows_start(sp, &w, RowOutput::Magnitude)?;
        self.finish(pending)
    }

    /// Mean |W|^2 over blocks of `block` samples of `range`, `[channel][scale][block]` (the
    /// last block may be shorter), read back.
    pub fn block_power(
        &mut self,
        sp: &Spectra,
        dt: f64,
        scales: &[f64],
        omega0: f64,
        range: std::ops::Range<usize>,
        block: usize,
    ) -> Result<Vec<f32>, GpuCwtError> {
        let pending = self.block_power_start(sp, dt, scales, omega0, range, block)?;
        self.finish(pending)
    }

    /// `block_power` submitted, its values to come from `finish`: the host can prepare the
    /// next piece while the GPU computes this one.
    pub fn block_power_start(
        &mut self,
        sp: &Spectra,
        dt: f64,
        scales: &[f64],
        omega0: f64,
        range: std::ops::Range<usize>,
        block: usize,
    ) -> Result<PendingRows, GpuCwtError> {
        assert!(block > 0 && range.end <= sp.n);
        let w = Self::wavelet(dt, scales, omega0)?;
        let blocks = Blocks {
            first: range.start,
            count: range.len(),
            block,
        };
        self.rows_start(sp, &w, RowOutput::BlockPower(blocks))
    }

    /// Runs `output` on every tile's coefficients and gathers the rows (`width` values each:
    /// the samples, or the blocks) into `[channel][scale][width]` in a buffer the host reads
    /// (`finish`).
    fn rows_start(
        &mut self,
        sp: &Spectra,
        w: &Wavelet,
        output: RowOutput,
    ) -> Result<PendingRows, GpuCwtError> {
        let (width, blocks) = match output {
            RowOutput::Magnitude => (sp.n, None),
            RowOutput::BlockPower(b) => (b.blocks(), Some(b)),
        };
        let s = w.scales.len();
        let row_bytes = (width * 4) as u64;
        let bytes = (sp.channels * s) as u64 * row_bytes;
        let ctx = self.ctx.clone();
        let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("cwt rows"),
            size: bytes.max(4),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        // Scales 0..full at every sample, the rest decimated.
        let plan = match blocks {
            Some(_) if self.decimate_block_power => decimated::plan(sp.m, w),
            _ => decimated::Plan::full(s),
        };
        let submission = ctx.guarded(|| -> Result<_, GpuCwtError> {
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            // Block power goes straight to its place among all rows (`out_row` in
            // shaders/cwt.wgsl), copied back at once: copying each tile's channels one by one
            // cost the batch scalogram 1.5 ms of recording a segment (64 copies a group of
            // scales). |W| goes through a buffer a tile.
            let rows_out =
                |k: &Self, bytes| k.storage("cwt rows", bytes, wgpu::BufferUsages::COPY_SRC);
            let whole = blocks.map(|_| rows_out(self, bytes));
            let mut each = |k: &Self,
                            enc: &mut wgpu::CommandEncoder,
                            tile: Tile,
                            rows: &wgpu::Buffer,
                            params: Params| {
                // From |W|^2 (binding 7), or from partial block sums (17): pass 2's or
                // `decimated_sums`'.
                let partial = params.sum_blocks | params.decimated;
                let (pipeline, input) = match (output, partial) {
                    (RowOutput::Magnitude, _) => (&k.magnitude, 7),
                    (RowOutput::BlockPower(_), 0) => (&k.block_power, 7),
                    (RowOutput::BlockPower(_), _) => (&k.block_sums, 17),
                };
                let (threads, rows_here) = (width, tile.rows());
                if let Some(whole) = &whole {
                    let buffers = [(input, rows), (16, whole)];
                    k.dispatch(enc, pipeline, &params, &buffers, None, (threads, rows_here));
                    return;
                }
                let part = rows_out(k, tile.rows() as u64 * row_bytes);
                let buffers = [(input, rows), (8, &part)];
                k.dispatch(enc, pipeline, &params, &buffers, None, (threads, rows_here));
                // Rows of one channel are contiguous in the output for either tile shape.
                for c in 0..tile.channels {
                    let from = (c * tile.sj) as u64 * row_bytes;
                    let to = ((tile.c0 + c) * s + tile.j0) as u64 * row_bytes;
                    let len = tile.sj as u64 * row_bytes;
                    enc.copy_buffer_to_buffer(&part, from, &staging, to, len);
                }
            };
            if plan.full > 0 {
                self.run_tiles(&mut enc, sp, w, 0..plan.full, blocks, &mut each)?;
            }
            if let Some(spec) = blocks {
                for group in &plan.groups {
                    self.run_decimated(&mut enc, sp, w, group, spec, &mut each)?;
                }
            }
            if let Some(whole) = &whole {
                enc.copy_buffer_to_buffer(whole, 0, &staging, 0, bytes);
            }
            self.binds.borrow_mut().end_call();
            Ok(ctx.queue.submit([enc.finish()]))
        })??;
        Ok(PendingRows {
            staging,
            bytes,
            submission,
        })
    }

    /// The rows of `pending`, once the GPU has computed them (work submitted after them may go
    /// on meanwhile).
    pub fn finish(&self, pending: PendingRows) -> Result<Vec<f32>, GpuCwtError> {
        let PendingRows {
            staging,
            bytes,
            submission,
        } = pending;
        let rows = self
            .ctx
            .with_mapped(&staging, bytes, Some(submission), |data| {
                bytemuck::cast_slice::<u8, f32>(data).to_vec()
            })?;
        Ok(rows)
    }

    /// Paints the scalogram of `sp` into a new texture of `spec.width` x (channels x scales)
    /// pixels with the colour map `lut` (RGBA8, r in the low byte). Nothing is read back.
    pub fn paint(
        &mut self,
        sp: &Spectra,
        dt: f64,
        scales: &[f64],
        omega0: f64,
        spec: &PaintSpec,
        lut: &[u32; 256],
    ) -> Result<Painted, GpuCwtError> {
        let w = Self::wavelet(dt, scales, omega0)?;
        let width = spec.width.clamp(1, sp.n);
        let height = sp.channels * scales.len();
        let max_dim = self.ctx.device.limits().max_texture_dimension_2d as usize;
        if width > max_dim || height > max_dim {
            return Err(GpuCwtError::TooLarge(format!(
                "a scalogram of {width} x {height} pixels is larger than this device's textures \
                 ({max_dim}): show fewer channels or scales"
            )));
        }
        let ctx = self.ctx.clone();
        let painted = ctx.guarded(|| -> Result<Painted, GpuCwtError> {
            let lut_buf = self.lut_buffer(lut);
            let canvas = self.canvas(width, height, sp.channels);
            let texture = canvas.texture.clone();
            let (values, qmax) = (canvas.values.clone(), canvas.qmax.clone());
            let (view, held) = (canvas.view.clone(), canvas.held.clone());
            let look = |mut p: Params| {
                p.width = width as u32;
                p.quantity = match spec.quantity {
                    Quantity::Magnitude => 0,
                    Quantity::Power => 1,
                    Quantity::Db => 2,
                };
                p.per_scale = spec.per_scale as u32;
                p.range_db = spec.range_db;
                p.per_trace = spec.per_trace as u32;
                p.channels = sp.channels as u32;
                p
            };
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            enc.clear_buffer(&qmax, 0, None);
            let mut last = Params::default();
            let all = 0..w.scales.len();
            self.run_tiles(&mut enc, sp, &w, all, None, |k, enc, tile, w2, params| {
                let params = look(params);
                // The wavelet run_tiles has just written (`wavelet_buffer`).
                let wavelet = &k.wavelet.as_ref().expect("run_tiles wrote the wavelet").1;
                k.dispatch(
                    enc,
                    &k.columns,
                    &params,
                    &[(5, wavelet), (7, w2), (10, &values), (11, &qmax)],
                    None,
                    (width, tile.rows()),
                );
                last = params;
            })?;
            let mut params = look(last);
            params.rows = height as u32;
            self.dispatch(
                &mut enc,
                &self.paint,
                &params,
                &[(12, &values), (13, &lut_buf), (15, &qmax)],
                Some(&view),
                (width, height),
            );
            ctx.queue.submit([enc.finish()]);
            self.binds.borrow_mut().end_call();
            Ok(Painted {
                texture,
                width,
                height,
                values,
                qmax,
                _held: held,
            })
        })??;
        Ok(painted)
    }

    /// `lut` on the device: the last colour map's buffer, a new one when the map changed.
    fn lut_buffer(&mut self, lut: &[u32; 256]) -> wgpu::Buffer {
        match &self.lut {
            Some((kept, buffer)) if kept == lut => buffer.clone(),
            _ => {
                let buffer = self.init(
                    "lut",
                    bytemuck::cast_slice(lut),
                    wgpu::BufferUsages::STORAGE,
                );
                self.lut = Some((*lut, buffer.clone()));
                buffer
            }
        }
    }

    /// A canvas of `width` x `height` (for `channels`' tops) no image holds, made if there is
    /// none; free canvases of other shapes are let go.
    fn canvas(&mut self, width: usize, height: usize, channels: usize) -> &Canvas {
        let shape = (width, height, channels);
        self.canvases.retain(|c| !c.free() || c.shape == shape);
        let found = (self.canvases.iter()).position(|c| c.free() && c.shape == shape);
        let at = match found {
            Some(at) => at,
            None => {
                let texture = self.ctx.device.create_texture(&wgpu::TextureDescriptor {
                    label: Some("scalogram"),
                    size: wgpu::Extent3d {
                        width: width as u32,
                        height: height as u32,
                        depth_or_array_layers: 1,
                    },
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format: wgpu::TextureFormat::Rgba8Unorm,
                    usage: wgpu::TextureUsages::STORAGE_BINDING
                        | wgpu::TextureUsages::TEXTURE_BINDING
                        | wgpu::TextureUsages::COPY_SRC,
                    view_formats: &[],
                });
                let bytes = (height * width * 4) as u64;
                let values = self.storage("scalogram values", bytes, wgpu::BufferUsages::COPY_SRC);
                let usage = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
                let qmax = self.storage("scalogram tops", 4 * channels as u64, usage);
                self.canvases.push(Canvas {
                    view: texture.create_view(&Default::default()),
                    texture,
                    values,
                    qmax,
                    shape,
                    held: Arc::new(()),
                });
                self.canvases.len() - 1
            }
        };
        &self.canvases[at]
    }

    /// The texture's pixels read back (tests; the app never does this).
    pub fn read_texture(&self, painted: &Painted) -> Result<Vec<[u8; 4]>, GpuError> {
        let (w, h) = (painted.width as u32, painted.height as u32);
        let row = (w * 4).div_ceil(256) * 256;
        let buf = self.storage(
            "texture read",
            (row * h) as u64,
            wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        );
        let mut enc = self.ctx.device.create_command_encoder(&Default::default());
        enc.copy_texture_to_buffer(
            painted.texture.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: &buf,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(row),
                    rows_per_image: Some(h),
                },
            },
            wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
        );
        self.ctx.queue.submit([enc.finish()]);
        let bytes = self.ctx.read_back(&buf, (row * h) as u64)?;
        Ok((0..h as usize)
            .flat_map(|y| {
                let line = &bytes[y * row as usize..][..w as usize * 4];
                line.chunks(4)
                    .map(|c| [c[0], c[1], c[2], c[3]])
                    .collect::<Vec<_>>()
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::fused_block_workgroups;

    /// The batch benchmark's segments (2^17 samples, cores of 105600 and, the last, 57600
    /// samples in 1-s blocks of 1600) sum blocks in pass 2; rows shorter than a workgroup's
    /// tile, blocks too short for their partial sums to pay and rows too long for the two
    /// passes do not.
    #[test]
    fn which_shapes_sum_blocks_in_pass_2() {
        assert_eq!(fused_block_workgroups(1 << 17, 105_600, 1600), Some(64));
        assert_eq!(fused_block_workgroups(1 << 17, 57_600, 1600), Some(64));
        assert_eq!(fused_block_workgroups(2048, 2048, 128), Some(1));
        assert_eq!(fused_block_workgroups(1024, 1000, 128), None);
        assert_eq!(fused_block_workgroups(1 << 17, 105_600, 256), None);
        assert_eq!(fused_block_workgroups(1 << 23, 1 << 22, 1 << 20), None);
        assert_eq!(fused_block_workgroups(4096, 2944, 0), None);
    }
}
