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
