// Symmetric FastICA iterations on whitened data (gpu/ica.rs). One iteration is:
//   gemm (mode 1): Y = g(W Z), G' = g'(W Z)         (r x T, the contrast applied in the epilogue)
//   gemm (split K): P[s] = Y Z^T over sample chunk s  (r x r per chunk)
//   update:         Wn = sum_s P[s] / T - diag(mean G') W
//   normalize:      Wn /= |Wn|_F
//   gemm x 2, K times: Wn <- 1.5 Wn - 0.5 (Wn Wn^T) Wn  (symmetric decorrelation, Newton-Schulz)
//   change:         lims[1 + count] = max_i |1 - |<Wn_i, W_i>||, count += 1
//
// Bindings (group 0): 0 params uniform; 1 a: array<f32> read; 2 b: array<f32> read;
//                     3 c: array<f32> read_write; 4 d: array<f32> read_write.
// gemm: C[z c_batch + i c_rs + j] = alpha sum_k A(i,k) B(k,j) + beta C[..], k over
//   [z k_chunk, min(k, (z+1) k_chunk)), A(i,k) = a[i a_rs + k a_cs], B(k,j) = b[k b_rs + j b_cs];
//   mode 1 writes g(sum) to C and g'(sum) to D at the same index (contrast: 0 tanh, 1 cube,
//   2 gauss). Dispatch (ceil(n/16), ceil(m/16), chunks) of 16 x 16.
// update: m = r rows, k = T samples, n = chunks; one workgroup of 256 per row.
// normalize, change: one workgroup of 256; m = r.

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

const TILE: u32 = 16u;
var<workgroup> ta: array<array<f32, 16>, 16>;
var<workgroup> tb: array<array<f32, 16>, 16>;
var<workgroup> red: array<f32, 256>;

@compute @workgroup_size(16, 16, 1)
fn gemm(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    let i = wg.y * TILE + l.y;
    let j = wg.x * TILE + l.x;
    let k0 = wg.z * p.k_chunk;
    let k1 = min(p.k, k0 + p.k_chunk);
    var acc = 0.0;
    for (var kk = k0; kk < k1; kk += TILE) {
        let ak = kk + l.x;
        var av = 0.0;
        if (i < p.m && ak < k1) {
            av = a[i * p.a_rs + ak * p.a_cs];
        }
        ta[l.y][l.x] = av;
        // B is read along its contiguous direction: k when b_rs = 1 (a transposed operand),
        // j otherwise, so neighbouring threads read neighbouring words.
        if (p.b_rs == 1u) {
            let bk = kk + l.x;
            let bj = wg.x * TILE + l.y;
            var bv = 0.0;
            if (bj < p.n && bk < k1) {
                bv = b[bk + bj * p.b_cs];
            }
            tb[l.x][l.y] = bv;
        } else {
            let bk = kk + l.y;
            var bv = 0.0;
            if (j < p.n && bk < k1) {
                bv = b[bk * p.b_rs + j * p.b_cs];
            }
            tb[l.y][l.x] = bv;
        }
        workgroupBarrier();
        for (var t = 0u; t < TILE; t++) {
            acc += ta[l.y][t] * tb[t][l.x];
        }
        workgroupBarrier();
    }
    if (i < p.m && j < p.n) {
        let at = wg.z * p.c_batch + i * p.c_rs + j;
        if (p.mode == 1u) {
            let y = acc;
            if (p.contrast == 0u) {
                let g = tanh(y);
                c[at] = g;
                d[at] = 1.0 - g * g;
            } else if (p.contrast == 1u) {
                c[at] = y * y * y;
                d[at] = 3.0 * y * y;
            } else {
                let e = exp(-0.5 * y * y);
                c[at] = y * e;
                d[at] = (1.0 - y * y) * e;
            }
        } else {
            c[at] = p.alpha * acc + p.beta * c[at];
        }
    }
}

@compute @workgroup_size(256)
fn update(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    let i = wg.x;
    let r = p.m;
    let t_len = p.k;
    var s = 0.0;
    for (var t = l.x; t < t_len; t += 256u) {
        s += d[i * t_len + t];
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

@compute @workgroup_size(256)
fn normalize(@builtin(local_invocation_id) l: vec3<u32>) {
    let count = p.m * p.m;
    var s = 0.0;
    for (var q = l.x; q < count; q += 256u) {
        s += c[q] * c[q];
    }
    red[l.x] = s;
    workgroupBarrier();
    for (var h = 128u; h > 0u; h >>= 1u) {
        if (l.x < h) {
            red[l.x] += red[l.x + h];
        }
        workgroupBarrier();
    }
    let scale = inverseSqrt(max(red[0], 1e-30));
    for (var q = l.x; q < count; q += 256u) {
        c[q] *= scale;
    }
}

@compute @workgroup_size(256)
fn change(@builtin(local_invocation_id) l: vec3<u32>) {
    let r = p.m;
    var worst = 0.0;
    for (var i = l.x; i < r; i += 256u) {
        var dot = 0.0;
        for (var j = 0u; j < r; j++) {
            dot += c[i * r + j] * a[i * r + j];
        }
        worst = max(worst, abs(1.0 - abs(dot)));
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
