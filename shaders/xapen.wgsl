// Cross-ApEn of every ordered channel pair of every epoch (src/gpu/xapen.rs drives it; the CPU
// twin is src/dsp/xapen/fast.rs and the definition src/dsp/xapen/mod.rs).
//
// Layouts (E epochs of a chunk, B channels, N samples, P = m + 1 planes):
//   x        f32 [E][B][N]     normalized samples (NaN where the channel-epoch is invalid)
//   valid    u32 [E][B]        1 where the series could be normalized
//   planes   f32 [E][B][P][N]  plane t, position k: x[order[k] + t] (FAR past the end);
//                              plane 0 is the sorted series
//   order    u32 [E][B][N]     order[k] = index of the k-th smallest sample
//   ln_table f32 [2][N+1]      ln(k / (N-m+1)) and ln(k / (N-m))
//   out      f32 [E][B][B]     Cross-ApEn(u||v) at [e][u][v]
//   totals   u32 [E][B][B][2]  sum over i of N_i^m and of N_i^{m+1} (exactness checks)
//   acc      vec2<f32> [B][B]  sum of the chunk's valid values and their number (the host
//                              adds chunks in f64)
//
// Entry points and dispatch shapes:
//   rank:       (ceil(N/256), B, E)  rank sort of each series, fills planes and order
//   count:      (B, B, E)            one workgroup per (v, u, e): every window i of u against
//                                    the samples of v within r, found by binary search in the
//                                    sorted series (v's planes cached in workgroup memory
//                                    when CACHED); counts in registers, the log sums and
//                                    count totals reduced in workgroup memory
//   accumulate: (ceil(B*B/256), 1, 1) adds a chunk's valid values into acc
//
// A sample b matches window sample a when fl(a - r) <= b <= fl(a + r): the CPU paths make the
// same test, so counts agree exactly. Windows that run past the end hold FAR, which no bound
// reaches (WGSL may assume NaN never occurs, so the kernels do not rely on it; r is checked to
// be at most 1e6 on the CPU and normalized samples are at most sqrt(N) in size).

struct Params {
    n: u32,
    channels: u32,
    epochs: u32,
    planes: u32,
    r: f32,
    // 0 = bias max, 1 = bias 0
    correction: u32,
    windows_m: f32,
    windows_m1: f32,
}

// The window length m; a pipeline constant so the component loops unroll.
override M: u32 = 1u;
// Whether v's first M + 1 planes fit the workgroup cache (N * (M + 1) <= CACHE): the binary
// searches and candidate scans then read workgroup memory instead of global memory.
override CACHED: bool = false;
const CACHE: u32 = 3840u;
const WG: u32 = 256u;
const FAR: f32 = 3.0e38;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> valid: array<u32>;
@group(0) @binding(3) var<storage, read_write> planes: array<f32>;
@group(0) @binding(4) var<storage, read_write> order: array<u32>;
@group(0) @binding(5) var<storage, read> ln_table: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;
@group(0) @binding(7) var<storage, read_write> totals: array<u32>;
@group(0) @binding(8) var<storage, read_write> acc: array<vec2<f32>>;

var<workgroup> tile: array<f32, WG>;
// The count kernel's workgroup memory: v's planes (as f32 bits) while counting, then the four
// per-thread sums for the reduction. One array, so the cache gets almost the whole 16 KiB.
var<workgroup> vcache: array<u32, CACHE>;

fn nan() -> f32 {
    return bitcast<f32>(0x7fc00000u);
}

@compute @workgroup_size(256)
fn rank(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = p.n;
    let series = wg.z * p.channels + wg.y;
    let base = series * n;
    let i = wg.x * WG + lid;
    // Uniform per workgroup, so the barriers below stay in uniform control flow.
    let ok = valid[series] != 0u;
    var a = 0.0;
    if i < n {
        a = x[base + i];
    }
    // rank = #{k : x_k < a} + #{k < i : x_k == a}: unique, so ties keep their order.
    var r = 0u;
    for (var t0 = 0u; t0 < n; t0 += WG) {
        workgroupBarrier();
        if t0 + lid < n {
            tile[lid] = x[base + t0 + lid];
        }
        workgroupBarrier();
        let len = min(WG, n - t0);
        for (var k = 0u; k < len; k++) {
            let b = tile[k];
            r += select(0u, 1u, b < a || (b == a && t0 + k < i));
        }
    }
    if i >= n || !ok {
        return;
    }
    order[base + r] = i;
    let pbase = series * p.planes * n;
    for (var t = 0u; t < p.planes; t++) {
        var s = FAR;
        if i + t < n {
            s = x[base + i + t];
        }
        planes[pbase + t * n + r] = s;
    }
}

// Plane t of v at position k, as idx = t * N + k.
fn vp(base: u32, idx: u32) -> f32 {
    if CACHED {
        return bitcast<f32>(vcache[idx]);
    }
    return planes[base + idx];
}

// Number of sorted samples below lo, and at most hi.
fn below(base: u32, n: u32, lo: f32) -> u32 {
    var a = 0u;
    var b = n;
    while a < b {
        let mid = (a + b) / 2u;
        if vp(base, mid) < lo {
            a = mid + 1u;
        } else {
            b = mid;
        }
    }
    return a;
}

fn at_most(base: u32, n: u32, hi: f32) -> u32 {
    var a = 0u;
    var b = n;
    while a < b {
        let mid = (a + b) / 2u;
        if vp(base, mid) <= hi {
            a = mid + 1u;
        } else {
            b = mid;
        }
    }
    return a;
}

@compute @workgroup_size(256)
fn count(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = p.n;
    let v = wg.x;
    let u = wg.y;
    let e = wg.z;
    let su = e * p.channels + u;
    let sv = e * p.channels + v;
    let ok = valid[su] != 0u && valid[sv] != 0u;
    let xu = su * n;
    let pv = sv * p.planes * n;
    let r = p.r;
    var sum_m = 0.0;
    var sum_m1 = 0.0;
    var total_m = 0u;
    var total_m1 = 0u;
    if CACHED {
        if ok {
            for (var k = lid; k < n * (M + 1u); k += WG) {
                vcache[k] = bitcast<u32>(planes[pv + k]);
            }
        }
        workgroupBarrier();
    }
    if ok {
        // Windows of u in sorted order: neighbouring threads then scan overlapping stretches
        // of v, with similar trip counts.
        for (var q = lid; q < n; q += WG) {
            let i = order[xu + q];
            if i + M > n {
                continue;
            }
            let a = x[xu + i];
            let first = below(pv, n, a - r);
            let end = max(first, at_most(pv, n, a + r));
            let has_m1 = i + M < n;
            var lo_m = 1.0;
            var hi_m = 0.0;
            if has_m1 {
                let b = x[xu + i + M];
                lo_m = b - r;
                hi_m = b + r;
            }
            var cm = 0u;
            var cm1 = 0u;
            for (var k = first; k < end; k++) {
                var matched = true;
                for (var t = 1u; t < M; t++) {
                    let s = vp(pv, t * n + k);
                    let c = x[xu + i + t];
                    matched = matched && s >= c - r && s <= c + r;
                }
                if matched {
                    cm += 1u;
                    let s = vp(pv, M * n + k);
                    cm1 += select(0u, 1u, s >= lo_m && s <= hi_m);
                }
            }
            total_m += cm;
            total_m1 += cm1;
            // ln C with the correction for empty counts.
            if cm > 0u {
                sum_m += ln_table[cm];
            }
            if has_m1 {
                if cm1 > 0u {
                    sum_m1 += ln_table[n + 1u + cm1];
                } else if p.correction == 0u {
                    sum_m1 += ln_table[1u];
                } else if cm > 0u {
                    sum_m1 += ln_table[n + 2u];
                }
            }
        }
    }
    // Every thread is done with the cache before it holds the sums.
    workgroupBarrier();
    vcache[lid] = bitcast<u32>(sum_m);
    vcache[WG + lid] = bitcast<u32>(sum_m1);
    vcache[2u * WG + lid] = total_m;
    vcache[3u * WG + lid] = total_m1;
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        workgroupBarrier();
        if lid < s {
            vcache[lid] = bitcast<u32>(bitcast<f32>(vcache[lid]) + bitcast<f32>(vcache[lid + s]));
            vcache[WG + lid] =
                bitcast<u32>(bitcast<f32>(vcache[WG + lid]) + bitcast<f32>(vcache[WG + lid + s]));
            vcache[2u * WG + lid] += vcache[2u * WG + lid + s];
            vcache[3u * WG + lid] += vcache[3u * WG + lid + s];
        }
    }
    if lid == 0u {
        let cell = (e * p.channels + u) * p.channels + v;
        if ok {
            let phi_m = bitcast<f32>(vcache[0]) / p.windows_m;
            out[cell] = phi_m - bitcast<f32>(vcache[WG]) / p.windows_m1;
        } else {
            out[cell] = nan();
        }
        totals[2u * cell] = vcache[2u * WG];
        totals[2u * cell + 1u] = vcache[3u * WG];
    }
}

@compute @workgroup_size(256)
fn accumulate(@builtin(global_invocation_id) gid: vec3<u32>) {
    let b2 = p.channels * p.channels;
    let cell = gid.x;
    if cell >= b2 {
        return;
    }
    var s = acc[cell].x;
    var c = acc[cell].y;
    let u = cell / p.channels;
    let v = cell % p.channels;
    for (var e = 0u; e < p.epochs; e++) {
        // Flat channels are skipped.
        if valid[e * p.channels + u] != 0u && valid[e * p.channels + v] != 0u {
            s += out[e * b2 + cell];
            c += 1.0;
        }
    }
    acc[cell] = vec2(s, c);
}
