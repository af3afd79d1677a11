//! The trends on the GPU (`gpu::trend`): the job's traces as the kernels take them (the
//! recording's stored integers where its format has them, else chunks the host derives) and
//! the chunks' results gathered into the `Trends` that the CPU's pass (`run`) gives.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use super::{Shape, TrendError, TrendJob, Trends, WARM_S, assemble, cdsa_unit, run, shape};
use crate::analysis::Backend;
use crate::dsp::aeeg::{design, rank};
use crate::dsp::montage::apply::derive_on;
use crate::dsp::spectrum::hann;
use crate::gpu::trend::{
    AeegSpec, CdsaSpec, GpuTrendError, Samples, TraceDef, TrendKernels, TrendSpec,
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
    let cpu = || Ok(run(rec, job, cancel, done)?.map(|t| (t, Backend::Cpu)));
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
    if !TrendKernels::takes(&spec) {
        return cpu();
    }
    let mut power = vec![Vec::new(); job.cdsa_groups.len()];
    let mut edges = vec![Vec::new(); job.aeeg_traces.len()];
    let finished = kernels.run(&spec, cancel, &mut |chunk| {
        for (all, p) in power.iter_mut().zip(chunk.power) {
            all.extend(p);
        }
        for (all, e) in edges.iter_mut().zip(chunk.edges) {
            all.extend(e);
        }
        done.store((chunk.done as f64 / shape.fs) as usize, Ordering::Relaxed);
    })?;
    if !finished {
        return Ok(None);
    }
    let (unit, _) = cdsa_unit(rec, job);
    let welch = shape.cdsa.as_ref().map(|(w, _)| w);
    let trends = assemble(job, shape.fs, welch, unit, power, edges, started);
    Ok(Some((trends, Backend::Gpu)))
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
