//! A whole recording's CDSA and aEEG on the GPU (shaders/trend.wgsl), chunk by chunk: the
//! chunk's samples go up through the upload ring while the last chunk computes, as the file's
//! own integers where its format stores them in records (EDF, BDF: half or three quarters of
//! the bytes of f32, decoded on the device) or as traces the host derived; every chunk's
//! spectra and envelope edges come back as soon as it is done, for a strip that fills in.
//! `analysis::trend` plans the job and its CPU pass is the twin the tests compare with.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, channel};

use eframe::wgpu;
use rayon::prelude::*;

use super::context::{GpuContext, GpuError, compute_pipeline, copy_in_parallel, entry};
use super::upload::UploadRing;
use crate::dsp::filter::Section;
use crate::recording::{ReadError, StoredLayout};

#[derive(Debug, thiserror::Error)]
pub enum GpuTrendError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// A trace made of the sources (indices into `Samples::Stored`'s layouts): `plus` (none: an
/// interpolated trace) less `sum(w * source)` over `minus`, as `dsp::montage::apply` derives it.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceDef {
    pub plus: Option<usize>,
    pub minus: Vec<(usize, f32)>,
}

/// Where the traces' samples come from.
pub enum Samples<'a> {
    /// The sources' stored integers (of one file, one record layout and one sample width),
    /// decoded and derived on the device.
    Stored {
        layouts: Vec<StoredLayout<'a>>,
        traces: Vec<TraceDef>,
    },
    /// `read(start, len)` gives every one of `traces` traces' samples of that range.
    Host {
        traces: usize,
        read: &'a (dyn Fn(usize, usize) -> Result<Vec<Vec<f32>>, ReadError> + Sync),
    },
}

/// A CDSA: per row (traces of it) and per `segment` samples, the mean Welch density of its
/// traces, blocks of `block` every `step`, `blocks` of them a segment, in dB plus `db`.
pub struct CdsaSpec {
    pub rows: Vec<Vec<usize>>,
    pub segment: usize,
    pub block: usize,
    pub step: usize,
    pub blocks: usize,
    pub window: Vec<f64>,
    /// The density's scale, 1 / (fs sum(w^2)).
    pub scale: f64,
    pub db: f32,
}

/// An aEEG: per (trace, microvolts per unit) and per `segment` samples, the envelope's
/// percentiles, the filters run from `warm` samples before each segment.
pub struct AeegSpec {
    pub traces: Vec<(usize, f64)>,
    pub band_pass: Vec<Section>,
    pub low_pass: Vec<Section>,
    pub segment: usize,
    pub warm: usize,
    /// The lower and upper edges' ranks among `n` finite values, for n = 0 ..= segment.
    pub ranks: Vec<(u32, u32)>,
}

pub struct TrendSpec<'a> {
    /// Samples of every trace.
    pub n: usize,
    pub samples: Samples<'a>,
    pub cdsa: Option<CdsaSpec>,
    pub aeeg: Option<AeegSpec>,
}

/// One chunk's results, chunks in order: its CDSA segments (`power[row][segment][bin]`, dB) and
/// aEEG segments (`edges[trace][segment]`, lower and upper).
pub struct ChunkResult {
    pub power: Vec<Vec<Vec<f32>>>,
    pub edges: Vec<Vec<(f32, f32)>>,
    /// Samples of every trace done once this chunk is.
    pub done: usize,
}

/// The longest Welch block the CDSA kernel holds in workgroup memory (two blocks as 2048
/// complex f32).
pub const MAX_BLOCK: usize = 2048;
/// The most filter sections of the aEEG kernel.
pub const MAX_SECTIONS: usize = 16;
/// Bytes the largest buffer of a chunk may take, below the device's binding limit.
const CHUNK_BYTES: u64 = 256 << 20;

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    len: u32,
    c0: u32,
    stride: u32,
    hist: u32,
    sources: u32,
    spr: u32,
    record_bytes: u32,
    bps: u32,
    first_record: u32,
    byte_shift: u32,
    traces: u32,
    rows: u32,
    cseg: u32,
    nfft: u32,
    step: u32,
    blocks: u32,
    log2n: u32,
    csegs: u32,
    aeeg: u32,
    aseg: u32,
    warm: u32,
    asegs: u32,
    norm: f32,
    db: f32,
}

pub struct TrendKernels {
    ctx: GpuContext,
    module: wgpu::ShaderModule,
    decode: wgpu::ComputePipeline,
    derive: wgpu::ComputePipeline,
    keep: wgpu::ComputePipeline,
    means: wgpu::ComputePipeline,
    cdsa: wgpu::ComputePipeline,
    percentiles: wgpu::ComputePipeline,
    /// By (band-pass sections, all sections), which the kernel takes as constants.
    envelope: HashMap<(usize, usize), wgpu::ComputePipeline>,
    /// The most bytes a chunk's largest buffer may take (`CHUNK_BYTES`, less in tests).
    chunk_bytes: u64,
    /// A night's buffers (by `Slot`) and upload ring, kept for the next run: making them took
    /// a third of a warm run on the H200 (mapped memory is zeroed by the host).
    kept: [Option<wgpu::Buffer>; 7],
    ring: Option<Arc<UploadRing>>,
}

/// The buffers a run keeps for the next.
#[derive(Clone, Copy)]
enum Slot {
    Traces,
    Sources,
    Records,
    Spectra,
    Edges,
    Means,
    Envelope,
}

impl TrendKernels {
    /// The kernels, where the device has f64 in shaders (the aEEG's recursions need it).
    pub fn new(ctx: &GpuContext) -> Option<Self> {
        if !ctx.device.features().contains(wgpu::Features::SHADER_F64) {
            return None;
        }
        let module = ctx.trusted_shader("trend", include_str!("../../shaders/trend.wgsl").into());
        let pipe = |name: &str| compute_pipeline(ctx, &module, name);
        let kernels = TrendKernels {
            decode: pipe("decode"),
            derive: pipe("derive"),
            keep: pipe("keep"),
            means: pipe("block_means"),
            cdsa: pipe("cdsa"),
            percentiles: pipe("percentiles"),
            envelope: HashMap::new(),
            chunk_bytes: CHUNK_BYTES,
            kept: Default::default(),
            ring: None,
            module,
            ctx: ctx.clone(),
        };
        ctx.save_pipelines();
        Some(kernels)
    }

    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// Chunks whose largest buffer takes at most `bytes` (at most `CHUNK_BYTES`; at least
    /// one segment of both trends): tests cut a short recording into many.
    pub fn set_chunk_bytes(&mut self, bytes: u64) {
        self.chunk_bytes = bytes.min(CHUNK_BYTES);
    }

    /// Whether `spec`'s parameters fit the kernels (else the CPU computes the trends): a
    /// chunk of one segment of each trend must fit the device's buffers.
    pub fn takes(&self, spec: &TrendSpec) -> bool {
        let Segments { align, hist, .. } = Segments::of(spec);
        let least = align.max(hist);
        let rows = match &spec.samples {
            Samples::Stored { layouts, traces } => layouts.len().max(traces.len()),
            Samples::Host { traces, .. } => *traces,
        };
        let limits = self.ctx.device.limits();
        let most = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        let fits = ((rows * (hist + least) * 4) as u64) <= most;
        let cdsa = spec.cdsa.as_ref().is_none_or(|c| {
            (2..=MAX_BLOCK).contains(&c.block) && c.blocks >= 1 && c.segment >= c.block
        });
        let aeeg = (spec.aeeg.as_ref())
            .is_none_or(|a| a.band_pass.len() + a.low_pass.len() <= MAX_SECTIONS && a.segment > 0);
        let traces = match &spec.samples {
            Samples::Stored { layouts, traces } => {
                let first = layouts.first();
                let same = layouts.iter().all(|l| {
                    first.is_some_and(|f| {
                        l.bytes.as_ptr() == f.bytes.as_ptr()
                            && l.record_bytes == f.record_bytes
                            && l.samples_per_record == f.samples_per_record
                            && l.bytes_per_sample == f.bytes_per_sample
                            && l.data_start == f.data_start
                    })
                });
                same && first.is_some_and(|f| matches!(f.bytes_per_sample, 2 | 3))
                    && !traces.is_empty()
            }
            Samples::Host { traces, .. } => *traces > 0,
        };
        fits && cdsa && aeeg && traces && spec.n > 0
    }

    fn envelope_pipeline(&mut self, bp: usize, all: usize) -> wgpu::ComputePipeline {
        let (ctx, module) = (&self.ctx, &self.module);
        let made = self.envelope.entry((bp, all)).or_insert_with(|| {
            let constants = [("BP_SECTIONS", bp as f64), ("SECTIONS", all as f64)];
            let p = ctx.pipeline(module, "envelope", None, &constants);
            ctx.save_pipelines();
            p
        });
        made.clone()
    }

    /// Computes `spec` chunk by chunk, each chunk's results handed to `on_chunk` in order as
    /// they come back. `Ok(false)` when `cancel` stopped it.
    pub fn run(
        &mut self,
        spec: &TrendSpec,
        cancel: &AtomicBool,
        on_chunk: &mut dyn FnMut(ChunkResult),
    ) -> Result<bool, GpuTrendError> {
        assert!(self.takes(spec), "parameters the kernels take");
        let started = std::time::Instant::now();
        let ctx = self.ctx.clone();
        let traces = match &spec.samples {
            Samples::Stored { traces, .. } => traces.len(),
            Samples::Host { traces, .. } => *traces,
        };
        let sources = match &spec.samples {
            Samples::Stored { layouts, .. } => layouts.len(),
            Samples::Host { .. } => 0,
        };
        let Segments {
            cseg,
            aseg,
            align,
            hist,
        } = Segments::of(spec);
        let rows = spec.cdsa.as_ref().map_or(0, |c| c.rows.len());
        let bins = spec.cdsa.as_ref().map_or(0, |c| c.block / 2 + 1);
        let blocks = spec.cdsa.as_ref().map_or(0, |c| c.blocks);
        let aeeg = spec.aeeg.as_ref().map_or(0, |a| a.traces.len());
        let (spr, record_bytes) = match &spec.samples {
            Samples::Stored { layouts, .. } => {
                (layouts[0].samples_per_record, layouts[0].record_bytes)
            }
            Samples::Host { .. } => (1, 0),
        };
        // The chunk: whole segments of both trends, its largest buffer within the limit.
        let limits = ctx.device.limits();
        let budget = (limits.max_storage_buffer_binding_size)
            .min(limits.max_buffer_size)
            .min(self.chunk_bytes) as usize;
        let per_sample = [
            traces * 4,
            sources * 4,
            aeeg * 4,
            record_bytes.div_ceil(spr),
            if sources == 0 { traces * 4 } else { 0 },
            (rows * bins * 4).div_ceil(cseg) * 2,
        ]
        .into_iter()
        .max()
        .unwrap_or(4)
        .max(1);
        let fit = budget.saturating_sub(traces * hist * 4 + 2 * record_bytes) / per_sample;
        let chunk = (fit / align * align)
            .max(align)
            .max(hist.next_multiple_of(align))
            .min(spec.n.next_multiple_of(align));
        let stride = hist + chunk;
        let records_most = chunk.div_ceil(spr) + 1;
        let raw_bytes = records_most * record_bytes + 4;
        let ring_bytes = match sources {
            0 => traces * chunk * 4,
            _ => raw_bytes,
        }
        // (Tests' small chunks take small ring buffers: a chunk then goes up in many.)
        .min(RING_PIECE)
        .min((self.chunk_bytes as usize).max(4096));
        let ring = match &self.ring {
            Some(r) if r.bytes() >= ring_bytes as u64 => r.clone(),
            _ => {
                let bytes = ring_bytes as u64;
                let r = Arc::new(UploadRing::new(&ctx.device, "trend upload ring", bytes));
                self.ring.insert(r).clone()
            }
        };
        let storage = wgpu::BufferUsages::STORAGE;
        let read_only = storage | wgpu::BufferUsages::COPY_DST;
        let out_usage = storage | wgpu::BufferUsages::COPY_SRC;
        let mut kept = |slot: Slot, bytes: usize, usage| {
            let label = "trend chunk";
            ctx.kept_buffer(&mut self.kept[slot as usize], label, bytes as u64, usage)
        };
        let tr = kept(
            Slot::Traces,
            traces * stride * 4,
            read_only | wgpu::BufferUsages::COPY_SRC,
        );
        let src = kept(Slot::Sources, sources * chunk * 4, storage);
        let raw = kept(Slot::Records, raw_bytes.next_multiple_of(4), read_only);
        let power = kept(Slot::Spectra, rows * (chunk / cseg) * bins * 4, out_usage);
        let edges = kept(Slot::Edges, aeeg * (chunk / aseg) * 8, out_usage);
        let means = kept(Slot::Means, traces * (chunk / cseg) * blocks * 8, storage);
        let env = kept(Slot::Envelope, aeeg * chunk * 4, storage);

        let empty = |label: &str, bytes: usize, usage| ctx.empty_buffer(label, bytes, usage);
        let with = |label: &str, bytes: &[u8]| {
            let bytes = if bytes.is_empty() {
                &[0u8; 16][..]
            } else {
                bytes
            };
            ctx.buffer_with(label, bytes, storage)
        };
        let uniform = empty(
            "trend params",
            std::mem::size_of::<Params>(),
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        );
        let (stored, src_offset, src_scale, src, defs, terms) = match &spec.samples {
            Samples::Stored { layouts, traces } => {
                let offsets: Vec<u32> = layouts.iter().map(|l| l.offset as u32).collect();
                let scales: Vec<f64> = (layouts.iter())
                    .flat_map(|l| [l.gain, l.bias, l.digital_range.0, l.digital_range.1])
                    .collect();
                let mut defs: Vec<[u32; 4]> = Vec::new();
                let mut terms: Vec<[u32; 2]> = Vec::new();
                for t in traces {
                    let first = terms.len() as u32;
                    terms.extend(t.minus.iter().map(|&(s, w)| [s as u32, w.to_bits()]));
                    let plus = t.plus.map_or(u32::MAX, |p| p as u32);
                    defs.push([plus, first, terms.len() as u32, 0]);
                }
                (
                    Some(layouts[0]),
                    with("trend source offsets", bytemuck::cast_slice(&offsets)),
                    with("trend source scales", bytemuck::cast_slice(&scales)),
                    src.clone(),
                    with("trend trace definitions", bytemuck::cast_slice(&defs)),
                    with("trend terms", bytemuck::cast_slice(&terms)),
                )
            }
            Samples::Host { .. } => {
                let none = || empty("unused", 16, storage);
                (None, none(), none(), none(), none(), none())
            }
        };

        let mut params = Params {
            stride: stride as u32,
            hist: hist as u32,
            sources: sources as u32,
            spr: spr as u32,
            record_bytes: record_bytes as u32,
            bps: stored.map_or(0, |s| s.bytes_per_sample as u32),
            traces: traces as u32,
            ..Default::default()
        };
        let group = |pipeline: &wgpu::ComputePipeline, entries: &[(u32, &wgpu::Buffer)]| {
            let entries: Vec<wgpu::BindGroupEntry> =
                entries.iter().map(|&(b, buf)| entry(b, buf)).collect();
            ctx.bind_group("trend", pipeline, &entries)
        };
        let decode_group = stored.map(|_| {
            group(
                &self.decode,
                &[
                    (0, &uniform),
                    (1, &raw),
                    (2, &src_offset),
                    (3, &src_scale),
                    (4, &src),
                ],
            )
        });
        let derive_group = stored.map(|_| {
            group(
                &self.derive,
                &[(0, &uniform), (4, &src), (5, &defs), (6, &terms), (7, &tr)],
            )
        });
        let keep_group = group(&self.keep, &[(0, &uniform), (7, &tr)]);
        let cdsa_groups = match &spec.cdsa {
            Some(c) => {
                let mut spans: Vec<[u32; 2]> = Vec::new();
                let mut members: Vec<u32> = Vec::new();
                for r in &c.rows {
                    let first = members.len() as u32;
                    members.extend(r.iter().map(|&t| t as u32));
                    spans.push([first, members.len() as u32]);
                }
                let window: Vec<f32> = c.window.iter().map(|&w| w as f32).collect();
                let twiddle: Vec<[f32; 2]> = (0..c.block)
                    .map(|k| {
                        let a = -2.0 * std::f64::consts::PI * k as f64 / c.block as f64;
                        [a.cos() as f32, a.sin() as f32]
                    })
                    .collect();
                let rows_b = with("trend rows", bytemuck::cast_slice(&spans));
                let members_b = with("trend row traces", bytemuck::cast_slice(&members));
                let window_b = with("trend window", bytemuck::cast_slice(&window));
                let twiddle_b = with("trend twiddles", bytemuck::cast_slice(&twiddle));
                params.rows = rows as u32;
                params.cseg = c.segment as u32;
                params.nfft = c.block as u32;
                params.step = c.step as u32;
                params.blocks = c.blocks as u32;
                params.log2n = match c.block.is_power_of_two() {
                    true => c.block.trailing_zeros(),
                    false => 0,
                };
                params.norm = (2.0 * c.scale / c.blocks as f64) as f32;
                params.db = c.db;
                Some((
                    group(&self.means, &[(0, &uniform), (7, &tr), (12, &means)]),
                    group(
                        &self.cdsa,
                        &[
                            (0, &uniform),
                            (7, &tr),
                            (8, &rows_b),
                            (9, &members_b),
                            (10, &window_b),
                            (11, &twiddle_b),
                            (12, &means),
                            (13, &power),
                        ],
                    ),
                ))
            }
            None => None,
        };
        let aeeg_groups = match &spec.aeeg {
            Some(a) => {
                let rows_of: Vec<u32> = a.traces.iter().map(|&(t, _)| t as u32).collect();
                let scales: Vec<f64> = a.traces.iter().map(|&(_, k)| k).collect();
                let sections: Vec<f64> = (a.band_pass.iter().chain(&a.low_pass))
                    .flat_map(|s| [s.b[0], s.b[1], s.b[2], -s.a[1], -s.a[2], 0.0, 0.0, 0.0])
                    .collect();
                let ranks: Vec<[u32; 2]> = a.ranks.iter().map(|&(l, h)| [l, h]).collect();
                let trace_b = with("trend aEEG traces", bytemuck::cast_slice(&rows_of));
                let scale_b = with("trend aEEG scales", bytemuck::cast_slice(&scales));
                let sections_b = with("trend aEEG sections", bytemuck::cast_slice(&sections));
                let ranks_b = with("trend aEEG ranks", bytemuck::cast_slice(&ranks));
                params.aeeg = aeeg as u32;
                params.aseg = a.segment as u32;
                params.warm = a.warm as u32;
                let pipeline = self.envelope_pipeline(a.band_pass.len(), sections.len() / 8);
                let envelope = group(
                    &pipeline,
                    &[
                        (0, &uniform),
                        (7, &tr),
                        (14, &trace_b),
                        (15, &scale_b),
                        (16, &sections_b),
                        (17, &env),
                    ],
                );
                let select = group(
                    &self.percentiles,
                    &[(0, &uniform), (17, &env), (18, &edges), (19, &ranks_b)],
                );
                Some((pipeline, envelope, select))
            }
            None => None,
        };
        // Chunks in flight, in order.
        let mut pending: Vec<InFlight> = Vec::new();
        let mut deliver_s = 0.0;
        let mut deliver = |chunk: InFlight| {
            let t = std::time::Instant::now();
            let InFlight {
                staging,
                c0,
                len,
                csegs,
                asegs,
                ..
            } = chunk;
            let view = (staging.slice(..).get_mapped_range())
                .map_err(|e| GpuError::Poll(e.to_string()))?;
            let data: &[f32] = bytemuck::cast_slice(&view);
            let (p, e) = data.split_at(rows * csegs * bins);
            // Row by row on every core: 126 MB of a night's spectra took 0.06 to 0.13 s on one.
            let power: Vec<Vec<Vec<f32>>> = (0..rows)
                .into_par_iter()
                .map(|r| {
                    (0..csegs)
                        .map(|q| p[(r * csegs + q) * bins..][..bins].to_vec())
                        .collect()
                })
                .collect();
            let edges: Vec<Vec<(f32, f32)>> = (0..aeeg)
                .map(|a| {
                    (0..asegs)
                        .map(|s| (e[2 * (a * asegs + s)], e[2 * (a * asegs + s) + 1]))
                        .collect()
                })
                .collect();
            drop(view);
            staging.unmap();
            on_chunk(ChunkResult {
                power,
                edges,
                done: c0 + len,
            });
            deliver_s += t.elapsed().as_secs_f64();
            Ok::<(), GpuError>(())
        };
        // EDE_TREND_PROFILE: where the host's time goes (set-up, waiting for a free upload
        // buffer, copying into it, waiting for the last results).
        let profile = std::env::var_os("EDE_TREND_PROFILE").is_some();
        let (mut wait_s, mut copy_s) = (0.0, 0.0);
        let setup_s = started.elapsed().as_secs_f64();
        let mut c0 = 0;
        while c0 < spec.n {
            if cancel.load(std::sync::atomic::Ordering::Relaxed) {
                return Ok(false);
            }
            let len = chunk.min(spec.n - c0);
            let csegs = if spec.cdsa.is_some() { len / cseg } else { 0 };
            let asegs = if spec.aeeg.is_some() { len / aseg } else { 0 };
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            // What goes up: parts of bytes and where each goes on the device.
            let host_rows;
            let parts: Vec<(&[u8], &wgpu::Buffer, usize)> = match &spec.samples {
                Samples::Stored { .. } => {
                    let s = stored.expect("stored samples");
                    let first_record = c0 / spr;
                    let end_record = (c0 + len).div_ceil(spr);
                    let lo = s.data_start + first_record * record_bytes;
                    let hi = (s.data_start + end_record * record_bytes).min(s.bytes.len());
                    let aligned = lo & !3;
                    params.first_record = first_record as u32;
                    params.byte_shift = (lo - aligned) as u32;
                    vec![(&s.bytes[aligned..hi], &raw, 0)]
                }
                Samples::Host { read, traces } => {
                    host_rows = read(c0, len)?;
                    assert_eq!(host_rows.len(), *traces, "a row per trace");
                    (host_rows.iter().enumerate())
                        .map(|(t, row)| {
                            let bytes: &[u8] = bytemuck::cast_slice(&row[..len]);
                            (bytes, &tr, (t * stride + hist) * 4)
                        })
                        .collect()
                }
            };
            let asked = std::time::Instant::now();
            let Some(copied) = upload(&ctx, &ring, &parts, cancel) else {
                return Ok(false);
            };
            copy_s += copied;
            wait_s += asked.elapsed().as_secs_f64() - copied;
            params.len = len as u32;
            params.c0 = c0 as u32;
            params.csegs = csegs as u32;
            params.asegs = asegs as u32;
            ctx.queue
                .write_buffer(&uniform, 0, bytemuck::bytes_of(&params));
            {
                // A pass a kernel, each timed under EDE_GPU_PROFILE.
                let mut run = |label: &'static str,
                               pipeline: &wgpu::ComputePipeline,
                               group: &wgpu::BindGroup,
                               x: usize,
                               y: usize| {
                    if x > 0 && y > 0 {
                        let mut pass = ctx.pass(&mut enc, label);
                        pass.set_pipeline(pipeline);
                        pass.set_bind_group(0, group, &[]);
                        pass.dispatch_workgroups(x as u32, y as u32, 1);
                    }
                };
                if let (Some(d), Some(v)) = (&decode_group, &derive_group) {
                    run("trend decode", &self.decode, d, len.div_ceil(256), sources);
                    run("trend derive", &self.derive, v, len.div_ceil(256), traces);
                }
                if let Some((means, cdsa)) = &cdsa_groups {
                    run(
                        "trend block means",
                        &self.means,
                        means,
                        (csegs * blocks).div_ceil(256),
                        traces,
                    );
                    run("trend cdsa", &self.cdsa, cdsa, csegs, rows);
                }
                if let Some((pipeline, envelope, select)) = &aeeg_groups {
                    let x = asegs.div_ceil(64);
                    run("trend envelope", pipeline, envelope, x, aeeg);
                    run("trend percentiles", &self.percentiles, select, asegs, aeeg);
                }
                if c0 + len < spec.n && hist > 0 {
                    run(
                        "trend keep",
                        &self.keep,
                        &keep_group,
                        hist.div_ceil(256),
                        traces,
                    );
                }
            }
            let power_bytes = (rows * csegs * bins * 4) as u64;
            let edge_bytes = (aeeg * asegs * 8) as u64;
            let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("trend results"),
                size: (power_bytes + edge_bytes).max(4),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            if power_bytes > 0 {
                enc.copy_buffer_to_buffer(&power, 0, &staging, 0, power_bytes);
            }
            if edge_bytes > 0 {
                enc.copy_buffer_to_buffer(&edges, 0, &staging, power_bytes, edge_bytes);
            }
            ctx.queue.submit([enc.finish()]);
            let (tx, rx) = channel();
            staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
                let _ = tx.send(r);
            });
            pending.push(InFlight {
                staging,
                mapped: rx,
                c0,
                len,
                csegs,
                asegs,
            });
            // Hand back every chunk whose results have arrived, in order.
            let _ = ctx.device.poll(wgpu::PollType::Poll);
            while let Some(first) = pending.first() {
                match first.mapped.try_recv() {
                    Ok(mapped) => {
                        mapped.map_err(|e| GpuError::Poll(e.to_string()))?;
                        deliver(pending.remove(0))?;
                    }
                    Err(_) => break,
                }
            }
            c0 += len;
        }
        let drained = std::time::Instant::now();
        for chunk in pending.drain(..) {
            let mapped = loop {
                if let Ok(r) = chunk.mapped.try_recv() {
                    break r;
                }
                ctx.device
                    .poll(wgpu::PollType::wait_indefinitely())
                    .map_err(|e| GpuError::Poll(e.to_string()))?;
            };
            mapped.map_err(|e| GpuError::Poll(e.to_string()))?;
            deliver(chunk)?;
        }
        if profile {
            eprintln!(
                "trend on the GPU: {} chunks of {chunk} samples, set-up {setup_s:.3} s, waiting \
                 for upload buffers {wait_s:.3} s, copying into them {copy_s:.3} s, the last \
                 results {:.3} s, handing results over {:.3} s, in all {:.3} s",
                spec.n.div_ceil(chunk),
                drained.elapsed().as_secs_f64(),
                deliver_s,
                started.elapsed().as_secs_f64()
            );
        }
        Ok(true)
    }
}

/// Bytes of one buffer of the upload ring: a chunk goes up in several (three of 32 MiB are
/// quicker to make than three of a whole chunk, whose mapped memory the host zeroes).
const RING_PIECE: usize = 32 << 20;

/// Copies every `(bytes, buffer, offset)` of `parts` into its buffer through `ring`, as many
/// parts a ring buffer as fit (a larger part in several), each ring buffer's copies submitted
/// as soon as it is filled. The seconds spent copying into mapped memory; `None` once
/// `cancel` is set.
fn upload(
    ctx: &GpuContext,
    ring: &Arc<UploadRing>,
    parts: &[(&[u8], &wgpu::Buffer, usize)],
    cancel: &AtomicBool,
) -> Option<f64> {
    let room = ring.bytes() as usize;
    // Pieces of at most `room` bytes, each with where it goes.
    let mut pieces: Vec<(&[u8], &wgpu::Buffer, usize)> = Vec::new();
    for &(bytes, to, at) in parts {
        for (k, piece) in bytes.chunks(room).enumerate() {
            pieces.push((piece, to, at + k * room));
        }
    }
    let mut copy_s = 0.0;
    let mut rest = &pieces[..];
    while !rest.is_empty() {
        // As many pieces as fit one ring buffer, each at a multiple of 4.
        let (mut take, mut used) = (0, 0);
        while let Some(p) = rest.get(take) {
            let end = used + p.0.len().next_multiple_of(4);
            if take > 0 && end > room {
                break;
            }
            used = end;
            take += 1;
        }
        let (group, after) = rest.split_at(take);
        let filled = ring.fill_with(used.min(room), cancel, |v| {
            let t = std::time::Instant::now();
            let mut at = 0;
            for (bytes, ..) in group {
                copy_in_parallel(v.slice(at..at + bytes.len()), bytes);
                at += bytes.len().next_multiple_of(4);
            }
            copy_s += t.elapsed().as_secs_f64();
        })?;
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let mut from = 0;
        for (bytes, to, at) in group {
            let size = (bytes.len() as u64).next_multiple_of(4);
            let size = size.min(ring.bytes() - from);
            enc.copy_buffer_to_buffer(filled.buffer(), from, to, *at as u64, size);
            from += size;
        }
        ctx.queue.submit([enc.finish()]);
        rest = after;
    }
    Some(copy_s)
}

/// A chunk submitted: its results' staging buffer being mapped, and what they hold.
struct InFlight {
    staging: wgpu::Buffer,
    mapped: Receiver<Result<(), wgpu::BufferAsyncError>>,
    c0: usize,
    len: usize,
    csegs: usize,
    asegs: usize,
}

/// A spec's segment lengths: the CDSA's and the aEEG's (1 for a trend not asked for), the
/// least chunk of whole segments of both, and the aEEG's warm-up kept before each chunk.
struct Segments {
    cseg: usize,
    aseg: usize,
    align: usize,
    hist: usize,
}

impl Segments {
    fn of(spec: &TrendSpec) -> Self {
        let cseg = spec.cdsa.as_ref().map_or(1, |c| c.segment);
        let aseg = spec.aeeg.as_ref().map_or(1, |a| a.segment);
        Segments {
            cseg,
            aseg,
            align: num_integer::lcm(cseg, aseg),
            hist: spec.aeeg.as_ref().map_or(0, |a| a.warm),
        }
    }
}
