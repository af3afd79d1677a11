// Batched complex FFTs of rows of M = 2^L <= 2^22 values in two passes over memory, the
// stages of each pass done in workgroup memory (the four-step FFT of Bailey, 1990). src/gpu/fft.rs
// drives it (`TwoPass`); rustfft is its CPU twin in the tests. The stage-per-dispatch kernels of
// fft.wgsl read and write every value once per radix-8 stage (6 passes at M = 2^17); this reads
// and writes it twice, whatever M.
//
// This file is not a module of its own: it is appended to one that defines
//     fn pass_input(row: u32, k: u32) -> vec2<f32>
// pass 1's input value k of a row (fft.wgsl reads it from a buffer; cwt.wgsl multiplies a
// spectrum by the daughter wavelet there, so that the multiply costs no pass of its own), and
//     fn pass_output(row: u32, j: u32, v: vec2<f32>)
// which stores pass 2's output value j of a row (fft.wgsl as it is; cwt.wgsl only |v|^2, what
// all its uses read, in half the bytes), with the binding 24 it writes, and
//     fn pass2_tile(lid: u32, g0: u32, n1: u32, n2: u32)
// which every thread of a pass-2 workgroup calls after its stores, in uniform control flow,
// with the tile's values still in `tile` (fft.wgsl does nothing; cwt.wgsl sums |v|^2 over
// blocks of samples there, so that no |W|^2 row goes to memory). g0 is its first sequence, of
// the row's N1 and N2; and
//     fn pass_direct_len(row: u32) -> u32
// L <= TILE where a row takes `pass_direct` alone, which passes 1 and 2 leave to it, else 0
// (fft.wgsl has none); and
//     fn pass_input_end(row: u32) -> u32
// the bin from which a row's input is zero: `pass_direct` folds the bins from L on onto the
// first L.
// Its bindings start at 20 to stay clear of the including module's.
//
// M = N1 N2, input index k = N2 k1 + k2 (k1 < N1, k2 < N2), output index j = j1 + N1 j2:
//   pass 1: for each column k2, the N1-point DFT over k1 -> Y[k2][j1], times W_M^(k2 j1),
//           stored as inter[row][j1 N2 + k2];
//   pass 2: for each j1, the N2-point DFT of inter[row][j1 N2 ..][0..N2] over k2 -> X[j1 + N1 j2].
// A workgroup holds TILE values: TILE / N1 adjacent columns in pass 1 (their loads and stores
// are runs of TILE / N1 values), TILE / N2 rows j1 in pass 2 (contiguous loads, stores in
// runs of TILE / N2). Sequences are numbered across rows (g = row N2 + k2, or row N1 + j1), so
// rows shorter than a tile share one (N2 = 1 when M <= TILE: pass 2 is then a copy).
//
// Inside a tile, Stockham stages as in fft.wgsl (one radix-2 or radix-4 stage first when 3
// does not divide log2 of the length, then radix 8): each thread reads its 8 values, all wait,
// each writes its 8, all wait.
//
// Layouts:
//   split      uniform Split
//   inter_out  vec2<f32> [rows][M]  pass 1's output, pass 2's input (`inter`)
//   (24)       [rows][M]            pass_output's, natural order; only keep_from <= j < keep_to
//                                   is written
//
// Dispatch: workgroup_size 256; ceil(rows M / TILE) workgroups as (x, y) with x <= 65535,
// workgroup index x + y * num_workgroups.x (src/gpu/fft.rs `tiles_grid`).
// No scaling: the inverse is unnormalized, as rustfft's is.

struct Split {
    m: u32,
    n1: u32,
    n2: u32,
    rows: u32,
    inverse: u32,
    // Pass 2 writes out[row][j] for keep_from <= j < keep_to only.
    keep_from: u32,
    keep_to: u32,
    pad: u32,
}

const TILE: u32 = 2048u;
const THREADS: u32 = 256u;
// Values a thread holds: TILE / THREADS.
const PER_THREAD: u32 = 8u;

@group(0) @binding(20) var<uniform> split: Split;
@group(0) @binding(22) var<storage, read_write> inter_out: array<vec2<f32>>;
@group(0) @binding(23) var<storage, read> inter: array<vec2<f32>>;

var<workgroup> tile: array<vec2<f32>, TILE>;

fn tp_cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// exp(-+2 pi i t / M), computed rather than loaded: once the stages were written out, the
// scattered loads from a table of M values took a fifth of the scalogram batch. The angle is
// reduced to [-pi, pi] exactly (t / M and its rounding are exact in f32), where the hardware's
// sin and cos are within about 1e-6.
fn tp_twiddle(t: u32) -> vec2<f32> {
    let u = f32(t) / f32(split.m);
    let a = 6.283185307179586 * (u - round(u));
    let sgn = select(-1.0, 1.0, split.inverse == 1u);
    return vec2<f32>(cos(a), sgn * sin(a));
}

// d times -i (forward) or +i (inverse).
fn tp_rot(d: vec2<f32>) -> vec2<f32> {
    return select(vec2<f32>(d.y, -d.x), vec2<f32>(-d.y, d.x), split.inverse == 1u);
}

fn tp_dft4(a0: vec2<f32>, a1: vec2<f32>, a2: vec2<f32>, a3: vec2<f32>) -> array<vec2<f32>, 4> {
    let b0 = a0 + a2;
    let b1 = a0 - a2;
    let b2 = a1 + a3;
    let b3 = tp_rot(a1 - a3);
    return array<vec2<f32>, 4>(b0 + b2, b1 + b3, b0 - b2, b1 - b3);
}

fn tp_dft8(a: array<vec2<f32>, 8>) -> array<vec2<f32>, 8> {
    // Even and odd halves, then y_q = E_q + w8^q O_q and y_{q+4} = E_q - w8^q O_q.
    let e = tp_dft4(a[0], a[2], a[4], a[6]);
    let o = tp_dft4(a[1], a[3], a[5], a[7]);
    let h = 0.70710678118654752;
    let sgn = select(-1.0, 1.0, split.inverse == 1u);
    let o1 = tp_cmul(o[1], vec2<f32>(h, sgn * h));
    let o2 = tp_cmul(o[2], vec2<f32>(0.0, sgn));
    let o3 = tp_cmul(o[3], vec2<f32>(-h, sgn * h));
    return array<vec2<f32>, 8>(
        e[0] + o[0], e[1] + o1, e[2] + o2, e[3] + o3,
        e[0] - o[0], e[1] - o1, e[2] - o2, e[3] - o3,
    );
}

// The Stockham stages, one function per radix, written out: no private array is indexed by
// a loop variable, which the driver may keep in local memory (as hermite.wgsl found; writing
// them out took the scalogram batch from 0.87-0.89 s to 0.77 s). A stage of radix R with
// sub-transform length p over the tile's sequences of `len` values: TILE / R butterflies,
// PER_THREAD / R a thread; butterfly b of sequence s = b / (len / R) takes x[i + r len / R]
// (i = b mod len / R, k = i mod p), times exp(-+2 pi i r k / (R p)) = tp_twiddle(r k M / (R p)),
// and writes y[(i - k) R + k + r p].
struct Butterfly {
    base: u32,
    i: u32,
    k: u32,
}

// Lengths are powers of two: shifts and masks instead of divisions.
fn tp_butterfly(b: u32, len: u32, radix: u32, p: u32) -> Butterfly {
    let t = len / radix;
    let i = b & (t - 1u);
    return Butterfly((b >> countTrailingZeros(t)) * len, i, i & (p - 1u));
}

fn tp_load(f: Butterfly, r: u32, t: u32, step: u32) -> vec2<f32> {
    let v = tile[f.base + f.i + r * t];
    if r == 0u || f.k == 0u {
        return v;
    }
    return tp_cmul(v, tp_twiddle(r * f.k * step));
}

fn tp_stage8(len: u32, p: u32, lid: u32) {
    let t = len / 8u;
    let step = split.m / (8u * p);
    let f = tp_butterfly(lid, len, 8u, p);
    let x = array<vec2<f32>, 8>(
        tp_load(f, 0u, t, step),
        tp_load(f, 1u, t, step),
        tp_load(f, 2u, t, step),
        tp_load(f, 3u, t, step),
        tp_load(f, 4u, t, step),
        tp_load(f, 5u, t, step),
        tp_load(f, 6u, t, step),
        tp_load(f, 7u, t, step),
    );
    workgroupBarrier();
    let y = tp_dft8(x);
    let j = f.base + (f.i - f.k) * 8u + f.k;
    tile[j] = y[0];
    tile[j + p] = y[1];
    tile[j + 2u * p] = y[2];
    tile[j + 3u * p] = y[3];
    tile[j + 4u * p] = y[4];
    tile[j + 5u * p] = y[5];
    tile[j + 6u * p] = y[6];
    tile[j + 7u * p] = y[7];
    workgroupBarrier();
}

fn tp_store4(f: Butterfly, p: u32, y: array<vec2<f32>, 4>) {
    let j = f.base + (f.i - f.k) * 4u + f.k;
    tile[j] = y[0];
    tile[j + p] = y[1];
    tile[j + 2u * p] = y[2];
    tile[j + 3u * p] = y[3];
}

fn tp_stage4(len: u32, p: u32, lid: u32) {
    let t = len / 4u;
    let step = split.m / (4u * p);
    let f = tp_butterfly(lid, len, 4u, p);
    let g = tp_butterfly(lid + THREADS, len, 4u, p);
    let y = tp_dft4(
        tp_load(f, 0u, t, step),
        tp_load(f, 1u, t, step),
        tp_load(f, 2u, t, step),
        tp_load(f, 3u, t, step),
    );
    let z = tp_dft4(
        tp_load(g, 0u, t, step),
        tp_load(g, 1u, t, step),
        tp_load(g, 2u, t, step),
        tp_load(g, 3u, t, step),
    );
    workgroupBarrier();
    tp_store4(f, p, y);
    tp_store4(g, p, z);
    workgroupBarrier();
}

fn tp_store2(f: Butterfly, p: u32, y: vec4<f32>) {
    let j = f.base + (f.i - f.k) * 2u + f.k;
    tile[j] = y.xy + y.zw;
    tile[j + p] = y.xy - y.zw;
}

fn tp_pair(f: Butterfly, t: u32, step: u32) -> vec4<f32> {
    return vec4<f32>(tp_load(f, 0u, t, step), tp_load(f, 1u, t, step));
}

fn tp_stage2(len: u32, p: u32, lid: u32) {
    let t = len / 2u;
    let step = split.m / (2u * p);
    let f0 = tp_butterfly(lid, len, 2u, p);
    let f1 = tp_butterfly(lid + THREADS, len, 2u, p);
    let f2 = tp_butterfly(lid + 2u * THREADS, len, 2u, p);
    let f3 = tp_butterfly(lid + 3u * THREADS, len, 2u, p);
    let x0 = tp_pair(f0, t, step);
    let x1 = tp_pair(f1, t, step);
    let x2 = tp_pair(f2, t, step);
    let x3 = tp_pair(f3, t, step);
    workgroupBarrier();
    tp_store2(f0, p, x0);
    tp_store2(f1, p, x1);
    tp_store2(f2, p, x2);
    tp_store2(f3, p, x3);
    workgroupBarrier();
}

// FFTs of the TILE / len sequences of `len` values in the tile, in place.
fn tp_tile_fft(len: u32, lid: u32) {
    let levels = countTrailingZeros(len);
    var p = 1u;
    if levels % 3u == 1u {
        tp_stage2(len, p, lid);
        p = 2u;
    } else if levels % 3u == 2u {
        tp_stage4(len, p, lid);
        p = 4u;
    }
    while p < len {
        tp_stage8(len, p, lid);
        p *= 8u;
    }
}

fn tp_workgroup(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

@compute @workgroup_size(256)
fn pass1(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let n1 = split.n1;
    let n2 = split.n2;
    let per = TILE / n1;
    let per_bits = countTrailingZeros(per);
    let n2_bits = countTrailingZeros(n2);
    let g0 = tp_workgroup(wid, nwg) * per;
    let total = split.rows * n2;
    // A workgroup's columns are of one row wherever rows take `pass_direct` (M >= TILE).
    if g0 < total && pass_direct_len(g0 >> n2_bits) != 0u {
        return;
    }
    // Adjacent threads take adjacent columns: runs of `per` values in memory.
    for (var q = 0u; q < PER_THREAD; q++) {
        let e = lid + q * THREADS;
        let s = e & (per - 1u);
        let k1 = e >> per_bits;
        let g = g0 + s;
        var v = vec2<f32>(0.0, 0.0);
        if g < total {
            v = pass_input(g >> n2_bits, n2 * k1 + (g & (n2 - 1u)));
        }
        tile[s * n1 + k1] = v;
    }
    workgroupBarrier();
    tp_tile_fft(n1, lid);
    for (var q = 0u; q < PER_THREAD; q++) {
        let e = lid + q * THREADS;
        let s = e & (per - 1u);
        let j1 = e >> per_bits;
        let g = g0 + s;
        if g < total {
            let row = g >> n2_bits;
            let k2 = g & (n2 - 1u);
            // k2 j1 < M: no reduction needed.
            let v = tp_cmul(tile[s * n1 + j1], tp_twiddle(k2 * j1));
            inter_out[row * split.m + j1 * n2 + k2] = v;
        }
    }
}

@compute @workgroup_size(256)
fn pass2(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let n1 = split.n1;
    let n2 = split.n2;
    let per = TILE / n2;
    let n1_bits = countTrailingZeros(n1);
    let g0 = tp_workgroup(wid, nwg) * per;
    let total = split.rows * n1;
    if g0 < total && pass_direct_len(g0 >> n1_bits) != 0u {
        return;
    }
    // Sequence g = row N1 + j1 starts at g N2: the tile is one contiguous stretch.
    for (var q = 0u; q < PER_THREAD; q++) {
        let e = lid + q * THREADS;
        var v = vec2<f32>(0.0, 0.0);
        if g0 + (e >> countTrailingZeros(n2)) < total {
            v = inter[g0 * n2 + e];
        }
        tile[e] = v;
    }
    tp_pass2_end(lid, g0, n1, n2);
}

// Pass 2's end, and pass_direct's: the tile's TILE / n2 sequences g0 + s (of rows of N1 = n1
// sequences) transformed, their values j = (g mod n1) + n1 j2 stored through pass_output where
// kept, and handed to pass2_tile.
fn tp_pass2_end(lid: u32, g0: u32, n1: u32, n2: u32) {
    workgroupBarrier();
    tp_tile_fft(n2, lid);
    let per = TILE / n2;
    let per_bits = countTrailingZeros(per);
    let n1_bits = countTrailingZeros(n1);
    let total = split.rows * n1;
    for (var q = 0u; q < PER_THREAD; q++) {
        let e = lid + q * THREADS;
        let s = e & (per - 1u);
        let j2 = e >> per_bits;
        let g = g0 + s;
        let j = (g & (n1 - 1u)) + n1 * j2;
        if g < total && j >= split.keep_from && j < split.keep_to {
            pass_output(g >> n1_bits, j, tile[s * n2 + j2]);
        }
    }
    pass2_tile(lid, g0, n1, n2);
}

// The inverse FFT of a row in one pass, L = pass_direct_len(row) <= TILE: with D = M / L,
// W_{j1 + D q} = sum_k (Y_k w_M^(k j1)) w_L^(k q), and as w_L^(k q) repeats every L bins,
// that is the L-point FFT of the inputs folded, sum_t Y_(k + t L) w_M^((k + t L) j1) for k <
// L, one FFT for each j1 < D. That is pass 2 with N1 = D and N2 = L, whose input pass 1 would
// have made of at most end / L values each (end = pass_input_end(row)): each is computed where
// it is loaded, and nothing goes to memory between. Grid as pass 2's: M / TILE workgroups a
// row, each TILE / L sequences j1; rows with L = 0 return at once.
@compute @workgroup_size(256)
fn pass_direct(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let per_row = split.m / TILE;
    let w = tp_workgroup(wid, nwg);
    let row = w / per_row;
    if row >= split.rows {
        return;
    }
    let n2 = pass_direct_len(row);
    if n2 == 0u {
        return;
    }
    let n1 = split.m / n2;
    let per = TILE / n2;
    let n2_bits = countTrailingZeros(n2);
    let g0 = row * n1 + (w - row * per_row) * per;
    if n2 < TILE {
        // The workgroup's TILE / L sequences take the same L inputs (nothing folds: the input
        // ends by L), only their twiddles differ: each input is computed once, not once a
        // sequence. Written out, as the stages are: PER_THREAD = 8.
        for (var k = lid; k < n2; k += THREADS) {
            tile[k] = pass_input(row, k);
        }
        workgroupBarrier();
        let mask = n2 - 1u;
        let y0 = tile[lid & mask];
        let y1 = tile[(lid + THREADS) & mask];
        let y2 = tile[(lid + 2u * THREADS) & mask];
        let y3 = tile[(lid + 3u * THREADS) & mask];
        let y4 = tile[(lid + 4u * THREADS) & mask];
        let y5 = tile[(lid + 5u * THREADS) & mask];
        let y6 = tile[(lid + 6u * THREADS) & mask];
        let y7 = tile[(lid + 7u * THREADS) & mask];
        workgroupBarrier();
        tp_direct_store(lid, y0, g0, n1, n2);
        tp_direct_store(lid + THREADS, y1, g0, n1, n2);
        tp_direct_store(lid + 2u * THREADS, y2, g0, n1, n2);
        tp_direct_store(lid + 3u * THREADS, y3, g0, n1, n2);
        tp_direct_store(lid + 4u * THREADS, y4, g0, n1, n2);
        tp_direct_store(lid + 5u * THREADS, y5, g0, n1, n2);
        tp_direct_store(lid + 6u * THREADS, y6, g0, n1, n2);
        tp_direct_store(lid + 7u * THREADS, y7, g0, n1, n2);
    } else {
        let end = pass_input_end(row);
        for (var q = 0u; q < PER_THREAD; q++) {
            let e = lid + q * THREADS;
            let j1 = (g0 + (e >> n2_bits)) & (n1 - 1u);
            // e j1 < L D = M: no reduction needed.
            var v = tp_cmul(pass_input(row, e), tp_twiddle(e * j1));
            for (var f = e + n2; f < end; f += n2) {
                v += tp_cmul(pass_input(row, f), tp_twiddle((f * j1) & (split.m - 1u)));
            }
            tile[e] = v;
        }
    }
    tp_pass2_end(lid, g0, n1, n2);
}

// pass_direct's input e of its tile: input k of sequence j1 is y = Y_k times w_M^(k j1).
fn tp_direct_store(e: u32, y: vec2<f32>, g0: u32, n1: u32, n2: u32) {
    let k = e & (n2 - 1u);
    let j1 = (g0 + (e >> countTrailingZeros(n2))) & (n1 - 1u);
    // k j1 < L D = M: no reduction needed.
    tile[e] = tp_cmul(y, tp_twiddle(k * j1));
}
