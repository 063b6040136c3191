//! Per-feature bins: every distinct value gets its own bin when there are few, quantiles otherwise.
use ndarray::ArrayView2;
use rayon::prelude::*;

pub const MAX_BINS: usize = 256;

/// Upper bin edges per feature, ascending, the last one +inf: bin b holds edges[b-1] < x <= edges[b].
#[derive(Debug, Clone)]
pub struct Binner {
    pub edges: Vec<Vec<f64>>,
}

/// Bin codes of some rows, one column per feature.
pub struct Binned {
    pub n_rows: usize,
    pub codes: Vec<Vec<u8>>,
}

impl Binner {
    pub fn fit(x: ArrayView2<'_, f64>) -> Self {
        let edges = (0..x.ncols())
            .into_par_iter()
            .map(|j| {
                let mut v: Vec<f64> = x.column(j).to_vec();
                v.sort_by(f64::total_cmp);
                let mut distinct = v.clone();
                distinct.dedup();
                let cuts: Vec<f64> = if distinct.len() <= MAX_BINS {
                    distinct
                        .windows(2)
                        .map(|w| w[0] + (w[1] - w[0]) / 2.0)
                        .collect()
                } else {
                    let mut q: Vec<f64> =
                        (1..MAX_BINS).map(|i| v[i * v.len() / MAX_BINS]).collect();
                    q.dedup();
                    q.retain(|&e| e < distinct[distinct.len() - 1]);
                    q
                };
                cuts.into_iter()
                    .chain(std::iter::once(f64::INFINITY))
                    .collect()
            })
            .collect();
        Self { edges }
    }

    pub fn bin(&self, feature: usize, value: f64) -> u8 {
        self.edges[feature].partition_point(|&e| e < value) as u8
    }

    pub fn transform(&self, x: ArrayView2<'_, f64>) -> Binned {
        Binned {
            n_rows: x.nrows(),
            codes: (0..x.ncols())
                .into_par_iter()
                .map(|f| x.column(f).iter().map(|&v| self.bin(f, v)).collect())
                .collect(),
        }
    }

    pub fn n_bins(&self, feature: usize) -> usize {
        self.edges[feature].len()
    }

    /// The bins of some features only, in the order given.
    pub fn features(&self, features: &[usize]) -> Self {
        Self {
            edges: features.iter().map(|&f| self.edges[f].clone()).collect(),
        }
    }
}

impl Binned {
    /// The codes of the rows at positions `rows`, in that order.
    pub fn select(&self, rows: &[usize]) -> Self {
        Self {
            n_rows: rows.len(),
            codes: self
                .codes
                .iter()
                .map(|c| rows.iter().map(|&r| c[r]).collect())
                .collect(),
        }
    }

    /// The codes of some features only, in the order given.
    pub fn features(&self, features: &[usize]) -> Self {
        Self {
            n_rows: self.n_rows,
            codes: features.iter().map(|&f| self.codes[f].clone()).collect(),
        }
    }
}
