//! A trivial compute shader runs through `GpuContext` on whatever adapter exists (lavapipe in CI)
//! and matches the CPU.

use ede::gpu::{GpuContext, saxpy};

#[test]
fn saxpy_runs_on_the_adapter_and_matches_the_cpu() {
    let ctx = match GpuContext::headless() {
        Ok(c) => c,
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("note: {e}; GPU smoke test skipped outside CI");
            return;
        }
        Err(e) => panic!("CI must have a (software) adapter: {e}"),
    };
    eprintln!("adapter: {}", ctx.describe());
    let x: Vec<f32> = (0..100_003).map(|i| (i as f32).sin()).collect();
    let b: Vec<f32> = (0..100_003).map(|i| (i % 13) as f32).collect();
    let gpu = saxpy::saxpy(&ctx, -2.5, &x, &b).unwrap();
    let cpu = saxpy::saxpy_cpu(-2.5, &x, &b);
    assert_eq!(gpu.len(), cpu.len());
    for (g, c) in gpu.iter().zip(&cpu) {
        assert!((g - c).abs() <= 1e-5 * c.abs().max(1.0), "{g} vs {c}");
    }
    ctx.self_test().unwrap();
}

/// Work the device refuses comes back as an error instead of ending the process.
#[test]
fn refused_work_is_an_error() {
    let Ok(ctx) = GpuContext::headless() else {
        return;
    };
    let too_big = ctx.device.limits().max_buffer_size.saturating_add(1 << 20);
    let r = ctx.guarded(|| {
        ctx.device.create_buffer(&eframe::wgpu::BufferDescriptor {
            label: Some("too big"),
            size: too_big,
            usage: eframe::wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })
    });
    assert!(r.is_err());
    ctx.self_test().unwrap();
}

/// A profiled device times each compute pass, reads the times once and starts over.
#[test]
fn passes_are_timed_on_a_profiled_device() {
    let Ok(ctx) = GpuContext::headless_profiled() else {
        return;
    };
    if !ctx
        .device
        .features()
        .contains(eframe::wgpu::Features::TIMESTAMP_QUERY)
    {
        eprintln!("note: {} writes no timestamps; skipped", ctx.describe());
        return;
    }
    let x = vec![1.0f32; 1 << 20];
    saxpy::saxpy(&ctx, 2.0, &x, &x).unwrap();
    saxpy::saxpy(&ctx, 3.0, &x, &x).unwrap();
    let times = ctx.pass_times().unwrap();
    assert_eq!(
        times.iter().map(|t| t.0).collect::<Vec<_>>(),
        ["saxpy", "saxpy"]
    );
    assert!(times.iter().all(|t| t.1 > 0.0 && t.1 < 1e6), "{times:?}");
    assert!(ctx.pass_times().unwrap().is_empty());
    // An unprofiled device reports nothing.
    let plain = GpuContext::headless().unwrap();
    if std::env::var_os("EDE_GPU_PROFILE").is_none() {
        saxpy::saxpy(&plain, 2.0, &x, &x).unwrap();
        assert!(plain.pass_times().unwrap().is_empty());
    }
}

/// Compiled pipelines go to the cache folder and come back in the next process's device; a
/// damaged or foreign file is ignored, and the device computes right either way.
#[test]
fn compiled_pipelines_are_kept_on_disk_and_bad_files_ignored() {
    let Ok(probe) = GpuContext::headless() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let first = GpuContext::headless_with_pipeline_cache(dir.path()).unwrap();
    let Some(file) = first.pipeline_cache_file().map(|p| p.to_path_buf()) else {
        eprintln!("note: {} has no pipeline cache", probe.describe());
        return;
    };
    assert_eq!(first.pipeline_cache_loaded(), 0, "an empty folder");
    ede::gpu::ica::FastIcaPipelines::compile(&first);
    let saved = std::fs::read(&file).unwrap();
    assert!(saved.len() > 20, "{} bytes saved", saved.len());
    drop(first);

    let again = GpuContext::headless_with_pipeline_cache(dir.path()).unwrap();
    assert_eq!(
        again.pipeline_cache_loaded(),
        saved.len() - 20,
        "ede's header left out"
    );
    ede::gpu::ica::FastIcaPipelines::compile(&again);
    again.self_test().unwrap();

    for damaged in [&saved[..saved.len() / 2], b"not a cache", &[]] {
        std::fs::write(&file, damaged).unwrap();
        let ctx = GpuContext::headless_with_pipeline_cache(dir.path()).unwrap();
        assert_eq!(ctx.pipeline_cache_loaded(), 0);
        ctx.self_test().unwrap();
    }
    let mut flipped = saved.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    std::fs::write(&file, &flipped).unwrap();
    let ctx = GpuContext::headless_with_pipeline_cache(dir.path()).unwrap();
    assert_eq!(ctx.pipeline_cache_loaded(), 0, "a flipped bit");
    ctx.self_test().unwrap();
}
