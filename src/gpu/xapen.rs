//! Cross-ApEn on the GPU (shaders/xapen.wgsl): every ordered pair of every epoch in one
//! dispatch per chunk of epochs. The CPU normalizes (f64, so both sides see the same f32
//! samples); the GPU sorts each series, counts, reduces per pair and averages over epochs.
//! A `Prepared` chunk stays on the device, so a new r or correction reruns only the count.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use eframe::wgpu;

use super::context::entry;
use super::{GpuContext, GpuError};
use crate::dsp::xapen::{
    Cancel, Correction, Epochs, XapenError, XapenMatrices, XapenParams, mean_of,
};

#[derive(Debug, thiserror::Error)]
pub enum GpuXapenError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Params(#[from] XapenError),
    #[error("{0} channels are more than one dispatch covers (at most 4096)")]
    TooManyChannels(usize),
    #[error(
        "one epoch of {channels} channels x {n} samples needs {bytes} bytes in one GPU buffer; \
         this device allows {limit}"
    )]
    TooLarge {
        channels: usize,
        n: usize,
        bytes: u64,
        limit: u64,
    },
}

/// What a batch run reads back besides the mean matrix.
#[derive(Debug, Clone, Copy, Default)]
pub struct Readback {
    pub per_epoch: bool,
    /// Per pair and epoch, the sums of N_i^m and N_i^{m+1} (for exactness checks).
    pub totals: bool,
}

/// The mean (and optional per-epoch) matrices, plus the count totals when asked for.
pub struct GpuXapenResult {
    pub matrices: XapenMatrices,
    /// `[epoch][u][v]` -> (sum of N_i^m, sum of N_i^{m+1}).
    pub totals: Option<Vec<[u32; 2]>>,
}

/// Pipelines for one device: those of the common case (m = 1, epochs of at most 1024
/// samples) built at once, the others when first needed.
pub struct XapenKernels {
    ctx: GpuContext,
    module: wgpu::ShaderModule,
    layout: wgpu::BindGroupLayout,
    pipeline_layout: wgpu::PipelineLayout,
    /// By entry point, window length m and whether v fits the workgroup cache.
    pipelines: HashMap<Kernel, wgpu::ComputePipeline>,
    /// Largest buffer a chunk may use; the device's limit unless a test lowers it.
    pub max_buffer_bytes: u64,
    /// The buffers of the last chunk `matrices` counted, for the next one of its shape.
    spare: Option<Prepared>,
    /// How m = 1 is counted: by the fastest structure that fits (the default), or another
    /// (for tests and the benchmark's comparison).
    pub m1_count: M1Count,
}

/// The ways of counting N^{m+1} at m = 1 (shaders/xapen.wgsl). Each falls back to the next
/// where series are too long for its structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum M1Count {
    /// Four dominance counts a window over stripes of 32 points (N <= 1024).
    Stripes,
    /// Two descents of a wavelet matrix a window (N up to about 1500).
    Wavelet,
    /// Each sample of v within r tested (any N).
    Candidates,
}

impl M1Count {
    /// The way that counts series of n samples when this one is asked for: itself where its
    /// structure fits, else the next that does.
    pub fn for_length(self, n: usize) -> M1Count {
        match self {
            M1Count::Stripes if stripes_fit(n) => M1Count::Stripes,
            M1Count::Stripes | M1Count::Wavelet if WaveletShape::fitting(n).is_some() => {
                M1Count::Wavelet
            }
            _ => M1Count::Candidates,
        }
    }
}

/// One chunk of epochs uploaded and sorted, with room for its results.
pub struct Prepared {
    pub n: usize,
    pub channels: usize,
    pub epochs: usize,
    planes: usize,
    /// The counting structure built for m = 1 (none: the candidate kernel counts).
    structure: Option<Structure>,
    params: wgpu::Buffer,
    /// The samples on their way up (mapped for writing between uses).
    staging: wgpu::Buffer,
    x: wgpu::Buffer,
    valid: wgpu::Buffer,
    ln_table: wgpu::Buffer,
    out: wgpu::Buffer,
    /// Per pair, N^m and N^{m+1} summed over its windows: written only by `count_with`
    /// asked for them.
    totals: wgpu::Buffer,
    /// `[u][v]` (sum, count) over the epochs counted so far.
    acc: wgpu::Buffer,
    bind: wgpu::BindGroup,
}

const WG: u32 = 256;
/// Longest series the sort kernel sorts in workgroup memory (`SORT` in the shader).
const SORT: usize = 1024;

/// An entry point of shaders/xapen.wgsl with its pipeline constants M and CACHED.
type Kernel = (&'static str, usize, bool);

/// What the common case runs, compiled when the kernels are made.
const EAGER: [Kernel; 4] = [
    ("sort", 1, false),
    ("stripes_build", 1, false),
    ("count_stripes", 1, false),
    ("accumulate", 1, false),
];
/// Floats of v the count kernel keeps in workgroup memory (`CACHE` in the shader).
const CACHE: usize = 4096;

/// A series' counting structure for m = 1 (see shaders/xapen.wgsl), stored after the sort's
/// order in the same buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Structure {
    Stripes,
    Wavelet(WaveletShape),
}

impl Structure {
    /// The structure `choice` counts series of n samples with at window length m, if any
    /// (none for m > 1: a chunk prepared for m counts m and below with the candidate kernel).
    fn for_series(n: usize, m: usize, choice: M1Count) -> Option<Self> {
        if m != 1 {
            return None;
        }
        match choice.for_length(n) {
            M1Count::Stripes => Some(Structure::Stripes),
            M1Count::Wavelet => WaveletShape::fitting(n).map(Structure::Wavelet),
            M1Count::Candidates => None,
        }
    }

    /// Words a series.
    fn words(self, n: usize) -> usize {
        match self {
            Structure::Stripes => structure_words(n),
            Structure::Wavelet(w) => w.levels * w.words,
        }
    }
}

/// The stripes' sets for series of n samples: S - 1 of n/16 + 1 words (`set_words` in the
/// shader).
fn set_words(n: usize) -> usize {
    (n.div_ceil(32) - 1) * (n / 16 + 1)
}

/// The sets and the S x 32 masks: what count_stripes keeps in workgroup memory
/// (`stripe_words` in the shader).
fn stripe_words(n: usize) -> usize {
    set_words(n) + 32 * n.div_ceil(32)
}

/// A series' words in `order`: the stripes and the lookup table's 2 + n (`structure_words`
/// in the shader).
fn structure_words(n: usize) -> usize {
    stripe_words(n) + n + 2
}

/// Whether count_stripes' cache holds the sets and masks, and then u's ranges or the
/// reduction's 4 x 256 sums; and stripes_build's scratch its three arrays of n and the sets'
/// bits (over the first two).
fn stripes_fit(n: usize) -> bool {
    (2..=SORT).contains(&n)
        && stripe_words(n) + n.max(4 * WG as usize) <= CACHE
        && set_words(n) <= 2 * n
        && 3 * n <= CACHE
}

/// u's a count_stripes workgroup counts against its v (`U` in the shader).
const STRIPES_U: u32 = 4;

/// Levels and words per level of a series' wavelet matrix (see shaders/xapen.wgsl).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct WaveletShape {
    levels: usize,
    words: usize,
}

impl WaveletShape {
    /// The shape for series of n samples, if count_wavelet's cache holds it: v's plane 0,
    /// u's ranges, the levels and their counts of zeros.
    fn fitting(n: usize) -> Option<Self> {
        if n < 2 {
            return None;
        }
        let levels = (usize::BITS - (n - 1).leading_zeros()) as usize;
        let words = n / 16 + 1;
        (2 * n + levels * (words + 1) <= CACHE).then_some(WaveletShape { levels, words })
    }
}

impl XapenKernels {
    /// The kernels `prepare` compiled ahead, else compiled now.
    pub fn new(ctx: &GpuContext) -> Self {
        ctx.take_prepared().unwrap_or_else(|| Self::compile(ctx))
    }

    /// Compiles the pipelines every subject uses (and saves them to the disk cache).
    pub fn compile(ctx: &GpuContext) -> Self {
        let dev = &ctx.device;
        let module = dev.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("xapen"),
            source: wgpu::ShaderSource::Wgsl(include_str!("../../shaders/xapen.wgsl").into()),
        });
        let storage = |binding, read_only| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let mut entries = vec![wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }];
        for (binding, read_only) in [
            (1, true),
            (2, true),
            (3, false),
            (4, false),
            (5, true),
            (6, false),
            (7, false),
            (8, false),
        ] {
            entries.push(storage(binding, read_only));
        }
        let layout = dev.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("xapen"),
            entries: &entries,
        });
        let pipeline_layout = dev.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("xapen"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let limits = dev.limits();
        // Compiled side by side: the driver's compiler takes tens of milliseconds a pipeline,
        // most of a first run's time.
        let pipelines = std::thread::scope(|scope| {
            let jobs = EAGER.map(|kernel| {
                let (module, layout) = (&module, &pipeline_layout);
                scope.spawn(move || (kernel, build(ctx, layout, module, kernel)))
            });
            jobs.map(|j| j.join().expect("pipeline compilation does not panic"))
        });
        ctx.save_pipelines();
        XapenKernels {
            ctx: ctx.clone(),
            module,
            layout,
            pipeline_layout,
            pipelines: pipelines.into_iter().collect(),
            max_buffer_bytes: limits
                .max_storage_buffer_binding_size
                .min(limits.max_buffer_size)
                .min(1 << 30),
            spare: None,
            m1_count: M1Count::Stripes,
        }
    }

    /// Frees the buffers kept for the next chunk when they are large (a whole night's
    /// blocks share a few GB): call when a job of several calls is done.
    pub fn trim_spare(&mut self) {
        if self
            .spare
            .as_ref()
            .is_some_and(|p| p.planes_bytes() > SPARE_BYTES)
        {
            self.spare = None;
        }
    }

    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    fn pipeline(&mut self, kernel: Kernel) -> wgpu::ComputePipeline {
        let (ctx, layout, module) = (&self.ctx, &self.pipeline_layout, &self.module);
        self.pipelines
            .entry(kernel)
            .or_insert_with(|| {
                let pipeline = build(ctx, layout, module, kernel);
                ctx.save_pipelines();
                pipeline
            })
            .clone()
    }

    /// How many epochs of `ep` fit one chunk for window length m.
    pub fn chunk_epochs(&self, ep: &Epochs, m: usize) -> Result<usize, GpuXapenError> {
        // The accumulation dispatches one thread per cell in 256-wide groups along x.
        if ep.channels > 4096 {
            return Err(GpuXapenError::TooManyChannels(ep.channels));
        }
        // The largest buffers: the planes, the matrices, or the order with the counting
        // structure (the stripes with their lookup table: about 4 N words a series).
        let structure = Structure::for_series(ep.n, m, self.m1_count).map_or(0, |s| s.words(ep.n));
        let per_epoch = (ep.channels * (m + 1) * ep.n * 4)
            .max(ep.channels * ep.channels * 8)
            .max(ep.channels * (ep.n + structure) * 4);
        let per_epoch = per_epoch as u64;
        if per_epoch > self.max_buffer_bytes {
            return Err(GpuXapenError::TooLarge {
                channels: ep.channels,
                n: ep.n,
                bytes: per_epoch,
                limit: self.max_buffer_bytes,
            });
        }
        Ok(((self.max_buffer_bytes / per_epoch) as usize).clamp(1, 65_535))
    }

    /// Uploads epochs `range` of `ep` and sorts every series on the device (for windows up to
    /// length m). The work is submitted, not waited for.
    pub fn prepare(
        &mut self,
        ep: &Epochs,
        range: Range<usize>,
        m: usize,
    ) -> Result<Prepared, GpuXapenError> {
        let ctx = self.ctx.clone();
        Ok(ctx.guarded(|| self.prepare_unguarded(ep, range, m))??)
    }

    fn prepare_unguarded(
        &mut self,
        ep: &Epochs,
        range: Range<usize>,
        m: usize,
    ) -> Result<Prepared, GpuError> {
        let (n, b, e) = (ep.n, ep.channels, range.len());
        let series = range.start * b..range.end * b;
        let x: &[u8] = bytemuck::cast_slice(&ep.data[series.start * n..series.end * n]);
        let valid: Vec<u32> = ep.valid[series].iter().map(|&v| v as u32).collect();
        // The last chunk's buffers when this one has its shape (the next block of a long
        // recording, the same subject again): allocating and first touching a few hundred MB
        // costs more than the sort.
        let prep = match self.spare.take() {
            Some(p)
                if (p.n, p.channels, p.epochs, p.planes, p.structure)
                    == (n, b, e, m + 1, Structure::for_series(n, m, self.m1_count)) =>
            {
                self.ctx.map(&p.staging, wgpu::MapMode::Write)?;
                p
            }
            _ => self.allocate(n, b, e, m + 1),
        };
        {
            let mut staging = (prep.staging.slice(..).get_mapped_range_mut())
                .map_err(|e| GpuError::Poll(e.to_string()))?;
            copy_upload(staging.slice(..), x);
        }
        prep.staging.unmap();
        self.ctx
            .queue
            .write_buffer(&prep.valid, 0, bytemuck::cast_slice(&valid));
        // r and the correction do not matter to the sort.
        prep.write_params(
            &self.ctx,
            &XapenParams {
                m,
                r: 0.0,
                correction: Correction::Max,
            },
            false,
        );
        let sort = if n <= SORT {
            (self.pipeline(("sort", 1, false)), 1)
        } else {
            (self.pipeline(("rank", 1, false)), (n as u32).div_ceil(WG))
        };
        let build_structure = prep.structure.map(|s| match s {
            Structure::Stripes => self.pipeline(("stripes_build", 1, false)),
            Structure::Wavelet(_) => self.pipeline(("wavelet_build", 1, false)),
        });
        let mut enc = self.ctx.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(&prep.staging, 0, &prep.x, 0, x.len() as u64);
        {
            let mut pass = self.ctx.pass(&mut enc, "xapen sort");
            pass.set_bind_group(0, &prep.bind, &[]);
            pass.set_pipeline(&sort.0);
            pass.dispatch_workgroups(sort.1, b as u32, e as u32);
        }
        if let Some(build) = &build_structure {
            let mut pass = self.ctx.pass(&mut enc, "xapen structure");
            pass.set_bind_group(0, &prep.bind, &[]);
            pass.set_pipeline(build);
            pass.dispatch_workgroups(1, b as u32, e as u32);
        }
        self.ctx.queue.submit([enc.finish()]);
        Ok(prep)
    }

    /// Buffers for e epochs of b series of n samples, `planes` planes each; the staging
    /// buffer of the samples comes mapped.
    fn allocate(&self, n: usize, b: usize, e: usize, planes: usize) -> Prepared {
        let dev = &self.ctx.device;
        let structure = Structure::for_series(n, planes - 1, self.m1_count);
        let buffer = |label, bytes: usize, usage| {
            dev.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.max(4) as u64,
                usage,
                mapped_at_creation: false,
            })
        };
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST;
        let empty = |label, bytes| buffer(label, bytes, storage);
        let params = buffer(
            "xapen params",
            PARAMS_BYTES as usize,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        );
        let staging = dev.create_buffer(&wgpu::BufferDescriptor {
            label: Some("xapen x staging"),
            size: (e * b * n * 4) as u64,
            usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: true,
        });
        let x = empty("xapen x", e * b * n * 4);
        let valid = empty("xapen valid", e * b * 4);
        let planes_b = empty("xapen planes", e * b * planes * n * 4);
        // The sort's order, then the counting structures.
        let structure_words = structure.map_or(0, |s| s.words(n));
        let order = empty("xapen order", e * b * (n + structure_words) * 4);
        let ln_table = empty("xapen ln", 2 * (n + 1) * 4);
        let out = empty("xapen out", e * b * b * 4);
        let totals = empty("xapen totals", e * b * b * 8);
        let acc = empty("xapen acc", b * b * 8);
        let bind = dev.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("xapen"),
            layout: &self.layout,
            entries: &[
                entry(0, &params),
                entry(1, &x),
                entry(2, &valid),
                entry(3, &planes_b),
                entry(4, &order),
                entry(5, &ln_table),
                entry(6, &out),
                entry(7, &totals),
                entry(8, &acc),
            ],
        });
        Prepared {
            n,
            channels: b,
            epochs: e,
            planes,
            structure,
            params,
            staging,
            x,
            valid,
            ln_table,
            out,
            totals,
            acc,
            bind,
        }
    }

    /// Submits the count for `params` and adds the chunk's valid values into the running sums
    /// (cleared first when `fresh`). Not waited for. The count totals are not written.
    pub fn count(
        &mut self,
        prep: &Prepared,
        params: &XapenParams,
        fresh: bool,
    ) -> Result<(), GpuXapenError> {
        self.count_with(prep, params, fresh, false)
    }

    /// `count`, writing the count totals into `prep.totals` when `totals` (their sums cost the
    /// count kernel 2-3 % of its time).
    fn count_with(
        &mut self,
        prep: &Prepared,
        params: &XapenParams,
        fresh: bool,
        totals: bool,
    ) -> Result<(), GpuXapenError> {
        params.check(prep.n)?;
        assert!(params.m < prep.planes, "prepared for a shorter window");
        let ctx = self.ctx.clone();
        Ok(ctx.guarded(|| self.count_unguarded(prep, params, fresh, totals))?)
    }

    fn count_unguarded(
        &mut self,
        prep: &Prepared,
        params: &XapenParams,
        fresh: bool,
        totals: bool,
    ) {
        prep.write_params(&self.ctx, params, totals);
        let b = prep.channels as u32;
        // The pipeline, and how many u's a workgroup counts against its v.
        let (count, us) = match (params.m, prep.structure) {
            (1, Some(Structure::Stripes)) => {
                (self.pipeline(("count_stripes", 1, false)), STRIPES_U)
            }
            (1, Some(Structure::Wavelet(_))) => (self.pipeline(("count_wavelet", 1, false)), 1),
            (m, _) => (self.pipeline(("count", m, prep.n * (m + 1) <= CACHE)), 1),
        };
        let accumulate = self.pipeline(("accumulate", 1, false));
        let mut enc = self.ctx.device.create_command_encoder(&Default::default());
        if fresh {
            enc.clear_buffer(&prep.acc, 0, None);
        }
        {
            let mut pass = self.ctx.pass(&mut enc, "xapen count");
            pass.set_bind_group(0, &prep.bind, &[]);
            pass.set_pipeline(&count);
            pass.dispatch_workgroups(b, b.div_ceil(us), prep.epochs as u32);
            pass.set_pipeline(&accumulate);
            pass.dispatch_workgroups((b * b).div_ceil(WG), 1, 1);
        }
        self.ctx.queue.submit([enc.finish()]);
    }

    /// Per cell, the sum of the valid values and their number counted into `prep` since the
    /// last fresh count.
    fn read_sums(&self, prep: &Prepared) -> Result<Vec<[f32; 2]>, GpuError> {
        let b2 = (prep.channels * prep.channels) as u64;
        let acc = self.ctx.read_back(&prep.acc, b2 * 8)?;
        Ok(bytemuck::cast_slice(&acc).to_vec())
    }

    /// The mean over the epochs counted into `prep` since the last fresh count.
    pub fn read_mean(&self, prep: &Prepared) -> Result<Vec<f64>, GpuError> {
        Ok(self
            .read_sums(prep)?
            .iter()
            .map(|&[s, c]| mean_of(s as f64, c as f64))
            .collect())
    }

    /// Every ordered pair of every epoch of `ep`, chunked to fit the device. `done` counts
    /// finished pairs; `Ok(None)` when cancelled.
    pub fn matrices(
        &mut self,
        ep: &Epochs,
        params: &XapenParams,
        readback: Readback,
        cancel: Cancel,
        done: Option<&AtomicUsize>,
    ) -> Result<Option<GpuXapenResult>, GpuXapenError> {
        params.check(ep.n)?;
        let chunk = self.chunk_epochs(ep, params.m)?;
        let b2 = ep.channels * ep.channels;
        let mut per_epoch = readback.per_epoch.then(Vec::new);
        let mut totals = readback.totals.then(Vec::new);
        // Sums and counts over chunks, added in f64 here: a whole night is tens of thousands
        // of epochs, too many for one f32 running sum.
        let mut sums = vec![[0f64; 2]; b2];
        for start in (0..ep.epochs).step_by(chunk) {
            if crate::dsp::xapen::cancelled(cancel) {
                return Ok(None);
            }
            let range = start..(start + chunk).min(ep.epochs);
            let prep = self.prepare(ep, range.clone(), params.m)?;
            self.count_with(&prep, params, true, readback.totals)?;
            let pairs = (range.len() * b2) as u64;
            if let Some(p) = per_epoch.as_mut() {
                let raw = self.ctx.read_back(&prep.out, pairs * 4)?;
                let vals: &[f32] = bytemuck::cast_slice(&raw);
                p.extend(vals.iter().map(|&v| v as f64));
            }
            if let Some(t) = totals.as_mut() {
                let raw = self.ctx.read_back(&prep.totals, pairs * 8)?;
                t.extend(bytemuck::cast_slice::<u8, [u32; 2]>(&raw).iter().copied());
            }
            for (total, [s, c]) in sums.iter_mut().zip(self.read_sums(&prep)?) {
                total[0] += s as f64;
                total[1] += c as f64;
            }
            if let Some(d) = done {
                d.fetch_add(range.len() * b2, Ordering::Relaxed);
            }
            self.spare = Some(prep);
        }
        let mean = sums.iter().map(|&[s, c]| mean_of(s, c)).collect();
        Ok(Some(GpuXapenResult {
            matrices: XapenMatrices {
                channels: ep.channels,
                epochs: ep.epochs,
                mean,
                per_epoch,
            },
            totals,
        }))
    }
}

/// Bytes of the upload each thread copies at a time.
const COPY_PIECE: usize = 1 << 20;
/// Uploads from this size are copied on threads of their own.
const PARALLEL_COPY: usize = 8 << 20;

/// `x` into the mapped staging buffer. A subject is 30 MB, which one thread copies in about
/// 3 ms, a tenth of the whole computation; from PARALLEL_COPY on, up to 8 threads copy it.
/// Threads of their own, not rayon's pool: a whole night's reader decodes on that pool, and
/// the copy queued behind its work took a cold night from 2.35 to 2.8 s.
fn copy_upload(mut staging: wgpu::WriteOnly<'_, [u8]>, x: &[u8]) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if x.len() < PARALLEL_COPY || threads < 2 {
        staging.copy_from_slice(x);
        return;
    }
    // Whole pieces as arrays: a write-only [u8] cannot be sent to another thread, a write-only
    // [u8; N] can.
    let (pieces, mut rest) = staging.into_chunks::<COPY_PIECE>();
    let mut pieces = pieces.into_iter();
    let (whole, tail) = x.split_at(pieces.len() * COPY_PIECE);
    let per = pieces.len().div_ceil(threads);
    std::thread::scope(|scope| {
        for from in whole.chunks(per * COPY_PIECE) {
            let to: Vec<_> = pieces.by_ref().take(per).collect();
            scope.spawn(move || {
                for (to, from) in to.into_iter().zip(from.chunks(COPY_PIECE)) {
                    wgpu::WriteOnly::<[u8]>::from(to).copy_from_slice(from);
                }
            });
        }
    });
    rest.copy_from_slice(tail);
}

/// Largest planes buffer kept once a job is done (`trim_spare`).
const SPARE_BYTES: u64 = 256 << 20;

impl Prepared {
    fn planes_bytes(&self) -> u64 {
        (self.epochs * self.channels * self.planes * self.n * 4) as u64
    }

    fn write_params(&self, ctx: &GpuContext, params: &XapenParams, totals: bool) {
        let (n, m) = (self.n, params.m);
        let windows_m = (n - m + 1) as f64;
        let windows_m1 = (n - m) as f64;
        let mut bytes = Vec::with_capacity(PARAMS_BYTES as usize);
        for v in [n, self.channels, self.epochs, self.planes] {
            bytes.extend_from_slice(&(v as u32).to_le_bytes());
        }
        bytes.extend_from_slice(&params.r.to_le_bytes());
        let correction: u32 = match params.correction {
            Correction::Max => 0,
            Correction::Zero => 1,
        };
        bytes.extend_from_slice(&correction.to_le_bytes());
        bytes.extend_from_slice(&(windows_m as f32).to_le_bytes());
        bytes.extend_from_slice(&(windows_m1 as f32).to_le_bytes());
        let shape = match self.structure {
            Some(Structure::Wavelet(w)) => [w.levels, w.words],
            _ => [0, 0],
        };
        for v in shape {
            bytes.extend_from_slice(&(v as u32).to_le_bytes());
        }
        bytes.extend_from_slice(&(totals as u32).to_le_bytes());
        bytes.resize(PARAMS_BYTES as usize, 0);
        ctx.queue.write_buffer(&self.params, 0, &bytes);
        // ln(k / windows) in f64, rounded once to f32.
        let table: Vec<f32> = [windows_m, windows_m1]
            .iter()
            .flat_map(|&w| (0..=n).map(move |k| (k as f64 / w).ln() as f32))
            .collect();
        ctx.queue
            .write_buffer(&self.ln_table, 0, bytemuck::cast_slice(&table));
    }
}

/// The shader's `Params`: eleven 4-byte fields, padded to a multiple of 16 as uniforms are.
const PARAMS_BYTES: u64 = 48;

fn build(
    ctx: &GpuContext,
    layout: &wgpu::PipelineLayout,
    module: &wgpu::ShaderModule,
    (entry, m, cached): Kernel,
) -> wgpu::ComputePipeline {
    let constants = [("M", m as f64), ("CACHED", cached as u8 as f64)];
    ctx.pipeline(module, entry, Some(layout), &constants)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uploads_are_copied_whole_on_threads_and_alone() {
        let big = PARALLEL_COPY + 3 * COPY_PIECE + 17;
        for len in [0, 5, PARALLEL_COPY - 1, PARALLEL_COPY, big] {
            let x: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let mut to = vec![0u8; len];
            copy_upload(wgpu::WriteOnly::from(&mut to[..]), &x);
            assert!(to == x, "{len} bytes");
        }
    }
}
