// Cross-ApEn of every ordered channel pair of every epoch (src/gpu/xapen.rs drives it; the CPU
// twin is src/dsp/xapen/fast.rs and the definition src/dsp/xapen/mod.rs).
//
// Layouts (E epochs of a chunk, B channels, N samples, P = m + 1 planes):
//   x        f32 [E][B][N]     normalized samples (NaN where the channel-epoch is invalid)
//   valid    u32 [E][B]        1 where the series could be normalized
//   planes   f32 [E][B][P][N]  plane t, position k: x[order[k] + t] (FAR past the end);
//                              plane 0 is the sorted series
//   order    u32 [E][B][N]     order[k] = index of the k-th smallest sample; then (m = 1)
//                              per series its counting structure (one buffer, as 8 is all
//                              a stage may bind): N <= 1024, the stripes and lookup table
//                              (`stripes_build`, `count_stripes`: structure_words(N) words);
//                              longer, the wavelet matrix's L = ceil(log2 N) levels of
//                              W = N/16 + 1 words (`wavelet_build`, `count_wavelet`)
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
// Up to N = 1024 the stripes (before count_stripes) count a box in twelve loads that do not
// wait on each other, where the descent's 4 L loads wait level by level.
//
// Entry points and dispatch shapes:
//   sort:       (1, B, E)            N <= 1024: bitonic sort of each series in workgroup
//                                    memory (ties by index), fills planes and order
//   rank:       (ceil(N/256), B, E)  longer series: the same by counting, O(N^2)
//   stripes_build: (1, B, E)         m = 1, N <= 1024: the stripes and lookup table of each
//                                    series (see before count_stripes)
//   wavelet_build: (1, B, E)         m = 1, longer: the wavelet matrix of each series
//   count:      (B, B, E)            one workgroup per (v, u, e): every window i of u against
//                                    the samples of v within r, found by binary search in the
//                                    sorted series (v's planes cached in workgroup memory
//                                    when CACHED); counts in registers, the log sums and
//                                    count totals reduced in workgroup memory
//   count_stripes: (B, ceil(B/4), E)  m = 1, N <= 1024: one workgroup per (v, 4 u's, e): v's
//                                    stripes read into workgroup memory once, then per u its
//                                    samples' ranges (from v's lookup table) and N^{m+1} as
//                                    four dominance counts a window
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
    // 1: the count kernels write `totals`; 0: they skip their sums (checks alone read them).
    totals: u32,
}

// The window length m; a pipeline constant so the component loops unroll.
override M: u32 = 1u;
// Whether v's first M + 1 planes fit the workgroup cache (N * (M + 1) <= CACHE): the binary
// searches and candidate scans then read workgroup memory instead of global memory.
override CACHED: bool = false;
const CACHE: u32 = 4096u;
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

// All workgroup memory (as f32 or u32 bits): the count kernels' cache of v (its planes, or
// its sorted samples and counting structure) while counting, then the four per-thread sums
// for the reduction; the sorts' and builds' scratch. One array of the whole 16 KiB.
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
            vcache[lid] = bitcast<u32>(x[base + t0 + lid]);
        }
        workgroupBarrier();
        let len = min(WG, n - t0);
        for (var k = 0u; k < len; k++) {
            let b = bitcast<f32>(vcache[k]);
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

// Adds up the workgroup's log sums and count totals (in vcache[at..at + 4 WG), which every
// thread must be done with) and writes the pair's value.
fn finish(lid: u32, pair: Pair, sums: vec2<f32>, total_m: u32, total_m1: u32, at: u32) {
    let with_totals = p.totals != 0u;
    workgroupBarrier();
    vcache[at + lid] = bitcast<u32>(sums.x);
    vcache[at + WG + lid] = bitcast<u32>(sums.y);
    if with_totals {
        vcache[at + 2u * WG + lid] = total_m;
        vcache[at + 3u * WG + lid] = total_m1;
    }
    // Four to one a round (WG is a power of 4): half the barriers of a pairwise tree, and a
    // barrier costs more than the adds between them.
    for (var s = WG / 4u; s > 0u; s >>= 2u) {
        workgroupBarrier();
        if lid < s {
            let l = at + lid;
            let f = l + WG;
            vcache[l] = bitcast<u32>(
                (bitcast<f32>(vcache[l]) + bitcast<f32>(vcache[l + s]))
                    + (bitcast<f32>(vcache[l + 2u * s]) + bitcast<f32>(vcache[l + 3u * s]))
            );
            vcache[f] = bitcast<u32>(
                (bitcast<f32>(vcache[f]) + bitcast<f32>(vcache[f + s]))
                    + (bitcast<f32>(vcache[f + 2u * s]) + bitcast<f32>(vcache[f + 3u * s]))
            );
            if with_totals {
                let c = l + 2u * WG;
                let d = l + 3u * WG;
                vcache[c] += vcache[c + s] + vcache[c + 2u * s] + vcache[c + 3u * s];
                vcache[d] += vcache[d + s] + vcache[d + 2u * s] + vcache[d + 3u * s];
            }
        }
    }
    if lid == 0u {
        let cell = pair.cell;
        if pair.ok {
            let phi_m = bitcast<f32>(vcache[at]) / p.windows_m;
            out[cell] = phi_m - bitcast<f32>(vcache[at + WG]) / p.windows_m1;
        } else {
            out[cell] = nan();
        }
        if with_totals {
            totals[2u * cell] = vcache[at + 2u * WG];
            totals[2u * cell + 1u] = vcache[at + 3u * WG];
        }
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
    finish(lid, pair, sums, total_m, total_m1, 0u);
}

// Where the counting structures (stripes or wavelet matrices) start in `order`: after the
// sort's order.
fn structures_at() -> u32 {
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
    let end = select(x0, x1, (x0 < x1) & (y0 < y1));
    var s1 = x0;
    var e1 = end;
    var s0 = x0;
    var e0 = end;
    var c = vec2(0u);
    for (var l = p.levels; l > 0u && any((s1 < e1) | (s0 < e0)); ) {
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

// #{v's sorted samples < lo} and #{<= hi} (v's plane 0 at vcache[0..n)), as (first, end):
// both searches in one loop of fixed steps, a power of two each, so their loads overlap.
fn range_of(n: u32, lo: f32, hi: f32) -> vec2<u32> {
    var a = vec2(0u);
    for (var step = 1u << firstLeadingBit(n); step > 0u; step >>= 1u) {
        let t = a + step;
        let v = bitcast<vec2<f32>>(vec2(vcache[min(t.x, n) - 1u], vcache[min(t.y, n) - 1u]));
        a = select(a, t, (t <= vec2(n)) & vec2(v.x < lo, v.y <= hi));
    }
    return vec2(a.x, max(a.x, a.y));
}

// count_wavelet's first step: v's plane 0 into vcache[0..n), then per sample j of u
// the range of v's sorted samples within r of u[j] (first | end << 16) at vcache[at + j].
// Each thread takes a run of u's samples in sorted order: one search for the first, and as
// both ends only move up from there, a step or two for each next one. Every thread of the
// workgroup calls it (it has a barrier); `ok` is uniform.
fn u_ranges(lid: u32, pair: Pair, at: u32) {
    let n = p.n;
    let r = p.r;
    if pair.ok {
        let pv = pair.sv * p.planes * n;
        for (var k = lid; k < n; k += WG) {
            vcache[k] = bitcast<u32>(planes[pv + k]);
        }
    }
    workgroupBarrier();
    let per = (n + WG - 1u) / WG;
    let j0 = lid * per;
    if pair.ok && j0 < n {
        let pu = pair.su * p.planes * n;
        let a0 = planes[pu + j0];
        var range = range_of(n, a0 - r, a0 + r);
        for (var j = j0; j < min(j0 + per, n); j++) {
            let a = planes[pu + j];
            while range.x < n && bitcast<f32>(vcache[range.x]) < a - r {
                range.x += 1u;
            }
            while range.y < n && bitcast<f32>(vcache[range.y]) <= a + r {
                range.y += 1u;
            }
            vcache[at + order[pair.su * n + j]] = range.x | (max(range.x, range.y) << 16u);
        }
    }
}

// Windows i and i + WG of u as boxes of v's points (X in [x0, x1), Y in [y0, y1)), from the
// ranges at vcache[at..]; v0 = v[0]. A window past the end (`inside` false) or without a next
// sample (`has_m1` false) gets an empty Y range.
struct Boxes {
    x0: vec2<u32>,
    x1: vec2<u32>,
    y0: vec2<u32>,
    y1: vec2<u32>,
    inside: vec2<bool>,
    has_m1: vec2<bool>,
}

fn boxes_of(i: u32, xu: u32, v0: f32, at: u32) -> Boxes {
    let n = p.n;
    let r = p.r;
    let is = vec2(i, i + WG);
    let inside = is < vec2(n);
    let has_m1 = is + 1u < vec2(n);
    let here = vec2(vcache[at + i], vcache[at + min(is.y, n - 1u)]);
    let x0 = here & vec2(0xffffu);
    let x1 = select(x0, here >> vec2(16u), inside);
    // v[1..N) is plane 0 without v[0]: drop it from u[i+1]'s range if it was there.
    let next_i = min(is + 1u, vec2(n - 1u));
    let b = vec2(x[xu + next_i.x], x[xu + next_i.y]);
    let next = vec2(vcache[at + next_i.x], vcache[at + next_i.y]);
    let y0 = (next & vec2(0xffffu)) - select(vec2(0u), vec2(1u), vec2(v0) < b - r);
    let y1 = select(
        y0,
        (next >> vec2(16u)) - select(vec2(0u), vec2(1u), vec2(v0) <= b + r),
        has_m1,
    );
    return Boxes(x0, x1, y0, y1, inside, has_m1);
}

// A thread's running sums in the m = 1 count kernels.
struct Sums {
    logs: vec2<f32>,
    total_m: u32,
    total_m1: u32,
}

fn add_windows(s: ptr<function, Sums>, w: Boxes, cm1: vec2<u32>) {
    let cm = w.x1 - w.x0;
    (*s).total_m += cm.x + cm.y;
    (*s).total_m1 += cm1.x + cm1.y;
    (*s).logs += log_terms(cm.x, cm1.x, w.has_m1.x);
    if w.inside.y {
        (*s).logs += log_terms(cm.y, cm1.y, w.has_m1.y);
    }
}

// Workgroup cache of count_wavelet: [0, N) v's plane 0, [N, 2N) u's ranges, then the L levels
// of W words, then the number of 0s of each level.
@compute @workgroup_size(256)
fn count_wavelet(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = p.n;
    let pair = pair_of(wg);
    let lw = p.levels * p.words;
    if pair.ok {
        let wv = structures_at() + pair.sv * lw;
        for (var k = lid; k < lw; k += WG) {
            vcache[2u * n + k] = order[wv + k];
        }
    }
    u_ranges(lid, pair, n);
    if pair.ok && lid < p.levels {
        let at = 2u * n + lid * p.words;
        vcache[2u * n + lw + lid] = n - ones(at, n);
    }
    workgroupBarrier();
    var sums = Sums(vec2(0.0), 0u, 0u);
    if pair.ok {
        let xu = pair.su * n;
        let v0 = x[pair.sv * n];
        for (var i = lid; i < n; i += 2u * WG) {
            let w = boxes_of(i, xu, v0, n);
            add_windows(&sums, w, box_count(w.x0, w.x1, w.y0, w.y1));
        }
    }
    finish(lid, pair, sums.logs, sums.total_m, sums.total_m1, 0u);
}

// m = 1 by stripes (count_stripes, built by stripes_build), for N <= 1024. Cut v's points
// (X, Y) (see the top of this file) by X into S = ceil(N / 32) stripes of 32. For
// s = 1 .. S-1 the set C_s holds the Ys of the points with X < 32 s: a bitset over Y in H =
// N/16 + 1 words of 16 bits, each word with the number of set bits before it in its high half.
// For stripe s and t < 32, the mask M[s][t] has bit o set when the point at X = 32 s + o is
// among the t lowest Ys of its stripe. Then the points with X < x and Y < y number
//   D(x, y) = C_s(y) + popcount(M[s][t] & (2^o - 1)),  t = C_{s+1}(y) - C_s(y),
// with s = x / 32, o = x % 32, C_0(y) = 0, C_S(y) = y and M[s][32] all ones; a box is
// D(x1, y1) - D(x0, y1) - D(x1, y0) + D(x0, y0). That is twelve workgroup-memory loads a
// window, where the wavelet matrix's descent takes four a level, each level waiting on the
// last. Per series, S - 1 sets of H words, then S x 32 masks, then the lookup table that
// finds u's ranges (see bucket_of).

fn stripe_count(n: u32) -> u32 {
    return (n + 31u) / 32u;
}

// Words a set (H) and the S - 1 sets' words, which come first; the masks follow.
fn set_len(n: u32) -> u32 {
    return n / 16u + 1u;
}

fn set_words(n: u32) -> u32 {
    return (stripe_count(n) - 1u) * set_len(n);
}

// The sets' and masks' words of a series.
fn stripe_words(n: u32) -> u32 {
    return set_words(n) + 32u * stripe_count(n);
}

// A series' words in all: the stripes, then its lookup table (see bucket_of).
fn structure_words(n: u32) -> u32 {
    return stripe_words(n) + n + 2u;
}

// The lookup table that starts u's searches near their answer. Cut the range of v's samples
// [lo, hi] into K = 2N buckets of equal width; T[b] = the number of samples whose bucket is
// below b, 16 bits each, two a word, after lo and K / (hi - lo) as f32 bits. Every sample
// below T[bucket(q)] is below q (the bucket only grows with the value), so a search for q
// steps up from there past the few samples of q's own bucket (about 1.3 in the middle of
// normalized data), where a binary search takes log2 N dependent steps.
fn bucket_of(q: vec4<f32>, lo: f32, inv: f32, buckets: u32) -> vec4<u32> {
    return vec4<u32>(clamp((q - lo) * inv, vec4(0.0), vec4(f32(buckets - 1u))));
}

// T[bucket(q)] for four values, the table at order[at..] (lo, inv, then T).
fn table_start(q: vec4<f32>, n: u32, at: u32) -> vec4<u32> {
    let b = bucket_of(q, bitcast<f32>(order[at]), bitcast<f32>(order[at + 1u]), 2u * n);
    let k = at + 2u + (b >> vec4(1u));
    let w = vec4(order[k.x], order[k.y], order[k.z], order[k.w]);
    return extractBits(w >> ((b & vec4(1u)) * 16u), 0u, 16u);
}

// v's sorted samples at four places (clamped to the last), plane 0 at planes[pv..].
fn plane4(k: vec4<u32>, n: u32, pv: u32) -> vec4<f32> {
    let c = pv + min(k, vec4(n - 1u));
    return vec4(planes[c.x], planes[c.y], planes[c.z], planes[c.w]);
}

// For four values each: #{v's sorted samples < lo} and #{<= hi}, as (first, end); v's plane 0
// at planes[pv..], its table at order[table..]. Read through the cache, not workgroup
// memory, which holds the stripes meanwhile.
fn ranges_by_table(
    n: u32,
    pv: u32,
    table: u32,
    lo: vec4<f32>,
    hi: vec4<f32>,
) -> array<vec4<u32>, 2> {
    var f = table_start(lo, n, table);
    var e = table_start(hi, n, table);
    // A start past its answer cannot happen (table and search bucket alike); if a driver
    // ever rounded the two differently, the search starts over from 0 and stays exact.
    let zero = vec4(0u);
    f = select(f, zero, (f > zero) & (plane4(f - 1u, n, pv) >= lo));
    e = select(e, zero, (e > zero) & (plane4(e - 1u, n, pv) > hi));
    loop {
        let up_f = (f < vec4(n)) & (plane4(f, n, pv) < lo);
        let up_e = (e < vec4(n)) & (plane4(e, n, pv) <= hi);
        if !any(up_f | up_e) {
            break;
        }
        f += select(zero, vec4(1u), up_f);
        e += select(zero, vec4(1u), up_e);
    }
    return array(f, max(f, e));
}

// C_s(y) for two (s, y), with the sets at vcache[0..); sc = S, h = H.
fn below_y(s: vec2<u32>, y: vec2<u32>, sc: u32, h: u32) -> vec2<u32> {
    let k = (clamp(s, vec2(1u), vec2(max(sc, 2u) - 1u)) - 1u) * h + (y >> vec2(4u));
    let w = vec2(vcache[k.x], vcache[k.y]);
    let c = (w >> vec2(16u)) + countOneBits(w & ((vec2(1u) << (y & vec2(15u))) - 1u));
    return select(select(c, y, s >= vec2(sc)), vec2(0u), s == vec2(0u));
}

// D(x, y) for two (x, y); the masks at vcache[masks..].
fn dominated(x: vec2<u32>, y: vec2<u32>, sc: u32, h: u32, masks: u32) -> vec2<u32> {
    let s = x >> vec2(5u);
    let below = below_y(s, y, sc, h);
    let t = below_y(s + 1u, y, sc, h) - below;
    let k = masks + min(s, vec2(sc - 1u)) * 32u + min(t, vec2(31u));
    let m = select(vec2(vcache[k.x], vcache[k.y]), vec2(0xffffffffu), t >= vec2(32u));
    return below + countOneBits(m & ((vec2(1u) << (x & vec2(31u))) - 1u));
}

// u's of a count_stripes workgroup: one v against U of them, so that v's stripes are read
// into workgroup memory once for U pairs.
const U: u32 = 4u;

// Workgroup cache of count_stripes: v's stripes at [0, SW), then u's ranges at [SW, SW + N),
// which the reduction reuses. Dispatch (B, ceil(B / U), E).
@compute @workgroup_size(256)
fn count_stripes(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = p.n;
    let sv = wg.z * p.channels + wg.x;
    let v_ok = valid[sv] != 0u;
    let sw = stripe_words(n);
    let structure = structures_at() + sv * structure_words(n);
    if v_ok {
        for (var k = lid; k < sw; k += WG) {
            vcache[k] = order[structure + k];
        }
    }
    let pv = sv * p.planes * n;
    let v0 = x[sv * n];
    let sc = stripe_count(n);
    let h = set_len(n);
    let masks = set_words(n);
    let last = min(wg.y * U + U, p.channels);
    for (var u = wg.y * U; u < last; u++) {
        let su = wg.z * p.channels + u;
        let pair = Pair(su, sv, su * p.channels + wg.x, v_ok && valid[su] != 0u);
        let xu = su * n;
        if pair.ok {
            // Four samples a thread at a time (past the end for short series).
            let r = p.r;
            for (var j = lid; j < n; j += 4u * WG) {
                let js = vec4(j, j + WG, j + 2u * WG, j + 3u * WG);
                let c = xu + min(js, vec4(n - 1u));
                let a = vec4(x[c.x], x[c.y], x[c.z], x[c.w]);
                let range = ranges_by_table(n, pv, structure + sw, a - r, a + r);
                let packed = range[0] | (range[1] << vec4(16u));
                for (var t = 0u; t < 4u; t++) {
                    if js[t] < n {
                        vcache[sw + js[t]] = packed[t];
                    }
                }
            }
        }
        workgroupBarrier();
        var sums = Sums(vec2(0.0), 0u, 0u);
        if pair.ok {
            for (var i = lid; i < n; i += 2u * WG) {
                let w = boxes_of(i, xu, v0, sw);
                let c = dominated(w.x1, w.y1, sc, h, masks)
                    - dominated(w.x0, w.y1, sc, h, masks)
                    - dominated(w.x1, w.y0, sc, h, masks)
                    + dominated(w.x0, w.y0, sc, h, masks);
                add_windows(&sums, w, c);
            }
        }
        finish(lid, pair, sums.logs, sums.total_m, sums.total_m1, sw);
        // The next u's ranges go where the sums were.
        workgroupBarrier();
    }
}

// The points' Y by X (X = k for the k-th smallest sample; Y = the place of the sample after
// it among the sorted v[1..N), see the top of this file) at vcache[at + k], given each
// sample's place in sorted order at vcache[places..]. Call after a barrier.
fn y_by_x(lid: u32, base: u32, places: u32, at: u32) {
    let n = p.n;
    let r0 = vcache[places];
    for (var xi = lid; xi < n; xi += WG) {
        let k = order[base + xi];
        var y = n - 1u;
        if k + 1u < n {
            let q = vcache[places + k + 1u];
            y = q - select(0u, 1u, q > r0);
        }
        vcache[at + xi] = y;
    }
}

// Builds the stripes of one series for count_stripes (m = 1, N <= 1024). Workgroup memory:
// each sample's place in sorted order at [0, N), Y by X at [N, 2N), X by Y at [2N, 3N); then
// each point's place among its stripe's Ys over [0, N), and the sets' bits over [0, (S-1) H).
@compute @workgroup_size(256)
fn stripes_build(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = p.n;
    let series = wg.z * p.channels + wg.y;
    let base = series * n;
    let sc = stripe_count(n);
    let h = set_len(n);
    let sets = set_words(n);
    let out = structures_at() + series * structure_words(n);
    // Invalid series are built from a zero order too (harmless, and never read): returning
    // early would put the barriers below in non-uniform control flow.
    for (var xi = lid; xi < n; xi += WG) {
        vcache[order[base + xi]] = xi;
    }
    workgroupBarrier();
    y_by_x(lid, base, 0u, n);
    workgroupBarrier();
    for (var xi = lid; xi < n; xi += WG) {
        let y = vcache[n + xi];
        vcache[2u * n + y] = xi;
        // The point's place among the Ys of its stripe.
        let s0 = xi & ~31u;
        var q = 0u;
        for (var j = s0; j < min(s0 + 32u, n); j++) {
            q += select(0u, 1u, vcache[n + j] < y);
        }
        vcache[xi] = q;
    }
    workgroupBarrier();
    // M[s][t] at j = 32 s + t: the stripe's points among its t lowest Ys.
    let masks = out + sets;
    for (var j = lid; j < 32u * sc; j += WG) {
        let s0 = j & ~31u;
        let t = j & 31u;
        var mask = 0u;
        for (var o = 0u; o < 32u && s0 + o < n; o++) {
            mask |= select(0u, 1u << o, vcache[s0 + o] < t);
        }
        order[masks + j] = mask;
    }
    workgroupBarrier();
    // C_s's bits, 16 Ys a word: whether the point with that Y has X < 32 s.
    for (var j = lid; j < sets; j += WG) {
        let s = j / h + 1u;
        let y0 = (j % h) * 16u;
        var w = 0u;
        for (var b = 0u; b < 16u && y0 + b < n; b++) {
            w |= select(0u, 1u << b, vcache[2u * n + y0 + b] < 32u * s);
        }
        vcache[j] = w;
    }
    workgroupBarrier();
    // The set bits before each word, one set a thread.
    for (var s = lid; s + 1u < sc; s += WG) {
        var before = 0u;
        for (var c = 0u; c < h; c++) {
            let w = vcache[s * h + c];
            order[out + s * h + c] = (before << 16u) | w;
            before += countOneBits(w);
        }
    }
    // The lookup table: T[b] by binary search over the sorted samples' buckets.
    workgroupBarrier();
    let pv = series * p.planes * n;
    for (var k = lid; k < n; k += WG) {
        vcache[k] = bitcast<u32>(planes[pv + k]);
    }
    workgroupBarrier();
    let lo = bitcast<f32>(vcache[0]);
    let span = bitcast<f32>(vcache[n - 1u]) - lo;
    let inv = select(0.0, f32(2u * n) / span, span > 1e-30);
    let table = out + stripe_words(n);
    if lid == 0u {
        order[table] = bitcast<u32>(lo);
        order[table + 1u] = bitcast<u32>(inv);
    }
    for (var w = lid; w < n; w += WG) {
        var t = vec2(0u);
        for (var step = 1u << firstLeadingBit(n); step > 0u; step >>= 1u) {
            let c = t + step;
            let v = vec4(bitcast<f32>(vcache[min(c.x, n) - 1u]), bitcast<f32>(vcache[min(c.y, n) - 1u]), 0.0, 0.0);
            let b = bucket_of(v, lo, inv, 2u * n).xy;
            t = select(t, c, (c <= vec2(n)) & (b < vec2(2u * w, 2u * w + 1u)));
        }
        order[table + 2u + w] = t.x | (t.y << 16u);
    }
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
    y_by_x(lid, base, n, 0u);
    var cur = 0u;
    var next = n;
    let bits = 2u * n;
    let before = bits + words;
    let out_base = structures_at() + series * p.levels * words;
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
