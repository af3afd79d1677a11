//! Independent component analysis, as the blink-removal thesis
//! (../shared/papers/ica-blink-removal-gpgpu-thesis-excerpt.txt, appendix C) defines its `ica()`:
//! observations X (channels x samples) are modelled as X = A (S + mu_S); the result holds the
//! unmixing matrix W, the mixing matrix A, the zero-mean sources S = W (X - mu_X) and the source
//! means mu_S = W mu_X, so X = A (S + mu_S) reconstructs the observations.
//!
//! Both algorithms work on whitened data (`Whitening`): X is centred and rotated onto the
//! eigenvectors of its covariance, each scaled to unit variance. Directions whose variance is
//! below `RANK_TOLERANCE` of the largest are dropped (an average-referenced recording has one
//! fewer independent channel than it has channels), so W is r x n and A n x r with r <= n; the
//! thesis required r = n, which a common-average reference breaks.
//!
//! - `fastica`: FastICA (Hyvarinen 1999), symmetric or deflation, contrasts tanh, cube, gauss;
//!   converged when every unmixing vector's cosine with its previous value is within `tol` of
//!   +-1 (the thesis's epsilon).
//! - `infomax`: (extended) Infomax, runica's natural-gradient rule with MNE's defaults.
//! - `picard`: Picard (Ablin et al. 2018), L-BFGS with Hessian approximations, in its
//!   orthogonal (FastICA's fixed points) and standard (extended Infomax's) forms.
//! - `jade`: JADE (Cardoso 1999): the fourth-order cumulant matrices of the whitened data,
//!   jointly diagonalized by Jacobi (Givens) rotations.
//! - `reference`: FastICA written out in plain f64 loops, for tests.

pub mod fastica;
pub mod infomax;
pub mod jade;
pub mod picard;
pub mod reference;

use nalgebra::{DMatrix, DVector, SymmetricEigen};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

pub use fastica::fastica;
pub use jade::jade;

/// Covariance eigenvalues below this fraction of the largest are treated as zero.
pub const RANK_TOLERANCE: f64 = 1e-7;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IcaError {
    #[error("ICA needs at least 2 channels and more samples than channels; got {rows} x {cols}")]
    Shape { rows: usize, cols: usize },
    #[error("the data hold a value that is not a number (NaN or infinite)")]
    NotFinite,
    #[error("the channels carry no variance (all flat)")]
    Flat,
    #[error("{0}")]
    Params(String),
    #[error("the GPU failed: {0}")]
    Gpu(String),
}

/// Observations: `rows` channels of `cols` samples each, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Observations {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f32>,
}

impl Observations {
    pub fn new(rows: usize, cols: usize, data: Vec<f32>) -> Self {
        assert_eq!(data.len(), rows * cols, "observation shape");
        Observations { rows, cols, data }
    }

    /// From equally long channels.
    pub fn from_rows(rows: &[Vec<f32>]) -> Self {
        let cols = rows.first().map_or(0, Vec::len);
        let mut data = Vec::with_capacity(rows.len() * cols);
        for r in rows {
            data.extend_from_slice(&r[..cols]);
        }
        Observations::new(rows.len(), cols, data)
    }

    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }

    /// Samples `cols` of the first `rows` channels.
    /// Every `stride`-th sample (column) of every row.
    pub fn strided(&self, stride: usize) -> Observations {
        let stride = stride.max(1);
        let cols = self.cols.div_ceil(stride);
        let mut data = Vec::with_capacity(self.rows * cols);
        for i in 0..self.rows {
            data.extend(self.row(i).iter().step_by(stride));
        }
        Observations::new(self.rows, cols, data)
    }

    /// The channels `rows`, in that order.
    pub fn select_rows(&self, rows: &[usize]) -> Observations {
        let mut data = Vec::with_capacity(rows.len() * self.cols);
        for &i in rows {
            data.extend_from_slice(self.row(i));
        }
        Observations::new(rows.len(), self.cols, data)
    }

    pub fn block(&self, rows: usize, cols: std::ops::Range<usize>) -> Observations {
        let mut data = Vec::with_capacity(rows * cols.len());
        for i in 0..rows {
            data.extend_from_slice(&self.row(i)[cols.clone()]);
        }
        Observations::new(rows, cols.len(), data)
    }
}

/// The nonlinearity of FastICA's negentropy approximation (the thesis's NONLIN_*).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Contrast {
    /// g(y) = tanh(alpha y): robust, the default (scikit-learn's and MNE's "logcosh").
    #[serde(alias = "logcosh")]
    #[value(alias = "logcosh")]
    Tanh,
    /// g(y) = y^3 (kurtosis).
    Cube,
    /// g(y) = y exp(-y^2 / 2) (scikit-learn's and MNE's "exp").
    #[serde(alias = "exp")]
    #[value(alias = "exp")]
    Gauss,
}

/// How FastICA finds the unmixing vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Approach {
    /// All at once, decorrelated symmetrically each iteration.
    Symmetric,
    /// One after another, each orthogonalized against those found.
    Deflation,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    Fastica,
    Jade,
}

/// FastICA's parameters. The thesis's defaults: tanh, epsilon 1e-4, 1000 iterations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FastIcaParams {
    pub contrast: Contrast,
    /// The logcosh contrast's alpha, g(y) = tanh(alpha y), in [1, 2] as scikit-learn
    /// requires (the other contrasts have none).
    #[serde(default = "one")]
    pub alpha: f64,
    pub approach: Approach,
    pub tol: f64,
    pub max_iter: usize,
    /// Seeds the random initial unmixing matrix (ignored with a warm start).
    pub seed: u64,
    /// At most this many components (the leading principal components are kept); `None`
    /// for as many as the data's rank allows.
    pub components: Option<usize>,
}

impl Default for FastIcaParams {
    fn default() -> Self {
        FastIcaParams {
            contrast: Contrast::Tanh,
            alpha: 1.0,
            approach: Approach::Symmetric,
            tol: 1e-4,
            max_iter: 1000,
            seed: 1,
            components: None,
        }
    }
}

fn one() -> f64 {
    1.0
}

impl FastIcaParams {
    pub fn validate(&self) -> Result<(), IcaError> {
        if !(self.tol > 0.0 && self.tol < 1.0) {
            return Err(IcaError::Params(format!(
                "the tolerance must be between 0 and 1, got {}",
                self.tol
            )));
        }
        if self.components.is_some_and(|c| c < 2) {
            return Err(IcaError::Params("ICA needs at least 2 components".into()));
        }
        if !(1.0..=2.0).contains(&self.alpha) {
            return Err(IcaError::Params(format!(
                "the logcosh contrast's alpha must be between 1 and 2, got {}",
                self.alpha
            )));
        }
        if self.max_iter == 0 {
            return Err(IcaError::Params("at least one iteration is needed".into()));
        }
        Ok(())
    }
}

/// What `fastica` and `jade` return.
#[derive(Debug, Clone)]
pub struct Ica {
    /// W, r x n: S = W (X - mu_X).
    pub unmixing: DMatrix<f64>,
    /// A, n x r: X - mu_X = A S (on the whitened subspace).
    pub mixing: DMatrix<f64>,
    /// S, r x samples, row-major, zero mean; only its first rows where the ICA was asked for
    /// fewer (`with_sources_of`): `sources_of` gives any row.
    pub sources: Observations,
    /// mu_X, the channel means.
    pub channel_means: Vec<f64>,
    /// mu_S = W mu_X.
    pub source_means: Vec<f64>,
    /// FastICA iterations (the most of any component for deflation); JADE sweeps.
    pub iterations: usize,
    pub converged: bool,
}

impl Ica {
    /// The sources of `x` (the same channels) under this unmixing, centred on `x`'s own means:
    /// for an ICA fitted on a subsample of `x`'s samples. Only the first `rows` components'
    /// sources are kept (a live window's view draws a few; unmixing all 64 of a 64-channel
    /// window was a tenth of its hop).
    pub fn with_sources_of(mut self, x: &Observations, rows: usize) -> Ica {
        (self.channel_means, self.sources, self.source_means) = unmix(&self.unmixing, x, rows);
        self
    }

    /// With the sources of at least the first `rows` components over `x`, the observations
    /// this ICA's sources came from (the same numbers as if they had been kept).
    pub fn with_leading_sources(mut self, x: &Observations, rows: usize) -> Ica {
        let rows = rows.min(self.unmixing.nrows());
        if self.sources.rows < rows {
            let w = self.unmixing.rows(0, rows).into_owned();
            self.sources = rotate_centred(&w, x, &self.channel_means);
        }
        self
    }

    /// This ICA, fitted on the channels `fitted` of `x`, as an ICA of all of `x`'s channels:
    /// the others get no weight in the unmixing (the sources stay what the fit made them) and
    /// their mixing rows are their least-squares fit on the sources, A_o = X_o S^T (S S^T)^-1.
    /// Blink removal fits on the channels it cleans and leaves the kept EOG channels out: with
    /// them, ICA splits the eye into a lid and an eyeball component, without them the eye is
    /// one (the EEGLAB sample: 11.1 % against 8.6 % of the blink-locked average left by one
    /// component removed everywhere).
    pub fn over_channels(self, x: &Observations, fitted: &[usize]) -> Ica {
        let (n, r) = (x.rows, self.unmixing.nrows());
        let means = channel_means(x);
        let mut unmixing = DMatrix::zeros(r, n);
        let mut mixing = DMatrix::zeros(n, r);
        for (k, &i) in fitted.iter().enumerate() {
            unmixing.set_column(i, &self.unmixing.column(k));
            mixing.set_row(i, &self.mixing.row(k));
        }
        // S S^T and X_o S^T from the channels' centred cross-products C: with S = W (X_f - m)
        // and d = mu_f - m (zero where the ICA's means are `x`'s), S S^T = W (C_ff + T d d^T)
        // W^T and (X_o - mu_o) S^T = C_of W^T. The sums over the samples of every pair of
        // sources, in scalar loops, were 70 % of a live eye-mode hop on 64 channels.
        let c = DMatrix::from_row_slice(
            n,
            n,
            &centred_products(x, &means, &column_blocks(x.cols, 1024), 1.0),
        );
        let w = &self.unmixing;
        let from_fitted = c.select_rows(fitted);
        let d = DVector::from_iterator(
            fitted.len(),
            (fitted.iter().zip(&self.channel_means)).map(|(&i, m)| means[i] - m),
        );
        let wd = w * d;
        let gram = w * from_fitted.select_columns(fitted) * w.transpose()
            + (&wd * wd.transpose()) * x.cols as f64;
        if let Some(chol) = gram.cholesky() {
            for i in (0..n).filter(|i| !fitted.contains(i)) {
                let rhs = w * from_fitted.column(i);
                mixing.set_row(i, &chol.solve(&rhs).transpose());
            }
        }
        let source_means = means_under(&unmixing, &means);
        Ica {
            unmixing,
            mixing,
            channel_means: means,
            source_means,
            ..self
        }
    }

    /// The sources of components `rows` over `x`, the observations this ICA's sources came
    /// from: the stored rows, and W_c (X - mu_X) for those not kept (the same product, so the
    /// same numbers, as if they had been).
    pub fn sources_of(&self, rows: &[usize], x: &Observations) -> Observations {
        let kept = self.sources.rows;
        let missing: Vec<usize> = rows.iter().copied().filter(|&c| c >= kept).collect();
        let computed = (!missing.is_empty())
            .then(|| rotate_centred(&self.unmixing.select_rows(&missing), x, &self.channel_means));
        let mut data = Vec::with_capacity(rows.len() * x.cols);
        for &c in rows {
            match &computed {
                Some(y) if c >= kept => {
                    data.extend_from_slice(y.row(missing.iter().position(|&m| m == c).unwrap()))
                }
                _ => data.extend_from_slice(self.sources.row(c)),
            }
        }
        Observations::new(rows.len(), x.cols, data)
    }
}

/// Centring and whitening: Z = K (X - mu), K = D^-1/2 E^T over the kept eigenpairs, so that
/// Z Z^T / T = I.
#[derive(Debug, Clone)]
pub struct Whitening {
    pub means: Vec<f64>,
    /// K, r x n.
    pub k: DMatrix<f64>,
    /// K's pseudo-inverse E D^1/2, n x r.
    pub k_inv: DMatrix<f64>,
    /// Z, r x T, row-major.
    pub z: Observations,
}

impl Whitening {
    /// The whitening of `x` onto at most `components` leading principal components.
    pub fn of(x: &Observations, components: Option<usize>) -> Result<Self, IcaError> {
        let (n, t) = (x.rows, x.cols);
        check_shape(x)?;
        let means = channel_means(x);
        // A value that is not finite makes its channel's sum not finite.
        if means.iter().any(|m| !m.is_finite()) {
            return Err(IcaError::NotFinite);
        }
        let blocks = column_blocks(t, 1024);
        let cov = centred_products(x, &means, &blocks, 1.0 / t as f64);
        let (k, k_inv) = whitening_map(n, &cov, components)?;
        let r = k.nrows();
        let kf: Vec<f64> = k.transpose().as_slice().to_vec(); // row-major r x n
        let mut z = vec![0.0f32; r * t];
        let out = SendPtr(z.as_mut_ptr());
        blocks.par_iter().for_each(|&(c0, len)| {
            CENTRED.with_borrow_mut(|block| {
                centre_block(x, &means, (c0, len), block);
                let mut white = vec![0.0f64; r * len];
                // SAFETY: kf is r x n row-major, `block` n x len, `white` r x len.
                unsafe {
                    matrixmultiply::dgemm(
                        r,
                        n,
                        len,
                        1.0,
                        kf.as_ptr(),
                        n as isize,
                        1,
                        block.as_ptr(),
                        len as isize,
                        1,
                        0.0,
                        white.as_mut_ptr(),
                        len as isize,
                        1,
                    );
                }
                let out = &out;
                for (i, row) in white.chunks_exact(len).enumerate() {
                    // SAFETY: blocks cover disjoint columns of z (r x t).
                    let dst = unsafe { std::slice::from_raw_parts_mut(out.0.add(i * t + c0), len) };
                    dst.iter_mut().zip(row).for_each(|(d, &v)| *d = v as f32);
                }
            });
        });
        Ok(Whitening {
            means,
            k,
            k_inv,
            z: Observations::new(r, t, z),
        })
    }

    /// The result of an orthogonal rotation `w` (r x r) of the whitened data.
    /// Components come out ordered by the variance they explain in the channels (largest
    /// first), each signed so that its largest channel weight is positive: ICA itself leaves
    /// order and sign open, and a stable order lets windows and backends be compared.
    pub fn finish(&self, w: &DMatrix<f64>, iterations: usize, converged: bool) -> Ica {
        self.finish_with_sources_of(w, (iterations, converged), None)
    }

    /// `finish`, with the sources of `data`'s first `rows` components (the same channels,
    /// centred on its own means, as `Ica::with_sources_of`) instead of the whitened data's
    /// when it is given: for a fit on a subsample of `data`'s samples, whose own sources
    /// would be thrown away.
    pub fn finish_with_sources_of(
        &self,
        w: &DMatrix<f64>,
        state: (usize, bool),
        data: Option<(&Observations, usize)>,
    ) -> Ica {
        let w = &order_components(&self.k_inv, w);
        finish_ordered((&self.k, &self.k_inv), w, state, |unmixing| match data {
            Some((x, rows)) => unmix(unmixing, x, rows),
            None => (
                self.means.clone(),
                rotate(w, &self.z),
                means_under(unmixing, &self.means),
            ),
        })
    }

    /// The rotation that a previous unmixing matrix (r x n over the same channels) amounts to
    /// on this whitening, decorrelated: the warm start of a refit. `None` when shapes differ.
    pub fn rotation_from(&self, unmixing: &DMatrix<f64>) -> Option<DMatrix<f64>> {
        rotation_from(&self.k_inv, unmixing)
    }
}

/// The shape every whitening needs: at least 2 channels, more samples than channels.
pub fn check_shape(x: &Observations) -> Result<(), IcaError> {
    if x.rows < 2 || x.cols <= x.rows {
        return Err(IcaError::Shape {
            rows: x.rows,
            cols: x.cols,
        });
    }
    Ok(())
}

/// K = D^-1/2 E^T (r x n) and its pseudo-inverse E D^1/2 (n x r) from the eigenpairs of the n x n
/// covariance `cov` (row-major) whose eigenvalues are at least `RANK_TOLERANCE` of the largest,
/// largest first, at most `components` of them (`Whitening::of`, and the GPU's whitening,
/// which computes the covariance there).
pub fn whitening_map(
    n: usize,
    cov: &[f64],
    components: Option<usize>,
) -> Result<(DMatrix<f64>, DMatrix<f64>), IcaError> {
    let eig = SymmetricEigen::new(DMatrix::from_row_slice(n, n, cov));
    let largest = eig.eigenvalues.max();
    if largest <= 0.0 || !largest.is_finite() {
        return Err(IcaError::Flat);
    }
    // Largest first, so component order does not depend on the eigen solver's.
    let mut order: Vec<usize> = (0..n)
        .filter(|&i| eig.eigenvalues[i] > RANK_TOLERANCE * largest)
        .collect();
    order.sort_by(|&a, &b| eig.eigenvalues[b].total_cmp(&eig.eigenvalues[a]));
    order.truncate(components.unwrap_or(n).max(2));
    let r = order.len();
    let mut k = DMatrix::zeros(r, n);
    let mut k_inv = DMatrix::zeros(n, r);
    for (row, &i) in order.iter().enumerate() {
        let d = eig.eigenvalues[i].sqrt();
        for c in 0..n {
            let e = eig.eigenvectors[(c, i)];
            k[(row, c)] = e / d;
            k_inv[(c, row)] = e * d;
        }
    }
    Ok((k, k_inv))
}

/// `whiten()`'s whitening of `x` and FastICA's start on it: the rotation of `warm` where one is
/// given, else a random one (`random_rotation`, seeded by `p`). The random start does not depend
/// on the data, and its eigendecomposition takes as long as the whitening's (r x r: 28 ms at 256
/// on the H100's host), so it is made beside the whitening, for the rank the data most likely
/// have (again where the whitening drops directions).
pub fn whiten_beside_start<W: Send>(
    x: &Observations,
    p: &FastIcaParams,
    warm: Option<&DMatrix<f64>>,
    whiten: impl FnOnce() -> Result<W, IcaError> + Send,
    k_inv: impl Fn(&W) -> &DMatrix<f64>,
) -> Result<(W, DMatrix<f64>), IcaError> {
    let likely = p.components.unwrap_or(x.rows).min(x.rows);
    let (cold, seed) = (warm.is_none(), p.seed);
    let (wh, start) = rayon::join(whiten, || cold.then(|| random_rotation(likely, seed)));
    let wh = wh?;
    let k_inv = k_inv(&wh);
    let r = k_inv.ncols();
    let w0 = warm
        .and_then(|w| rotation_from(k_inv, w))
        .or(start.filter(|w| w.nrows() == r))
        .unwrap_or_else(|| random_rotation(r, seed));
    Ok((wh, w0))
}

/// `Whitening::rotation_from` for the whitening whose K^-1 is `k_inv`.
pub fn rotation_from(k_inv: &DMatrix<f64>, unmixing: &DMatrix<f64>) -> Option<DMatrix<f64>> {
    if unmixing.shape() != (k_inv.ncols(), k_inv.nrows()) {
        return None;
    }
    symmetric_decorrelation(&(unmixing * k_inv))
}

/// The rotation `w` (r x r) of data whitened with K's pseudo-inverse `k_inv`, its components
/// ordered by the variance they explain in the channels (largest first) and each signed so that
/// its largest channel weight is positive: ICA itself leaves order and sign open, and a stable
/// order lets windows and backends be compared.
pub fn order_components(k_inv: &DMatrix<f64>, w: &DMatrix<f64>) -> DMatrix<f64> {
    let a = k_inv * w.transpose();
    let mut order: Vec<usize> = (0..w.nrows()).collect();
    order.sort_by(|&i, &j| {
        a.column(j)
            .norm_squared()
            .total_cmp(&a.column(i).norm_squared())
    });
    let mut w = w.select_rows(&order);
    for (row, &i) in order.iter().enumerate() {
        let col = a.column(i);
        let biggest = col
            .iter()
            .copied()
            .fold(0.0f64, |m, v| if v.abs() > m.abs() { v } else { m });
        if biggest < 0.0 {
            w.row_mut(row).neg_mut();
        }
    }
    w
}

/// The ICA of the rotation `w` (already `order_components`'s) of data whitened by K (r x n) with
/// pseudo-inverse `k_inv`; `parts(W)`, W = w K, gives the channel means, the sources and the
/// source means.
pub fn finish_ordered(
    (k, k_inv): (&DMatrix<f64>, &DMatrix<f64>),
    w: &DMatrix<f64>,
    (iterations, converged): (usize, bool),
    parts: impl FnOnce(&DMatrix<f64>) -> (Vec<f64>, Observations, Vec<f64>),
) -> Ica {
    let unmixing = w * k;
    let mixing = k_inv * w.transpose();
    let (channel_means, sources, source_means) = parts(&unmixing);
    Ica {
        sources,
        source_means,
        unmixing,
        mixing,
        channel_means,
        iterations,
        converged,
    }
}

/// Y = W Z for an m x r `w` and r x T `z`, in f32; long `z` in column blocks on all cores.
pub fn rotate(w: &DMatrix<f64>, z: &Observations) -> Observations {
    rotate_blocks(w, z, None)
}

/// Y = W (X - mu) for an m x n `w`, n x T `x` and the channel means `mu`: `rotate` of the
/// centred `x`, each column block centred in a buffer of its own (a centred copy of a whole
/// live window was a fresh 2.6 MB every hop).
pub fn rotate_centred(w: &DMatrix<f64>, x: &Observations, means: &[f64]) -> Observations {
    rotate_blocks(w, x, Some(means))
}

fn rotate_blocks(w: &DMatrix<f64>, z: &Observations, means: Option<&[f64]>) -> Observations {
    let (m, r, t) = (w.nrows(), z.rows, z.cols);
    assert_eq!(w.ncols(), r, "rotation width");
    let wf: Vec<f32> = w.transpose().as_slice().iter().map(|&v| v as f32).collect();
    let mut y = vec![0.0f32; m * t];
    let out = SendPtr(y.as_mut_ptr());
    column_blocks(t, 2048).par_iter().for_each(|&(c0, len)| {
        let out = &out;
        // SAFETY (both arms): `y` is m x t; blocks cover disjoint columns, so no two tasks
        // write the same element.
        match means {
            None => unsafe { sgemm_columns(&wf, m, z, (c0, len), out.0.add(c0), t) },
            Some(mu) => {
                let mut data = Vec::with_capacity(r * len);
                for (i, &mu) in mu.iter().enumerate() {
                    let row = &z.row(i)[c0..c0 + len];
                    data.extend(row.iter().map(|&v| v - mu as f32));
                }
                let block = Observations::new(r, len, data);
                unsafe { sgemm_columns(&wf, m, &block, (0, len), out.0.add(c0), t) };
            }
        }
    });
    Observations::new(m, t, y)
}

/// The channels' centred cross-products, `scale (X - mu)(X - mu)^T` (n x n, row-major), summed
/// over column `blocks`, one per core: matrixmultiply runs on one thread, and this product was
/// a tenth of a live hop on 64 channels. Each block is centred in f64 in a buffer its thread
/// keeps (a centred copy of the whole of `x` was a fresh allocation, filled on one core,
/// every hop).
pub fn centred_products(
    x: &Observations,
    means: &[f64],
    blocks: &[(usize, usize)],
    scale: f64,
) -> Vec<f64> {
    let n = x.rows;
    blocks
        .par_iter()
        .map(|&(c0, len)| {
            let mut cov = vec![0.0f64; n * n];
            CENTRED.with_borrow_mut(|block| {
                centre_block(x, means, (c0, len), block);
                // SAFETY: `block` is n x len row-major, read as n x len and (strides
                // swapped) len x n; `cov` is n x n.
                unsafe {
                    matrixmultiply::dgemm(
                        n,
                        len,
                        n,
                        scale,
                        block.as_ptr(),
                        len as isize,
                        1,
                        block.as_ptr(),
                        1,
                        len as isize,
                        0.0,
                        cov.as_mut_ptr(),
                        n as isize,
                        1,
                    );
                }
            });
            cov
        })
        .reduce(
            || vec![0.0f64; n * n],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                a
            },
        )
}

/// `(start, len)` of column blocks that split `t` columns: of at most about `size` each, as
/// many as a multiple of the threads, so that every core gets the same share (2560 columns
/// on two cores make four blocks of 640, not 1024 + 1024 + 512 with one core idle for the
/// last).
pub(crate) fn column_blocks(t: usize, size: usize) -> Vec<(usize, usize)> {
    let threads = rayon::current_num_threads().max(1);
    let count = t.div_ceil(size.max(1)).div_ceil(threads) * threads;
    let block = t.div_ceil(count.max(1)).max(1);
    (0..t)
        .step_by(block)
        .map(|c0| (c0, block.min(t - c0)))
        .collect()
}

/// `x`'s channel means mu_X, the sources W (X - mu_X) of the first `rows` components and the
/// means W mu_X of all under `unmixing`.
pub fn unmix(
    unmixing: &DMatrix<f64>,
    x: &Observations,
    rows: usize,
) -> (Vec<f64>, Observations, Vec<f64>) {
    let means = channel_means(x);
    let rows = rows.min(unmixing.nrows());
    let sources = rotate_centred(&unmixing.rows(0, rows).into_owned(), x, &means);
    let source_means = means_under(unmixing, &means);
    (means, sources, source_means)
}

/// mu_S = W mu_X.
pub fn means_under(unmixing: &DMatrix<f64>, channel_means: &[f64]) -> Vec<f64> {
    let mu = DMatrix::from_column_slice(channel_means.len(), 1, channel_means);
    (unmixing * mu).as_slice().to_vec()
}

/// Each channel's mean, summed in f64 (channels on all cores).
fn channel_means(x: &Observations) -> Vec<f64> {
    let t = x.cols.max(1);
    (0..x.rows)
        .into_par_iter()
        .map(|i| x.row(i).iter().map(|&v| v as f64).sum::<f64>() / t as f64)
        .collect()
}

/// `out` = W Z[.., c0..c0 + len] for W m x z.rows (row-major `wf`), rows of `out` `stride`
/// apart.
///
/// # Safety
/// `out` must point at m rows of `stride >= len` writable elements that nothing else
/// touches meanwhile, and `c0 + len <= z.cols`.
pub(crate) unsafe fn sgemm_columns(
    wf: &[f32],
    m: usize,
    z: &Observations,
    (c0, len): (usize, usize),
    out: *mut f32,
    stride: usize,
) {
    let (r, t) = (z.rows, z.cols);
    assert!(wf.len() >= m * r && c0 + len <= t && len <= stride);
    // SAFETY: `wf` is m x r row-major; the block of `z` is r x len from column c0 with row
    // stride t; `out` as the caller promised.
    unsafe {
        matrixmultiply::sgemm(
            m,
            r,
            len,
            1.0,
            wf.as_ptr(),
            r as isize,
            1,
            z.data.as_ptr().add(c0),
            t as isize,
            1,
            0.0,
            out,
            stride as isize,
            1,
        );
    }
}

thread_local! {
    /// A column block of centred observations in f64 (`Whitening::of`).
    static CENTRED: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Columns `c0..c0 + len` of `x` minus the channel means, in f64, into `block` (n x len).
pub(crate) fn centre_block(
    x: &Observations,
    means: &[f64],
    (c0, len): (usize, usize),
    block: &mut Vec<f64>,
) {
    block.clear();
    for (i, &mu) in means.iter().enumerate() {
        block.extend(x.row(i)[c0..c0 + len].iter().map(|&v| v as f64 - mu));
    }
}

/// A pointer that tasks writing disjoint parts of one buffer share.
struct SendPtr(*mut f32);
// SAFETY: only used for writes to disjoint elements (see `rotate`).
unsafe impl Sync for SendPtr {}

/// c (m x n) = a (m x k) b (k x n), all row-major f32.
pub(crate) fn sgemm_rows(m: usize, k: usize, n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    // SAFETY: the asserts above keep every access inside the three slices.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// (W W^T)^-1/2 W: the nearest matrix with orthonormal rows. `None` if W is singular.
pub fn symmetric_decorrelation(w: &DMatrix<f64>) -> Option<DMatrix<f64>> {
    let eig = SymmetricEigen::new(w * w.transpose());
    if eig
        .eigenvalues
        .iter()
        .any(|&d| d.is_nan() || d <= 1e-300 || d.is_infinite())
    {
        return None;
    }
    // E D^-1/2 by scaling E's columns: the same numbers as the product with the diagonal
    // matrix, without one of three r x r x r products.
    let mut scaled = eig.eigenvectors.clone();
    for (mut column, &d) in scaled.column_iter_mut().zip(eig.eigenvalues.iter()) {
        column *= 1.0 / d.sqrt();
    }
    Some(scaled * eig.eigenvectors.transpose() * w)
}

/// A random r x r matrix with orthonormal rows, from a seed.
pub fn random_rotation(r: usize, seed: u64) -> DMatrix<f64> {
    let mut rng = crate::recording::demo::SplitMix(seed);
    let w = DMatrix::from_fn(r, r, |_, _| rng.gauss());
    symmetric_decorrelation(&w).unwrap_or_else(|| DMatrix::identity(r, r))
}

/// The Amari index of P = W A_true: 0 for a perfect separation (up to scale and order), 1 at
/// worst; normalized by 2 n (n - 1).
pub fn amari_index(p: &DMatrix<f64>) -> f64 {
    let n = p.nrows();
    if n < 2 {
        return 0.0;
    }
    let a = p.map(f64::abs);
    let rows: f64 = (0..n).map(|i| a.row(i).sum() / a.row(i).max() - 1.0).sum();
    let cols: f64 = (0..n)
        .map(|j| a.column(j).sum() / a.column(j).max() - 1.0)
        .sum();
    (rows + cols) / (2.0 * n as f64 * (n as f64 - 1.0))
}
