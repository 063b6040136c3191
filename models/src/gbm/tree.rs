//! A least-squares regression tree grown depth-first on binned features.
use super::bins::{Binned, Binner};
use rayon::prelude::*;

#[derive(Debug, Clone)]
pub struct Split {
    pub feature: usize,
    /// Rows with a code <= bin (a value <= threshold) go left.
    pub bin: u8,
    pub threshold: f64,
    pub left: usize,
    pub right: usize,
    /// Reduction of the squared error brought by this split.
    pub gain: f64,
}

#[derive(Debug, Clone)]
pub struct Node {
    /// Output of the subtree's rows (leaf value for leaves), learning rate applied.
    pub value: f64,
    /// Training rows that reached this node.
    pub cover: f64,
    pub split: Option<Split>,
}

#[derive(Debug, Clone)]
pub struct Tree {
    pub nodes: Vec<Node>,
}

pub struct TreeParams {
    pub max_depth: usize,
    pub min_samples_leaf: usize,
    pub learning_rate: f64,
}

struct Best {
    feature: usize,
    bin: u8,
    gain: f64,
}

impl Tree {
    pub fn fit(binned: &Binned, binner: &Binner, residual: &[f64], params: &TreeParams) -> Self {
        let mut rows: Vec<u32> = (0..binned.n_rows as u32).collect();
        let mut tree = Tree { nodes: Vec::new() };
        tree.grow(binned, binner, residual, &mut rows, 0, params);
        tree
    }

    fn grow(
        &mut self,
        binned: &Binned,
        binner: &Binner,
        residual: &[f64],
        rows: &mut [u32],
        depth: usize,
        params: &TreeParams,
    ) -> usize {
        let sum: f64 = rows.iter().map(|&r| residual[r as usize]).sum();
        let n = rows.len() as f64;
        let id = self.nodes.len();
        self.nodes.push(Node {
            value: params.learning_rate * sum / n,
            cover: n,
            split: None,
        });
        if depth >= params.max_depth || rows.len() < 2 * params.min_samples_leaf {
            return id;
        }
        let Some(best) = best_split(binned, binner, residual, rows, sum, params.min_samples_leaf)
        else {
            return id;
        };
        // A stable partition keeps each side's rows ascending, so histogram reads stay sequential.
        let codes = &binned.codes[best.feature];
        let mut right = Vec::with_capacity(rows.len());
        let mut lo = 0;
        for i in 0..rows.len() {
            let r = rows[i];
            if codes[r as usize] <= best.bin {
                rows[lo] = r;
                lo += 1;
            } else {
                right.push(r);
            }
        }
        rows[lo..].copy_from_slice(&right);
        let (left_rows, right_rows) = rows.split_at_mut(lo);
        let left = self.grow(binned, binner, residual, left_rows, depth + 1, params);
        let right = self.grow(binned, binner, residual, right_rows, depth + 1, params);
        self.nodes[id].split = Some(Split {
            feature: best.feature,
            bin: best.bin,
            threshold: binner.edges[best.feature][best.bin as usize],
            left,
            right,
            gain: best.gain,
        });
        id
    }

    pub fn predict_binned(&self, codes: &[Vec<u8>], row: usize) -> f64 {
        let mut node = &self.nodes[0];
        while let Some(s) = &node.split {
            node = &self.nodes[if codes[s.feature][row] <= s.bin {
                s.left
            } else {
                s.right
            }];
        }
        node.value
    }

    pub fn predict_row(&self, x: &[f64]) -> f64 {
        let mut node = &self.nodes[0];
        while let Some(s) = &node.split {
            node = &self.nodes[if x[s.feature] <= s.threshold {
                s.left
            } else {
                s.right
            }];
        }
        node.value
    }

    /// Cover-weighted mean output: the model's expectation over its training rows.
    pub fn expected_value(&self) -> f64 {
        let root = &self.nodes[0];
        self.leaves().map(|n| n.value * n.cover).sum::<f64>() / root.cover
    }

    fn leaves(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| n.split.is_none())
    }

    pub fn depth(&self) -> usize {
        fn d(t: &Tree, i: usize) -> usize {
            match &t.nodes[i].split {
                Some(s) => 1 + d(t, s.left).max(d(t, s.right)),
                None => 0,
            }
        }
        d(self, 0)
    }
}

fn best_split(
    binned: &Binned,
    binner: &Binner,
    residual: &[f64],
    rows: &[u32],
    sum: f64,
    min_leaf: usize,
) -> Option<Best> {
    let n = rows.len();
    let parent = sum * sum / n as f64;
    (0..binned.codes.len())
        .into_par_iter()
        .filter_map(|f| {
            let nb = binner.n_bins(f);
            if nb < 2 {
                return None;
            }
            let codes = &binned.codes[f];
            let mut g = vec![0.0f64; nb];
            let mut c = vec![0u32; nb];
            for &r in rows {
                let b = codes[r as usize] as usize;
                g[b] += residual[r as usize];
                c[b] += 1;
            }
            let (mut gl, mut cl) = (0.0, 0usize);
            let mut best: Option<Best> = None;
            for b in 0..nb - 1 {
                gl += g[b];
                cl += c[b] as usize;
                if c[b] == 0 || cl < min_leaf {
                    continue;
                }
                let cr = n - cl;
                if cr < min_leaf {
                    break;
                }
                let gr = sum - gl;
                let gain = gl * gl / cl as f64 + gr * gr / cr as f64 - parent;
                if gain
                    > best
                        .as_ref()
                        .map_or(1e-12 * parent.abs().max(1e-300), |b| b.gain)
                {
                    best = Some(Best {
                        feature: f,
                        bin: b as u8,
                        gain,
                    });
                }
            }
            best
        })
        .reduce_with(|a, b| {
            if b.gain > a.gain || (b.gain == a.gain && b.feature < a.feature) {
                b
            } else {
                a
            }
        })
}
