//! Hermite beat fits on the GPU (shaders/hermite.wgsl): the basis and its padding Gram
//! matrices are computed on the device for each (rate, order, sigma grid), then one thread
//! per beat and group of sigmas fits and keeps the best, and a last pass picks each beat's
//! best over the groups and writes its coefficients. Beats are uploaded once (`GpuBeats`), so
//! a new order or sigma range refits them without another upload.

use std::collections::HashMap;

use eframe::wgpu;
use eframe::wgpu::util::DeviceExt;

use super::context::{compute_pipeline, entry};
use super::fft::grid;
use super::{GpuContext, GpuError};
use crate::dsp::hermite::{BeatWindow, Fits, HermiteError, HermiteParams};

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
    pad: [u32; 2],
}

/// Aim for about this many threads per fit dispatch (the H100 holds ~270k at once): few
/// beats get more, smaller groups of sigmas.
const TARGET_THREADS: usize = 1 << 20;

/// Beats per `fit` thread. On the H100 at N = 30 (1e5 beats, 100 sigmas, whole call with
/// readback): 1 -> 18.2 ms, 2 -> 14.2, 3 -> 13.5, 4 -> 11.5 (docs/BENCHMARKS.md).
const BEATS_PER_THREAD: usize = 4;

/// Beats on the device, `[2h][beats]` per chunk.
pub struct GpuBeats {
    pub width: usize,
    pub beats: usize,
    chunks: Vec<(wgpu::Buffer, usize)>,
}

struct Pipelines {
    basis: wgpu::ComputePipeline,
    gram: wgpu::ComputePipeline,
    fit: wgpu::ComputePipeline,
    select: wgpu::ComputePipeline,
}

pub struct HermiteKernels {
    ctx: GpuContext,
    /// Pipelines by N4 (coefficient vec4s per beat) and beats per thread, built when first
    /// needed.
    pipelines: HashMap<(usize, usize), Pipelines>,
    /// Beats one `fit` thread fits at once (1 to 4; tests try each).
    pub beats_per_thread: usize,
    /// Largest buffer a chunk may use; the device's binding limit unless a test lowers it.
    pub max_buffer_bytes: u64,
}

impl HermiteKernels {
    pub fn new(ctx: &GpuContext) -> Self {
        let limits = ctx.device.limits();
        HermiteKernels {
            ctx: ctx.clone(),
            pipelines: HashMap::new(),
            beats_per_thread: BEATS_PER_THREAD,
            max_buffer_bytes: limits
                .max_storage_buffer_binding_size
                .min(limits.max_buffer_size),
        }
    }

    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    fn pipelines(&mut self, n4: usize) -> &Pipelines {
        let dev = &self.ctx.device;
        let per_thread = self.beats_per_thread.clamp(1, 4);
        self.pipelines.entry((n4, per_thread)).or_insert_with(|| {
            let source = format!(
                "{}\n{}",
                unrolled(n4, per_thread),
                include_str!("../../shaders/hermite.wgsl")
            );
            let module = dev.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("hermite"),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
            Pipelines {
                basis: compute_pipeline(dev, &module, "basis_fn"),
                gram: compute_pipeline(dev, &module, "gram_fn"),
                fit: compute_pipeline(dev, &module, "fit"),
                select: compute_pipeline(dev, &module, "select_best"),
            }
        })
    }

    /// Uploads `beats` (`[beat][width]`), beat-minor, in chunks that fit a binding.
    pub fn upload(&self, beats: &[f32], width: usize) -> Result<GpuBeats, GpuError> {
        let count = beats.len() / width.max(1);
        // Per beat: its samples, and at worst 2 floats per sigma group and 2 + 4 N4 results.
        let per_beat = (width.max(2 + 4 * 16) * 4 + 16) as u64;
        let chunk = ((self.max_buffer_bytes / per_beat) as usize).clamp(1, 1 << 22);
        let ctx = &self.ctx;
        let chunks = ctx.guarded(|| {
            (0..count)
                .step_by(chunk)
                .map(|first| {
                    let n = chunk.min(count - first);
                    let mut t = vec![0f32; n * width];
                    for b in 0..n {
                        for k in 0..width {
                            t[k * n + b] = beats[(first + b) * width + k];
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
        let n4 = order.div_ceil(4);
        let s = sigmas.len();
        let l = window.len();
        let ctx = self.ctx.clone();
        let storage = |label, bytes: usize, extra| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: (bytes as u64).max(4),
                usage: wgpu::BufferUsages::STORAGE | extra,
                mapped_at_creation: false,
            })
        };
        let per_thread = self.beats_per_thread.clamp(1, 4);
        let pipes = self.pipelines(n4);
        let mut out = Fits {
            order,
            ..Default::default()
        };
        let results = ctx.guarded(|| -> Result<Vec<Vec<u8>>, GpuError> {
            let sigma_f32: Vec<f32> = sigmas.iter().map(|&v| v as f32).collect();
            let sigma_buf = ctx
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("hermite sigmas"),
                    contents: bytemuck::cast_slice(&sigma_f32),
                    usage: wgpu::BufferUsages::STORAGE,
                });
            let basis = storage(
                "hermite basis",
                s * l * n4 * 16,
                wgpu::BufferUsages::empty(),
            );
            let gram = storage(
                "hermite gram",
                s * 4 * n4 * n4 * 16,
                wgpu::BufferUsages::empty(),
            );
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            let params_for = |chunk: usize, groups: usize| Params {
                beats: chunk as u32,
                width: window.width() as u32,
                half: window.half as u32,
                len: l as u32,
                sigmas: s as u32,
                order: order as u32,
                group: s.div_ceil(groups) as u32,
                groups: groups as u32,
                fs: fs as f32,
                stride: chunk.div_ceil(per_thread) as u32,
                pad: [0; 2],
            };
            let run = |enc: &mut wgpu::CommandEncoder,
                       pipeline: &wgpu::ComputePipeline,
                       params: Params,
                       buffers: &[(u32, &wgpu::Buffer)],
                       shape: (usize, usize)| {
                let uniform = ctx
                    .device
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("hermite params"),
                        contents: bytemuck::bytes_of(&params),
                        usage: wgpu::BufferUsages::UNIFORM,
                    });
                let mut entries = vec![entry(0, &uniform)];
                entries.extend(buffers.iter().map(|&(b, buf)| entry(b, buf)));
                let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("hermite"),
                    layout: &pipeline.get_bind_group_layout(0),
                    entries: &entries,
                });
                let mut pass = enc.begin_compute_pass(&Default::default());
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, &bind, &[]);
                let (x, y, z) = grid(shape.0, shape.1);
                pass.dispatch_workgroups(x, y, z);
            };
            let p0 = params_for(0, 1);
            run(
                &mut enc,
                &pipes.basis,
                p0,
                &[(1, &sigma_buf), (2, &basis)],
                (l, s),
            );
            run(
                &mut enc,
                &pipes.gram,
                p0,
                &[(2, &basis), (3, &gram)],
                (4 * n4 * n4, s),
            );
            let mut pending = Vec::new();
            for (x, n) in &beats.chunks {
                let n = *n;
                let groups = TARGET_THREADS.div_ceil(n.div_ceil(per_thread)).clamp(1, s);
                let params = params_for(n, groups);
                // Equal groups: the last may be short, never empty.
                let groups = s.div_ceil(params.group as usize);
                let params = Params {
                    groups: groups as u32,
                    ..params
                };
                let partial = storage(
                    "hermite partial",
                    groups * n * 8,
                    wgpu::BufferUsages::empty(),
                );
                let fits = storage(
                    "hermite fits",
                    n * (2 + 4 * n4) * 4,
                    wgpu::BufferUsages::COPY_SRC,
                );
                run(
                    &mut enc,
                    &pipes.fit,
                    params,
                    &[(2, &basis), (3, &gram), (4, x), (5, &partial)],
                    (n.div_ceil(per_thread), groups),
                );
                run(
                    &mut enc,
                    &pipes.select,
                    params,
                    &[(2, &basis), (4, x), (5, &partial), (6, &fits)],
                    (n, 1),
                );
                pending.push((fits, n));
            }
            ctx.queue.submit([enc.finish()]);
            pending
                .iter()
                .map(|(fits, n)| ctx.read_back(fits, (n * (2 + 4 * n4) * 4) as u64))
                .collect()
        })??;
        let stride = 2 + 4 * n4;
        for bytes in results {
            let v: &[f32] = bytemuck::cast_slice(&bytes);
            for row in v.chunks_exact(stride) {
                out.mse.push(row[0]);
                out.sigma_index.push(row[1].to_bits());
                out.coefficients.extend_from_slice(&row[2..2 + order]);
            }
        }
        Ok(out)
    }
}

/// The shader's per-beat functions for coefficients held in `n4` vec4 registers, unrolled
/// (see the header of shaders/hermite.wgsl), and `mse_many`: the MSEs of `BEATS` beats at one
/// sigma, each basis vec4 loaded once for all of them (4 x BEATS FMAs per load instead of 4).
fn unrolled(n4: usize, beats: usize) -> String {
    let qs = |f: &dyn Fn(usize) -> String, sep: &str| (0..n4).map(f).collect::<Vec<_>>().join(sep);
    let js =
        |f: &dyn Fn(usize) -> String, sep: &str| (0..beats).map(f).collect::<Vec<_>>().join(sep);
    let fields = qs(&|q| format!("q{q}: vec4<f32>"), ", ");
    let accumulate = qs(
        &|q| format!("        c.q{q} = fma(xk, basis[b + {q}u], c.q{q});"),
        "\n",
    );
    let reconstruct = qs(&|q| format!("fma(c.q{q}, basis[b + {q}u], "), "");
    let close = ")".repeat(n4);
    let pad_rows = (0..4 * n4)
        .map(|i| {
            let row = qs(
                &|q| format!("dot(gram[g0 + {}u], c.q{q})", i * n4 + q),
                " + ",
            );
            let lane = ["x", "y", "z", "w"][i % 4];
            format!("    acc = fma(c.q{}.{lane}, {row}, acc);", i / 4)
        })
        .collect::<Vec<_>>()
        .join("\n");
    let write = qs(
        &|q| {
            (0..4)
                .map(|lane| {
                    let comp = ["x", "y", "z", "w"][lane];
                    format!("    fits[o + {}u] = c.q{q}.{comp};", 4 * q + lane)
                })
                .collect::<Vec<_>>()
                .join("\n")
        },
        "\n",
    );
    // mse_many: c{j}_{q} are beat j's coefficient vec4s.
    // Beat j of a thread is first + j * stride, clamped to the last beat (its result unused).
    let many_index = js(
        &|j| format!("    let i{j} = min(first + {j}u * stride, p.beats - 1u);"),
        "\n",
    );
    let many_zero = js(
        &|j| qs(&|q| format!("    var c{j}_{q} = vec4<f32>(0.0);"), "\n"),
        "\n",
    );
    let many_x = js(&|j| format!("        let x{j} = x[row + i{j}];"), "\n");
    let many_acc = qs(
        &|q| {
            format!(
                "        let v{q} = basis[b + {q}u];\n{}",
                js(
                    &|j| format!("        c{j}_{q} = fma(vec4<f32>(x{j}), v{q}, c{j}_{q});"),
                    "\n"
                )
            )
        },
        "\n",
    );
    let many_loads = qs(&|q| format!("        let v{q} = basis[b + {q}u];"), "\n");
    let many_resid = js(
        &|j| {
            let y = qs(&|q| format!("fma(c{j}_{q}, v{q}, "), "");
            format!(
                "        let y{j} = {y}vec4<f32>(0.0){close};\n        \
                 let r{j} = x{j} - (y{j}.x + y{j}.y + y{j}.z + y{j}.w);\n        \
                 a{j} = fma(r{j}, r{j}, a{j});"
            )
        },
        "\n",
    );
    let many_pad = (0..4 * n4)
        .map(|i| {
            let g = qs(
                &|q| format!("        let gr{q} = gram[g0 + {}u];", i * n4 + q),
                "\n",
            );
            let lane = ["x", "y", "z", "w"][i % 4];
            let per_beat = js(
                &|j| {
                    let row = qs(&|q| format!("dot(gr{q}, c{j}_{q})"), " + ");
                    format!("        a{j} = fma(c{j}_{}.{lane}, {row}, a{j});", i / 4)
                },
                "\n",
            );
            format!("    {{\n{g}\n{per_beat}\n    }}")
        })
        .collect::<Vec<_>>()
        .join("\n");
    let many_decl = js(&|j| format!("    var a{j} = 0.0;"), "\n");
    let many_ret = (0..4)
        .map(|j| {
            if j < beats {
                format!("a{j}")
            } else {
                "0.0".into()
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "const N4: u32 = {n4}u;
const BEATS: u32 = {beats}u;
struct Coef {{ {fields} }}

fn coefficients(beat: u32, s: u32) -> Coef {{
    var c: Coef;
    let b0 = (s * p.len + p.half) * N4;
    for (var k = 0u; k < p.width; k++) {{
        let xk = vec4<f32>(x[k * p.beats + beat]);
        let b = b0 + k * N4;
{accumulate}
    }}
    return c;
}}

fn mse_at(beat: u32, s: u32) -> f32 {{
    let c = coefficients(beat, s);
    var acc = 0.0;
    let b0 = (s * p.len + p.half) * N4;
    for (var k = 0u; k < p.width; k++) {{
        let b = b0 + k * N4;
        let y = {reconstruct}vec4<f32>(0.0){close};
        let r = x[k * p.beats + beat] - (y.x + y.y + y.z + y.w);
        acc = fma(r, r, acc);
    }}
    let g0 = s * 4u * N4 * N4;
{pad_rows}
    return acc;
}}

fn mse_many(first: u32, stride: u32, s: u32) -> vec4<f32> {{
{many_index}
{many_zero}
    let b0 = (s * p.len + p.half) * N4;
    for (var k = 0u; k < p.width; k++) {{
        let b = b0 + k * N4;
        let row = k * p.beats;
{many_x}
{many_acc}
    }}
{many_decl}
    for (var k = 0u; k < p.width; k++) {{
        let b = b0 + k * N4;
        let row = k * p.beats;
{many_x}
{many_loads}
{many_resid}
    }}
    let g0 = s * 4u * N4 * N4;
{many_pad}
    return vec4<f32>({many_ret});
}}

fn write_coefficients(o: u32, c: Coef) {{
{write}
}}
"
    )
}
