// saxpy: y[i] = a * x[i] + b[i]. The GPU context's self-test: proves that an adapter compiles
// and runs a compute shader and returns correct numbers before analyses trust it.
//
// Bindings (group 0): 0 params {a: f32, n: u32} uniform; 1 x: array<f32> read;
//                     2 b: array<f32> read; 3 y: array<f32> read_write.
// Dispatch: ceil(n / 64) workgroups of 64 threads along x.

struct Params {
    a: f32,
    n: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i < params.n) {
        y[i] = params.a * x[i] + b[i];
    }
}
