//! Band power of the narrow scales from |W|^2 at every D-th sample. A scale whose daughter's
//! band holds L bins has |W|^2 within |k| < L: its inverse FFT of P >= 2 L points (the band
//! folded into P bins, shaders/cwt.wgsl's `pass_input`) gives W at every D = M / P-th sample,
//! and each block's sum follows from those samples exactly through a table of weights
//! (dsp::cwt::decimated, `decimated_sums`). For the batch's 40 scales from 100 Hz at 1600 Hz
//! and M = 2^17 the inverse FFTs shrink from 40 x 2^17 to about 0.72 x 2^20 values.

use std::collections::HashMap;
use std::ops::Range;

use eframe::wgpu;

use super::{Blocks, CwtKernels, GpuCwtError, Params, Passes, Slot, Spectra, Tile, Wavelet};
use crate::dsp::cwt::decimated::{block_kernels, smooth_block_kernels};

/// shaders/cwt.wgsl's `DAUGHTER_E2`: past it the daughter is zero on the GPU.
const DAUGHTER_E2: f64 = 200.0;
/// The shortest decimated transform.
const SMALLEST_P: usize = 64;
/// `decimated_sums`' samples a workgroup (a chunk of a row); shorter rows take one chunk. More
/// workgroups pay (H100, one batch segment's sums: chunks of 1024 1.80 ms, 512 1.36, 256 1.22,
/// 128 1.20) until their partial sums cost more than they save.
pub const CHUNK: usize = 256;
/// `windowed_sums`' most samples a block (shaders/cwt.wgsl's `WS_TAPS`).
const WINDOW_TAPS: usize = 3584;
/// Tables of block weights and their reach, by (M, P, band, block, last block); band 0 for
/// the tables over all P samples.
pub(super) type Tables = HashMap<(usize, usize, usize, usize, usize), (wgpu::Buffer, usize)>;
/// Tables kept at most (each 8 M bytes); past it they are made anew.
const MOST_TABLES: usize = 64;

/// Scales `range` share inverse FFTs of `p` points whose input q is bin k = q mod p of
/// `k_lo .. k_lo + p`: each scale's band lies there and is at most p / 2 wide.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Group {
    pub range: Range<usize>,
    pub k_lo: usize,
    pub p: usize,
    /// The end of the widest band of the group (its first scale's).
    k_hi: usize,
    /// The widest band's bins: |W|^2 of every scale lies within |k| < widest.
    widest: usize,
}

/// Scales 0..full at every sample, then the groups.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Plan {
    pub full: usize,
    pub groups: Vec<Group>,
}

impl Plan {
    /// Every scale at every sample.
    pub fn full(scales: usize) -> Self {
        Plan {
            full: scales,
            groups: Vec::new(),
        }
    }
}

/// The bins of 1 .. M / 2 where the shader's daughter of `x` = s dw (as f32, as the shader
/// holds it) can be non-zero (e^2 < DAUGHTER_E2 for e = x k - omega0), two bins wider on
/// either side for the f32 rounding.
fn band(x: f32, omega0: f64, m: usize) -> Range<usize> {
    let (x, r) = (x as f64, DAUGHTER_E2.sqrt());
    let half = (m / 2 + 1) as f64;
    let lo = ((omega0 - r) / x - 2.0).floor().clamp(1.0, half) as usize;
    let hi = ((omega0 + r) / x + 3.0).floor().clamp(1.0, half) as usize;
    lo..hi.max(lo)
}

/// Which scales of `w` (smallest first) are decimated for rows of `m` values: those whose P is
/// at most M / 2, in groups of one P. Scales after a full-rate one stay at full rate too.
pub(super) fn plan(m: usize, w: &Wavelet) -> Plan {
    let mut plan = Plan::full(0);
    for (j, [x, _]) in w.daughters(m).into_iter().enumerate() {
        let b = band(x, w.omega0, m);
        let p = (2 * b.len()).next_power_of_two().max(SMALLEST_P);
        if p > m / 2 {
            if plan.groups.is_empty() {
                plan.full = j + 1;
                continue;
            }
            return Plan::full(w.scales.len());
        }
        match plan.groups.last_mut() {
            // The group's bins must still hold every band of it.
            Some(g) if g.p == p && g.k_hi.max(b.end) - g.k_lo.min(b.start) <= p => {
                g.range.end = j + 1;
                g.k_lo = g.k_lo.min(b.start);
                g.k_hi = g.k_hi.max(b.end);
                g.widest = g.widest.max(b.len());
            }
            _ => plan.groups.push(Group {
                range: j..j + 1,
                k_lo: b.start,
                p,
                k_hi: b.end,
                widest: b.len(),
            }),
        }
    }
    plan
}

/// Each scale's inverse FFT length for band power over rows of `m` values sampled every `dt`
/// seconds: P where decimated, M where not (for models of the work, `ede bench cwt`).
pub fn transform_lengths(m: usize, dt: f64, scales: &[f64], omega0: f64) -> Vec<usize> {
    let w = Wavelet {
        dt,
        scales: scales.to_vec(),
        omega0,
    };
    let plan = plan(m, &w);
    let mut lengths = vec![m; plan.full];
    for g in &plan.groups {
        lengths.extend(std::iter::repeat_n(g.p, g.range.len()));
    }
    lengths
}

impl CwtKernels {
    /// As `run_tiles` for the scales of `group`, decimated: the inverse FFTs of P points,
    /// |W|^2 at every D-th sample, and the block sums, which `each` gets as partial sums
    /// (`[rows][chunks][blocks]`, `params.decimated` 1): `windowed_sums`' (one chunk) where the
    /// group's weights reach few samples, else `decimated_sums`'.
    pub(super) fn run_decimated(
        &mut self,
        enc: &mut wgpu::CommandEncoder,
        sp: &Spectra,
        w: &Wavelet,
        group: &Group,
        blocks: Blocks,
        mut each: impl FnMut(&Self, &mut wgpu::CommandEncoder, Tile, &wgpu::Buffer, Params),
    ) -> Result<(), GpuCwtError> {
        let (m, p) = (sp.m, group.p);
        let last = blocks.count - (blocks.blocks() - 1) * blocks.block;
        // Smooth weights where their window is short enough, else weights over all P samples.
        let windowed = self.window_block_sums.then(|| {
            let (kappa, reach) = self.kappa(m, p, group.widest.max(1), blocks.block, last);
            let taps = (blocks.block + 2 * reach).div_ceil(m / p) + 2;
            (kappa, reach, taps)
        });
        // A workgroup a block: at most 65,535 of them along x.
        let windowed = windowed
            .filter(|&(_, _, taps)| taps <= p.min(WINDOW_TAPS) && blocks.blocks() <= 65_535);
        let kappa = match &windowed {
            Some((kappa, _, _)) => kappa.clone(),
            None => self.kappa(m, p, 0, blocks.block, last).0,
        };
        let wavelet = self.wavelet_buffer(w, m);
        let tiles = self.tiles(sp.channels, group.range.clone(), p)?;
        let most = tiles.iter().map(Tile::rows).max().unwrap_or(0);
        let chunks = if windowed.is_some() {
            1
        } else {
            p / CHUNK.min(p)
        };
        let bytes = (most * p * 8) as u64;
        let a = self.reused(Slot::CoefficientsA, bytes, wgpu::BufferUsages::empty());
        let b = self.reused(Slot::CoefficientsB, bytes, wgpu::BufferUsages::empty());
        let partial_bytes = (most * chunks * blocks.blocks() * 4) as u64;
        let partials = self.reused(Slot::Partials, partial_bytes, wgpu::BufferUsages::empty());
        for tile in tiles {
            let mut params = Params {
                decimated: 1,
                k_lo: group.k_lo as u32,
                p: p as u32,
                chunks: chunks as u32,
                reach: windowed.as_ref().map_or(0, |&(_, reach, _)| reach) as u32,
                taps: windowed.as_ref().map_or(0, |&(_, _, taps)| taps) as u32,
                ..tile.params(sp, w)
            };
            blocks.set(&mut params);
            let buffers = [&sp.buffer, &wavelet, &partials, &b, &a];
            self.two_passes(enc, &params, buffers, (p, tile.rows()), 0..p, Passes::Two);
            let buffers = [(7, &a), (17, &partials), (18, &kappa)];
            let (pipeline, groups) = match windowed {
                Some(_) => (
                    &self.windowed_sums,
                    (blocks.blocks() as u32, tile.rows().div_ceil(64) as u32, 1),
                ),
                None => (
                    &self.decimated_sums,
                    (
                        blocks.blocks().div_ceil(32) as u32,
                        tile.rows().div_ceil(64) as u32,
                        chunks as u32,
                    ),
                ),
            };
            self.dispatch_groups(enc, pipeline, &params, &buffers, None, groups);
            each(self, enc, tile, &partials, params);
        }
        Ok(())
    }

    /// The tables of block weights for rows of `m` values decimated to `p` (dsp::cwt::
    /// decimated): blocks of `block` samples, then the last one's `last`, `[2][M]` f32; made
    /// once.
    fn kappa(
        &mut self,
        m: usize,
        p: usize,
        band: usize,
        block: usize,
        last: usize,
    ) -> (wgpu::Buffer, usize) {
        let key = (m, p, band, block, last);
        if let Some(kept) = self.kappas.get(&key) {
            return kept.clone();
        }
        if self.kappas.len() >= MOST_TABLES {
            self.kappas.clear();
        }
        let (tables, reach) = match band {
            0 => (block_kernels(m, p, &[block, last]), m),
            _ => smooth_block_kernels(m, p, band, &[block, last]),
        };
        let tables: Vec<f32> = tables.into_iter().flatten().map(|v| v as f32).collect();
        let buffer = self.init(
            "cwt block weights",
            bytemuck::cast_slice(&tables),
            wgpu::BufferUsages::STORAGE,
        );
        self.kappas.insert(key, (buffer.clone(), reach));
        (buffer, reach)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::cwt::{CwtParams, ScaleSpec, fourier_factor};

    /// The batch benchmark's 40 scales (100 Hz down by sixths of an octave at 1600 Hz, M =
    /// 2^17): none at full rate, P from 2^16 down, every band within its group's bins.
    #[test]
    fn the_batch_scales_are_all_decimated() {
        let params = CwtParams {
            omega0: 6.0,
            scales: ScaleSpec::Octaves {
                s0: 1.0 / (100.0 * fourier_factor(6.0)),
                dj: 1.0 / 6.0,
                j: 39,
            },
        };
        let dt = 1.0 / 1600.0;
        let w = Wavelet {
            dt,
            scales: params.scales(dt).unwrap(),
            omega0: 6.0,
        };
        let m = 1 << 17;
        let plan = plan(m, &w);
        assert_eq!(plan.full, 0);
        assert_eq!(plan.groups[0].p, 1 << 16);
        let values: usize = (plan.groups.iter()).map(|g| g.p * g.range.len()).sum();
        assert!(values < 800_000, "{values} values a channel");
        let mut next = 0;
        for g in &plan.groups {
            assert_eq!(g.range.start, next);
            next = g.range.end;
            for (j, [x, _]) in w.daughters(m).into_iter().enumerate().take(g.range.end) {
                if g.range.contains(&j) {
                    let b = band(x, 6.0, m);
                    assert!(2 * b.len() <= g.p && b.start >= g.k_lo && b.end <= g.k_lo + g.p);
                }
            }
        }
        assert_eq!(next, 40);
    }
}
