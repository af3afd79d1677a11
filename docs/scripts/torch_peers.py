"""PyTorch as the peer of `ede bench all`: each workload of its summary table written as a
researcher would write it in PyTorch (eager, and torch.compile where it may help; the better of
the two is reported; TF32 allowed), data already on the GPU, timed with
torch.cuda.synchronize() as the median of repeats after warm-up. Run it in the same device call
as `ede bench all`, into the same folder, and the summary gains an "ede / PyTorch" column:

    python3 docs/scripts/torch_peers.py --out OUT/torch.json
    python3 docs/scripts/torch_peers.py --out OUT/torch.json --skip xapen --compile none
    python3 docs/scripts/torch_peers.py --quick --out /tmp/torch.json  # smoke run, CPU is fine

Other options: --deadline-s (stop starting work after that many seconds), --mem-gb (what one
chunk of work may hold on the device), --xapen-budget-s (the brute force is timed on fewer
epochs and scaled when the whole subject would take longer), --repeats, --no-tf32.

Writes {"torch", "device", "tf32", "quick", "workloads": [...]}, one entry per workload:
{"workload": the summary row's exact text, "seconds": median, "runs": [...], "variant": "eager"
or "compile", "what": what was timed, "torch": version, "device": name, and eager_s /
compile_s / compile_error}, or {"workload": ..., "error": ...} where it failed. The file is
rewritten after each workload, so a run cut short keeps what it measured. --quick shrinks every
size (the workload texts stay, with "quick": true) and leaves torch.compile out unless
--compile is given; without CUDA only --quick runs.
"""

import argparse
import gc
import itertools
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F

# The summary rows' texts, exactly as src/cli/bench/all.rs writes them.
XAPEN = "Cross-ApEn, paper subject (148 ch x 49 epochs x 1024, m=1)"
MORLET_BATCH = "Morlet batch, 64 ch x 1 h x 1600 Hz x 40 scales -> band power"
MORLET_INTERACTIVE = "Morlet interactive, 19 ch x 30 s x 256 Hz x 64 scales"
HERMITE = "Hermite, 1e5 beats, N = 30, S = 100"
FASTICA = "FastICA on the GPU, 256 x 20000, 200 iterations"

# Where torch.compile may help: it fuses the elementwise work and reductions around cuFFT and
# cuBLAS. FastICA's time is 200 small eigh calls, which compiling does not change (--compile all
# tries it anyway).
COMPILE_AUTO = {"morlet-interactive", "morlet-batch", "hermite", "xapen"}


class Ctx:
    def __init__(self, args):
        self.dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.quick = args.quick
        mode = args.compile or ("none" if args.quick else "auto")
        self.compile_keys = {"auto": COMPILE_AUTO, "none": set()}.get(mode, None)
        self.mem = args.mem_gb * 1e9
        self.repeats = args.repeats
        self.tf32 = not args.no_tf32
        self.xapen_budget_s = args.xapen_budget_s
        self.start = time.perf_counter()
        self.deadline_s = args.deadline_s
        if self.dev.type == "cuda":
            self.device_name = torch.cuda.get_device_name(self.dev)
        else:
            self.device_name = f"CPU ({platform.processor() or platform.machine()})"

    def sync(self):
        if self.dev.type == "cuda":
            torch.cuda.synchronize(self.dev)

    def compiles(self, key):
        return self.compile_keys is None or key in self.compile_keys

    def past_deadline(self):
        return self.deadline_s is not None and time.perf_counter() - self.start > self.deadline_s

    def reps(self, full):
        return self.repeats or (2 if self.quick else full)

    def generator(self, seed):
        return torch.Generator(device=self.dev).manual_seed(seed)


def timed(ctx, fn, repeats, warmup):
    """Seconds of `repeats` calls of fn() after `warmup` untimed ones, each call bracketed by
    synchronizations."""
    for _ in range(warmup):
        fn()
    runs = []
    for _ in range(repeats):
        ctx.sync()
        t = time.perf_counter()
        fn()
        ctx.sync()
        runs.append(time.perf_counter() - t)
    return runs


def best_variant(ctx, key, build, repeats, warmup, modes=(None,), measure=None):
    """Times build(wrap)() eager (wrap = identity) and, where compiling may help, with wrap =
    torch.compile (the first of `modes` that works); keeps the lower median.
    measure(fn, warmup) -> (runs, extra fields) replaces the plain timing."""
    if measure is None:
        def measure(fn, w):
            return timed(ctx, fn, repeats, w), {}
    out = {}
    runs, extra = measure(build(lambda f: f), warmup)
    out["eager_s"] = statistics.median(runs)
    out.update({f"eager_{k}": v for k, v in extra.items()})
    chosen = ("eager", runs)
    if ctx.compiles(key):
        if ctx.past_deadline():
            out["compile_error"] = "not tried: past --deadline-s"
        else:
            errors = []
            for mode in modes:
                kw = {"mode": mode} if mode and ctx.dev.type == "cuda" else {}
                try:
                    torch._dynamo.reset()
                    # More warm-up: the first calls compile (and record CUDA graphs).
                    runs, extra = measure(build(lambda f: torch.compile(f, **kw)), warmup + 2)
                except Exception as e:  # noqa: BLE001 - a compile failure leaves eager's figure
                    errors.append(f"{mode or 'default'}: {type(e).__name__}: {str(e)[:300]}")
                    continue
                out["compile_s"] = statistics.median(runs)
                out["compile_mode"] = mode or "default"
                out.update({f"compile_{k}": v for k, v in extra.items()})
                if statistics.median(runs) < out["eager_s"]:
                    chosen = ("compile", runs)
                break
            if errors:
                out["compile_error"] = "; ".join(errors)
            torch._dynamo.reset()
    out.update(seconds=statistics.median(chosen[1]), runs=chosen[1], variant=chosen[0])
    return out


def next_pow2(n):
    return 1 << max(0, (n - 1).bit_length())


# --- Morlet: ede's dsp::cwt definition (Torrence & Compo) ---------------------------------

def fourier_factor(omega0):
    return 4 * math.pi / (omega0 + math.sqrt(2 + omega0 * omega0))


def octave_scales(s0, dj, j):
    """s_k = s0 2^(k dj), k = 0..j, seconds (ScaleSpec::Octaves)."""
    return [s0 * 2 ** (k * dj) for k in range(j + 1)]


def daughters(scales, omega0, dt, m):
    """psi_hat(s w_k) for k = 0..M/2, [scales, M/2 + 1] f32: sqrt(2 pi s / dt) pi^(-1/4)
    exp(-(s w_k - omega0)^2 / 2), zero at k = 0 (and, by ifft(n=M)'s zero padding, above
    M/2). ede's dsp::cwt::daughter; its 1/M is torch's ifft's own. `scales` (f64) and
    `omega0` (a 0-d f64 tensor, so that a new value does not recompile) are on the device."""
    k = torch.arange(m // 2 + 1, dtype=torch.float64, device=scales.device)
    e = scales[:, None] * (2 * math.pi / (m * dt)) * k[None, :] - omega0
    norm = torch.sqrt(2 * math.pi * scales / dt) * math.pi ** -0.25
    return (norm[:, None] * torch.exp(-0.5 * e * e) * (k > 0)).float()


def morlet_interactive(ctx):
    """A parameter change in the scalogram view: the signals' spectra are on the device; a new
    omega0 makes new scales and daughters, then |W| of every channel and scale."""
    channels = 3 if ctx.quick else 19
    fs, secs, s = 256.0, 30.0, 64
    n = int(secs * fs)
    m, dt = next_pow2(n), 1 / fs
    g = ctx.generator(11)
    x = torch.cumsum(torch.randn(channels, n, generator=g, device=ctx.dev), dim=1)
    # Once per window, as ede's Spectra: mean removed, zero-padded to M, forward FFT.
    spectra = torch.fft.rfft(x - x.mean(dim=1, keepdim=True), n=m)

    def scalogram(spectra, scales, omega0):
        psi = daughters(scales, omega0, dt, m)
        w = torch.fft.ifft(spectra[:, None, :] * psi[None], n=m)
        return w[..., :n].abs()

    def build(wrap):
        f = wrap(scalogram)
        count = itertools.count()

        def once():
            # A new omega0 each call, as `ede bench cwt` drags it: new scales, new daughters.
            omega0 = 6.0 + 0.01 * next(count)
            sc = octave_scales(1 / (64 * fourier_factor(omega0)), 6 / 63, s - 1)
            scales = torch.tensor(sc, dtype=torch.float64, device=ctx.dev)
            om = torch.tensor(omega0, dtype=torch.float64, device=ctx.dev)
            return f(spectra, scales, om)

        return once

    r = best_variant(ctx, "morlet-interactive", build, ctx.reps(20), 2,
                     modes=("reduce-overhead", None))
    r["what"] = (f"|W| of {channels} ch x {n} samples x {s} scales (64 to 1 Hz) from spectra "
                 f"already on the GPU: new omega0 -> daughters, multiply, ifft (M = {m}), |W| "
                 "left on the GPU; ede's figure paints the view's texture (pixel columns, dB, "
                 "colours) from |W|^2 instead")
    return r


def morlet_batch(ctx):
    """Band power in 1-s blocks of a whole recording, in ede's overlapping segments
    (analysis::cwt::Segmentation): each segment transforms a margin of 8.6 times the widest
    scale on either side of its core, zero-padded to a power of two; blocks of the core kept."""
    channels, secs = (2, 120) if ctx.quick else (64, 3600)
    fs, omega0 = 1600, 6.0
    dt, block = 1 / fs, fs
    sc = octave_scales(1 / (100 * fourier_factor(omega0)), 1 / 6, 39)
    s = len(sc)
    n = secs * fs
    assert n % block == 0, "whole blocks only"
    margin = math.ceil(8.6 * sc[-1] * fs)
    seg_m = next_pow2(min(max(3 * (2 * margin + block), 1 << 16), n + 2 * margin))
    core = (seg_m - 2 * margin) // block * block
    seg_len = core + 2 * margin
    m = next_pow2(seg_len)
    segs = -(-n // core)
    per_core = core // block
    g = ctx.generator(5)
    x = torch.randn(channels, n, generator=g, device=ctx.dev)
    scales = torch.tensor(sc, dtype=torch.float64, device=ctx.dev)
    om = torch.tensor(omega0, dtype=torch.float64, device=ctx.dev)
    # Device memory a segment row takes: the product, W and cuFFT's work area (complex), |W|^2.
    row_bytes = s * ((m // 2 + 1) * 8 + 2 * m * 8 + 2 * core * 4)
    chunk = max(1, min(channels * segs, int(ctx.mem // row_bytes)))

    def block_power(rows, psi):
        """Mean |W|^2 per block of each row's core, [rows, scales, blocks]."""
        w = torch.fft.ifft(torch.fft.rfft(rows, n=m)[:, None, :] * psi[None], n=m)
        p = torch.view_as_real(w[..., margin:margin + core]).square().sum(-1)
        return p.reshape(rows.shape[0], s, per_core, block).mean(-1)

    def make_psi(scales, om):
        return daughters(scales, om, dt, m)

    def build(wrap):
        bp, mk = wrap(block_power), wrap(make_psi)

        def once():
            psi = mk(scales, om)
            xc = x - x.mean(dim=1, keepdim=True)  # the whole recording's mean, as ede
            xp = F.pad(xc, (margin, segs * core - n + margin))
            rows = xp.unfold(1, seg_len, core).reshape(channels * segs, seg_len)
            out = torch.cat([bp(rows[i:i + chunk], psi) for i in range(0, len(rows), chunk)])
            out = out.reshape(channels, segs, s, per_core).permute(0, 2, 1, 3)
            return out.reshape(channels, s, segs * per_core)[:, :, :n // block].cpu()

        return once

    r = best_variant(ctx, "morlet-batch", build, ctx.reps(5), 1)
    r["what"] = (f"band power in 1-s blocks of {channels} ch x {secs} s x {fs} Hz, {s} scales, "
                 f"in ede's segments ({segs} of {seg_len} samples zero-padded to {m}: cores "
                 f"{core}, margins {margin}), {chunk} rows a chunk: rfft, x daughters, ifft, "
                 "|W|^2, block means, to the host; random data already on the GPU (ede reads "
                 "a generated EDF, overlapped with the GPU's work)")
    return r


# --- Hermite: ede's dsp::hermite definition -----------------------------------------------

def hermite(ctx):
    """Per beat and sigma: c = B^T x (plain projection on the sampled basis, no
    orthonormalization, as ede), x_hat = B c over the padded window, MSE = sum over all L
    samples of (x - x_hat)^2 (ede's "MSE" is that sum); the sigma of least MSE (ties: the
    smaller) with its MSE and coefficients."""
    beats = 2000 if ctx.quick else 100_000
    fs, order, sigmas_n = 360.0, 30, 100
    h = round(0.1 * fs)  # the MIT-BIH rate: 36 samples each side, 36 zeros of padding each side
    w, length = 2 * h, 4 * h
    sigma_max = 0.2 / math.sqrt(2 * order - 1)
    sigmas = torch.linspace(sigma_max / 10, sigma_max, sigmas_n, dtype=torch.float64,
                            device=ctx.dev)
    g = ctx.generator(3)
    t = (torch.arange(w, device=ctx.dev) - (w - 1) / 2) / fs
    width = 0.006 + 0.012 * torch.rand(beats, 1, generator=g, device=ctx.dev)
    amp = 0.5 + torch.rand(beats, 1, generator=g, device=ctx.dev)
    x = amp * torch.exp(-0.5 * (t / width) ** 2)
    x = x + 0.02 * torch.randn(beats, w, generator=g, device=ctx.dev)
    # [beats chunk, S, L] f32 three times over in eager (x_hat, the residual, its square).
    chunk = max(1, min(beats, int(ctx.mem // (3 * sigmas_n * length * 4))))

    def basis(sigmas):
        """b_n(t_k) = sqrt(dt) phi_n(t_k, sigma), [S, L, N] f32, by the normalized recurrence
        (in f64, the polynomial first and the Gaussian last as ede does), values below 1e-30
        as zero."""
        tk = (torch.arange(length, dtype=torch.float64, device=sigmas.device)
              - (length - 1) / 2) / fs
        u = tk[None, :] / sigmas[:, None]
        prev, cur = torch.zeros_like(u), torch.full_like(u, math.pi ** -0.25)
        cols = [cur]
        for k in range(1, order):
            prev, cur = cur, math.sqrt(2 / k) * u * cur - math.sqrt((k - 1) / k) * prev
            cols.append(cur)
        b = (torch.stack(cols, -1) * torch.exp(-0.5 * u * u)[..., None]
             * torch.sqrt(1 / (fs * sigmas))[:, None, None])
        return torch.where(b.abs() < 1e-30, 0.0, b).float()

    def fit(x, b):
        c = torch.einsum("bk,skn->bsn", x, b[:, h:h + w, :])  # the padding is zero
        x_hat = torch.einsum("bsn,skn->bsk", c, b)
        mse = (F.pad(x, (h, h))[:, None, :] - x_hat).square().sum(-1)  # [beats, S]
        best = mse.argmin(dim=1)  # the first of equal minima: the smaller sigma
        rows = torch.arange(x.shape[0], device=x.device)
        return best, mse[rows, best], c[rows, best]

    def build(wrap):
        mk, ft = wrap(basis), wrap(fit)

        def once():
            b = mk(sigmas)
            parts = [ft(x[i:i + chunk], b) for i in range(0, beats, chunk)]
            return [torch.cat(p).cpu() for p in zip(*parts)]

        return once

    r = best_variant(ctx, "hermite", build, ctx.reps(10), 2)
    r["what"] = (f"{beats} beats of {w} samples (360 Hz, padded to {length}), N = {order}, "
                 f"S = {sigmas_n}: basis on the GPU, c = B^T x, x_hat = B c, sum of squared "
                 "residuals, best sigma, results to the host (as ede's timing); synthetic QRS "
                 "shapes (ede repeats MIT-BIH record 100's beats)"
                 + ("; TF32 products" if ctx.tf32 else "; FP32 products"))
    return r


# --- FastICA: ede's dsp::ica definition, symmetric, tanh ------------------------------------

def fastica(ctx):
    """Centring and whitening (eigh of the covariance), a random orthonormal start, then 200
    fixed-point steps W <- E{g(Wz) z^T} - E{g'(Wz)} W, g = tanh, each followed by the symmetric
    decorrelation (W W^T)^(-1/2) W through eigh; unmixing and sources to the host."""
    channels, samples, iterations = (16, 2000, 20) if ctx.quick else (256, 20000, 200)
    g = ctx.generator(7)
    # Super-Gaussian (Laplace) sources mixed by a random matrix, with 1 % noise.
    src = (-torch.log(torch.rand(channels, samples, generator=g, device=ctx.dev).clamp_min(1e-12))
           * torch.sign(torch.randn(channels, samples, generator=g, device=ctx.dev)))
    mixing = torch.randn(channels, channels, generator=g, device=ctx.dev)
    x = mixing @ src + 0.01 * torch.randn(channels, samples, generator=g, device=ctx.dev)

    # The eigendecompositions in float64, as ede's whitening and scikit-learn's are: in float32
    # (and TF32 products) the random mixing's small eigenvalues made eigh fail to converge on
    # the H100.
    def whiten(x):
        mu = x.mean(dim=1, keepdim=True)
        xc = (x - mu).double()
        d, e = torch.linalg.eigh(xc @ xc.T / xc.shape[1])
        d, e = d.flip(0), e.flip(1)  # largest first, as ede
        k = (e / d.sqrt()).T  # K = D^(-1/2) E^T
        return mu, k.float(), (k @ xc).float()

    def decorrelate(w):
        w = w.double()
        d, e = torch.linalg.eigh(w @ w.T)
        return ((e * d.rsqrt()) @ e.T @ w).float()

    def step(w, z):
        gy = torch.tanh(w @ z)
        return decorrelate(gy @ z.T / z.shape[1] - (1 - gy * gy).mean(1, keepdim=True) * w)

    def build(wrap):
        st = wrap(step)

        def once():
            mu, k, z = whiten(x)
            w = decorrelate(torch.randn(channels, channels, generator=ctx.generator(1),
                                        device=ctx.dev))
            for _ in range(iterations):
                w = st(w, z)
            unmixing = w @ k
            return unmixing.cpu(), (unmixing @ (x - mu)).cpu()

        return once

    r = best_variant(ctx, "fastica", build, ctx.reps(3), 1)
    r["what"] = (f"symmetric FastICA (tanh) of {channels} x {samples}, exactly {iterations} "
                 "iterations, decorrelation by torch.linalg.eigh in float64, whitening (eigh of the "
                 "covariance) and the sources included, results to the host; synthetic Laplace "
                 "sources mixed (ede mixes the EEGLAB sample's channels and may stop early at "
                 "tol 1e-4: deblink.json's gpu_iterations)")
    return r


# --- Cross-ApEn: ede's dsp::xapen definition, the paper's brute force -----------------------

def xapen(ctx):
    """Every ordered channel pair (u, v) of every epoch: N_i^m = #{j : |u_{i+k} - v_{j+k}| <= r,
    k < m} (ede's f32 test fl(u - r) <= v <= fl(u + r)), N_i^{m+1} likewise, both by comparing
    every window with every window; Cross-ApEn = mean ln C^m - mean ln C^{m+1}, zero counts by
    ede's default correction ("max"); the mean over epochs."""
    channels, epochs, n = (8, 3, 256) if ctx.quick else (148, 49, 1024)
    m, tol = 1, 0.2  # ede bench xapen's m and r; r in units of each series' SD
    wm, wm1 = n - m + 1, n - m
    g = ctx.generator(13)
    tt = torch.arange(epochs * n, device=ctx.dev, dtype=torch.float64).reshape(epochs, 1, n)
    freq = 0.05 + 0.02 * torch.rand(1, channels, 1, generator=g, device=ctx.dev,
                                    dtype=torch.float64)
    raw = (torch.randn(epochs, channels, n, generator=g, device=ctx.dev, dtype=torch.float64)
           + torch.sin(freq * tt))
    # Normalized once, outside the timing: ede's timed call starts from normalized samples.
    z = ((raw - raw.mean(-1, keepdim=True)) / raw.std(-1, correction=0, keepdim=True)).float()
    # Eager holds about four [u rows, channels, n, n] booleans at once.
    rows = max(1, min(channels, int(ctx.mem // (4 * channels * n * n))))

    def cross_apen(xu, xv):
        """Cross-ApEn(u||v) of rows xu [U, n] against every row of xv [V, n]: [U, V] f64."""
        lo, hi = (xu - tol)[:, None, :, None], (xu + tol)[:, None, :, None]
        v = xv[None, :, None, :]
        match = (v >= lo) & (v <= hi)  # [U, V, i, j]
        mm = match[..., :wm, :wm]
        for k in range(1, m):
            mm = mm & match[..., k:k + wm, k:k + wm]
        n_m = mm.sum(-1)
        n_m1 = (mm[..., :wm1, :wm1] & match[..., m:m + wm1, m:m + wm1]).sum(-1)
        ln_m = torch.where(n_m > 0, n_m.double().log() - math.log(wm), 0.0)
        ln_m1 = torch.where(n_m1 > 0, n_m1.double().log() - math.log(wm1), -math.log(wm))
        return ln_m.sum(-1) / wm - ln_m1.sum(-1) / wm1

    def build(wrap):
        f = wrap(cross_apen)

        def subject(k=epochs):
            total = torch.zeros(channels, channels, dtype=torch.float64, device=ctx.dev)
            for e in range(k):
                for u in range(0, channels, rows):
                    total[u:u + rows] += f(z[e, u:u + rows], z[e])
            return (total / k).cpu()

        return subject

    repeats = ctx.reps(3)

    def measure(subject, warmup):
        """The whole subject where `--xapen-budget-s` allows it; else fewer epochs, scaled (the
        cost is exactly proportional to the epochs, as ede's own brute-force figure)."""
        for _ in range(warmup):
            subject(1)
        ctx.sync()
        t = time.perf_counter()
        subject(1)
        ctx.sync()
        one = time.perf_counter() - t
        k = epochs
        if one * epochs * repeats > ctx.xapen_budget_s:
            k = max(1, min(epochs, int(ctx.xapen_budget_s / (one * repeats))))
        runs = timed(ctx, lambda: subject(k), repeats, 0)
        return [s * epochs / k for s in runs], {"epochs_timed": k}

    res = best_variant(ctx, "xapen", build, repeats, 1, measure=measure)
    k = res.get(f"{res['variant']}_epochs_timed", epochs)
    res["what"] = (f"brute force (every window against every window, the paper's loop) of "
                   f"{channels} ch x {epochs} epochs x {n}, m = {m}, r = {tol} SD, all "
                   f"ordered pairs, {rows} u-channels a step by broadcasting, the mean matrix "
                   "to the host; normalized data already on the GPU"
                   + ("" if k == epochs else f"; timed on {k} epochs and scaled to {epochs}"))
    return res


WORKLOADS = [
    ("morlet-interactive", MORLET_INTERACTIVE, morlet_interactive),
    ("hermite", HERMITE, hermite),
    ("morlet-batch", MORLET_BATCH, morlet_batch),
    ("fastica", FASTICA, fastica),
    ("xapen", XAPEN, xapen),
]


def set_tf32(on):
    # "high" lets cuBLAS use TF32 for f32 products (what torch.backends.cuda.matmul.allow_tf32
    # sets; the one call avoids mixing that legacy flag with newer torch's fp32_precision).
    torch.set_float32_matmul_precision("high" if on else "highest")


def main():
    names = [k for k, _, _ in WORKLOADS]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="torch_peers.json")
    p.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    p.add_argument("--skip", default="", help="comma-separated: " + ", ".join(names))
    p.add_argument("--compile", choices=["auto", "all", "none"], default=None,
                   help="auto (default): " + ", ".join(sorted(COMPILE_AUTO)) + "; none with "
                   "--quick")
    p.add_argument("--no-tf32", action="store_true")
    p.add_argument("--mem-gb", type=float, default=24.0,
                   help="device memory one chunk of work may take (default 24)")
    p.add_argument("--xapen-budget-s", type=float, default=30.0,
                   help="seconds the brute force's timed runs may take, per variant")
    p.add_argument("--deadline-s", type=float, default=None,
                   help="start no workload (or compile) after this many seconds")
    p.add_argument("--repeats", type=int, default=0, help="timed runs of each (0: per workload)")
    a = p.parse_args()
    skip = {s.strip() for s in a.skip.split(",") if s.strip()}
    if skip - set(names):
        p.error(f"unknown in --skip: {', '.join(sorted(skip - set(names)))}")
    if not torch.cuda.is_available() and not a.quick:
        print("torch_peers.py: no CUDA device; only --quick runs on the CPU", file=sys.stderr)
        sys.exit(2)
    tf32 = not a.no_tf32
    set_tf32(tf32)
    ctx = Ctx(a)
    report = {"torch": torch.__version__, "device": ctx.device_name, "tf32": tf32,
              "quick": a.quick, "workloads": []}

    def write():
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(report, f, indent=1)
        os.replace(tmp, a.out)

    for key, workload, run in WORKLOADS:
        if key in skip:
            continue
        entry = {"workload": workload}
        if ctx.past_deadline():
            entry["error"] = "not run: past --deadline-s"
        else:
            print(f"== {key}", file=sys.stderr, flush=True)
            t = time.perf_counter()
            try:
                r = run(ctx)
                entry.update(seconds=r.pop("seconds"), runs=r.pop("runs"),
                             variant=r.pop("variant"), what=r.pop("what"))
                entry.update(r)
            except Exception as e:  # noqa: BLE001 - one workload's failure is its entry's
                traceback.print_exc()
                entry["error"] = f"{type(e).__name__}: {str(e)[:500]}"
            print(f"== {key}: {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
        entry.update(torch=torch.__version__, device=ctx.device_name, tf32=tf32)
        if a.quick:
            entry["quick"] = True
        report["workloads"].append(entry)
        write()
        gc.collect()
        if ctx.dev.type == "cuda":
            torch.cuda.empty_cache()
    for e in report["workloads"]:
        if "seconds" in e:
            extra = "".join(f", {v} {e[v]:.4g} s" for v in ("eager_s", "compile_s") if v in e)
            print(f"{e['workload']}: {e['seconds']:.4g} s ({e['variant']}{extra})")
        else:
            print(f"{e['workload']}: {e['error']}")
    write()


if __name__ == "__main__":
    main()
