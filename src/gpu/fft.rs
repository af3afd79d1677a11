//! Batched complex FFTs on the GPU. Rows of up to 2^22 values take two passes over memory, the
//! stages of each done in workgroup memory (shaders/fft_pass.wgsl, `TwoPass`); longer rows take
//! Stockham radix-8 stages (shaders/fft.wgsl; one radix-2 or radix-4 stage first when 3 does
//! not divide log2 M), each a pass over global memory, ping-ponging between two buffers.
//! rustfft is the CPU twin the tests compare with.

use std::collections::HashMap;

use eframe::wgpu;
use eframe::wgpu::util::DeviceExt;
use rustfft::num_complex::Complex32;

use super::binds::{Binds, Bound};
use super::context::{compute_pipeline, entry};
use super::{GpuContext, GpuError};

/// Rows per dispatch along y before the z dimension takes over (wgpu's per-dimension limit).
pub(crate) const MAX_Y: u32 = 65535;

/// Values one workgroup of shaders/fft_pass.wgsl holds (its `TILE`).
const TILE: usize = 2048;

/// The source of a module that `shaders/fft_pass.wgsl` completes: `source` defines its
/// `pass_input`.
pub(crate) fn with_two_pass(source: &str) -> String {
    format!("{source}\n{}", include_str!("../../shaders/fft_pass.wgsl"))
}

/// Which of fft_pass.wgsl's dispatches `TwoPass::encode` records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Passes {
    /// Pass 1 and pass 2.
    Two,
    /// Both, then `pass_direct` for the rows they leave to it.
    TwoAndDirect,
    /// `pass_direct` alone: it takes every row.
    Direct,
}

/// The two dispatches of shaders/fft_pass.wgsl, from a module whose `pass_input` gives pass 1's
/// values: a buffer's here, the wavelet multiply's in gpu::cwt.
pub(crate) struct TwoPass {
    pass1: wgpu::ComputePipeline,
    pass2: wgpu::ComputePipeline,
    /// `pass_direct`, for a module whose `pass_direct_len` finds rows for it (gpu::cwt's).
    direct: Option<wgpu::ComputePipeline>,
}

impl TwoPass {
    pub(crate) fn new(ctx: &GpuContext, module: &wgpu::ShaderModule) -> Self {
        TwoPass {
            pass1: compute_pipeline(ctx, module, "pass1"),
            pass2: compute_pipeline(ctx, module, "pass2"),
            direct: None,
        }
    }

    /// The two passes and `pass_direct`, which `encode` then records after them.
    pub(crate) fn with_direct(ctx: &GpuContext, module: &wgpu::ShaderModule) -> Self {
        TwoPass {
            direct: Some(compute_pipeline(ctx, module, "pass_direct")),
            ..Self::new(ctx, module)
        }
    }

    /// The passes that rows of `m` values take where shaders/cwt.wgsl's `pass_direct_len`
    /// finds them (`direct`): `pass_direct` alone from M = TILE to 4 TILE, where every row's
    /// input ends by bin M / 2 + 1 <= 2 TILE + 1, pass 1 and 2 as well above (for the rows
    /// it leaves), none of it below (none is direct).
    pub(crate) fn passes(m: usize, direct: bool) -> Passes {
        match Self::row_workgroups(m) {
            Some(_) if direct && m <= 4 * TILE => Passes::Direct,
            Some(_) if direct => Passes::TwoAndDirect,
            _ => Passes::Two,
        }
    }

    /// Whether rows of `m` values take the two passes: both factors must fit a workgroup.
    pub(crate) fn fits(m: usize) -> bool {
        m.is_power_of_two() && m <= TILE * TILE
    }

    /// Pass 2's workgroups a row of `m` values, where each holds values of one row only
    /// (M >= TILE): its `pass2_tile` hook then sees part of one row.
    pub(crate) fn row_workgroups(m: usize) -> Option<usize> {
        (Self::fits(m) && m >= TILE).then_some(m / TILE)
    }

    /// (N1, N2): pass 1's and pass 2's lengths, as even as the powers of two allow.
    fn split(m: usize) -> (usize, usize) {
        if m <= TILE {
            return (m, 1);
        }
        let levels = m.trailing_zeros();
        let first = levels.div_ceil(2);
        (1 << first, 1 << (levels - first))
    }

    /// Records the FFTs of `rows` rows of `m` values: pass 1 reads them through `pass_input`,
    /// whose uniforms and buffers `with.input` binds, and writes `inter`; pass 2 writes the
    /// values `keep` of each row of `out` (what is read next: the rest is not worth its
    /// bandwidth), and `with.hook` binds the buffers of its `pass2_tile` and `pass_direct_len`
    /// (none for a module whose hooks use none). `passes` says which of pass 1, pass 2 and
    /// `pass_direct` to record. The bind groups come from `binds`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn encode(
        &self,
        ctx: &GpuContext,
        binds: &mut Binds,
        enc: &mut wgpu::CommandEncoder,
        with: Hooks,
        (inter, out): (&wgpu::Buffer, &wgpu::Buffer),
        (m, rows): (usize, usize),
        inverse: bool,
        keep: std::ops::Range<usize>,
        passes: Passes,
    ) {
        assert!(
            Self::fits(m),
            "rows of {m} values are too long for two passes"
        );
        let (n1, n2) = Self::split(m);
        let (from, to) = (keep.start, keep.end.min(m));
        let split = [m, n1, n2, rows, inverse as usize, from, to, 0].map(|v| v as u32);
        let mut uniforms = vec![(20, bytemuck::cast_slice::<u32, u8>(&split))];
        uniforms.extend_from_slice(with.uniforms);
        let tiles = (rows * m).div_ceil(TILE).max(1) as u32;
        let (x, y) = (tiles.min(MAX_Y), tiles.div_ceil(MAX_Y));
        let mut first: Vec<(u32, &wgpu::Buffer)> = vec![(22, inter)];
        first.extend_from_slice(with.input);
        let mut second: Vec<(u32, &wgpu::Buffer)> = vec![(23, inter), (24, out)];
        second.extend_from_slice(with.hook);
        // The direct pass reads as pass 1 and writes as pass 2 (each binding once).
        let mut direct: Vec<(u32, &wgpu::Buffer)> = vec![(24, out)];
        for &(b, buf) in with.input.iter().chain(with.hook) {
            if direct.iter().all(|&(d, _)| d != b) {
                direct.push((b, buf));
            }
        }
        let mut recorded = Vec::new();
        if passes != Passes::Direct {
            recorded.push((&self.pass1, &first[..], "fft pass 1"));
            recorded.push((&self.pass2, &second[..], "fft pass 2"));
        }
        if passes != Passes::Two {
            let pipeline = self.direct.as_ref().expect("a module with `pass_direct`");
            recorded.push((pipeline, &direct[..], "fft direct pass"));
        }
        for (pipeline, buffers, label) in recorded {
            let bound = Bound {
                uniforms: &uniforms,
                buffers,
                view: None,
            };
            let bind = binds.bound(ctx, pipeline, bound);
            let mut pass = ctx.pass(enc, label);
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(x, y, 1);
        }
    }
}

/// What the module that completes fft_pass.wgsl binds for its hooks (`TwoPass::encode`):
/// uniforms made of bytes, the buffers of `pass_input`, and those of the other hooks.
#[derive(Clone, Copy)]
pub(crate) struct Hooks<'a> {
    pub uniforms: &'a [(u32, &'a [u8])],
    pub input: &'a [(u32, &'a wgpu::Buffer)],
    pub hook: &'a [(u32, &'a wgpu::Buffer)],
}

pub struct FftKernels {
    ctx: GpuContext,
    two_pass: TwoPass,
    /// The longest rows that take the two passes (all that fit, unless a test lowers it to
    /// reach the stage kernels).
    pub two_pass_up_to: usize,
    radix2: wgpu::ComputePipeline,
    radix4: wgpu::ComputePipeline,
    radix8: wgpu::ComputePipeline,
    /// Twiddle tables exp(-2 pi i t / M) by M.
    twiddles: HashMap<usize, wgpu::Buffer>,
    /// The two passes' bind groups, kept from one `encode` to the next.
    binds: Binds,
}

/// Workgroups for `threads` per row over `rows` rows: (x, y, z) with row = y + z * MAX_Y.
pub(crate) fn grid(threads: usize, rows: usize) -> (u32, u32, u32) {
    grid_of(threads, rows, 256)
}

/// As `grid`, for workgroups of `size` threads along x.
pub(crate) fn grid_of(threads: usize, rows: usize, size: usize) -> (u32, u32, u32) {
    let rows = rows.max(1) as u32;
    (
        threads.div_ceil(size).max(1) as u32,
        rows.min(MAX_Y),
        rows.div_ceil(MAX_Y),
    )
}

impl FftKernels {
    pub fn new(ctx: &GpuContext) -> Self {
        let module =
            ctx.trusted_shader("fft", with_two_pass(include_str!("../../shaders/fft.wgsl")));
        let pipeline = |entry_point| compute_pipeline(ctx, &module, entry_point);
        FftKernels {
            ctx: ctx.clone(),
            two_pass: TwoPass::new(ctx, &module),
            two_pass_up_to: TILE * TILE,
            radix2: pipeline("radix2"),
            radix4: pipeline("radix4"),
            radix8: pipeline("radix8"),
            twiddles: HashMap::new(),
            binds: Binds::default(),
        }
    }

    /// Whether rows of `m` values take the two passes (else one pass per stage).
    pub(crate) fn two_passes(&self, m: usize) -> bool {
        m <= self.two_pass_up_to && TwoPass::fits(m)
    }

    /// The stage kernels' table exp(-2 pi i t / M), t < M, made once per M.
    fn twiddles(&mut self, m: usize) -> &wgpu::Buffer {
        let dev = &self.ctx.device;
        self.twiddles.entry(m).or_insert_with(|| {
            let table: Vec<[f32; 2]> = (0..m)
                .map(|t| {
                    let a = -2.0 * std::f64::consts::PI * t as f64 / m as f64;
                    [a.cos() as f32, a.sin() as f32]
                })
                .collect();
            dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("fft twiddles"),
                contents: bytemuck::cast_slice(&table),
                usage: wgpu::BufferUsages::STORAGE,
            })
        })
    }

    /// Records the stages of FFTs of `rows` rows of `m` values held in `a`, using `b` as the
    /// other buffer. Returns true when the result ends in `b`.
    pub fn encode(
        &mut self,
        enc: &mut wgpu::CommandEncoder,
        a: &wgpu::Buffer,
        b: &wgpu::Buffer,
        m: usize,
        rows: usize,
        inverse: bool,
    ) -> bool {
        assert!(m.is_power_of_two(), "FFT lengths are powers of two");
        if self.two_passes(m) {
            let (buffers, shape) = ((b, a), (m, rows));
            let with = Hooks {
                uniforms: &[],
                input: &[(1, a)],
                hook: &[],
            };
            let (ctx, binds) = (&self.ctx, &mut self.binds);
            (self.two_pass).encode(
                ctx,
                binds,
                enc,
                with,
                buffers,
                shape,
                inverse,
                0..m,
                Passes::Two,
            );
            binds.end_call();
            return false;
        }
        let levels = m.trailing_zeros();
        let mut radices = match levels % 3 {
            1 => vec![2usize],
            2 => vec![4usize],
            _ => Vec::new(),
        };
        radices.extend(std::iter::repeat_n(8usize, levels as usize / 3));
        let tw = self.twiddles(m).clone();
        let dev = &self.ctx.device;
        let mut p = 1usize;
        let mut in_b = false;
        for radix in radices {
            let params = [m as u32, p as u32, rows as u32, inverse as u32];
            let uniform = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("fft stage"),
                contents: bytemuck::cast_slice(&params),
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let pipeline = match radix {
                2 => &self.radix2,
                4 => &self.radix4,
                _ => &self.radix8,
            };
            let (src, dst) = if in_b { (b, a) } else { (a, b) };
            let bind = dev.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("fft stage"),
                layout: &pipeline.get_bind_group_layout(0),
                entries: &[
                    entry(0, &uniform),
                    entry(1, src),
                    entry(2, dst),
                    entry(3, &tw),
                ],
            });
            let mut pass = self.ctx.pass(enc, "fft stage");
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &bind, &[]);
            let (x, y, z) = grid(m / radix, rows);
            pass.dispatch_workgroups(x, y, z);
            drop(pass);
            in_b = !in_b;
            p *= radix;
        }
        in_b
    }

    /// FFTs of `data`, rows of `m` values (unnormalized both ways, as rustfft's), computed on
    /// the GPU and read back: for tests and benchmarks.
    pub fn transform(
        &mut self,
        data: &[Complex32],
        m: usize,
        inverse: bool,
    ) -> Result<Vec<Complex32>, GpuError> {
        let rows = data.len() / m;
        let ctx = self.ctx.clone();
        let flat: Vec<[f32; 2]> = data.iter().map(|c| [c.re, c.im]).collect();
        let bytes = (flat.len() * 8) as u64;
        let (a, b, in_b) = ctx.guarded(|| {
            let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
            let a = ctx
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("fft a"),
                    contents: bytemuck::cast_slice(&flat),
                    usage,
                });
            let b = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("fft b"),
                size: bytes,
                usage,
                mapped_at_creation: false,
            });
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            let in_b = self.encode(&mut enc, &a, &b, m, rows, inverse);
            ctx.queue.submit([enc.finish()]);
            (a, b, in_b)
        })?;
        let out = ctx.read_back(if in_b { &b } else { &a }, bytes)?;
        Ok(bytemuck::cast_slice::<u8, [f32; 2]>(&out)
            .iter()
            .map(|&[re, im]| Complex32::new(re, im))
            .collect())
    }
}
