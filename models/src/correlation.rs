//! Pearson and Spearman matrices over the features and the target, and near-duplicate groups.
use crate::stats::{correlation_matrix, rank_columns};
use ndarray::{Array2, ArrayView1, ArrayView2, Axis, concatenate};

/// Correlation matrices over the feature columns followed by the target as the last column.
pub struct Correlations {
    pub pearson: Array2<f64>,
    pub spearman: Array2<f64>,
}

impl Correlations {
    pub fn compute<'a>(x: ArrayView2<'a, f64>, y: ArrayView1<'a, f64>) -> Self {
        let xy = concatenate(Axis(1), &[x, y.insert_axis(Axis(1))])
            .expect("x and y have the same number of rows");
        Self {
            pearson: correlation_matrix(xy.view()),
            spearman: correlation_matrix(rank_columns(xy.view()).view()),
        }
    }

    pub fn n_features(&self) -> usize {
        self.pearson.nrows() - 1
    }

    pub fn pearson_to_target(&self, j: usize) -> f64 {
        self.pearson[[j, self.n_features()]]
    }

    pub fn spearman_to_target(&self, j: usize) -> f64 {
        self.spearman[[j, self.n_features()]]
    }

    /// Groups of features whose |Pearson r| exceeds `threshold` with the group's first member.
    /// Features are visited by decreasing |r| with the target, so each group is led by the
    /// member that tracks the target best; singletons are groups of one.
    pub fn near_duplicate_groups(&self, threshold: f64) -> Vec<Vec<usize>> {
        let p = self.n_features();
        let mut order: Vec<usize> = (0..p).collect();
        order.sort_by(|&a, &b| {
            self.pearson_to_target(b)
                .abs()
                .total_cmp(&self.pearson_to_target(a).abs())
                .then(a.cmp(&b))
        });
        let mut assigned = vec![false; p];
        let mut groups = Vec::new();
        for &lead in &order {
            if assigned[lead] {
                continue;
            }
            assigned[lead] = true;
            let mut group = vec![lead];
            for &other in &order {
                if !assigned[other] && self.pearson[[lead, other]].abs() > threshold {
                    assigned[other] = true;
                    group.push(other);
                }
            }
            groups.push(group);
        }
        groups
    }
}
