// The Morlet wavelet transform's steps around the FFT (src/gpu/cwt/ drives it; the CPU twin
// is src/dsp/cwt/fast.rs and the definition src/dsp/cwt/mod.rs). C channels of N samples,
// padded to M = 2^L; S scales; a tile is channels c0.. x scales j0..j0+sj, rows r = ch * sj + j.
//
// Layouts:
//   samples    f32 [C][N]          physical samples
//   means      f32 [C]             each channel's mean (f64 on the host)
//   spectra    vec2<f32> [C][M]    X_k after the forward FFT (load writes x - mean, 0-padded)
//   wavelet    vec4<f32> [S]       (s_j dw, sqrt(2 pi s_j / dt) pi^(-1/4) / M, omega0, s_j in
//                                  seconds (for |W|^2/s)), dw = 2 pi/(M dt): all that a
//                                  slider changes, in one buffer rewritten in place, so that
//                                  the bind groups are kept (gpu::binds). The daughter
//                                  psi_hat(s_j w_k) / M is computed where used
//                                  (the CPU's exp of every k and scale took longer than the
//                                  whole GPU transform)
//   coeffs_out vec2<f32> [rows][M] X_k psi_hat, then W_n after the inverse FFT (`multiply` and
//                                  gpu::fft's stages, for rows too long for fft_pass.wgsl)
//   w2         f32 [rows][M]       |W_n|^2, all that is read of W: fft_pass.wgsl's pass 2
//                                  writes it (`pass_output`), `to_power` after the stages
//   mag        f32 [rows][N]       |W| (read back for the CLI and tests)
//   values     f32 [C*S][width]    shown value per image pixel: the mean power over the
//                                  pixel's samples, optionally / s, as |W|, |W|^2 or dB
//   qmax       u32 [C]             per channel, bits of the largest mean power (/ s): positive
//                                  floats order as their bits do, so atomicMax finds it
//   lut        u32 [256]           colour map, RGBA8 packed (r in the low byte)
//   tex        rgba8unorm [width x C*S]  the image egui draws (gamma-encoded bytes, as egui's
//                                  own textures)
//   power      f32 [C][S][blocks]  mean |W|^2 per block of samples (band power), every tile's
//                                  rows in their places
//   partials   f32 [rows][M / TILE][blocks]  pass 2's sums of |W|^2 per workgroup and block
//                                  (`pass2_tile`), which `block_sums` adds up into `power`;
//                                  or [rows][chunks][blocks], `decimated_sums`' per chunk
//   kappa      f32 [2][M]          block weights of decimated rows (whole blocks, the last)
//
// fft_pass.wgsl is appended to this module: its pass 1 takes the multiply's values from
// `pass_input` and its pass 2 stores |W|^2 through `pass_output`, so rows of up to 2^22 values
// go from the spectra to |W|^2 in two passes over memory. For band power pass 2 may instead
// sum |W|^2 over the blocks itself (`pass2_tile`, where gpu/cwt/mod.rs finds the shape allows
// it), so that no |W|^2 row goes to memory. `multiply`, gpu::fft's stage kernels and `to_power`
// serve longer rows. Band power of the narrow scales is decimated (gpu/cwt/decimated.rs): their
// inverse FFTs are of P points (`pass_input`), pass 2 writes |W|^2 at every M / P-th sample, and
// `decimated_sums` turns those into block sums through the table `kappa`.
//
// Entry points (x = threads along a row; row = y + z * 65535, see gpu::fft::grid):
//   load         x over M,      rows = tile channels
//   multiply     x over M,      rows = tile rows (rows longer than fft_pass.wgsl takes)
//   to_power     x over N,      rows = tile rows (after the stages, for the same rows)
//   magnitude    x over N,      rows = tile rows
//   columns      x over width,  rows = tile rows
//   paint        x over width,  rows = C * S (after every tile's columns)
//   block_power  x over blocks, rows = tile rows (from w2)
//   decimated_sums  its own grid (see there), from w2 at every D-th sample
//   block_sums   x over blocks, rows = tile rows (from partials)

struct Params {
    n: u32,
    m: u32,
    scales: u32,
    half: u32,
    c0: u32,
    j0: u32,
    sj: u32,
    rows: u32,
    width: u32,
    // 0 = |W|, 1 = |W|^2, 2 = dB
    quantity: u32,
    per_scale: u32,
    first: u32,
    block: u32,
    count: u32,
    blocks: u32,
    range_db: f32,
    pad0: f32,
    // 1: each channel's colours span its own range; 0: one range for all
    per_trace: u32,
    channels: u32,
    // 1: fft_pass.wgsl's pass 2 sums blocks into `partials` (`pass2_tile`)
    sum_blocks: u32,
    // 1: rows whose daughter is narrow enough take fft_pass.wgsl's `pass_direct`
    // (`pass_direct_len`); M >= TILE
    direct: u32,
    // 1: the rows are decimated (`pass_input`, `decimated_sums`): the inverse FFTs are of P
    // points from bin k_lo, W at every D = M / P-th sample, band power from `kappa`
    decimated: u32,
    k_lo: u32,
    p: u32,
    // `decimated_sums`' chunks of a row (its partial sums a row and block)
    chunks: u32,
    // `windowed_sums`: the weights' reach (samples either side of a block) and samples a block
    reach: u32,
    taps: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> samples: array<f32>;
@group(0) @binding(2) var<storage, read> means: array<f32>;
@group(0) @binding(3) var<storage, read_write> spectra_out: array<vec2<f32>>;
@group(0) @binding(4) var<storage, read> spectra: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read> wavelet: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> coeffs_out: array<vec2<f32>>;
@group(0) @binding(7) var<storage, read> w2: array<f32>;
@group(0) @binding(8) var<storage, read_write> mag: array<f32>;
@group(0) @binding(10) var<storage, read_write> values_out: array<f32>;
@group(0) @binding(11) var<storage, read_write> qmax: array<atomic<u32>>;
@group(0) @binding(12) var<storage, read> values: array<f32>;
@group(0) @binding(13) var<storage, read> lut: array<u32>;
@group(0) @binding(14) var tex: texture_storage_2d<rgba8unorm, write>;
@group(0) @binding(15) var<storage, read> qmax_in: array<u32>;
@group(0) @binding(16) var<storage, read_write> power: array<f32>;
@group(0) @binding(17) var<storage, read_write> partials: array<f32>;
@group(0) @binding(18) var<storage, read> kappa: array<f32>;
@group(0) @binding(24) var<storage, read_write> w2_out: array<f32>;

fn row_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.y + wid.z * nwg.y;
}

fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// The channel and scale of tile row r.
fn channel_of(r: u32) -> u32 {
    return params.c0 + r / params.sj;
}

fn scale_of(r: u32) -> u32 {
    return params.j0 + r % params.sj;
}

@compute @workgroup_size(256)
fn load(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let row = row_index(wid, nwg);
    let i = gid.x;
    if row >= params.rows || i >= params.m {
        return;
    }
    var v = vec2<f32>(0.0, 0.0);
    if i < params.n {
        v.x = samples[row * params.n + i] - means[row];
    }
    spectra_out[row * params.m + i] = v;
}

const DAUGHTER_E2: f32 = 200.0;

// The bin of tile row `row` from which its inverse FFT's input is zero (at most M / 2 + 1):
// pass_input is zero where w.x k - omega0 >= sqrt(DAUGHTER_E2); two bins beyond the bound
// cover its rounding.
fn pass_input_end(row: u32) -> u32 {
    let w = wavelet[scale_of(row)];
    let last = (w.z + sqrt(DAUGHTER_E2)) / w.x;
    if !(last < f32(params.half)) {
        return params.half;
    }
    return min(u32(last) + 2u, params.half);
}

// L for tile row `row` where fft_pass.wgsl computes it in one pass (`pass_direct`), 0 for rows
// that take the two passes: the power of two above its input's end where that is at most TILE;
// else TILE where the input ends by 2 TILE + 1, so that at most two bins fold onto each of the
// L inputs (and the Nyquist bin a third onto bin 0: every row of M <= 4 TILE, the interactive
// scalogram's 8,192 among them).
fn pass_direct_len(row: u32) -> u32 {
    if params.direct == 0u || row >= params.rows {
        return 0u;
    }
    let end = pass_input_end(row);
    if end <= TILE {
        return 1u << (32u - countLeadingZeros(max(end, 2u) - 1u));
    }
    if end <= 2u * TILE + 1u {
        return TILE;
    }
    return 0u;
}

// X_k psi_hat(s w_k) / M of tile row `row`: the inverse FFT's input, computed where it is
// read (fft_pass.wgsl's pass 1, or `multiply` for rows too long for it). Decimated rows take
// input q of their P-point inverse FFT from the one bin k = q mod P of k_lo .. k_lo + P, which
// holds the daughter's whole band (gpu/cwt/decimated.rs `plan`): W(n D) = sum_q Y_q w_P^(-q n).
fn pass_input(row: u32, q: u32) -> vec2<f32> {
    if params.decimated == 1u {
        let mask = params.p - 1u;
        return daughter_input(row, params.k_lo + ((q - params.k_lo) & mask));
    }
    return daughter_input(row, q);
}

fn daughter_input(row: u32, k: u32) -> vec2<f32> {
    var v = vec2<f32>(0.0, 0.0);
    // H(w): k = 0 and the negative frequencies above M/2 are zero.
    if k > 0u && k < params.half {
        let w = wavelet[scale_of(row)];
        let e = w.x * f32(k) - w.z;
        // Past e^2 = 200 the daughter, norm x e^-100, is below f32's normal range (the CPU's
        // f64 stops at 1400, where it is 0 exactly): what it would add is beneath rounding.
        if e * e < DAUGHTER_E2 {
            v = spectra[channel_of(row) * params.m + k] * (w.y * exp(-0.5 * e * e));
        }
    }
    return v;
}

@compute @workgroup_size(256)
fn multiply(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let row = row_index(wid, nwg);
    let k = gid.x;
    if row >= params.rows || k >= params.m {
        return;
    }
    coeffs_out[row * params.m + k] = pass_input(row, k);
}

// |W|^2 of the stages' W (rows too long for fft_pass.wgsl), into w2_out.
@compute @workgroup_size(256)
fn to_power(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let row = row_index(wid, nwg);
    let i = gid.x;
    if row >= params.rows || i >= params.n {
        return;
    }
    let w = coeffs_out[row * params.m + i];
    w2_out[row * params.m + i] = dot(w, w);
}

// fft_pass.wgsl's pass 2 output: |W|^2 only.
fn pass_output(row: u32, j: u32, v: vec2<f32>) {
    w2_out[row * split.m + j] = dot(v, v);
}

// fft_pass.wgsl's pass 2 hook. With params.sum_blocks (gpu/cwt/mod.rs sets it where M >= TILE,
// so that a workgroup's values are of one row), the workgroup sums |W|^2 of its values over each
// block b of samples first + b block .. (the last block shorter) into partials[workgroup][b],
// and `block_sums` adds up a row's M / TILE workgroups (each writes every block's partial sum,
// 0 where it holds none of the block). A workgroup holds j = j1_0 + s + N1 j2 for s < per =
// TILE / N2 and every j2 < N2, so a block's values are spread over the workgroups of its row
// and none holds one whole. Numbered e = s + per j2, its values' j rise with e: a block is a
// run of e, summed from a tree of sums of 8 values (`bs_sum`) built in the tile itself (the
// workgroup memory has no room for more).
fn pass2_tile(lid: u32, g0: u32, n1: u32, n2: u32) {
    if params.sum_blocks == 0u {
        return;
    }
    // The stages' last writes and pass 2's reads of them are done.
    workgroupBarrier();
    // One thread per 8 values of e (PER_THREAD): each value's |W|^2 (level 0) and their sum
    // (level 1) in place of the values, which no other thread reads before the barrier.
    var sum = 0.0;
    for (var i = 0u; i < 8u; i++) {
        let at = bs_at(lid * 8u + i, n2);
        let v = tile[at];
        let p = dot(v, v);
        sum += p;
        tile[at] = vec2<f32>(p, 0.0);
    }
    tile[bs_node(1u, lid, n2)].y = sum;
    workgroupBarrier();
    // The levels above: sums of 8 nodes of the level below.
    for (var level = 2u; level <= BS_TOP; level++) {
        let nodes = TILE >> (3u * level);
        if lid < nodes {
            var node = 0.0;
            for (var i = 0u; i < 8u; i++) {
                node += tile[bs_node(level - 1u, lid * 8u + i, n2)].y;
            }
            tile[bs_node(level, lid, n2)].y = node;
        }
        workgroupBarrier();
    }
    // Workgroups past the last row (the grid's rounding) have nothing to sum.
    if (g0 >> countTrailingZeros(n1)) >= split.rows {
        return;
    }
    let j10 = g0 & (n1 - 1u);
    // The workgroup's index: row M / TILE + j1_0 / per, whatever the row's N2.
    let base = (g0 / (TILE / n2)) * params.blocks;
    for (var b = lid; b < params.blocks; b += THREADS) {
        let span = block_span(b);
        partials[base + b] = bs_sum(bs_rank(span.x, j10, n1, n2), bs_rank(span.y, j10, n1, n2), n2);
    }
}

// Samples first + k block .. of block k (the last one shorter), as [start, end).
fn block_span(k: u32) -> vec2<u32> {
    let a = params.first + k * params.block;
    return vec2<u32>(a, min(a + params.block, params.first + params.count));
}

// The sum tree's top level: TILE = 4 x 8^3 values, 4 nodes.
const BS_TOP: u32 = 3u;

// Where value e = s + per j2 of pass 2's workgroup lies in the tile: tile[s N2 + j2].
fn bs_at(e: u32, n2: u32) -> u32 {
    let per_bits = countTrailingZeros(TILE / n2);
    let s = e & ((1u << per_bits) - 1u);
    return (s << countTrailingZeros(n2)) | (e >> per_bits);
}

// Node i of a level >= 1 of the sum tree (the sum of values i 8^level ..): in the .y of a value
// of its run that no lower level uses (offsets 0, 1, 2 for levels 1, 2, 3).
fn bs_node(level: u32, i: u32, n2: u32) -> u32 {
    return bs_at((i << (3u * level)) + level - 1u, n2);
}

// How many of the workgroup's values lie below sample x of its row: per for each whole period
// of N1 samples from j1_0, and the part of the next.
fn bs_rank(x: u32, j10: u32, n1: u32, n2: u32) -> u32 {
    if x <= j10 {
        return 0u;
    }
    let d = x - j10;
    let q = d >> countTrailingZeros(n1);
    if q >= n2 {
        return TILE;
    }
    let per = TILE / n2;
    return q * per + min(d & (n1 - 1u), per);
}

// The sum of values lo <= e < hi: those up to the next multiple of 8 at either end, then the
// same a level up, up to the top level's 4 nodes; at most 7 + 7 loads a level. Sums of positive
// values only: no cancellation.
fn bs_sum(lo: u32, hi: u32, n2: u32) -> f32 {
    var l = lo;
    var h = hi;
    var total = 0.0;
    while l < h && (l & 7u) != 0u {
        total += tile[bs_at(l, n2)].x;
        l++;
    }
    while l < h && (h & 7u) != 0u {
        h--;
        total += tile[bs_at(h, n2)].x;
    }
    for (var level = 1u; level <= BS_TOP; level++) {
        l = l >> 3u;
        h = h >> 3u;
        while l < h && ((l & 7u) != 0u || level == BS_TOP) {
            total += tile[bs_node(level, l, n2)].y;
            l++;
        }
        while l < h && (h & 7u) != 0u {
            h--;
            total += tile[bs_node(level, h, n2)].y;
        }
    }
    return total;
}

@compute @workgroup_size(256)
fn magnitude(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let row = row_index(wid, nwg);
    let i = gid.x;
    if row >= params.rows || i >= params.n {
        return;
    }
    mag[row * params.n + i] = sqrt(w2[row * params.m + i]);
}

fn shown(q: f32) -> f32 {
    if params.quantity == 0u {
        return sqrt(q);
    }
    if params.quantity == 1u {
        return q;
    }
    return 10.0 * log2(max(q, 1e-30)) * 0.30102999566;
}

// The largest mean power a workgroup of `columns` saw (all of one row, so of one channel):
// one global atomicMax a workgroup instead of one a pixel. Zero at the start, as WGSL gives
// workgroup variables.
var<workgroup> row_top: atomic<u32>;

@compute @workgroup_size(256)
fn columns(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let row = row_index(wid, nwg);
    let x = gid.x;
    if row >= params.rows {
        return;
    }
    if x < params.width {
        // Samples floor(x N / width) .. floor((x + 1) N / width), without overflowing u32.
        let per = params.n / params.width;
        let rest = params.n % params.width;
        let a = x * per + (x * rest) / params.width;
        let b = (x + 1u) * per + ((x + 1u) * rest) / params.width;
        var sum = 0.0;
        for (var i = a; i < b; i++) {
            sum += w2[row * params.m + i];
        }
        let s = scale_of(row);
        var q = sum / f32(max(b - a, 1u));
        if params.per_scale == 1u {
            q = q / wavelet[s].w;
        }
        let image_row = channel_of(row) * params.scales + s;
        values_out[image_row * params.width + x] = shown(q);
        // Threads of one workgroup meet at one address: those below its top so far skip.
        if bitcast<u32>(q) > atomicLoad(&row_top) {
            atomicMax(&row_top, bitcast<u32>(q));
        }
    }
    workgroupBarrier();
    if lid == 0u {
        atomicMax(&qmax[channel_of(row)], atomicLoad(&row_top));
    }
}

@compute @workgroup_size(256)
fn paint(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let row = row_index(wid, nwg);
    let x = gid.x;
    if row >= params.rows || x >= params.width {
        return;
    }
    var q = bitcast<f32>(qmax_in[row / params.scales]);
    if params.per_trace == 0u {
        for (var c = 0u; c < params.channels; c++) {
            q = max(q, bitcast<f32>(qmax_in[c]));
        }
    }
    let hi = shown(q);
    var lo = 0.0;
    if params.quantity == 2u {
        lo = hi - params.range_db;
    }
    let v = values[row * params.width + x];
    var t = 0.0;
    if hi > lo {
        t = clamp((v - lo) / (hi - lo), 0.0, 1.0);
    }
    let colour = unpack4x8unorm(lut[u32(round(t * 255.0))]);
    textureStore(tex, vec2<i32>(i32(x), i32(row)), colour);
}

// Where tile row `row` goes among all rows of the output, [channel][scale].
fn out_row(row: u32) -> u32 {
    return channel_of(row) * params.scales + scale_of(row);
}

@compute @workgroup_size(256)
fn block_power(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let row = row_index(wid, nwg);
    let k = gid.x;
    if row >= params.rows || k >= params.blocks {
        return;
    }
    let span = block_span(k);
    var sum = 0.0;
    for (var i = span.x; i < span.y; i++) {
        sum += w2[row * params.m + i];
    }
    power[out_row(row) * params.blocks + k] = sum / f32(span.y - span.x);
}

// The mean |W|^2 of each block from pass 2's partial sums (`pass2_tile`): the M / TILE
// workgroups of the row, read in runs along the blocks; or from `decimated_sums`' chunks.
@compute @workgroup_size(256)
fn block_sums(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let row = row_index(wid, nwg);
    let k = gid.x;
    if row >= params.rows || k >= params.blocks {
        return;
    }
    var per_row = params.m / TILE;
    if params.decimated == 1u {
        per_row = params.chunks;
    }
    var sum = 0.0;
    for (var w = 0u; w < per_row; w++) {
        sum += partials[(row * per_row + w) * params.blocks + k];
    }
    let span = block_span(k);
    power[out_row(row) * params.blocks + k] = sum / f32(span.y - span.x);
}

// Band power of decimated rows: |W|^2 at every D-th sample (w2, [rows][P], pass 2's
// `pass_output`) gives each block's sum as sum_n w2[n] kappa[(a - n D) mod M], a the block's
// first sample (src/dsp/cwt/decimated.rs; `kappa` holds the table for whole blocks, then the
// one for a shorter last block). A product of the tile's rows by a matrix of blocks gathered
// from the table: each workgroup 64 rows x 32 blocks over a chunk of P / chunks samples, 4 x 2
// a thread (one vec4 and two scalar loads from workgroup memory for 8 FMAs), into
// partials[row][chunk][block] that `block_sums` adds up.
// Dispatch (ceil(blocks / 32), ceil(rows / 64), chunks) of 256 threads.
const DS_ROWS: u32 = 64u;
const DS_BLOCKS: u32 = 32u;
const DS_K: u32 = 32u;
// [k][row / 4] and [k][block], padded so that the stores along k fall in fewer banks.
var<workgroup> ds_w2: array<array<vec4<f32>, 17>, 32>;
var<workgroup> ds_kappa: array<array<f32, 33>, 32>;

@compute @workgroup_size(256)
fn decimated_sums(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let b0 = wid.x * DS_BLOCKS;
    let r0 = wid.y * DS_ROWS;
    let chunk = params.p / params.chunks;
    let n0 = wid.z * chunk;
    let d = params.m / params.p;
    let short_last = params.count % params.block != 0u;
    let tb = li % 16u;
    let tr = li / 16u;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    for (var nn = n0; nn < n0 + chunk; nn += DS_K) {
        // Adjacent threads take adjacent samples: runs of 32 in memory.
        let k = li % DS_K;
        let n = nn + k;
        for (var q = 0u; q < 8u; q++) {
            let i = li / DS_K + q * 8u;
            var v = 0.0;
            if r0 + i < params.rows {
                v = w2[(r0 + i) * params.p + n];
            }
            ds_w2[k][i / 4u][i % 4u] = v;
        }
        for (var q = 0u; q < 4u; q++) {
            let j = li / DS_K + q * 8u;
            let b = b0 + j;
            var c = 0.0;
            if b < params.blocks {
                let a = params.first + b * params.block;
                // n D < M: one wrap at most.
                let tau = (a + params.m - n * d) & (params.m - 1u);
                let table = select(0u, params.m, short_last && b + 1u == params.blocks);
                c = kappa[table + tau];
            }
            ds_kappa[k][j] = c;
        }
        workgroupBarrier();
        for (var t = 0u; t < DS_K; t++) {
            let g = ds_w2[t][tr];
            acc0 = fma(g, vec4<f32>(ds_kappa[t][2u * tb]), acc0);
            acc1 = fma(g, vec4<f32>(ds_kappa[t][2u * tb + 1u]), acc1);
        }
        workgroupBarrier();
    }
    let b = b0 + 2u * tb;
    for (var q = 0u; q < 4u; q++) {
        let row = r0 + 4u * tr + q;
        if row < params.rows {
            let at = (row * params.chunks + wid.z) * params.blocks;
            if b < params.blocks {
                partials[at + b] = acc0[q];
            }
            if b + 1u < params.blocks {
                partials[at + b + 1u] = acc1[q];
            }
        }
    }
}

// Band power of decimated rows from weights smooth across the empty bins (src/dsp/cwt/
// decimated.rs `smooth_block_kernels`): a block's sum needs only the `taps` samples n D from
// a - reach on, a its first sample. One workgroup a block and 64 rows; four threads a row, each
// every fourth sample (a run of its own row), their sums added through workgroup memory; the
// block's weights in workgroup memory. Writes partials[row][block] (one chunk).
// Dispatch (blocks, ceil(rows / 64)).
const WS_TAPS: u32 = 3584u;
var<workgroup> ws_kappa: array<f32, 3584>;
var<workgroup> ws_part: array<f32, 256>;

@compute @workgroup_size(256)
fn windowed_sums(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let b = wid.x;
    let r = li % 64u;
    let quarter = li / 64u;
    let row = wid.y * 64u + r;
    let d = params.m / params.p;
    let a = params.first + b * params.block;
    // floor((a - reach) / D) mod P: reach < M.
    let first = (a + params.m - params.reach) / d;
    let short_last = params.count % params.block != 0u;
    let table = select(0u, params.m, short_last && b + 1u == params.blocks);
    for (var i = li; i < params.taps; i += 256u) {
        let n = (first + i) & (params.p - 1u);
        ws_kappa[i] = kappa[table + ((a + params.m - n * d) & (params.m - 1u))];
    }
    workgroupBarrier();
    let here = row < params.rows && b < params.blocks;
    var acc = 0.0;
    if here {
        let base = row * params.p;
        for (var i = quarter; i < params.taps; i += 4u) {
            acc = fma(w2[base + ((first + i) & (params.p - 1u))], ws_kappa[i], acc);
        }
    }
    ws_part[li] = acc;
    workgroupBarrier();
    if here && quarter == 0u {
        let sum = ws_part[r] + ws_part[r + 64u] + ws_part[r + 128u] + ws_part[r + 192u];
        partials[row * params.blocks + b] = sum;
    }
}
