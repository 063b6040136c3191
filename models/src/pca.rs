//! PCA on standardized features, from an exact symmetric eigendecomposition of the correlation
//! matrix. linfa-reduction's Pca uses a randomized LOBPCG SVD that clamps small singular values,
//! and pulls in linfa-kernel, linfa-nn and sprs; the p × p eigenproblem is exact and cheap.
use crate::error::{Result, model_err};
use crate::stats::correlation_matrix;
use linfa_linalg::eigh::EighInto;
use ndarray::{Array1, Array2, ArrayView2};

pub struct Pca {
    /// Share of the total variance per component, largest first; sums to 1.
    pub explained_variance_ratio: Array1<f64>,
    /// One row per component: the unit eigenvector, sign fixed so its largest entry is positive.
    pub components: Array2<f64>,
    pub eigenvalues: Array1<f64>,
}

impl Pca {
    pub fn fit(layer: &str, x: ArrayView2<'_, f64>) -> Result<Self> {
        Self::of_correlation(layer, correlation_matrix(x))
    }

    /// The PCA of the features whose correlation matrix is `corr` (as [`correlation_matrix`] makes it).
    pub fn of_correlation(layer: &str, corr: Array2<f64>) -> Result<Self> {
        let (vals, vecs) = corr
            .eigh_into()
            .map_err(|e| model_err(layer, format!("PCA eigendecomposition failed: {e}")))?;
        let mut order: Vec<usize> = (0..vals.len()).collect();
        order.sort_by(|&a, &b| vals[b].total_cmp(&vals[a]));
        let eigenvalues = Array1::from_iter(order.iter().map(|&i| vals[i].max(0.0)));
        let total = eigenvalues.sum();
        let p = vals.len();
        let mut components = Array2::zeros((p, p));
        for (k, &i) in order.iter().enumerate() {
            let v = vecs.column(i);
            let big = v
                .iter()
                .copied()
                .fold(0.0f64, |m, e| if e.abs() > m.abs() { e } else { m });
            let sign = if big < 0.0 { -1.0 } else { 1.0 };
            components.row_mut(k).assign(&(&v * sign));
        }
        Ok(Self {
            explained_variance_ratio: &eigenvalues / total,
            components,
            eigenvalues,
        })
    }

    /// Number of leading components whose cumulative share reaches `share`.
    pub fn components_reaching(&self, share: f64) -> usize {
        let mut acc = 0.0;
        for (k, r) in self.explained_variance_ratio.iter().enumerate() {
            acc += r;
            if acc >= share - 1e-12 {
                return k + 1;
            }
        }
        self.explained_variance_ratio.len()
    }

    /// Loading of feature j on component k: its correlation with the component score.
    pub fn loading(&self, k: usize, j: usize) -> f64 {
        self.components[[k, j]] * self.eigenvalues[k].sqrt()
    }
}
