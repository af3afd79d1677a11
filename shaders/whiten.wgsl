// FastICA's centring and whitening in f64 on the GPU (gpu/whiten.rs), where the device has
// SHADER_F64: the same arithmetic as dsp::ica::Whitening::of on the CPU, whose covariance and
// projection (two f64 products of n x n x T) were most of a 256 x 20000 fit's host time. The
// eigendecomposition between them stays on the CPU.
//
//   means:      mu[i] = sum_t x[i][t] / T                       (a workgroup per channel)
//   covariance: part[z][i][j] = sum over chunk z of (x[i][t] - mu[i]) (x[j][t] - mu[j]),
//               for the 32 x 32 tiles on and above the diagonal (the rest are mirrored)
//   sum_chunks: cov[i][j] = sum_z part[z][i][j] / T
//   project:    z[i][t] = sum_c k[i][c] (x[c][t] - mu[c]), accumulated in f64, stored f32
//
// Bindings (group 0): 0 params; 1 x (n x T, f32); 2 mu (n, f64); 3 part (chunks x n x n, f64);
// 4 cov (n x n, f64); 5 k (r x n, f64); 6 z (r x T, f32).

struct Params {
    n: u32,
    t: u32,
    r: u32,
    chunk: u32,
    chunks: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> mu: array<f64>;
@group(0) @binding(3) var<storage, read_write> part: array<f64>;
@group(0) @binding(4) var<storage, read_write> cov: array<f64>;
@group(0) @binding(5) var<storage, read> k: array<f64>;
@group(0) @binding(6) var<storage, read_write> z: array<f32>;

var<workgroup> red: array<f64, 256>;

@compute @workgroup_size(256)
fn means(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let row = wg.x;
    var sum = f64(0.0);
    for (var t = li; t < p.t; t += 256u) {
        sum += f64(x[row * p.t + t]);
    }
    red[li] = sum;
    workgroupBarrier();
    for (var half = 128u; half > 0u; half /= 2u) {
        if (li < half) {
            red[li] += red[li + half];
        }
        workgroupBarrier();
    }
    if (li == 0u) {
        mu[row] = red[0] / f64(p.t);
    }
}

// 32 x 32 outputs a workgroup of 16 x 16 threads, 2 x 2 a thread, over 32 samples or channels
// at a time staged in workgroup memory (ta[k][i] = A(i, k), tb[k][j] = B(k, j); 16 KB).
const TS: u32 = 32u;
var<workgroup> ta: array<array<vec2<f64>, 16>, 32>;
var<workgroup> tb: array<array<vec2<f64>, 16>, 32>;

// Channel c's sample t, centred; 0 outside the data.
fn centred(c: u32, t: u32) -> f64 {
    if (c < p.n && t < p.t) {
        return f64(x[c * p.t + t]) - mu[c];
    }
    return f64(0.0);
}

// The 2 x 2 outputs of thread (tx, ty) over the staged k, added to acc (rows ty*2.., columns
// tx*2..).
fn tile_products(tx: u32, ty: u32, acc: ptr<function, array<vec2<f64>, 2>>) {
    for (var q = 0u; q < TS; q++) {
        let av = ta[q][ty];
        let bv = tb[q][tx];
        (*acc)[0] = fma(vec2<f64>(av.x), bv, (*acc)[0]);
        (*acc)[1] = fma(vec2<f64>(av.y), bv, (*acc)[1]);
    }
}

@compute @workgroup_size(16, 16, 1)
fn covariance(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) l: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    // The lower triangle's tiles are the upper's mirror.
    if (wg.y > wg.x) {
        return;
    }
    let i0 = wg.y * TS;
    let j0 = wg.x * TS;
    let t0 = wg.z * p.chunk;
    let t1 = min(p.t, t0 + p.chunk);
    var acc = array<vec2<f64>, 2>(vec2<f64>(0.0), vec2<f64>(0.0));
    for (var tt = t0; tt < t1; tt += TS) {
        // Neighbouring threads read neighbouring samples of one channel.
        for (var q = 0u; q < 4u; q++) {
            let e = li + q * 256u;
            let c = e / TS;
            let s = e % TS;
            let t = select(p.t, tt + s, tt + s < t1);
            ta[s][c / 2u][c % 2u] = centred(i0 + c, t);
            tb[s][c / 2u][c % 2u] = centred(j0 + c, t);
        }
        workgroupBarrier();
        tile_products(l.x, l.y, &acc);
        workgroupBarrier();
    }
    let base = wg.z * p.n * p.n;
    for (var a = 0u; a < 2u; a++) {
        let i = i0 + l.y * 2u + a;
        for (var b = 0u; b < 2u; b++) {
            let j = j0 + l.x * 2u + b;
            if (i < p.n && j < p.n) {
                part[base + i * p.n + j] = acc[a][b];
            }
        }
    }
}

@compute @workgroup_size(256)
fn sum_chunks(@builtin(global_invocation_id) gid: vec3<u32>) {
    let e = gid.x;
    if (e >= p.n * p.n) {
        return;
    }
    var sum = f64(0.0);
    for (var c = 0u; c < p.chunks; c++) {
        sum += part[c * p.n * p.n + e];
    }
    cov[e] = sum / f64(p.t);
}

@compute @workgroup_size(16, 16, 1)
fn project(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) l: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let i0 = wg.y * TS;
    let t0 = wg.x * TS;
    var acc = array<vec2<f64>, 2>(vec2<f64>(0.0), vec2<f64>(0.0));
    for (var cc = 0u; cc < p.n; cc += TS) {
        for (var q = 0u; q < 4u; q++) {
            let e = li + q * 256u;
            // K's rows along the channels; the data's channels along the samples.
            let row = e / TS;
            let c = e % TS;
            var kv = f64(0.0);
            if (i0 + row < p.r && cc + c < p.n) {
                kv = k[(i0 + row) * p.n + cc + c];
            }
            ta[c][row / 2u][row % 2u] = kv;
            let s = e % TS;
            let ch = e / TS;
            tb[ch][s / 2u][s % 2u] = centred(cc + ch, t0 + s);
        }
        workgroupBarrier();
        tile_products(l.x, l.y, &acc);
        workgroupBarrier();
    }
    for (var a = 0u; a < 2u; a++) {
        let i = i0 + l.y * 2u + a;
        for (var b = 0u; b < 2u; b++) {
            let t = t0 + l.x * 2u + b;
            if (i < p.r && t < p.t) {
                z[i * p.t + t] = f32(acc[a][b]);
            }
        }
    }
}
