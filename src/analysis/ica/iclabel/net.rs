//! The ICLabel network (Pion-Tonachini et al. 2019), run on the CPU: three convolutional
//! branches (the 32 x 32 scalp image; the 100-value spectrum; the 100-lag autocorrelation)
//! joined by a 4 x 4 convolution into seven classes. Weights: mne-icalabel's
//! `ICLabelNet.onnx`, converted by `tools/iclabel/convert.py` (assets/iclabel/README.md).
//!
//! Like EEGLAB and mne-icalabel, each component is classified four times (its image, negated,
//! mirrored left-right, both) and the four softmax outputs averaged.
//!
//! Convolutions are im2col + one `sgemm` each, all four images of a component in one product;
//! components run in parallel.

use rayon::prelude::*;

use super::Features;

const WEIGHTS: &[u8] = include_bytes!("../../../../assets/iclabel/ICLabelNet.bin");
const MAGIC: &[u8; 8] = b"ICLABEL1";

/// A convolution's weights, (out, in, kh, kw) row-major as PyTorch stores them, and biases.
struct Conv {
    out: usize,
    inp: usize,
    kh: usize,
    kw: usize,
    w: Vec<f32>,
    b: Vec<f32>,
}

pub struct Net {
    img: [Conv; 3],
    psd: [Conv; 3],
    autocorr: [Conv; 3],
    /// The joining layer's weights on the image features, (7, 512 x 16).
    join_img: Vec<f32>,
    /// Its weights on the spectrum and autocorrelation: those channels are constant over the
    /// 4 x 4 field, so their 16 taps are summed once. (7, 100) each.
    join_psd: Vec<f32>,
    join_autocorr: Vec<f32>,
    join_bias: [f32; 7],
}

static NET: std::sync::LazyLock<Net> = std::sync::LazyLock::new(Net::parse);

impl Net {
    /// The network, parsed from the compiled-in weights on first use.
    pub fn get() -> &'static Net {
        &NET
    }

    fn parse() -> Net {
        assert_eq!(
            &WEIGHTS[..8],
            MAGIC,
            "assets/iclabel/ICLabelNet.bin: not ICLabel weights"
        );
        let mut at = 8;
        let mut take = |n: usize| -> Vec<f32> {
            let v: Vec<f32> = WEIGHTS[at..at + 4 * n]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            at += 4 * n;
            v
        };
        let mut conv = |out: usize, inp: usize, kh: usize, kw: usize| {
            let w = take(out * inp * kh * kw);
            let b = take(out);
            Conv {
                out,
                inp,
                kh,
                kw,
                w,
                b,
            }
        };
        let img = [
            conv(128, 1, 4, 4),
            conv(256, 128, 4, 4),
            conv(512, 256, 4, 4),
        ];
        let psd = [conv(128, 1, 1, 3), conv(256, 128, 1, 3), conv(1, 256, 1, 3)];
        let autocorr = [conv(128, 1, 1, 3), conv(256, 128, 1, 3), conv(1, 256, 1, 3)];
        let join = conv(7, 712, 4, 4);
        assert_eq!(
            at,
            WEIGHTS.len(),
            "assets/iclabel/ICLabelNet.bin: unexpected size"
        );
        let tap = |k: usize, c: usize| &join.w[(k * 712 + c) * 16..(k * 712 + c + 1) * 16];
        let summed = |first: usize| -> Vec<f32> {
            (0..7)
                .flat_map(|k| (0..100).map(move |c| (k, c)))
                .map(|(k, c)| tap(k, first + c).iter().sum())
                .collect()
        };
        Net {
            join_img: (0..7)
                .flat_map(|k| (0..512).flat_map(move |c| tap(k, c).to_vec()))
                .collect(),
            join_psd: summed(512),
            join_autocorr: summed(612),
            join_bias: std::array::from_fn(|k| join.b[k]),
            img,
            psd,
            autocorr,
        }
    }

    /// The seven class probabilities of every component (ICLabel's order: brain, muscle,
    /// eye, heart, line noise, channel noise, other).
    pub fn classify(&self, f: &Features) -> Vec<[f64; 7]> {
        (0..f.topo.len())
            .into_par_iter()
            .map(|k| self.one(&f.topo[k], &f.psd[k], &f.autocorr[k]))
            .collect()
    }

    fn one(&self, topo: &[f32; 1024], psd: &[f32; 100], autocorr: &[f32; 100]) -> [f64; 7] {
        // The four images, side by side: (1 channel, 4 x 32 x 32).
        let mut images = Vec::with_capacity(4 * 1024);
        for (sign, mirror) in [(1.0, false), (-1.0, false), (1.0, true), (-1.0, true)] {
            for y in 0..32 {
                for x in 0..32 {
                    let col = if mirror { 31 - x } else { x };
                    images.push(sign * topo[y * 32 + col]);
                }
            }
        }
        let (mut h, mut side) = (images, 32);
        for conv in &self.img {
            h = conv2d(conv, &h, 4, (side, side), 2, (1, 1));
            side /= 2;
        }
        let line = |branch: &[Conv; 3], x: &[f32; 100]| {
            let mut h = x.to_vec();
            for conv in branch {
                h = conv2d(conv, &h, 1, (1, 100), 1, (0, 1));
            }
            h
        };
        let psd = line(&self.psd, psd);
        let autocorr = line(&self.autocorr, autocorr);
        let mut mean = [0.0f64; 7];
        for image in 0..4 {
            let mut logits = self.join_bias;
            for (k, logit) in logits.iter_mut().enumerate() {
                // h: (512 channels, 4 images x 16 positions).
                let w = &self.join_img[k * 512 * 16..(k + 1) * 512 * 16];
                let mut s = 0.0f32;
                for c in 0..512 {
                    let hc = &h[c * 64 + image * 16..c * 64 + image * 16 + 16];
                    s += (hc.iter().zip(&w[c * 16..c * 16 + 16]))
                        .map(|(a, b)| a * b)
                        .sum::<f32>();
                }
                s += (psd.iter().zip(&self.join_psd[k * 100..(k + 1) * 100]))
                    .map(|(a, b)| a * b)
                    .sum::<f32>();
                s += (autocorr
                    .iter()
                    .zip(&self.join_autocorr[k * 100..(k + 1) * 100]))
                .map(|(a, b)| a * b)
                .sum::<f32>();
                *logit += s;
            }
            let top = logits.iter().cloned().fold(f32::MIN, f32::max);
            let e: Vec<f64> = logits.iter().map(|&l| ((l - top) as f64).exp()).collect();
            let total: f64 = e.iter().sum();
            for (m, v) in mean.iter_mut().zip(e) {
                *m += v / total / 4.0;
            }
        }
        mean
    }
}

/// One convolution with a LeakyReLU (slope 0.2) after it, of `batch` inputs laid out as
/// (channels, batch x height x width); the output has the same layout.
fn conv2d(
    conv: &Conv,
    x: &[f32],
    batch: usize,
    (height, width): (usize, usize),
    stride: usize,
    (pad_y, pad_x): (usize, usize),
) -> Vec<f32> {
    let (stride_y, stride_x) = (stride, stride);
    let oh = (height + 2 * pad_y - conv.kh) / stride_y + 1;
    let ow = (width + 2 * pad_x - conv.kw) / stride_x + 1;
    let k = conv.inp * conv.kh * conv.kw;
    let n = batch * oh * ow;
    // im2col: (k, n).
    let mut col = vec![0.0f32; k * n];
    let plane = batch * height * width;
    for c in 0..conv.inp {
        for ky in 0..conv.kh {
            for kx in 0..conv.kw {
                let row = &mut col[((c * conv.kh + ky) * conv.kw + kx) * n..][..n];
                for b in 0..batch {
                    for oy in 0..oh {
                        let Some(y) = (oy * stride_y + ky)
                            .checked_sub(pad_y)
                            .filter(|&y| y < height)
                        else {
                            continue;
                        };
                        for ox in 0..ow {
                            let Some(xx) = (ox * stride_x + kx)
                                .checked_sub(pad_x)
                                .filter(|&v| v < width)
                            else {
                                continue;
                            };
                            row[(b * oh + oy) * ow + ox] =
                                x[c * plane + (b * height + y) * width + xx];
                        }
                    }
                }
            }
        }
    }
    let mut out = vec![0.0f32; conv.out * n];
    for (o, row) in out.chunks_exact_mut(n).enumerate() {
        row.fill(conv.b[o]);
    }
    // out = w (out x k) col (k x n) + bias.
    unsafe {
        matrixmultiply::sgemm(
            conv.out,
            k,
            n,
            1.0,
            conv.w.as_ptr(),
            k as isize,
            1,
            col.as_ptr(),
            n as isize,
            1,
            1.0,
            out.as_mut_ptr(),
            n as isize,
            1,
        );
    }
    for v in &mut out {
        if *v < 0.0 {
            *v *= 0.2;
        }
    }
    out
}
