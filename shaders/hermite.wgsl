// Hermite beat fits (issue 7; Gil et al. 2016): the paper's kernel_phi is `basis` (+ `gram`),
// its kernel_Hermite is `fit` + `select`. Definitions: src/dsp/hermite.rs.
//
// The host (gpu/hermite.rs, `unrolled`) prepends `const N4: u32 = ...;` and, unrolled over
// the N4 vec4s that hold a beat's coefficients (N <= 4 N4, functions n >= N are zero):
//   struct Coef { q0: vec4<f32>, ... }       one beat's coefficients, in registers
//   fn coefficients(beat, s) -> Coef         c_n = sum over the signal samples of x_k b_n(t_k)
//   fn mse_at(beat, s) -> f32                the residual sample by sample over the signal
//                                            part, plus c^T G_pad c for the padding
//   fn write_coefficients(o, c)              c into fits[o ..]
// (Loops over an array of vec4 were left in local memory by the driver at N = 30: 10x slower.)
//
// Bindings (one group; each entry point uses some):
//   0 uniform Params
//   1 sigma:   [S] f32, seconds
//   2 basis:   [S][L][N4] vec4: b_n(t_k) = sqrt(dt) phi_n(t_k, sigma_s), n = 4 q + lane
//   3 gram:    [S][4 N4][N4] vec4: G_pad[i][j] over the padding samples k < h, k >= 3h
//   4 x:       [2h][beats] f32, the beats' signal samples, beat-minor (coalesced reads)
//   5 partial: [groups][beats] (best MSE, bitcast sigma index) over each group of sigmas
//   6 fits:    [beats][2 + 4 N4] f32: MSE, bitcast sigma index, coefficients
// The host also prepends `const BEATS: u32` (beats per thread of `fit`, at most 4) and
//   fn mse_many(first, stride, s) -> vec4<f32>   mse_at of BEATS beats at once
// Dispatch: basis (L, S); gram (4 N4 N4, S); fit (ceil(beats / BEATS), groups);
// select (beats, 1).
// Workgroups of 256 along x.

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
    stride: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> sigma: array<f32>;
@group(0) @binding(2) var<storage, read_write> basis: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> gram: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> x: array<f32>;
@group(0) @binding(5) var<storage, read_write> partial: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read_write> fits: array<f32>;

const PI_POW_MINUS_QUARTER: f32 = 0.7511255444649425;
// The polynomial part is rescaled by 1e-18 whenever it passes 1e18; ln(1e18):
const BIG: f32 = 1e18;
const LN_BIG: f32 = 41.44653167389282;

// One sample k of every function for sigma s, by the normalized recurrence with the Gaussian
// applied last (as dsp::hermite::hermite_functions).
@compute @workgroup_size(256)
fn basis_fn(@builtin(global_invocation_id) id: vec3<u32>) {
    let k = id.x;
    let s = id.y;
    if (k >= p.len || s >= p.sigmas) {
        return;
    }
    let sg = sigma[s];
    let t = (f32(k) - 0.5 * f32(p.len - 1u)) / p.fs;
    let u = t / sg;
    let scale = inverseSqrt(p.fs * sg);
    var log_scale = -0.5 * u * u;
    var prev = 0.0;
    var cur = PI_POW_MINUS_QUARTER;
    let base = (s * p.len + k) * N4;
    for (var q = 0u; q < N4; q++) {
        var v = vec4<f32>(0.0);
        for (var lane = 0u; lane < 4u; lane++) {
            let n = q * 4u + lane;
            if (n > 0u) {
                let next = sqrt(2.0 / f32(n)) * u * cur - sqrt(f32(n - 1u) / f32(n)) * prev;
                prev = cur;
                cur = next;
            }
            if (abs(cur) > BIG) {
                cur = cur / BIG;
                prev = prev / BIG;
                log_scale = log_scale + LN_BIG;
            }
            if (n < p.order) {
                v[lane] = scale * cur * exp(log_scale);
            }
        }
        basis[base + q] = v;
    }
}

fn is_pad(k: u32) -> bool {
    return k < p.half || k >= p.half + p.width;
}

@compute @workgroup_size(256)
fn gram_fn(@builtin(global_invocation_id) id: vec3<u32>) {
    let row = id.x;
    let s = id.y;
    if (row >= 4u * N4 * N4 || s >= p.sigmas) {
        return;
    }
    let i = row / N4;
    let q = row % N4;
    var acc = vec4<f32>(0.0);
    for (var k = 0u; k < p.len; k++) {
        if (is_pad(k)) {
            let b = (s * p.len + k) * N4;
            acc = fma(vec4<f32>(basis[b + i / 4u][i % 4u]), basis[b + q], acc);
        }
    }
    gram[(s * 4u * N4 + i) * N4 + q] = acc;
}

// A thread fits BEATS beats, first + j * stride (stride = ceil(beats / BEATS)), so that each
// basis load feeds all of them and neighbouring threads still read neighbouring beats.
@compute @workgroup_size(256)
fn fit(@builtin(global_invocation_id) id: vec3<u32>) {
    let first = id.x;
    let g = id.y;
    let stride = p.stride;
    if (first >= stride || g >= p.groups) {
        return;
    }
    var best = vec4<f32>(3.4e38);
    var best_s = vec4<u32>(0u);
    let s_end = min((g + 1u) * p.group, p.sigmas);
    // Ascending sigma and a strict comparison: a tie keeps the smaller sigma.
    for (var s = g * p.group; s < s_end; s++) {
        let m = mse_many(first, stride, s);
        let better = m < best;
        best = select(best, m, better);
        best_s = select(best_s, vec4<u32>(s), better);
    }
    for (var j = 0u; j < BEATS; j++) {
        let beat = first + j * stride;
        if (beat < p.beats) {
            partial[g * p.beats + beat] = vec2<f32>(best[j], bitcast<f32>(best_s[j]));
        }
    }
}

@compute @workgroup_size(256)
fn select_best(@builtin(global_invocation_id) id: vec3<u32>) {
    let beat = id.x;
    if (beat >= p.beats) {
        return;
    }
    var best = 3.4e38;
    var best_s = 0u;
    for (var g = 0u; g < p.groups; g++) {
        let v = partial[g * p.beats + beat];
        if (v.x < best) {
            best = v.x;
            best_s = bitcast<u32>(v.y);
        }
    }
    let o = beat * (2u + 4u * N4);
    fits[o] = best;
    fits[o + 1u] = bitcast<f32>(best_s);
    write_coefficients(o + 2u, coefficients(beat, best_s));
}
