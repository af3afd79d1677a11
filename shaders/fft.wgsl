// Batched complex FFT of rows of M = 2^L values, one Stockham stage per dispatch (src/gpu/fft.rs
// drives it; rustfft is its CPU twin in the tests). Stockham needs no bit reversal: each stage
// reads one buffer and writes the other in an order that leaves the result in natural order.
// Each stage is one pass over memory, so fewer, larger radices win on a bandwidth-bound GPU:
// radix 8 (a third of radix 2's passes; the paper's GPUs of 2012 did best at radix 4, the H100
// at 8: docs/BENCHMARKS.md), with one radix-2 or radix-4 stage first when 3 does not divide L.
//
// Layouts:
//   src, dst  vec2<f32> [rows][M]   (re, im); stages alternate between two buffers
//   tw        vec2<f32> [M]         exp(-2 pi i t / M), computed in f64 on the host; the
//                                   inverse uses the conjugates
//
// Stage of radix R with sub-transform length p (1, R, R^2, ... when starting at 1): thread i of
// M/R per row takes x[i + r M/R], r = 0..R-1, k = i mod p, multiplies by exp(-+2 pi i r k/(R p)),
// does a DFT of length R and writes y[(i - k) R + k + r p].
//
// Dispatch: (ceil(M/R / 256), min(rows, 65535), ceil(rows / 65535)); row = y + z * 65535.
// No scaling: the inverse is unnormalized, as rustfft's is.
//
// fft_pass.wgsl is appended to this module: rows of up to 2^22 values take its two passes
// instead of these stages (src/gpu/fft.rs chooses), reading `src` through `pass_input` and
// writing `out` (binding 24) through `pass_output`; its `pass2_tile` hook does nothing.

struct Params {
    m: u32,
    p: u32,
    rows: u32,
    inverse: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read> tw: array<vec2<f32>>;

// Pass 1's input for fft_pass.wgsl: the values in `src`.
fn pass_input(row: u32, k: u32) -> vec2<f32> {
    return src[row * split.m + k];
}

// Pass 2's output for fft_pass.wgsl: the values, in `out`.
@group(0) @binding(24) var<storage, read_write> out: array<vec2<f32>>;

fn pass_output(row: u32, j: u32, v: vec2<f32>) {
    out[row * split.m + j] = v;
}

// Pass 2's use of a whole workgroup's values for fft_pass.wgsl: none here (pass_output stored
// them all).
fn pass2_tile(lid: u32, g0: u32, n1: u32, n2: u32) {}

// No row here takes `pass_direct`.
fn pass_direct_len(row: u32) -> u32 {
    return 0u;
}

fn pass_input_end(row: u32) -> u32 {
    return split.m;
}

fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

fn twiddle(t: u32) -> vec2<f32> {
    let w = tw[t];
    return select(w, vec2<f32>(w.x, -w.y), params.inverse == 1u);
}

@compute @workgroup_size(256)
fn radix2(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let row = wid.y + wid.z * nwg.y;
    let t = params.m / 2u;
    let i = gid.x;
    if row >= params.rows || i >= t {
        return;
    }
    let base = row * params.m;
    let p = params.p;
    let k = i & (p - 1u);
    let u0 = src[base + i];
    let u1 = cmul(src[base + i + t], twiddle(k * (params.m / (2u * p))));
    let j = base + ((i - k) << 1u) + k;
    dst[j] = u0 + u1;
    dst[j + p] = u0 - u1;
}

@compute @workgroup_size(256)
fn radix4(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let row = wid.y + wid.z * nwg.y;
    let t = params.m / 4u;
    let i = gid.x;
    if row >= params.rows || i >= t {
        return;
    }
    let base = row * params.m;
    let p = params.p;
    let k = i & (p - 1u);
    let step = k * (params.m / (4u * p));
    let a0 = src[base + i];
    let a1 = cmul(src[base + i + t], twiddle(step));
    let a2 = cmul(src[base + i + 2u * t], twiddle(2u * step));
    let a3 = cmul(src[base + i + 3u * t], twiddle(3u * step));
    let b0 = a0 + a2;
    let b1 = a0 - a2;
    let b2 = a1 + a3;
    let d = a1 - a3;
    // d times -i (forward) or +i (inverse).
    let b3 = select(vec2<f32>(d.y, -d.x), vec2<f32>(-d.y, d.x), params.inverse == 1u);
    let j = base + ((i - k) << 2u) + k;
    dst[j] = b0 + b2;
    dst[j + p] = b1 + b3;
    dst[j + 2u * p] = b0 - b2;
    dst[j + 3u * p] = b1 - b3;
}

// A length-4 DFT; `inverse` flips the sign of the exponent.
fn dft4(a0: vec2<f32>, a1: vec2<f32>, a2: vec2<f32>, a3: vec2<f32>) -> array<vec2<f32>, 4> {
    let b0 = a0 + a2;
    let b1 = a0 - a2;
    let b2 = a1 + a3;
    let d = a1 - a3;
    let b3 = select(vec2<f32>(d.y, -d.x), vec2<f32>(-d.y, d.x), params.inverse == 1u);
    return array<vec2<f32>, 4>(b0 + b2, b1 + b3, b0 - b2, b1 - b3);
}

@compute @workgroup_size(256)
fn radix8(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let row = wid.y + wid.z * nwg.y;
    let t = params.m / 8u;
    let i = gid.x;
    if row >= params.rows || i >= t {
        return;
    }
    let base = row * params.m;
    let p = params.p;
    let k = i & (p - 1u);
    let step = k * (params.m / (8u * p));
    var a: array<vec2<f32>, 8>;
    a[0] = src[base + i];
    for (var r = 1u; r < 8u; r++) {
        a[r] = cmul(src[base + i + r * t], twiddle(r * step));
    }
    // Even and odd halves, then y_q = E_q + w8^q O_q and y_{q+4} = E_q - w8^q O_q.
    let e = dft4(a[0], a[2], a[4], a[6]);
    let o = dft4(a[1], a[3], a[5], a[7]);
    let h = 0.70710678118654752;
    let sgn = select(-1.0, 1.0, params.inverse == 1u);
    let w1 = vec2<f32>(h, sgn * h);
    let w2 = vec2<f32>(0.0, sgn);
    let w3 = vec2<f32>(-h, sgn * h);
    let o1 = cmul(o[1], w1);
    let o2 = cmul(o[2], w2);
    let o3 = cmul(o[3], w3);
    let j = base + ((i - k) << 3u) + k;
    dst[j] = e[0] + o[0];
    dst[j + p] = e[1] + o1;
    dst[j + 2u * p] = e[2] + o2;
    dst[j + 3u * p] = e[3] + o3;
    dst[j + 4u * p] = e[0] - o[0];
    dst[j + 5u * p] = e[1] - o1;
    dst[j + 6u * p] = e[2] - o2;
    dst[j + 7u * p] = e[3] - o3;
}
