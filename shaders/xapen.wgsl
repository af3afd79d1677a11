// Cross-ApEn of every ordered channel pair of every epoch (src/gpu/xapen.rs drives it; the CPU
// twin is src/dsp/xapen/fast.rs and the definition src/dsp/xapen/mod.rs).
//
// Layouts (E epochs of a chunk, B channels, N samples, P = m + 1 planes):
//   x        f32 [E][B][N]     normalized samples (NaN where the channel-epoch is invalid)
//   valid    u32 [E][B]        1 where the series could be normalized
//   planes   f32 [E][B][P][N]  plane t, position k: x[order[k] + t] (FAR past the end);
//                              plane 0 is the sorted series
//   order    u32 [E][B][N]     order[k] = index of the k-th smallest sample; then (m = 1)
//            u32 [E][B][L][W]  per series the wavelet matrix's L = ceil(log2 N) levels of
//                              W = N/16 + 1 words (written by `wavelet_build`, read by
//                              `count_wavelet`; one buffer, as 8 is all a stage may bind)
//   ln_table f32 [2][N+1]      ln(k / (N-m+1)) and ln(k / (N-m))
//   out      f32 [E][B][B]     Cross-ApEn(u||v) at [e][u][v]
//   totals   u32 [E][B][B][2]  sum over i of N_i^m and of N_i^{m+1} (exactness checks)
//   acc      vec2<f32> [B][B]  sum of the chunk's valid values and their number (the host
//                              adds chunks in f64)
//
// Counting N^{m+1} for m = 1 as a 2-D range count. Give each window k of v two coordinates:
// X = its place in the sorted series (plane 0) and Y = the place of v[k+1] among the sorted
// v[1..N) (N - 1 for k = N - 1, which has no next sample). Window i of u matches k in both
// samples exactly when X is in [f0, e0) (the samples of v within r of u[i], found by binary
// search) and Y in [f1, e1) (those within r of u[i+1]; v[1..N) is plane 0 without v[0], so
// f1 and e1 follow from u[i+1]'s own search and one test against v[0]). A wavelet matrix over
// the sequence Y in X order counts the points of such a box in 2 x L rank steps (a popcount
// each), whatever r: at r = 0.2 that replaces about 113 candidate tests per window. Level l
// (bit l of Y, top bit first) is the sequence after stable partitions by the higher bits,
// stored per 16 points as one word: their bits in the low half, the ones before them above.
//
// Entry points and dispatch shapes:
//   sort:       (1, B, E)            N <= 1024: bitonic sort of each series in workgroup
//                                    memory (ties by index), fills planes and order
//   rank:       (ceil(N/256), B, E)  longer series: the same by counting, O(N^2)
//   wavelet_build: (1, B, E)         m = 1: the wavelet matrix of each series (see below)
//   count:      (B, B, E)            one workgroup per (v, u, e): every window i of u against
//                                    the samples of v within r, found by binary search in the
//                                    sorted series (v's planes cached in workgroup memory
//                                    when CACHED); counts in registers, the log sums and
//                                    count totals reduced in workgroup memory
//   count_wavelet: (B, B, E)         m = 1 when v's plane 0, the ranks of u and the wavelet
//                                    matrix fit the workgroup cache: as count, but N^{m+1}
//                                    counted in O(log N) (below) instead of by testing each
//                                    of the N^m candidates
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
    // Wavelet matrix levels (L) and words per level (W).
    levels: u32,
    words: u32,
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
    put_planes(series, r, i);
}

// Writes plane t of the series at sorted position k, where the k-th smallest sample is i.
fn put_planes(series: u32, k: u32, i: u32) {
    let n = p.n;
    order[series * n + k] = i;
    let pbase = series * p.planes * n;
    for (var t = 0u; t < p.planes; t++) {
        var s = FAR;
        if i + t < n {
            s = x[series * n + i + t];
        }
        planes[pbase + t * n + k] = s;
    }
}

// (value, index) pairs in workgroup memory: values at vcache[k], indices at vcache[SORT + k].
const SORT: u32 = 1024u;

fn sorts_before(a: u32, b: u32) -> bool {
    let va = bitcast<f32>(vcache[a]);
    let vb = bitcast<f32>(vcache[b]);
    return va < vb || (va == vb && vcache[SORT + a] < vcache[SORT + b]);
}

@compute @workgroup_size(256)
fn sort(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = p.n;
    let series = wg.z * p.channels + wg.y;
    // Uniform per workgroup; checked after the barriers.
    let ok = valid[series] != 0u;
    // Padded to a power of two with FAR, which sorts after every sample.
    let size = 1u << firstLeadingBit(2u * n - 1u);
    for (var k = lid; k < size; k += WG) {
        var s = FAR;
        if k < n {
            s = x[series * n + k];
        }
        vcache[k] = bitcast<u32>(s);
        vcache[SORT + k] = k;
    }
    for (var block = 2u; block <= size; block <<= 1u) {
        for (var half = block >> 1u; half > 0u; half >>= 1u) {
            workgroupBarrier();
            for (var t = lid; t < size / 2u; t += WG) {
                let a = 2u * t - (t & (half - 1u));
                let b = a + half;
                // Ascending where bit `block` of a is clear, descending where set.
                if sorts_before(b, a) == ((a & block) == 0u) {
                    let v = vcache[a];
                    vcache[a] = vcache[b];
                    vcache[b] = v;
                    let i = vcache[SORT + a];
                    vcache[SORT + a] = vcache[SORT + b];
                    vcache[SORT + b] = i;
                }
            }
        }
    }
    workgroupBarrier();
    if ok {
        for (var k = lid; k < n; k += WG) {
            put_planes(series, k, vcache[SORT + k]);
        }
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

// ln C^m and ln C^{m+1} of one window with counts cm and cm1 (cm1 only when has_m1), with
// the correction for empty counts.
fn log_terms(cm: u32, cm1: u32, has_m1: bool) -> vec2<f32> {
    let n = p.n;
    var t = vec2(0.0, 0.0);
    if cm > 0u {
        t.x = ln_table[cm];
    }
    if has_m1 {
        if cm1 > 0u {
            t.y = ln_table[n + 1u + cm1];
        } else if p.correction == 0u {
            t.y = ln_table[1u];
        } else if cm > 0u {
            t.y = ln_table[n + 2u];
        }
    }
    return t;
}

// Adds up the workgroup's log sums and count totals (in vcache, which every thread must be
// done with) and writes the pair's value.
fn finish(lid: u32, pair: Pair, sums: vec2<f32>, total_m: u32, total_m1: u32) {
    workgroupBarrier();
    vcache[lid] = bitcast<u32>(sums.x);
    vcache[WG + lid] = bitcast<u32>(sums.y);
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
        let cell = pair.cell;
        if pair.ok {
            let phi_m = bitcast<f32>(vcache[0]) / p.windows_m;
            out[cell] = phi_m - bitcast<f32>(vcache[WG]) / p.windows_m1;
        } else {
            out[cell] = nan();
        }
        totals[2u * cell] = vcache[2u * WG];
        totals[2u * cell + 1u] = vcache[3u * WG];
    }
}

// The series of u and v of a count workgroup (v, u, e), its cell of `out`, and whether both
// series are valid.
struct Pair {
    su: u32,
    sv: u32,
    cell: u32,
    ok: bool,
}

fn pair_of(wg: vec3<u32>) -> Pair {
    let su = wg.z * p.channels + wg.y;
    let sv = wg.z * p.channels + wg.x;
    return Pair(su, sv, su * p.channels + wg.x, valid[su] != 0u && valid[sv] != 0u);
}

@compute @workgroup_size(256)
fn count(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = p.n;
    let pair = pair_of(wg);
    let xu = pair.su * n;
    let pv = pair.sv * p.planes * n;
    let r = p.r;
    var sums = vec2(0.0, 0.0);
    var total_m = 0u;
    var total_m1 = 0u;
    if CACHED {
        if pair.ok {
            for (var k = lid; k < n * (M + 1u); k += WG) {
                vcache[k] = bitcast<u32>(planes[pv + k]);
            }
        }
        workgroupBarrier();
    }
    if pair.ok {
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
            sums += log_terms(cm, cm1, has_m1);
        }
    }
    finish(lid, pair, sums, total_m, total_m1);
}

// Where the wavelet matrices start in `order`.
fn wavelet_at() -> u32 {
    return p.epochs * p.channels * p.n;
}

// Points of wavelet level l (at vcache[at..]) among the first i whose bit l is 1.
fn ones(at: u32, i: u32) -> u32 {
    let w = vcache[at + (i >> 4u)];
    return (w >> 16u) + countOneBits(extractBits(w, 0u, i & 15u));
}

fn ones2(at: u32, i: vec2<u32>) -> vec2<u32> {
    return vec2(ones(at, i.x), ones(at, i.y));
}

// For two windows at once (independent loads, so more of them in flight): the points with X
// in [x0, x1) and Y in [y0, y1), as the points with Y < y1 minus those with Y < y0, both
// counted down the levels side by side until every range is empty.
fn box_count(x0: vec2<u32>, x1: vec2<u32>, y0: vec2<u32>, y1: vec2<u32>) -> vec2<u32> {
    let n = p.n;
    // An empty box starts (and stays) with empty ranges.
    let end = select(x0, x1, x0 < x1 & y0 < y1);
    var s1 = x0;
    var e1 = end;
    var s0 = x0;
    var e0 = end;
    var c = vec2(0u);
    for (var l = p.levels; l > 0u && any(s1 < e1 | s0 < e0); ) {
        l -= 1u;
        let at = 2u * n + l * p.words;
        let zeros = vcache[2u * n + p.levels * p.words + l];
        let os1 = ones2(at, s1);
        let oe1 = ones2(at, e1);
        let os0 = ones2(at, s0);
        let oe0 = ones2(at, e0);
        // Where y has a 1, the points with a 0 here are below it: count them, follow the 1s.
        let one1 = extractBits(y1, l, 1u) == vec2(1u);
        c += select(vec2(0u), (e1 - oe1) - (s1 - os1), one1);
        s1 = select(s1 - os1, zeros + os1, one1);
        e1 = select(e1 - oe1, zeros + oe1, one1);
        let one0 = extractBits(y0, l, 1u) == vec2(1u);
        c -= select(vec2(0u), (e0 - oe0) - (s0 - os0), one0);
        s0 = select(s0 - os0, zeros + os0, one0);
        e0 = select(e0 - oe0, zeros + oe0, one0);
    }
    return c;
}

// For two values each: #{v's sorted samples < lo} and #{<= hi} (v's plane 0 at
// vcache[0..n)), as (first, end). All four searches in one loop of fixed steps, a power of
// two each, so their loads overlap.
fn ranges_of(n: u32, lo: vec2<f32>, hi: vec2<f32>) -> array<vec2<u32>, 2> {
    var a = vec2(0u);
    var b = vec2(0u);
    for (var step = 1u << firstLeadingBit(n); step > 0u; step >>= 1u) {
        let ta = a + step;
        let tb = b + step;
        let va = vec2(vcache[min(ta.x, n) - 1u], vcache[min(ta.y, n) - 1u]);
        let vb = vec2(vcache[min(tb.x, n) - 1u], vcache[min(tb.y, n) - 1u]);
        a = select(a, ta, ta <= vec2(n) & bitcast<vec2<f32>>(va) < lo);
        b = select(b, tb, tb <= vec2(n) & bitcast<vec2<f32>>(vb) <= hi);
    }
    return array(a, max(a, b));
}

// Workgroup cache of count_wavelet: [0, N) v's plane 0, [N, 2N) per sample j of u the range
// of v's sorted samples within r of u[j] (first | end << 16), then the L levels of W words,
// then the number of 0s of each level.
@compute @workgroup_size(256)
fn count_wavelet(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = p.n;
    let pair = pair_of(wg);
    let xu = pair.su * n;
    let r = p.r;
    let lw = p.levels * p.words;
    if pair.ok {
        let pv = pair.sv * p.planes * n;
        for (var k = lid; k < n; k += WG) {
            vcache[k] = bitcast<u32>(planes[pv + k]);
        }
        let wv = wavelet_at() + pair.sv * lw;
        for (var k = lid; k < lw; k += WG) {
            vcache[2u * n + k] = order[wv + k];
        }
    }
    workgroupBarrier();
    if pair.ok {
        if lid < p.levels {
            let at = 2u * n + lid * p.words;
            vcache[2u * n + lw + lid] = n - ones(at, n);
        }
        // Two samples a thread at a time (the second past the end for short series).
        for (var j = lid; j < n; j += 2u * WG) {
            let js = vec2(j, j + WG);
            let a = vec2(x[xu + j], x[xu + min(js.y, n - 1u)]);
            let range = ranges_of(n, a - r, a + r);
            let packed = range[0] | (range[1] << vec2(16u));
            vcache[n + j] = packed.x;
            if js.y < n {
                vcache[n + js.y] = packed.y;
            }
        }
    }
    workgroupBarrier();
    var sums = vec2(0.0, 0.0);
    var total_m = 0u;
    var total_m1 = 0u;
    if pair.ok {
        let v0 = x[pair.sv * n];
        for (var i = lid; i < n; i += 2u * WG) {
            let is = vec2(i, i + WG);
            let inside = is < vec2(n);
            let has_m1 = is + 1u < vec2(n);
            let here = vec2(vcache[n + i], vcache[n + min(is.y, n - 1u)]);
            let x0 = here & vec2(0xffffu);
            let x1 = select(x0, here >> vec2(16u), inside);
            // v[1..N) is plane 0 without v[0]: drop it from u[i+1]'s range if it was there.
            let at = min(is + 1u, vec2(n - 1u));
            let b = vec2(x[xu + at.x], x[xu + at.y]);
            let next = vec2(vcache[n + at.x], vcache[n + at.y]);
            let y0 = (next & vec2(0xffffu)) - select(vec2(0u), vec2(1u), vec2(v0) < b - r);
            let y1 = select(
                y0,
                (next >> vec2(16u)) - select(vec2(0u), vec2(1u), vec2(v0) <= b + r),
                has_m1,
            );
            let cm = x1 - x0;
            let cm1 = box_count(x0, x1, y0, y1);
            total_m += cm.x + cm.y;
            total_m1 += cm1.x + cm1.y;
            sums += log_terms(cm.x, cm1.x, has_m1.x);
            if inside.y {
                sums += log_terms(cm.y, cm1.y, has_m1.y);
            }
        }
    }
    finish(lid, pair, sums, total_m, total_m1);
}

// Builds the wavelet matrix of one series for count_wavelet (m = 1). Workgroup memory:
// [0, N) and [N, 2N) the sequence before and after a level's partition (first the rank of
// each sample, at N + k), then W words of bits and W + 1 counts of ones before each word.
@compute @workgroup_size(256)
fn wavelet_build(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = p.n;
    let words = p.words;
    let series = wg.z * p.channels + wg.y;
    let base = series * n;
    // Invalid series are built from a zero order too (harmless, and never read): returning
    // early would put the barriers below in non-uniform control flow.
    for (var x = lid; x < n; x += WG) {
        vcache[n + order[base + x]] = x;
    }
    workgroupBarrier();
    let r0 = vcache[n];
    for (var xi = lid; xi < n; xi += WG) {
        let k = order[base + xi];
        var y = n - 1u;
        if k + 1u < n {
            let q = vcache[n + k + 1u];
            y = q - select(0u, 1u, q > r0);
        }
        vcache[xi] = y;
    }
    var cur = 0u;
    var next = n;
    let bits = 2u * n;
    let before = bits + words;
    let out_base = wavelet_at() + series * p.levels * words;
    for (var l = p.levels; l > 0u; ) {
        l -= 1u;
        workgroupBarrier();
        for (var c = lid; c < words; c += WG) {
            var w = 0u;
            for (var j = 0u; j < 16u && c * 16u + j < n; j++) {
                w |= extractBits(vcache[cur + c * 16u + j], l, 1u) << j;
            }
            vcache[bits + c] = w;
        }
        workgroupBarrier();
        if lid == 0u {
            var s = 0u;
            for (var c = 0u; c < words; c++) {
                vcache[before + c] = s;
                s += countOneBits(vcache[bits + c]);
            }
            vcache[before + words] = n - s;
        }
        workgroupBarrier();
        for (var c = lid; c < words; c += WG) {
            order[out_base + l * words + c] = (vcache[before + c] << 16u) | vcache[bits + c];
        }
        // Stable partition: the 0s of this bit first, then the 1s.
        let zeros = vcache[before + words];
        for (var xi = lid; xi < n; xi += WG) {
            let y = vcache[cur + xi];
            let c = xi >> 4u;
            let ones_before = vcache[before + c] + countOneBits(extractBits(vcache[bits + c], 0u, xi & 15u));
            var to = xi - ones_before;
            if extractBits(y, l, 1u) == 1u {
                to = zeros + ones_before;
            }
            vcache[next + to] = y;
        }
        let t = cur;
        cur = next;
        next = t;
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
