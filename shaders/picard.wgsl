// Picard's passes over the data on the GPU (gpu/picard.rs), where the device has SHADER_F64.
// The products with the data run in f32 on FastICA's kernels (shaders/fastica.wgsl):
// Y = W Z, P = psi(Y) Y^T and H = psi'(Y) (Y^2)^T split over sample chunks. These kernels
// add the density and the sums, accumulated in f64: Picard's line search compares losses that
// differ by less than f32 resolves near the optimum.
//
//   density:    psi, psi', y^2 of every element of Y, and per tile of TILE samples of each row
//               the sums of the negative log-likelihood, psi' and y^2 (f64)
//   row_totals: totals[q][i] = sum over tiles of part[q][i][tile]   (a workgroup per (i, q))
//   sum_chunks: out[e] = sum over chunks of chunk[z][e]             (a thread per element)
//
// Bindings (group 0): 0 params; 1 y (r x T, f32); 2 psi; 3 psid; 4 y2 (r x T, f32 each);
// 5 part (3 x r x tiles, f64); 6 totals (3 x r, f64); 7 chunk (chunks x count, f32);
// 8 out (count, f64).
// density: 0 logcosh (picard's tanh), 1 exp (alpha EXP_ALPHA), 2 cube.

struct Params {
    r: u32,
    t: u32,
    density: u32,
    tiles: u32,
    chunks: u32,
    count: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> psi: array<f32>;
@group(0) @binding(3) var<storage, read_write> psid: array<f32>;
@group(0) @binding(4) var<storage, read_write> y2: array<f32>;
@group(0) @binding(5) var<storage, read_write> part: array<f64>;
@group(0) @binding(6) var<storage, read_write> totals: array<f64>;
@group(0) @binding(7) var<storage, read> chunk: array<f32>;
@group(0) @binding(8) var<storage, read_write> out: array<f64>;

const EXP_ALPHA: f32 = 0.1;
// Samples per thread of `density`; a tile is 256 threads' worth.
const PER_THREAD: u32 = 4u;
const TILE: u32 = 1024u;

var<workgroup> red: array<vec3<f64>, 256>;

// The negative log-likelihood (up to constants), psi and psi' at v, as dsp/ica/picard.rs's
// `density`.
fn at(v: f32) -> vec3<f32> {
    if (p.density == 0u) {
        let a = abs(v);
        let e = exp(-2.0 * a);
        let s = sign(v) * (1.0 - e) / (1.0 + e);
        return vec3<f32>(a + log(1.0 + e), s, 1.0 - s * s);
    } else if (p.density == 1u) {
        let v2 = v * v;
        let k = exp(-0.5 * EXP_ALPHA * v2);
        return vec3<f32>(-k / EXP_ALPHA, v * k, (1.0 - EXP_ALPHA * v2) * k);
    }
    return vec3<f32>(0.25 * v * v * v * v, v * v * v, 3.0 * v * v);
}

// Dispatch (tiles, r) of 256 threads.
@compute @workgroup_size(256)
fn density(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let row = wg.y;
    var sums = vec3<f64>(f64(0.0), f64(0.0), f64(0.0));
    for (var q = 0u; q < PER_THREAD; q++) {
        let t = wg.x * TILE + q * 256u + li;
        if (t < p.t) {
            let e = row * p.t + t;
            let v = y[e];
            let d = at(v);
            psi[e] = d.y;
            psid[e] = d.z;
            y2[e] = v * v;
            sums += vec3<f64>(f64(d.x), f64(d.z), f64(v * v));
        }
    }
    red[li] = sums;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (li < s) {
            red[li] += red[li + s];
        }
        workgroupBarrier();
    }
    if (li == 0u) {
        let base = row * p.tiles + wg.x;
        part[base] = red[0].x;
        part[p.r * p.tiles + base] = red[0].y;
        part[2u * p.r * p.tiles + base] = red[0].z;
    }
}

// Dispatch (r, 3) of 256 threads: quantity wg.y (0 log-likelihood, 1 psi', 2 y^2) of row wg.x.
@compute @workgroup_size(256)
fn row_totals(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let base = (wg.y * p.r + wg.x) * p.tiles;
    var sum = f64(0.0);
    for (var k = li; k < p.tiles; k += 256u) {
        sum += part[base + k];
    }
    red[li] = vec3<f64>(sum, f64(0.0), f64(0.0));
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (li < s) {
            red[li].x += red[li + s].x;
        }
        workgroupBarrier();
    }
    if (li == 0u) {
        totals[wg.y * p.r + wg.x] = red[0].x;
    }
}

// Dispatch (ceil(count / 256)) of 256 threads.
@compute @workgroup_size(256)
fn sum_chunks(@builtin(global_invocation_id) g: vec3<u32>) {
    let e = g.x;
    if (e >= p.count) {
        return;
    }
    var sum = f64(0.0);
    for (var z = 0u; z < p.chunks; z++) {
        sum += f64(chunk[z * p.count + e]);
    }
    out[e] = sum;
}
