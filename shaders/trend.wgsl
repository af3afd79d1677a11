// A whole recording's trends on the GPU, chunk by chunk (src/gpu/trend.rs drives it;
// analysis::trend's CPU pass is its twin in the tests): EDF/BDF records decoded on the device,
// the montage's traces derived, each CDSA segment's Welch spectrum in dB, each aEEG segment's
// envelope and its percentile edges. Only the strips' numbers leave the device.
//
// A chunk covers samples [c0, c0 + len) of every trace. `tr` keeps, before each trace's chunk,
// the `hist` samples that came before it (the aEEG filters' warm-up): row t is
//   tr[t * stride + hist + j] = sample c0 + j, and tr[t * stride + i] = sample c0 - hist + i.
//
// Kernels, in the order of a chunk (each a dispatch; workgroup sizes below):
//   decode   raw record bytes -> src[s][j], physical values of the sources (f64 arithmetic
//            as the CPU reader's, clamped to the digital range, stored f32)
//   derive   src -> tr: plus - sum(w * minus) per trace, in the CPU's order
//   keep     the last `hist` samples of each row to its front, for the next chunk
//   means    the mean of every Welch block of every CDSA trace (f64), for `cdsa`
//   cdsa     a workgroup per (row, segment): every block of every trace of the row, two blocks
//            at a time as the real and imaginary parts of one complex FFT in workgroup memory
//            (radix 2; a direct DFT where the block is not a power of two), |X|^2 summed per
//            bin, then the density's mean over the row's traces in dB
//   envelope a thread per (aEEG trace, segment): the band-pass, rectifier and low-pass in f64
//            from `warm` samples before the segment, the doubled envelope stored f32
//   edges    a workgroup per (aEEG trace, segment): the envelope's percentiles, exactly, by a
//            radix select of the sortable integer keys (8 bits a round, 4 rounds)
//
// f64 is needed (SHADER_F64): the aEEG's recursions are the CPU's, in f64 (their slowest poles
// lie within 1 % of the unit circle, where f32 coefficients and state are not to be trusted).

struct Params {
    // Samples of the chunk (whole segments except in the last chunk) and its first sample.
    len: u32,
    c0: u32,
    stride: u32,
    hist: u32,
    // decode: sources, samples per record, bytes a record, bytes a sample (2 or 3), the first
    // record uploaded and the upload's first byte within its first word.
    sources: u32,
    spr: u32,
    record_bytes: u32,
    bps: u32,
    first_record: u32,
    byte_shift: u32,
    // derive: traces.
    traces: u32,
    // cdsa: rows, segment length, block length, step, blocks a segment, log2 of the block
    // (0: not a power of two), segments in this chunk.
    rows: u32,
    cseg: u32,
    nfft: u32,
    step: u32,
    blocks: u32,
    log2n: u32,
    csegs: u32,
    // aEEG: traces, segment length, warm-up samples, segments in this chunk.
    aeeg: u32,
    aseg: u32,
    warm: u32,
    asegs: u32,
    // cdsa: density scale / blocks (times 2 for the bins between DC and Nyquist) and the dB
    // offset of the reader's unit.
    norm: f32,
    db: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
// Record bytes of the chunk, from the word that holds its first byte.
@group(0) @binding(1) var<storage, read> raw: array<u32>;
// Per source: byte offset of its samples within a record.
@group(0) @binding(2) var<storage, read> src_offset: array<u32>;
// Per source: gain, bias, lowest and highest digital value.
@group(0) @binding(3) var<storage, read> src_scale: array<vec4<f64>>;
@group(0) @binding(4) var<storage, read_write> src: array<f32>;
// Per trace: its plus source (0xffffffff: none, an interpolated trace), the first and end of
// its minus terms in `terms`.
@group(0) @binding(5) var<storage, read> trace_def: array<vec4<u32>>;
// (source, weight bits) per minus term.
@group(0) @binding(6) var<storage, read> terms: array<vec2<u32>>;
@group(0) @binding(7) var<storage, read_write> tr: array<f32>;
// cdsa: per row, the first and end of its traces in `row_traces`; the traces; the window; the
// twiddles exp(-2 pi i k / nfft); the block means [trace][segment][block]; the output
// [row][segment of the chunk][bin], dB.
@group(0) @binding(8) var<storage, read> rows: array<vec2<u32>>;
@group(0) @binding(9) var<storage, read> row_traces: array<u32>;
@group(0) @binding(10) var<storage, read> window: array<f32>;
@group(0) @binding(11) var<storage, read> twiddle: array<vec2<f32>>;
@group(0) @binding(12) var<storage, read_write> means: array<f64>;
@group(0) @binding(13) var<storage, read_write> power: array<f32>;
// aEEG: per aEEG trace, its row in `tr` and its microvolts per unit; the sections
// (b0, b1, b2, -a1, -a2, 0, 0, 0); the envelope [aEEG trace][chunk sample]; the edges
// [aEEG trace][segment of the chunk] (lower, upper); the ranks of the lower and upper
// percentile among n finite values, for n = 0 ..= aseg.
@group(0) @binding(14) var<storage, read> aeeg_trace: array<u32>;
@group(0) @binding(15) var<storage, read> aeeg_scale: array<f64>;
@group(0) @binding(16) var<storage, read> sections: array<f64>;
@group(0) @binding(17) var<storage, read_write> env: array<f32>;
@group(0) @binding(18) var<storage, read_write> edges: array<vec2<f32>>;
@group(0) @binding(19) var<storage, read> ranks: array<vec2<u32>>;

const NONE: u32 = 0xffffffffu;
const MAX_SECTIONS: u32 = 16u;
// The aEEG's band-pass sections and all its sections (band-pass, then low-pass), fixed per
// pipeline so that the driver unrolls the recursion and keeps its state in registers.
override BP_SECTIONS: u32 = 8u;
override SECTIONS: u32 = 10u;

fn finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

// The byte at `b` of the upload (counted from the chunk's first record).
fn raw_byte(b: u32) -> u32 {
    let at = b + p.byte_shift;
    return (raw[at >> 2u] >> ((at & 3u) * 8u)) & 0xffu;
}

// Dispatch: (ceil(len / 256), sources).
@compute @workgroup_size(256)
fn decode(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let s = gid.y;
    if j >= p.len || s >= p.sources {
        return;
    }
    let k = p.c0 + j;
    let record = k / p.spr - p.first_record;
    let within = k % p.spr;
    let b = record * p.record_bytes + src_offset[s] + within * p.bps;
    var d: i32;
    if p.bps == 2u {
        d = (bitcast<i32>(raw_byte(b) | (raw_byte(b + 1u) << 8u)) << 16u) >> 16u;
    } else {
        let u = raw_byte(b) | (raw_byte(b + 1u) << 8u) | (raw_byte(b + 2u) << 16u);
        d = (bitcast<i32>(u) << 8u) >> 8u;
    }
    let g = src_scale[s];
    let v = clamp(f64(d), g.z, g.w) * g.x + g.y;
    src[s * p.len + j] = f32(v);
}

// Dispatch: (ceil(len / 256), traces).
@compute @workgroup_size(256)
fn derive(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let t = gid.y;
    if j >= p.len || t >= p.traces {
        return;
    }
    let d = trace_def[t];
    var combo = 0.0;
    for (var m = d.y; m < d.z; m++) {
        let term = terms[m];
        combo += bitcast<f32>(term.y) * src[term.x * p.len + j];
    }
    var x = 0.0;
    if d.x != NONE {
        x = src[d.x * p.len + j];
    }
    if d.z > d.y {
        x -= combo;
    }
    tr[t * p.stride + p.hist + j] = x;
}

// Dispatch: (ceil(hist / 256), traces); only where len >= hist.
@compute @workgroup_size(256)
fn keep(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let t = gid.y;
    if i >= p.hist || t >= p.traces {
        return;
    }
    tr[t * p.stride + i] = tr[t * p.stride + p.len + i];
}

// Dispatch: (ceil(csegs * blocks / 256), traces); the mean of block b of segment q of trace t
// at means[(t * csegs + q) * blocks + b].
@compute @workgroup_size(256)
fn block_means(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let t = gid.y;
    if i >= p.csegs * p.blocks || t >= p.traces {
        return;
    }
    let q = i / p.blocks;
    let b = i % p.blocks;
    let at = t * p.stride + p.hist + q * p.cseg + b * p.step;
    var sum = f64(0.0);
    for (var k = 0u; k < p.nfft; k++) {
        sum += f64(tr[at + k]);
    }
    means[(t * p.csegs + q) * p.blocks + b] = sum / f64(p.nfft);
}

// Two blocks of samples as one complex row, then its spectrum.
var<workgroup> z: array<vec2<f32>, 2048>;

fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

fn reverse_bits(i: u32, bits: u32) -> u32 {
    return reverseBits(i) >> (32u - bits);
}

// Bins a cdsa thread owns: lid, lid + 256, ... up to nfft / 2.
const OWNED: u32 = 5u;

// Dispatch: (csegs, rows); workgroup_size 256.
@compute @workgroup_size(256)
fn cdsa(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
    let q = wid.x;
    let r = wid.y;
    let lid = lid3.x;
    let n = p.nfft;
    let half = n / 2u;
    var acc: array<f32, OWNED>;
    for (var o = 0u; o < OWNED; o++) {
        acc[o] = 0.0;
    }
    let span = rows[r];
    for (var ti = span.x; ti < span.y; ti++) {
        let t = row_traces[ti];
        for (var b = 0u; b < p.blocks; b += 2u) {
            let pair = b + 1u < p.blocks;
            let base = t * p.stride + p.hist + q * p.cseg;
            let mi = (t * p.csegs + q) * p.blocks + b;
            let ma = means[mi];
            var mb = f64(0.0);
            if pair {
                mb = means[mi + 1u];
            }
            workgroupBarrier();
            for (var i = lid; i < n; i += 256u) {
                let a = f32((f64(tr[base + b * p.step + i]) - ma) * f64(window[i]));
                var v = 0.0;
                if pair {
                    v = f32((f64(tr[base + (b + 1u) * p.step + i]) - mb) * f64(window[i]));
                }
                var at = i;
                if p.log2n != 0u {
                    at = reverse_bits(i, p.log2n);
                }
                z[at] = vec2<f32>(a, v);
            }
            workgroupBarrier();
            if p.log2n != 0u {
                // Radix-2 decimation in time on the bit-reversed row.
                for (var s = 1u; s <= p.log2n; s++) {
                    let m = 1u << s;
                    let h = m >> 1u;
                    for (var k = lid; k < half; k += 256u) {
                        let g = k / h;
                        let e = k % h;
                        let i0 = g * m + e;
                        let w = twiddle[e * (n / m)];
                        let u = z[i0];
                        let v = cmul(w, z[i0 + h]);
                        z[i0] = u + v;
                        z[i0 + h] = u - v;
                    }
                    workgroupBarrier();
                }
            }
            for (var o = 0u; o < OWNED; o++) {
                let k = lid + o * 256u;
                if k > half {
                    break;
                }
                var xa: vec2<f32>;
                var xb: vec2<f32>;
                if p.log2n != 0u {
                    let zk = z[k];
                    let zc = z[(n - k) % n];
                    let c = vec2<f32>(zc.x, -zc.y);
                    xa = 0.5 * (zk + c);
                    // (zk - c) / 2i
                    let d = 0.5 * (zk - c);
                    xb = vec2<f32>(d.y, -d.x);
                } else {
                    // The direct DFT of both blocks at bin k.
                    xa = vec2<f32>(0.0);
                    xb = vec2<f32>(0.0);
                    var idx = 0u;
                    for (var i = 0u; i < n; i++) {
                        let w = twiddle[idx];
                        let v = z[i];
                        xa += v.x * w;
                        xb += v.y * w;
                        idx += k;
                        if idx >= n {
                            idx -= n;
                        }
                    }
                }
                acc[o] += dot(xa, xa);
                if pair {
                    acc[o] += dot(xb, xb);
                }
            }
        }
    }
    let traces = f32(span.y - span.x);
    let bins = half + 1u;
    for (var o = 0u; o < OWNED; o++) {
        let k = lid + o * 256u;
        if k > half {
            break;
        }
        var scale = p.norm;
        if k == 0u || ((n & 1u) == 0u && k == half) {
            scale *= 0.5;
        }
        let v = acc[o] * scale / traces;
        power[(r * p.csegs + q) * bins + k] = 10.0 * log2(v) * 0.30102999566398120 + p.db;
    }
}

// Samples a thread of `envelope` loads at once: its loads are independent and overlap, where
// one sample at a time waited on memory for each (the recursions then wait on nothing else).
const BATCH: u32 = 16u;

// Dispatch: (ceil(asegs / 64), aeeg); the doubled envelope of segment s of aEEG trace a.
@compute @workgroup_size(64)
fn envelope(@builtin(global_invocation_id) gid: vec3<u32>) {
    let s = gid.x;
    let a = gid.y;
    if s >= p.asegs || a >= p.aeeg {
        return;
    }
    let row = i32(aeeg_trace[a] * p.stride + p.hist);
    let k = aeeg_scale[a];
    // Samples are counted from the chunk's start; the warm-up reaches at most `hist` back and
    // never before the recording's first sample.
    let start = i32(s * p.aseg);
    let first = max(start - i32(p.warm), -i32(min(p.c0, p.hist)));
    let end = start + i32(p.aseg);
    // The coefficients and the state in registers: the loops over sections unroll.
    var coef: array<f64, 80>;
    var z0: array<f64, MAX_SECTIONS>;
    var z1: array<f64, MAX_SECTIONS>;
    for (var c = 0u; c < SECTIONS; c++) {
        for (var q = 0u; q < 5u; q++) {
            coef[c * 5u + q] = sections[c * 8u + q];
        }
        z0[c] = f64(0.0);
        z1[c] = f64(0.0);
    }
    var batch: array<f32, BATCH>;
    for (var i0 = first; i0 < end; i0 += i32(BATCH)) {
        for (var u = 0u; u < BATCH; u++) {
            let i = i0 + i32(u);
            batch[u] = tr[u32(row + min(i, end - 1))];
        }
        for (var u = 0u; u < BATCH; u++) {
            let i = i0 + i32(u);
            if i >= end {
                break;
            }
            let raw_x = batch[u];
            var x = f64(raw_x) * k;
            let ok = finite(raw_x);
            for (var c = 0u; c < SECTIONS; c++) {
                if c == BP_SECTIONS {
                    x = abs(x);
                }
                let y = coef[c * 5u] * x + z0[c];
                if ok {
                    z0[c] = coef[c * 5u + 3u] * y + (coef[c * 5u + 1u] * x + z1[c]);
                    z1[c] = coef[c * 5u + 4u] * y + coef[c * 5u + 2u] * x;
                    x = y;
                }
            }
            if i >= start {
                env[a * p.len + u32(i)] = f32(f64(2.0) * x);
            }
        }
    }
}

// Sortable keys: unsigned order = f32 total order.
fn sortable(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    if (b & 0x80000000u) != 0u {
        return ~b;
    }
    return b | 0x80000000u;
}

fn unsortable(k: u32) -> f32 {
    if (k & 0x80000000u) != 0u {
        return bitcast<f32>(k & 0x7fffffffu);
    }
    return bitcast<f32>(~k);
}

var<workgroup> hist_lo: array<atomic<u32>, 256>;
var<workgroup> hist_hi: array<atomic<u32>, 256>;
var<workgroup> finite_count: atomic<u32>;
var<workgroup> finite_n: u32;
// (prefix, rank left) of the lower and the upper edge.
var<workgroup> select_lo: vec2<u32>;
var<workgroup> select_hi: vec2<u32>;

// The bin of `hist` where rank `left` falls, and the rank left within it.
fn pick(left: u32, lower: bool) -> vec2<u32> {
    var below = 0u;
    for (var b = 0u; b < 256u; b++) {
        var c: u32;
        if lower {
            c = atomicLoad(&hist_lo[b]);
        } else {
            c = atomicLoad(&hist_hi[b]);
        }
        if left < below + c {
            return vec2<u32>(b, left - below);
        }
        below += c;
    }
    return vec2<u32>(255u, 0u);
}

// Dispatch: (asegs, aeeg); workgroup_size 256.
@compute @workgroup_size(256)
fn percentiles(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
    let s = wid.x;
    let a = wid.y;
    let lid = lid3.x;
    let base = a * p.len + s * p.aseg;
    if lid == 0u {
        atomicStore(&finite_count, 0u);
    }
    workgroupBarrier();
    var mine = 0u;
    for (var i = lid; i < p.aseg; i += 256u) {
        mine += u32(finite(env[base + i]));
    }
    atomicAdd(&finite_count, mine);
    workgroupBarrier();
    if lid == 0u {
        finite_n = atomicLoad(&finite_count);
    }
    let n = workgroupUniformLoad(&finite_n);
    if n == 0u {
        if lid == 0u {
            edges[a * p.asegs + s] = vec2<f32>(bitcast<f32>(0x7fc00000u));
        }
        return;
    }
    if lid == 0u {
        let r = ranks[n];
        select_lo = vec2<u32>(0u, r.x);
        select_hi = vec2<u32>(0u, r.y);
    }
    for (var level = 0u; level < 4u; level++) {
        atomicStore(&hist_lo[lid], 0u);
        atomicStore(&hist_hi[lid], 0u);
        workgroupBarrier();
        let shift = 24u - 8u * level;
        let lo = select_lo;
        let hi = select_hi;
        for (var i = lid; i < p.aseg; i += 256u) {
            let v = env[base + i];
            if !finite(v) {
                continue;
            }
            let key = sortable(v);
            // The bits above this round's must equal the prefix chosen so far.
            var high = 0u;
            if level > 0u {
                high = key >> (shift + 8u);
            }
            let bin = (key >> shift) & 0xffu;
            if high == lo.x {
                atomicAdd(&hist_lo[bin], 1u);
            }
            if high == hi.x {
                atomicAdd(&hist_hi[bin], 1u);
            }
        }
        workgroupBarrier();
        if lid == 0u {
            let l = pick(lo.y, true);
            let h = pick(hi.y, false);
            select_lo = vec2<u32>((lo.x << 8u) | l.x, l.y);
            select_hi = vec2<u32>((hi.x << 8u) | h.x, h.y);
        }
        workgroupBarrier();
    }
    if lid == 0u {
        edges[a * p.asegs + s] = vec2<f32>(unsortable(select_lo.x), unsortable(select_hi.x));
    }
}
