// The FP32 rate WGSL reaches on this device: every thread runs independent chains of
// fused multiply-adds on registers, nothing else, and writes one sum (so that nothing is
// dropped as dead code). The measured ceiling of the arithmetic-bound kernels' reports
// (docs/BENCHMARKS.md), in place of a datasheet's peak.
//
// The host (src/gpu/peak.rs) prepends CHAINS (vec4 accumulators a thread) and the unrolled
// body `fn chains(...)`. Bindings: 0 uniform Params; 1 out: [threads] f32.
// Dispatch: workgroups of 256 along x.

struct Params {
    iterations: u32,
    a: f32,
    b: f32,
    pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn peak(@builtin(global_invocation_id) id: vec3<u32>) {
    out[id.x] = chains(f32(id.x & 255u), vec4<f32>(p.a), vec4<f32>(p.b));
}
