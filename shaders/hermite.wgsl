// Hermite beat fits (issue 7; Gil et al. 2016): the paper's kernel_phi is `basis` (+ `gram`),
// its kernel_Hermite is `fit` + `select`. Definitions: src/dsp/hermite.rs.
//
// Parity. The window's samples sit symmetrically about its centre, t_{L-1-k} = -t_k, and
// phi_n(-t) = (-1)^n phi_n(t). Pair each signal sample right of the centre, x_a = x(t_j), with
// its mirror x_b = x(-t_j), j = 0..h, and let u_j = (x_a + x_b) / 2, w_j = (x_a - x_b) / 2.
// Then an even function's coefficient is 2 sum_j u_j b_n(t_j), an odd one's 2 sum_j w_j b_n(t_j),
// and with E_j = u_j - sum_{n even} c_n b_n(t_j), O_j = w_j - sum_{n odd} c_n b_n(t_j) the two
// residuals are x_a - y_a = E_j + O_j and x_b - y_b = E_j - O_j, so their squares sum to
// 2 (E_j^2 + O_j^2). The padding's G_pad[i][j] is zero unless i and j have the same parity.
// The fit is two independent problems of half the size: half the multiply-adds of the
// definition, the same sums (no cancellation a Gram identity would bring).
//
// The host (gpu/hermite.rs, `unrolled`) prepends the constants FIT_WG (threads of a `fit`
// workgroup), SHARE (groups of sigmas a `fit` workgroup), NE4 and NO4 (vec4s of even and of
// odd coefficients), N4 = NE4 + NO4 and BEATS (beats per thread of `fit`, at most 8), and,
// unrolled over the coefficient registers:
//   fn stage_basis(y, i, li)                sigma i of each group of workgroup row y into
//                                            workgroup memory, one after the other (or nothing)
//   fn mse_many(first, s, so) -> Many       the MSEs of BEATS beats at once (lanes of lo,
//                                            then hi), each basis vec4 loaded once for all;
//                                            its registers are vec4s across 4 beats
// (Loops over an array of vec4 were left in local memory by the driver at N = 30: 10x slower.)
// Coefficient layout (basis and Gram): vec4 q < NE4 holds n = 2 (4 q + lane), q >= NE4 holds
// n = 2 (4 (q - NE4) + lane) + 1; functions n >= order are zero.
//
// Bindings (one group; each entry point uses some):
//   0 uniform Params
//   1 sigma:   [S] f32, seconds
//   2 basis:   [S][2h][N4] vec4: b_n(t_k) = sqrt(dt) phi_n(t_k, sigma_s), k = 2h..4h (the
//              right half of the window), in the layout above; `fit` reads a sigma's first h
//              rows from `staged` (workgroup memory) where the host generated it
//   3 gram:    [S][4 N4][N4] vec4: G_pad[i][j] over the padding samples k < h, k >= 3h
//   4 x:       [2][h][row] f32: u_j then w_j of each beat, beat-minor (coalesced reads), rows
//              of `row` floats (the beats rounded up to a multiple of 8, zeros after them)
//   7 x4:      the same buffer as vec4s: `fit` reads a thread's 4 consecutive beats at once
//   5 partial: [groups][beats] (best MSE, bitcast sigma index) over each group of sigmas
//   6 fits:    [beats] MSE, [beats] bitcast sigma index, [beats][order] coefficients by n
// Dispatch: basis_gram (one workgroup a sigma, S); fit (workgroups of ceil(beats / BEATS) /
// (FIT_WG / SHARE) along x, ceil(groups / SHARE) along y);
// select (SEL beats threads, as workgroups over x and y).
// Workgroups of 256 along x; fit's of FIT_WG.

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
    row: u32,
    pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> sigma: array<f32>;
@group(0) @binding(2) var<storage, read_write> basis: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> gram: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> x: array<f32>;
@group(0) @binding(5) var<storage, read_write> partial: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read_write> fits: array<f32>;
@group(0) @binding(7) var<storage, read> x4: array<vec4<f32>>;

const PI_POW_MINUS_QUARTER: f32 = 0.7511255444649425;
// The polynomial part is rescaled by 1e-18 whenever it passes 1e18; ln(1e18):
const BIG: f32 = 1e18;
const LN_BIG: f32 = 41.44653167389282;

// One sample k = 2h + i of every function for sigma s (the right half of the window: the
// signal's mirror pairs and the padding's, see the parity note above, need no others), by the
// normalized recurrence with the Gaussian applied last (as dsp::hermite::hermite_functions).
fn basis_sample(s: u32, i: u32) {
    let k = 2u * p.half + i;
    let sg = sigma[s];
    let t = (f32(k) - 0.5 * f32(p.len - 1u)) / p.fs;
    let u = t / sg;
    let scale = inverseSqrt(p.fs * sg);
    var log_scale = -0.5 * u * u;
    var gauss = exp(log_scale);
    var prev = 0.0;
    var cur = PI_POW_MINUS_QUARTER;
    let base = (s * 2u * p.half + i) * N4;
    // Every slot is written, zeros past the order, so that a buffer of another order's
    // values could be reused.
    for (var n = 0u; n < 8u * max(NE4, NO4); n++) {
        if (n > 0u && n < p.order) {
            let next = sqrt(2.0 / f32(n)) * u * cur - sqrt(f32(n - 1u) / f32(n)) * prev;
            prev = cur;
            cur = next;
            if (abs(cur) > BIG) {
                cur = cur / BIG;
                prev = prev / BIG;
                log_scale = log_scale + LN_BIG;
                gauss = exp(log_scale);
            }
        }
        let v = select(0.0, scale * cur * gauss, n < p.order);
        let j = n / 2u;
        if (n % 2u == 0u && j < 4u * NE4) {
            basis[base + j / 4u][j % 4u] = v;
        } else if (n % 2u == 1u && j < 4u * NO4) {
            basis[base + NE4 + j / 4u][j % 4u] = v;
        }
    }
}

// G_pad[i][q] of sigma s: zero unless i and q have the same parity, then twice the sum over
// the right padding, k = 3h..4h (its mirror adds the same).
fn gram_row(s: u32, row: u32) {
    let i = row / N4;
    let q = row % N4;
    var acc = vec4<f32>(0.0);
    if ((i / 4u < NE4) == (q < NE4)) {
        for (var k = p.half; k < 2u * p.half; k++) {
            let b = (s * 2u * p.half + k) * N4;
            acc = fma(vec4<f32>(basis[b + i / 4u][i % 4u]), basis[b + q], acc);
        }
    }
    gram[(s * 4u * N4 + i) * N4 + q] = 2.0 * acc;
}

// One workgroup a sigma: its basis, then (after a storage barrier, the workgroup's own
// writes) its Gram matrix. One pass where there were two: each was about 13 us of a 0.3 ms
// refit on the H100, most of it a pass's fixed cost.
@compute @workgroup_size(256)
fn basis_gram(
    @builtin(local_invocation_index) li: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    // Sigmas along y (then z, past 65,535), one workgroup along x.
    let s = wg.y + wg.z * nwg.y;
    if (s >= p.sigmas) {
        return;
    }
    for (var i = li; i < 2u * p.half; i += 256u) {
        basis_sample(s, i);
    }
    storageBarrier();
    for (var row = li; row < 4u * N4 * N4; row += 256u) {
        gram_row(s, row);
    }
}

// A thread fits BEATS consecutive beats, BEATS first + j (stride = ceil(beats / BEATS)
// threads), so that each basis load feeds all of them and a sample of four of them is one vec4
// load (neighbouring threads read neighbouring vec4s).
// Beats 0-3 of a thread are the lanes of `lo`, 4-7 those of `hi`.
//
// A workgroup holds SHARE groups of sigmas (workgroup row y, groups y SHARE .. y SHARE +
// SHARE - 1), each on FIT_WG / SHARE threads, and every group fits the same beats: the
// threads of one group read a beat's samples from L2, the others from L1. (At N = 6 those
// reads bound the fit pass: 748 -> 631 us for 1e5 beats on the H100 with two groups; at N = 30
// they do not.)
// A workgroup's threads step through their groups' sigmas together, so that `stage_basis`
// can copy each group's current sigma's basis into workgroup memory first (or do nothing,
// where they do not fit there): every thread runs the loop, those past the last beat on its
// last beats, those past the last group on its sigmas, and returns only after it.
@compute @workgroup_size(FIT_WG)
fn fit(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let lanes = FIT_WG / SHARE;
    let sub = select(li / lanes, 0u, SHARE == 1u);
    let bt = wg.x * lanes + li % lanes;
    let first = min(bt, p.stride - 1u);
    let g = wg.y * SHARE + sub;
    var best_lo = vec4<f32>(3.4e38);
    var best_hi = vec4<f32>(3.4e38);
    var s_lo = vec4<u32>(0u);
    var s_hi = vec4<u32>(0u);
    // Ascending sigma and a strict comparison: a tie keeps the smaller sigma (a short last
    // group repeats its last sigma).
    for (var i = 0u; i < p.group; i++) {
        stage_basis(wg.y, i, li);
        let s = group_sigma(g, i);
        let m = mse_many(first, s, sub * p.half * N4);
        let lo = m.lo < best_lo;
        best_lo = select(best_lo, m.lo, lo);
        s_lo = select(s_lo, vec4<u32>(s), lo);
        if (BEATS > 4u) {
            let hi = m.hi < best_hi;
            best_hi = select(best_hi, m.hi, hi);
            s_hi = select(s_hi, vec4<u32>(s), hi);
        }
    }
    if (bt >= p.stride || g >= p.groups) {
        return;
    }
    for (var j = 0u; j < BEATS; j++) {
        let beat = first * BEATS + j;
        if (beat < p.beats) {
            var v: vec2<f32>;
            if (j < 4u) {
                v = vec2<f32>(best_lo[j], bitcast<f32>(s_lo[j]));
            } else {
                v = vec2<f32>(best_hi[j - 4u], bitcast<f32>(s_hi[j - 4u]));
            }
            partial[g * p.beats + beat] = v;
        }
    }
}

// Sigma i of group g (groups past the last take the last's; the last group, which may be
// short, repeats its last sigma).
fn group_sigma(g: u32, i: u32) -> u32 {
    return min(min(g, p.groups - 1u) * p.group + i, p.sigmas - 1u);
}

// Beat `beat`'s coefficient vec4 q at sigma s (the parity's plane of x, doubled).
fn coefficient_vec(beat: u32, s: u32, q: u32) -> vec4<f32> {
    let plane = select(p.half * p.row, 0u, q < NE4);
    let b0 = s * 2u * p.half * N4 + q;
    var c = vec4<f32>(0.0);
    for (var j = 0u; j < p.half; j++) {
        c = fma(vec4<f32>(x[plane + j * p.row + beat]), basis[b0 + j * N4], c);
    }
    return 2.0 * c;
}

// SEL threads a beat, 256 / SEL beats a workgroup (linear over the grid's x and y): each
// thread takes every SEL-th group of sigmas, the beat's best is reduced in workgroup memory
// (the smaller sigma wins a tie, as in `fit`), then the threads share its coefficient vec4s.
const SEL: u32 = 8u;
var<workgroup> sel_mse: array<f32, 256>;
var<workgroup> sel_s: array<u32, 256>;

@compute @workgroup_size(256)
fn select_best(
    @builtin(local_invocation_index) li: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let t = li % SEL;
    let beat = (wg.x + wg.y * nwg.x) * (256u / SEL) + li / SEL;
    var best = 3.4e38;
    var best_s = 0xffffffffu;
    if (beat < p.beats) {
        for (var g = t; g < p.groups; g += SEL) {
            let v = partial[g * p.beats + beat];
            let s = bitcast<u32>(v.y);
            if (v.x < best || (v.x == best && s < best_s)) {
                best = v.x;
                best_s = s;
            }
        }
    }
    sel_mse[li] = best;
    sel_s[li] = best_s;
    workgroupBarrier();
    for (var w = SEL / 2u; w > 0u; w /= 2u) {
        if (t < w) {
            let m = sel_mse[li + w];
            let s = sel_s[li + w];
            if (m < sel_mse[li] || (m == sel_mse[li] && s < sel_s[li])) {
                sel_mse[li] = m;
                sel_s[li] = s;
            }
        }
        workgroupBarrier();
    }
    if (beat >= p.beats) {
        return;
    }
    let head = li - t;
    let bs = sel_s[head];
    if (t == 0u) {
        fits[beat] = sel_mse[head];
        fits[p.beats + beat] = bitcast<f32>(bs);
    }
    let o = 2u * p.beats + beat * p.order;
    for (var q = t; q < N4; q += SEL) {
        let c = coefficient_vec(beat, bs, q);
        let even = q < NE4;
        for (var lane = 0u; lane < 4u; lane++) {
            let i = 4u * select(q - NE4, q, even) + lane;
            let n = select(2u * i + 1u, 2u * i, even);
            if (n < p.order) {
                fits[o + n] = c[lane];
            }
        }
    }
}
