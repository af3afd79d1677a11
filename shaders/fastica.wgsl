// Symmetric FastICA iterations on whitened data (gpu/ica.rs). One iteration, with W in one of
// two buffers and the new W written to the other (no copies: the whole batch of iterations is
// one compute pass):
//   gemm (mode 1): Y = g(W Z), G'[i][b] = sum of g'(W Z)[i][t] over t in column block b of 64
//                  (Y r x T, the contrast applied in the epilogue; G' r x ceil(T / 64))
//   gemm (split K): P[s] = Y Z^T over sample chunk s  (r x r per chunk)
//   update:         Wn = sum_s P[s] / T - diag(sum_b G'[.][b] / T) W
//   gemm:           M = Wn Wn^T
//   row_sums, scale: Wn /= sqrt(b), M /= b, b = max_i sum_j |M_ij| >= |Wn|_2^2
//   for each step (a, b, c) of gpu::ica::DECORRELATION (symmetric decorrelation; X = Wn, then
//   the last step's output):
//     [gemm M = X X^T, from the second step on], gemm (mode 2): Q = c M M + b M,
//     gemm (mode 2): X' = Q X + a X
//   row_sums, change: lims[1 + count] = max_i |1 - |<W'_i, W_i>||, count += 1
//
// Bindings (group 0): 0 params uniform; 1 a: array<f32> read; 2 b: array<f32> read;
//                     3 c: array<f32> read_write; 4 d: array<f32> read_write.
// gemm: C[z c_batch + i c_rs + j] = alpha sum_k A(i,k) B(k,j) + beta C[..], k over
//   [z k_chunk, min(k, (z+1) k_chunk)), A(i,k) = a[i a_rs + k a_cs], B(k,j) = b[k b_rs + j b_cs];
//   mode 1 (gemm_wide only, k_chunk = k) writes g(sum) to C and the sums of g'(sum) over each
//   tile's 64 columns to D[i ceil(n / 64) + wg.x] (contrast: 0 tanh(alpha y), 1 cube, 2 gauss); mode 2
//   takes beta B(i,j) in place of beta C (square B). gemm_wide (the products with the data):
//   dispatch (ceil(n/64), ceil(m/64), chunks) of 16 x 16 threads, 4 x 4 outputs each; gemm
//   (the decorrelation's r x r products) and gemm_direct (those of them whose B is read along
//   j): (ceil(n/16), ceil(m/16), chunks) of 256 threads, 2 x 2 outputs each over a quarter of
//   the k range.
// update: m = r rows, k = T samples, n = chunks; one workgroup of 256 per row.
// row_sums (c = the r sums), scale (a = M's row sums, c = Wn, d = M): one workgroup per row;
// change (a = the rows' dot products, d = lims): one workgroup of 256; m = r.

struct Params {
    m: u32,
    n: u32,
    k: u32,
    contrast: u32,
    a_rs: u32,
    a_cs: u32,
    b_rs: u32,
    b_cs: u32,
    c_rs: u32,
    k_chunk: u32,
    c_batch: u32,
    mode: u32,
    alpha: f32,
    beta: f32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@group(0) @binding(4) var<storage, read_write> d: array<f32>;

// gemm_wide: 64 x 64 outputs per workgroup of 16 x 16 threads, 4 x 4 per thread, over k in steps
// of 16 staged in workgroup memory (sa[k][i / 4] holds rows i..i+3 as a vec4, sb[k][j / 4]
// columns j..j+3), so each pair of vec4 loads from workgroup memory feeds 16 FMAs.
const KT: u32 = 16u;
var<workgroup> sa: array<array<vec4<f32>, 16>, 16>;
var<workgroup> sb: array<array<vec4<f32>, 16>, 16>;
var<workgroup> red: array<f32, 256>;

// Stores one output; returns g'(sum) in mode 1 (0 outside C), else 0.
fn store(z: u32, i: u32, j: u32, acc: f32) -> f32 {
    if (i >= p.m || j >= p.n) {
        return 0.0;
    }
    let at = z * p.c_batch + i * p.c_rs + j;
    if (p.mode == 1u) {
        let y = acc;
        if (p.contrast == 0u) {
            let g = tanh(p.alpha * y);
            c[at] = g;
            return p.alpha * (1.0 - g * g);
        } else if (p.contrast == 1u) {
            c[at] = y * y * y;
            return 3.0 * y * y;
        } else {
            let e = exp(-0.5 * y * y);
            c[at] = y * e;
            return (1.0 - y * y) * e;
        }
    } else if (p.mode == 2u) {
        c[at] = p.alpha * acc + p.beta * b[i * p.b_rs + j * p.b_cs];
    } else {
        c[at] = p.alpha * acc + p.beta * c[at];
    }
    return 0.0;
}

// Stores four neighbouring outputs of a row; returns the sum of their g' (mode 1).
fn store_row(z: u32, i: u32, j: u32, acc: vec4<f32>) -> f32 {
    return store(z, i, j, acc.x) + store(z, i, j + 1u, acc.y) + store(z, i, j + 2u, acc.z)
        + store(z, i, j + 3u, acc.w);
}

// A(i, k) and B(k, j) of the product, 0 outside it (k >= k1: past this chunk).
fn a_at(i: u32, k: u32, k1: u32) -> f32 {
    if (i < p.m && k < k1) {
        return a[i * p.a_rs + k * p.a_cs];
    }
    return 0.0;
}

fn b_at(k: u32, j: u32, k1: u32) -> f32 {
    if (j < p.n && k < k1) {
        return b[k * p.b_rs + j * p.b_cs];
    }
    return 0.0;
}

// Where element e of a B tile `depth` k deep and `width` columns wide goes, (k, column), so
// that neighbouring threads read along B's contiguous direction: k when b_rs = 1 (a transposed
// operand), j otherwise.
fn b_place(e: u32, depth: u32, width: u32) -> vec2<u32> {
    if (p.b_rs == 1u) {
        return vec2<u32>(e % depth, e / depth);
    }
    return vec2<u32>(e / width, e % width);
}

@compute @workgroup_size(16, 16, 1)
fn gemm_wide(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) l: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let i0 = wg.y * 64u;
    let j0 = wg.x * 64u;
    let k0 = wg.z * p.k_chunk;
    let k1 = min(p.k, k0 + p.k_chunk);
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var kk = k0; kk < k1; kk += KT) {
        // A is read along k (a_cs = 1 in every product here): 16 neighbouring threads read
        // 16 neighbouring words of one row.
        for (var q = 0u; q < 4u; q++) {
            let e = li + q * 256u;
            let row = e / KT;
            let kq = e % KT;
            sa[kq][row / 4u][row % 4u] = a_at(i0 + row, kk + kq, k1);
        }
        // B along its contiguous direction: k when b_rs = 1 (a transposed operand), j
        // otherwise.
        for (var q = 0u; q < 4u; q++) {
            let at = b_place(li + q * 256u, KT, 64u);
            sb[at.x][at.y / 4u][at.y % 4u] = b_at(kk + at.x, j0 + at.y, k1);
        }
        workgroupBarrier();
        for (var t = 0u; t < KT; t++) {
            let av = sa[t][l.y];
            let bv = sb[t][l.x];
            acc0 = fma(vec4<f32>(av.x), bv, acc0);
            acc1 = fma(vec4<f32>(av.y), bv, acc1);
            acc2 = fma(vec4<f32>(av.z), bv, acc2);
            acc3 = fma(vec4<f32>(av.w), bv, acc3);
        }
        workgroupBarrier();
    }
    let i = i0 + l.y * 4u;
    let j = j0 + l.x * 4u;
    let g = vec4<f32>(
        store_row(wg.z, i, j, acc0),
        store_row(wg.z, i + 1u, j, acc1),
        store_row(wg.z, i + 2u, j, acc2),
        store_row(wg.z, i + 3u, j, acc3),
    );
    // Mode 1: the sum of g' over this tile's 64 columns, for each row, into D[row][wg.x]
    // (the 16 threads along a row summed through workgroup memory), so that the mean of g'
    // needs neither D at full size nor a pass over it.
    if (p.mode == 1u) {
        let blocks = (p.n + 63u) / 64u;
        for (var q = 0u; q < 4u; q++) {
            red[li] = g[q];
            workgroupBarrier();
            if (l.x == 0u && i + q < p.m) {
                var sum = 0.0;
                for (var x = 0u; x < 16u; x++) {
                    sum += red[l.y * 16u + x];
                }
                d[(i + q) * blocks + wg.x] = sum;
            }
            workgroupBarrier();
        }
    }
}

// The same product in 16 x 16 tiles, for the small square products of the decorrelation,
// whose 64 x 64 tiles would leave most of the GPU idle (r = 64: one workgroup). Each tile's k
// range is split four ways inside its workgroup: four groups of 64 threads, each 2 x 2 outputs
// over every fourth run of 32 k, summed through workgroup memory at the end. Per thread, two
// vec2 loads from workgroup memory feed 4 FMAs, and a 256-long k takes 2 steps of 128 (16 KB
// of workgroup memory): each product is latency-bound, and a step is a round of loads and two
// barriers (H100, 256 x 256 x 256: 4 steps of 64 took 16-17 us, 2 of 128 15-16 us).
const SLAB: u32 = 128u;
var<workgroup> ta: array<array<vec2<f32>, 8>, 128>;
var<workgroup> tb: array<array<vec2<f32>, 8>, 128>;

// Stores a thread's 2 x 2 outputs (rows i, i + 1; columns j, j + 1).
fn store_quad(z: u32, i: u32, j: u32, sum: vec4<f32>) {
    _ = store(z, i, j, sum.x);
    _ = store(z, i, j + 1u, sum.y);
    _ = store(z, i + 1u, j, sum.z);
    _ = store(z, i + 1u, j + 1u, sum.w);
}

@compute @workgroup_size(256)
fn gemm(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let i0 = wg.y * 16u;
    let j0 = wg.x * 16u;
    let k0 = wg.z * p.k_chunk;
    let k1 = min(p.k, k0 + p.k_chunk);
    let g = li / 64u;
    let tx = li % 8u;
    let ty = (li % 64u) / 8u;
    var acc = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    for (var kk = k0; kk < k1; kk += SLAB) {
        // A's 16 rows x 128 k, read along k (a_cs = 1 here).
        for (var q = 0u; q < 8u; q++) {
            let e = li + q * 256u;
            let row = e / SLAB;
            let kq = e % SLAB;
            ta[kq][row / 2u][row % 2u] = a_at(i0 + row, kk + kq, k1);
        }
        // B's 128 k x 16 columns, along k when b_rs = 1 (a transposed operand), else along j.
        for (var q = 0u; q < 8u; q++) {
            let at = b_place(li + q * 256u, SLAB, 16u);
            tb[at.x][at.y / 2u][at.y % 2u] = b_at(kk + at.x, j0 + at.y, k1);
        }
        workgroupBarrier();
        // Two chains of FMAs a thread, so that each waits on the other's loads less.
        for (var t = g * 32u; t < g * 32u + 32u; t += 2u) {
            let av = ta[t][ty];
            let bv = tb[t][tx];
            acc = fma(vec4<f32>(av.x, av.x, av.y, av.y), vec4<f32>(bv, bv), acc);
            let av2 = ta[t + 1u][ty];
            let bv2 = tb[t + 1u][tx];
            acc2 = fma(vec4<f32>(av2.x, av2.x, av2.y, av2.y), vec4<f32>(bv2, bv2), acc2);
        }
        workgroupBarrier();
    }
    // The four quarters' sums through ta (its 1024 vec2 hold 256 vec4).
    let s = acc + acc2;
    ta[li / 2u][(li % 2u) * 4u] = s.xy;
    ta[li / 2u][(li % 2u) * 4u + 1u] = s.zw;
    workgroupBarrier();
    if (g == 0u) {
        var sum = vec4<f32>(0.0);
        for (var q = 0u; q < 4u; q++) {
            let at = li + q * 64u;
            sum += vec4<f32>(ta[at / 2u][(at % 2u) * 4u], ta[at / 2u][(at % 2u) * 4u + 1u]);
        }
        store_quad(wg.z, i0 + 2u * ty, j0 + 2u * tx, sum);
    }
}

// `gemm` without workgroup memory, for a B read along j (b_cs = 1): each thread loads its
// operands straight from memory (the 256 x 256 operands stay in cache), k interleaved four
// ways as in `gemm`, no barrier before the final sum. Where B is read along j, neighbouring
// threads read neighbouring words of one row of B (H100, 256 x 256 x 256: 13 us against
// `gemm`'s 15-16; with a transposed B, 19 us).
var<workgroup> parts: array<vec4<f32>, 256>;

@compute @workgroup_size(256)
fn gemm_direct(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let i0 = wg.y * 16u;
    let j0 = wg.x * 16u;
    let k0 = wg.z * p.k_chunk;
    let k1 = min(p.k, k0 + p.k_chunk);
    let g = li / 64u;
    let tx = li % 8u;
    let ty = (li % 64u) / 8u;
    let i = i0 + 2u * ty;
    let j = j0 + 2u * tx;
    var acc = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    for (var kk = k0 + g; kk < k1; kk += 8u) {
        let a0 = a_at(i, kk, k1);
        let a1 = a_at(i + 1u, kk, k1);
        let b0 = b_at(kk, j, k1);
        let b1 = b_at(kk, j + 1u, k1);
        acc = fma(vec4<f32>(a0, a0, a1, a1), vec4<f32>(b0, b1, b0, b1), acc);
        let c0 = a_at(i, kk + 4u, k1);
        let c1 = a_at(i + 1u, kk + 4u, k1);
        let d0 = b_at(kk + 4u, j, k1);
        let d1 = b_at(kk + 4u, j + 1u, k1);
        acc2 = fma(vec4<f32>(c0, c0, c1, c1), vec4<f32>(d0, d1, d0, d1), acc2);
    }
    parts[li] = acc + acc2;
    workgroupBarrier();
    if (g == 0u) {
        let sum = parts[li] + parts[li + 64u] + parts[li + 128u] + parts[li + 192u];
        store_quad(wg.z, i, j, sum);
    }
}

@compute @workgroup_size(256)
fn update(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    let i = wg.x;
    let r = p.m;
    let t_len = p.k;
    let blocks = (t_len + 63u) / 64u;
    var s = 0.0;
    for (var t = l.x; t < blocks; t += 256u) {
        s += d[i * blocks + t];
    }
    red[l.x] = s;
    workgroupBarrier();
    for (var h = 128u; h > 0u; h >>= 1u) {
        if (l.x < h) {
            red[l.x] += red[l.x + h];
        }
        workgroupBarrier();
    }
    let gp = red[0] / f32(t_len);
    for (var j = l.x; j < r; j += 256u) {
        var sum = 0.0;
        for (var z = 0u; z < p.n; z++) {
            sum += a[z * r * r + i * r + j];
        }
        c[i * r + j] = sum / f32(t_len) - gp * b[i * r + j];
    }
}

// row_sums: c[i] = sum_j |a[i m + j]| (mode 0) or a[i m + j] b[i m + j] (mode 1) over j < m;
// one workgroup of 64 a row, so that neighbouring threads read neighbouring words.
@compute @workgroup_size(64)
fn row_sums(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    let i = wg.x;
    let r = p.m;
    var s = 0.0;
    for (var j = l.x; j < r; j += 64u) {
        let v = a[i * r + j];
        if (p.mode == 1u) {
            s += v * b[i * r + j];
        } else {
            s += abs(v);
        }
    }
    red[l.x] = s;
    workgroupBarrier();
    for (var h = 32u; h > 0u; h >>= 1u) {
        if (l.x < h) {
            red[l.x] += red[l.x + h];
        }
        workgroupBarrier();
    }
    if (l.x == 0u) {
        c[i] = red[0];
    }
}

// scale: b = max_i a[i] (M's absolute row sums), then row wg.x of c = Wn divided by sqrt(b)
// and of d = M by b; one workgroup a row.
@compute @workgroup_size(256)
fn scale(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    let r = p.m;
    var worst = 0.0;
    for (var i = l.x; i < r; i += 256u) {
        worst = max(worst, a[i]);
    }
    red[l.x] = worst;
    workgroupBarrier();
    for (var h = 128u; h > 0u; h >>= 1u) {
        if (l.x < h) {
            red[l.x] = max(red[l.x], red[l.x + h]);
        }
        workgroupBarrier();
    }
    let bound = max(red[0], 1e-30);
    let sw = inverseSqrt(bound);
    let sm = 1.0 / bound;
    let i = wg.x;
    for (var j = l.x; j < r; j += 256u) {
        c[i * r + j] *= sw;
        d[i * r + j] *= sm;
    }
}

// change: lims[1 + count] = max_i |1 - |a[i]|| (a: the rows' dot products from row_sums),
// count += 1 (count in lims[0]); one workgroup.
@compute @workgroup_size(256)
fn change(@builtin(local_invocation_id) l: vec3<u32>) {
    let r = p.m;
    var worst = 0.0;
    for (var i = l.x; i < r; i += 256u) {
        worst = max(worst, abs(1.0 - abs(a[i])));
    }
    red[l.x] = worst;
    workgroupBarrier();
    for (var h = 128u; h > 0u; h >>= 1u) {
        if (l.x < h) {
            red[l.x] = max(red[l.x], red[l.x + h]);
        }
        workgroupBarrier();
    }
    if (l.x == 0u) {
        let slot = u32(d[0]);
        d[1u + slot] = red[0];
        d[0] = f32(slot + 1u);
    }
}
