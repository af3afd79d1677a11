//! The trends on the GPU (`gpu::trend`): the job's traces as the kernels take them (the
//! recording's stored integers where its format has them, else chunks the host derives) and
//! the chunks' results gathered into the `Trends` that the CPU's pass (`run`) gives.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use super::{Shape, TrendError, TrendJob, Trends, WARM_S, assemble, cdsa_unit, run, shape};
use crate::analysis::Backend;
use crate::dsp::aeeg::{design, margins, rank};
use crate::dsp::montage::apply::derive_on;
use crate::dsp::spectrum::hann;
use crate::gpu::trend::{
    AeegSpec, CdsaSpec, ChunkResult, GpuTrendError, Samples, TraceDef, TrendKernels, TrendSpec,
};
use crate::recording::{ReadError, Recording};

impl From<GpuTrendError> for TrendError {
    fn from(e: GpuTrendError) -> Self {
        match e {
            GpuTrendError::Gpu(e) => TrendError::Gpu(e),
            GpuTrendError::Read(e) => TrendError::Read(e),
        }
    }
}

/// Runs `job` on `kernels` where there are some and they take it, else on the CPU (`run`):
/// the same trends either way, and the path that computed them. `done` counts the seconds
/// computed so far; `Ok(None)` when cancelled.
pub fn run_on(
    rec: &Recording,
    job: &TrendJob,
    kernels: Option<&mut TrendKernels>,
    cancel: &AtomicBool,
    done: &AtomicUsize,
) -> Result<Option<(Trends, Backend)>, TrendError> {
    let so_far = Mutex::new(None);
    let backend = run_growing(rec, job, kernels, cancel, done, &so_far)?;
    let trends = so_far.into_inner().ok().flatten();
    Ok(backend.zip(trends).map(|(b, t)| (t, b)))
}

/// As `run_on`, with the trends computed so far in `so_far` while they grow: chunk by chunk
/// on the GPU (a strip fills in from the start of the night), at once at the end on the CPU.
/// They are whole there once it returns the path that computed them.
pub fn run_growing(
    rec: &Recording,
    job: &TrendJob,
    kernels: Option<&mut TrendKernels>,
    cancel: &AtomicBool,
    done: &AtomicUsize,
    so_far: &Mutex<Option<Trends>>,
) -> Result<Option<Backend>, TrendError> {
    let put = |t: Option<Trends>| *so_far.lock().unwrap_or_else(|e| e.into_inner()) = t;
    put(None);
    let cpu = || -> Result<Option<Backend>, TrendError> {
        let trends = run(rec, job, cancel, done)?;
        let ran = trends.is_some().then_some(Backend::Cpu);
        put(trends);
        Ok(ran)
    };
    let Some(kernels) = kernels else {
        return cpu();
    };
    let started = Instant::now();
    let shape = shape(rec, job)?;
    let host = |start: usize, len: usize| -> Result<Vec<Vec<f32>>, ReadError> {
        derive_on(rec, &job.derivations, &shape.read, start, len, true)
    };
    let spec = TrendSpec {
        n: shape.n,
        samples: stored(rec, job, &shape.read).unwrap_or(Samples::Host {
            traces: shape.read.len(),
            read: &host,
        }),
        cdsa: cdsa_spec(&shape, rec, job),
        aeeg: aeeg_spec(&shape, job),
    };
    if !kernels.takes(&spec) {
        return cpu();
    }
    let (unit, _) = cdsa_unit(rec, job);
    let welch = shape.cdsa.as_ref().map(|(w, _)| w);
    let rows = vec![Vec::new(); job.cdsa_groups.len()];
    let edges = vec![Vec::new(); job.aeeg_traces.len()];
    put(Some(assemble(
        job, shape.fs, welch, unit, rows, edges, started,
    )));
    let finished = kernels.run(&spec, cancel, &mut |chunk| {
        let seconds = (chunk.done as f64 / shape.fs) as usize;
        let mut guard = so_far.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = guard.as_mut() {
            grow(t, chunk);
        }
        done.store(seconds, Ordering::Relaxed);
    })?;
    if !finished {
        put(None);
        return Ok(None);
    }
    if let Some(t) = so_far.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        t.seconds = started.elapsed().as_secs_f64();
    }
    Ok(Some(Backend::Gpu))
}

/// Appends a chunk's spectra and edges to `t`, and the margins of every group of segments they
/// complete.
fn grow(t: &mut Trends, chunk: ChunkResult) {
    if let Some(c) = t.cdsa.as_mut() {
        for (all, p) in c.power.iter_mut().zip(chunk.power) {
            all.extend(p);
        }
    }
    let Some(a) = t.aeeg.as_mut() else { return };
    let group = a.params.margin_segments;
    for (k, e) in chunk.edges.into_iter().enumerate() {
        a.lower_uv[k].extend(e.iter().map(|v| v.0));
        a.upper_uv[k].extend(e.iter().map(|v| v.1));
        let whole = a.lower_uv[k].len() / group;
        for g in a.lower_margin_uv[k].len()..whole {
            let span = g * group..(g + 1) * group;
            let pairs: Vec<(f32, f32)> = (a.lower_uv[k][span.clone()].iter())
                .zip(&a.upper_uv[k][span])
                .map(|(&l, &u)| (l, u))
                .collect();
            let (l, u) = margins(&pairs, group)[0];
            a.lower_margin_uv[k].push(l);
            a.upper_margin_uv[k].push(u);
        }
    }
}

/// The traces as the device derives them from the file's stored integers, where every source
/// channel's format says where they lie.
fn stored<'a>(rec: &'a Recording, job: &TrendJob, read: &[usize]) -> Option<Samples<'a>> {
    let mut sources: Vec<usize> = (read.iter())
        .flat_map(|&t| job.derivations[t].sources())
        .collect();
    sources.sort_unstable();
    sources.dedup();
    let layouts = (sources.iter())
        .map(|&s| rec.stored(s))
        .collect::<Option<Vec<_>>>()?;
    let at = |c: usize| sources.binary_search(&c).expect("a source of the traces");
    let traces = (read.iter())
        .map(|&t| {
            let d = &job.derivations[t];
            TraceDef {
                plus: (!d.interpolated).then(|| at(d.plus)),
                minus: d.minus.iter().map(|&(c, w)| (at(c), w)).collect(),
            }
        })
        .collect();
    Some(Samples::Stored { layouts, traces })
}

fn cdsa_spec(shape: &Shape, rec: &Recording, job: &TrendJob) -> Option<CdsaSpec> {
    let (welch, segment) = shape.cdsa.as_ref()?;
    let p = welch.params();
    let window = hann(p.segment);
    let power: f64 = window.iter().map(|w| w * w).sum();
    Some(CdsaSpec {
        rows: shape.rows.clone(),
        segment: *segment,
        block: p.segment,
        step: p.step(),
        blocks: p.segments(*segment),
        window,
        scale: 1.0 / (shape.fs * power),
        db: cdsa_unit(rec, job).1,
    })
}

fn aeeg_spec(shape: &Shape, job: &TrendJob) -> Option<AeegSpec> {
    if job.aeeg_traces.is_empty() {
        return None;
    }
    let position = |t: usize| {
        shape
            .read
            .binary_search(&t)
            .expect("read lists every trace")
    };
    let (band_pass, low_pass) = design(shape.fs, &job.aeeg);
    let p = &job.aeeg;
    Some(AeegSpec {
        traces: (job.aeeg_traces.iter().zip(&shape.scales))
            .map(|(&t, &k)| (position(t), k))
            .collect(),
        band_pass,
        low_pass,
        segment: shape.aeeg_segment,
        warm: (WARM_S * shape.fs).round() as usize,
        ranks: (0..=shape.aeeg_segment)
            .map(|n| match n {
                0 => (0, 0),
                n => (rank(n, p.lower_pct) as u32, rank(n, p.upper_pct) as u32),
            })
            .collect(),
    })
}
