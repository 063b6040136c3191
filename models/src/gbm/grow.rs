//! Growing one tree depth-first from per-node histograms of the residuals. Only the smaller child's
//! histogram is built from its rows (in parallel over features); the larger one's is the parent's
//! minus it.
use super::bins::{Binned, Binner, MAX_BINS};
use super::tree::{Node, Split, Tree, TreeParams};
use rayon::prelude::*;

struct Best {
    feature: usize,
    bin: u8,
    gain: f64,
}

/// One bin's residual sum and row count, side by side so an update touches one cache line.
#[derive(Clone, Copy, Default)]
struct Bin {
    sum: f64,
    count: u32,
}

/// Per-bin residual sums and row counts of one node, one full-width block per feature (a u8 code
/// indexes it without a bounds check).
struct Histogram {
    features: Vec<[Bin; MAX_BINS]>,
}

/// Rows from which a histogram is filled through two interleaved copies.
const TWO_COPIES_FROM: usize = 4096;

/// Adds residual `residual[i]` to the bin of `code(&keys[i])`, for every i. Long runs alternate between
/// two copies of the histogram, merged at the end, so that neighbouring rows in one bin do not wait on
/// each other's update (a third of a histogram's time on the benchmark's matrix).
fn fill<K>(h: &mut [Bin; MAX_BINS], keys: &[K], residual: &[f64], code: impl Fn(&K) -> u8) {
    let add = |h: &mut [Bin; MAX_BINS], code: u8, g: f64| {
        let bin = &mut h[code as usize];
        bin.sum += g;
        bin.count += 1;
    };
    if keys.len() < TWO_COPIES_FROM {
        for (k, &g) in keys.iter().zip(residual) {
            add(h, code(k), g);
        }
        return;
    }
    let mut other = [Bin::default(); MAX_BINS];
    let pairs = keys.chunks_exact(2).zip(residual.chunks_exact(2));
    for (k, g) in pairs {
        add(h, code(&k[0]), g[0]);
        add(&mut other, code(&k[1]), g[1]);
    }
    if keys.len() % 2 == 1 {
        let last = keys.len() - 1;
        add(h, code(&keys[last]), residual[last]);
    }
    for (b, o) in h.iter_mut().zip(&other) {
        b.sum += o.sum;
        b.count += o.count;
    }
}

impl Histogram {
    fn subtract_from(&self, parent: &Histogram) -> Histogram {
        Histogram {
            features: parent
                .features
                .iter()
                .zip(&self.features)
                .map(|(p, c)| {
                    std::array::from_fn(|b| Bin {
                        sum: p[b].sum - c[b].sum,
                        count: p[b].count - c[b].count,
                    })
                })
                .collect(),
        }
    }
}

/// What one tree's growth reads and writes, so the recursion passes only the node's own state.
struct Grower<'a> {
    binned: &'a Binned,
    binner: &'a Binner,
    residual: &'a [f64],
    params: &'a TreeParams,
    /// Each fitting row's running prediction, to which the tree's output is added.
    pred: &'a mut [f64],
    nodes: Vec<Node>,
}

impl Tree {
    /// Grows a tree on the residuals of the binned rows and adds its output to `pred`.
    pub fn fit(
        binned: &Binned,
        binner: &Binner,
        residual: &[f64],
        params: &TreeParams,
        pred: &mut [f64],
    ) -> Self {
        let mut rows: Vec<u32> = (0..binned.n_rows as u32).collect();
        let mut grower = Grower {
            binned,
            binner,
            residual,
            params,
            pred,
            nodes: Vec::new(),
        };
        let hist = grower
            .can_split(0, rows.len())
            .then(|| grower.histogram(&rows));
        grower.grow(&mut rows, hist, 0);
        Tree {
            nodes: grower.nodes,
        }
    }
}

impl Grower<'_> {
    fn histogram(&self, rows: &[u32]) -> Histogram {
        let mut features = vec![[Bin::default(); MAX_BINS]; self.binned.codes.len()];
        if rows.len() == self.binned.n_rows {
            // Every row, in order: the codes and residuals are read straight, without the row list.
            features.par_iter_mut().enumerate().for_each(|(f, h)| {
                fill(h, &self.binned.codes[f], self.residual, |&c| c);
            });
        } else {
            // The node's residuals gathered once, so each feature's pass reads them in order.
            let residual: Vec<f64> = rows.iter().map(|&r| self.residual[r as usize]).collect();
            features.par_iter_mut().enumerate().for_each(|(f, h)| {
                let codes = &self.binned.codes[f];
                fill(h, rows, &residual, |&r| codes[r as usize]);
            });
        }
        Histogram { features }
    }

    fn can_split(&self, depth: usize, rows: usize) -> bool {
        depth < self.params.max_depth && rows >= 2 * self.params.min_samples_leaf
    }

    /// Grows the node of `rows`; `hist` is its histogram when it may split.
    fn grow(&mut self, rows: &mut [u32], hist: Option<Histogram>, depth: usize) -> usize {
        let sum: f64 = rows.iter().map(|&r| self.residual[r as usize]).sum();
        let n = rows.len() as f64;
        let id = self.nodes.len();
        let value = self.params.learning_rate * sum / n;
        self.nodes.push(Node {
            value,
            cover: n,
            split: None,
        });
        let best = hist
            .as_ref()
            .and_then(|h| self.best_split(h, rows.len(), sum));
        let (Some(best), Some(hist)) = (best, hist) else {
            for &r in rows.iter() {
                self.pred[r as usize] += value;
            }
            return id;
        };
        // A stable partition keeps each side's rows ascending, so histogram reads stay sequential.
        let codes = &self.binned.codes[best.feature];
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
        let (left_split, right_split) = (
            self.can_split(depth + 1, left_rows.len()),
            self.can_split(depth + 1, right_rows.len()),
        );
        let (left_hist, right_hist) = match (left_split, right_split) {
            (false, false) => (None, None),
            (true, false) => (Some(self.histogram(left_rows)), None),
            (false, true) => (None, Some(self.histogram(right_rows))),
            (true, true) if left_rows.len() <= right_rows.len() => {
                let small = self.histogram(left_rows);
                let large = small.subtract_from(&hist);
                (Some(small), Some(large))
            }
            (true, true) => {
                let small = self.histogram(right_rows);
                let large = small.subtract_from(&hist);
                (Some(large), Some(small))
            }
        };
        drop(hist);
        let left = self.grow(left_rows, left_hist, depth + 1);
        let right = self.grow(right_rows, right_hist, depth + 1);
        self.nodes[id].split = Some(Split {
            feature: best.feature,
            bin: best.bin,
            threshold: self.binner.edges[best.feature][best.bin as usize],
            left,
            right,
            gain: best.gain,
        });
        id
    }

    /// The split with the largest squared-error reduction, the lowest feature and bin on ties.
    fn best_split(&self, hist: &Histogram, n: usize, sum: f64) -> Option<Best> {
        let min_leaf = self.params.min_samples_leaf;
        let parent = sum * sum / n as f64;
        let mut best: Option<Best> = None;
        for (f, h) in hist.features.iter().enumerate() {
            let bins = &h[..self.binner.n_bins(f)];
            let (mut gl, mut cl) = (0.0, 0usize);
            for (b, bin) in bins.iter().enumerate().take(bins.len().saturating_sub(1)) {
                gl += bin.sum;
                cl += bin.count as usize;
                if bin.count == 0 || cl < min_leaf {
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
        }
        best
    }
}
