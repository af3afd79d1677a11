//! The night's trends on the GPU (`gpu::trend`) against the CPU's pass (`analysis::trend::run`,
//! itself held to SciPy's Welch and EDFbrowser's aEEG in tests/trend.rs): CDSA to 1e-3 dB,
//! aEEG edges and margins to 1e-3 uV, on the stored integers of EDF and BDF files (decoded on
//! the device: power-of-two and other Welch blocks, average references, interpolated traces),
//! on traces the host derives (a recording in memory), in one chunk and in many, and on a
//! real recording.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize};

use common::{TestSignal, write_edf};
use ede::analysis::Backend;
use ede::analysis::trend::{self, CdsaParams, Group, TrendJob, Trends};
use ede::dsp::aeeg::AeegParams;
use ede::dsp::montage::Derivation;
use ede::gpu::trend::TrendKernels;
use ede::recording::{Format, OpenOptions, Recording, in_memory, unknown_start};

fn kernels() -> Option<TrendKernels> {
    let ctx = match ede::gpu::GpuContext::headless() {
        Ok(c) => c,
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("note: {e}; GPU trend tests skipped outside CI");
            return None;
        }
        Err(e) => panic!("CI must have a (software) adapter: {e}"),
    };
    let kernels = TrendKernels::new(&ctx);
    assert!(
        kernels.is_some() || std::env::var_os("CI").is_none(),
        "lavapipe has f64 in shaders"
    );
    kernels
}

/// A noisy alpha whose amplitude drifts, per channel, in microvolts.
fn eeg(channels: usize, n: usize, fs: f64) -> Vec<Vec<f64>> {
    let mut s = 11u64;
    (0..channels)
        .map(|c| {
            (0..n)
                .map(|i| {
                    s = s
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let t = i as f64 / fs;
                    let level = 8.0 + 40.0 * ((t / 70.0 + c as f64).sin()).abs();
                    let noise = (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                    level * (2.0 * std::f64::consts::PI * (9.0 + c as f64) * t).sin()
                        + 15.0 * noise
                        + 300.0 * c as f64
                })
                .collect()
        })
        .collect()
}

/// Every trace alone, all of them as one more row, and the aEEG of every trace.
fn job(derivations: Vec<Derivation>) -> TrendJob {
    let traces: Vec<usize> = (0..derivations.len()).collect();
    let mut groups: Vec<Group> = (traces.iter())
        .map(|&t| Group {
            name: format!("{t}"),
            traces: vec![t],
        })
        .collect();
    groups.push(Group {
        name: "all".into(),
        traces: traces.clone(),
    });
    TrendJob {
        derivations,
        cdsa_groups: groups,
        cdsa: CdsaParams::default(),
        aeeg_traces: traces,
        aeeg: AeegParams::default(),
    }
}

/// Each channel as recorded, each less the average of all, a bipolar pair, and the first
/// channel as if interpolated from the others.
fn montage(rec: &Recording) -> Vec<Derivation> {
    let n = rec.signals.len();
    let mut d: Vec<Derivation> = (0..n).map(|c| Derivation::recorded(rec, c)).collect();
    for c in 0..n {
        d.push(Derivation {
            minus: (0..n).map(|k| (k, 1.0 / n as f32)).collect(),
            ..Derivation::recorded(rec, c)
        });
    }
    d.push(Derivation {
        minus: vec![(1, 1.0)],
        ..Derivation::recorded(rec, 0)
    });
    d.push(Derivation {
        minus: (1..n).map(|k| (k, -1.0 / (n - 1) as f32)).collect(),
        interpolated: true,
        ..Derivation::recorded(rec, 0)
    });
    d
}

fn largest(a: &[Vec<f32>], b: &[Vec<f32>]) -> f64 {
    assert_eq!(a.len(), b.len());
    (a.iter().zip(b))
        .flat_map(|(x, y)| {
            assert_eq!(x.len(), y.len());
            x.iter().zip(y).map(|(p, q)| (*p as f64 - *q as f64).abs())
        })
        .fold(0.0, f64::max)
}

/// Both paths' trends of `job` over `rec`, the GPU's in chunks of at most `chunk_bytes`.
fn both(
    rec: &Recording,
    job: &TrendJob,
    k: &mut TrendKernels,
    chunk_bytes: Option<u64>,
) -> (Trends, Trends) {
    let (stop, done) = (AtomicBool::new(false), AtomicUsize::new(0));
    let cpu = trend::run(rec, job, &stop, &done).unwrap().unwrap();
    if let Some(bytes) = chunk_bytes {
        k.set_chunk_bytes(bytes);
    }
    let (gpu, backend) = trend::run_on(rec, job, Some(k), &stop, &done)
        .unwrap()
        .unwrap();
    k.set_chunk_bytes(u64::MAX);
    assert_eq!(backend, Backend::Gpu);
    (cpu, gpu)
}

fn assert_close(cpu: &Trends, gpu: &Trends) {
    let (c, g) = (cpu.cdsa.as_ref().unwrap(), gpu.cdsa.as_ref().unwrap());
    assert_eq!(c.frequencies_hz, g.frequencies_hz);
    assert_eq!(c.unit, g.unit);
    assert!(!c.power[0].is_empty());
    for (r, (a, b)) in c.power.iter().zip(&g.power).enumerate() {
        let worst = largest(a, b);
        assert!(worst <= 1e-3, "CDSA row {r}: {worst} dB apart");
    }
    let (c, g) = (cpu.aeeg.as_ref().unwrap(), gpu.aeeg.as_ref().unwrap());
    for (what, a, b) in [
        ("lower edges", &c.lower_uv, &g.lower_uv),
        ("upper edges", &c.upper_uv, &g.upper_uv),
        ("lower margins", &c.lower_margin_uv, &g.lower_margin_uv),
        ("upper margins", &c.upper_margin_uv, &g.upper_margin_uv),
    ] {
        let worst = largest(a, b);
        assert!(worst <= 1e-3, "aEEG {what}: {worst} uV apart");
    }
    assert!(!c.upper_margin_uv[0].is_empty());
}

/// An EDF (or BDF) of `minutes` of four channels at `fs`, records of one second.
fn written(dir: &std::path::Path, bdf: bool, fs: usize, minutes: usize) -> Recording {
    let n = fs * 60 * minutes;
    let full: i32 = if bdf { 8388607 } else { 32767 };
    let labels = ["EEG C3", "EEG C4", "EEG O1", "EEG O2"];
    let signals: Vec<TestSignal> = (eeg(4, n, fs as f64).into_iter().zip(labels))
        .map(|(x, label)| TestSignal {
            label,
            samples_per_record: fs,
            // 2000 uV full scale: a step of 0.06 uV in 16 bits.
            digital: x
                .iter()
                .map(|v| (v / 2000.0 * full as f64).round() as i32)
                .collect(),
            physical_min: -2000.0,
            physical_max: 2000.0,
            digital_min: -full,
            digital_max: full,
        })
        .collect();
    let path = dir.join(if bdf { "night.bdf" } else { "night.edf" });
    write_edf(&path, bdf, None, 1.0, &signals, None, &[]);
    Recording::open(&path, &OpenOptions::default()).unwrap()
}

#[test]
fn stored_integers_decoded_on_the_device_equal_the_cpu() {
    let Some(mut k) = kernels() else { return };
    let dir = tempfile::tempdir().unwrap();
    // 200 Hz: Welch blocks of 400 samples, a direct DFT; 256 Hz: 512, the radix-2 FFT.
    for (bdf, fs) in [(false, 200), (true, 256)] {
        let rec = written(dir.path(), bdf, fs, 11);
        assert!(rec.stored(0).is_some());
        let job = job(montage(&rec));
        for chunk in [None, Some(1)] {
            let (cpu, gpu) = both(&rec, &job, &mut k, chunk);
            assert_close(&cpu, &gpu);
        }
    }
}

#[test]
fn traces_the_host_derives_equal_the_cpu() {
    let Some(mut k) = kernels() else { return };
    let fs = 128.0;
    let n = (12.0 * 60.0 * fs) as usize;
    let mut data: Vec<Vec<f32>> = (eeg(3, n, fs).into_iter())
        .map(|x| x.into_iter().map(|v| v as f32).collect())
        .collect();
    // A gap's NaN samples are left out of the aEEG's percentiles.
    data[1][20_000..20_500].fill(f32::NAN);
    let signals = (0..3)
        .map(|c| (format!("EEG P{c}"), "uV".to_string(), fs))
        .collect();
    let rec = in_memory(
        None,
        Format::Edf,
        unknown_start(),
        signals,
        data,
        vec![],
        vec![],
    );
    assert!(rec.stored(0).is_none());
    let mut job = job((0..3).map(|c| Derivation::recorded(&rec, c)).collect());
    // A gap would blank its CDSA segments on both paths alike: the CDSA of the others only.
    job.cdsa_groups.retain(|g| !g.traces.contains(&1));
    for chunk in [None, Some(1)] {
        let (cpu, gpu) = both(&rec, &job, &mut k, chunk);
        assert_close(&cpu, &gpu);
        let edges = &gpu.aeeg.as_ref().unwrap().upper_uv[1];
        assert!(edges.iter().all(|v| v.is_finite()));
    }
}

#[test]
fn a_real_recording_s_trends_equal_the_cpu() {
    let Some(data) = common::shared_data() else {
        return;
    };
    let Some(mut k) = kernels() else { return };
    let path = data.join("eeg/eeglab_sample_32ch_128hz.edf");
    let rec = Recording::open(&path, &OpenOptions::default()).unwrap();
    let eeg: Vec<usize> = (0..rec.signals.len()).collect();
    let mut derivations: Vec<Derivation> =
        eeg.iter().map(|&c| Derivation::recorded(&rec, c)).collect();
    // The average reference of every channel.
    derivations.extend(eeg.iter().map(|&c| Derivation {
        minus: eeg.iter().map(|&k| (k, 1.0 / eeg.len() as f32)).collect(),
        ..Derivation::recorded(&rec, c)
    }));
    let mut job = job(derivations);
    // 238 s hold no whole margin: margins of two segments.
    job.aeeg.margin_segments = 2;
    let (cpu, gpu) = both(&rec, &job, &mut k, Some(1));
    assert_close(&cpu, &gpu);
}
