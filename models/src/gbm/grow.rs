//! Growing one tree depth-first from per-node histograms of the residuals. Only the smaller child's
//! histogram is built from its rows (in parallel over blocks of features); the larger one's is the
//! parent's minus it.
use super::bins::{Binned, Binner, MAX_BINS};
use super::tree::{Node, Split, Tree, TreeParams};
use rayon::prelude::*;

struct Best {
    feature: usize,
    bin: u8,
    gain: f64,
}

/// Each fitting row's residual in fixed point, with its row count, packed into one integer: the
/// residual times `scale`, rounded, shifted above `count_bits` bits holding the 1 that counts the row.
/// A bin's sum and count are then one integer addition per row, exact and in any order, and a
/// subtraction gives the larger child's bins exactly. The scale is the largest that keeps the sum of
/// every row's |residual| within the bits left: with 72,000 rows, a residual is rounded to 1e-9 of the
/// largest one. Only the choice of split reads these sums; leaf values are the exact means.
struct Packed {
    values: Vec<i64>,
    count_bits: u32,
    scale: f64,
}

impl Packed {
    fn new(residual: &[f64]) -> Self {
        let count_bits = u64::BITS - (residual.len() as u64).leading_zeros();
        let max_q = ((1u64 << (63 - count_bits)) - 1) / residual.len().max(1) as u64;
        let max_r = residual.iter().fold(0.0f64, |m, r| m.max(r.abs()));
        let scale = if max_r > 0.0 {
            max_q as f64 / max_r
        } else {
            1.0
        };
        let values = residual
            .iter()
            .map(|&r| ((r * scale).round() as i64) * (1 << count_bits) + 1)
            .collect();
        Self {
            values,
            count_bits,
            scale,
        }
    }

    /// The rounded residual sum and the row count of a bin.
    fn unpack(&self, bin: i64) -> (i64, usize) {
        let count = bin & ((1 << self.count_bits) - 1);
        ((bin - count) >> self.count_bits, count as usize)
    }
}

/// Per-bin packed sums ([`Packed`]) of one node, one full-width block per feature (a u8 code indexes
/// it without a bounds check).
struct Histogram {
    features: Vec<[i64; MAX_BINS]>,
}

/// Features whose bins one pass over the rows fills: each row's value is read once for all of them, and
/// their updates do not wait on one another.
const BLOCK: usize = 4;

/// Adds `values[i]` to the bin of code `col[row(i)]` in the histogram of each column of the block, for
/// every i.
fn fill(
    hists: &mut [[i64; MAX_BINS]],
    cols: &[&[u8]],
    values: &[i64],
    row: impl Fn(usize) -> usize,
) {
    if let ([h0, h1, h2, h3], [c0, c1, c2, c3]) = (&mut *hists, cols) {
        for (i, &v) in values.iter().enumerate() {
            let r = row(i);
            h0[c0[r] as usize] += v;
            h1[c1[r] as usize] += v;
            h2[c2[r] as usize] += v;
            h3[c3[r] as usize] += v;
        }
    } else {
        for (h, col) in hists.iter_mut().zip(cols) {
            for (i, &v) in values.iter().enumerate() {
                h[col[row(i)] as usize] += v;
            }
        }
    }
}

impl Histogram {
    fn subtract_from(&self, parent: &Histogram) -> Histogram {
        Histogram {
            features: parent
                .features
                .iter()
                .zip(&self.features)
                .map(|(p, c)| std::array::from_fn(|b| p[b] - c[b]))
                .collect(),
        }
    }
}

/// What one tree's growth reads and writes, so the recursion passes only the node's own state.
struct Grower<'a> {
    binned: &'a Binned,
    binner: &'a Binner,
    residual: &'a [f64],
    packed: Packed,
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
            packed: Packed::new(residual),
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
        let mut features = vec![[0i64; MAX_BINS]; self.binned.codes.len()];
        let codes: Vec<&[u8]> = self.binned.codes.iter().map(Vec::as_slice).collect();
        let blocks = features.par_chunks_mut(BLOCK).zip(codes.par_chunks(BLOCK));
        if rows.len() == self.binned.n_rows {
            // Every row, in order: the codes and values are read straight, without the row list.
            let values = &self.packed.values;
            blocks.for_each(|(hists, cols)| {
                let cols: Vec<&[u8]> = cols.iter().map(|c| &c[..values.len()]).collect();
                fill(hists, &cols, values, |i| i);
            });
        } else {
            // The node's values gathered once, so each block's pass reads them in order.
            let values: Vec<i64> = rows
                .iter()
                .map(|&r| self.packed.values[r as usize])
                .collect();
            blocks.for_each(|(hists, cols)| fill(hists, cols, &values, |i| rows[i] as usize));
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
        let best = hist.as_ref().and_then(|h| self.best_split(h, rows.len()));
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

    /// The split with the largest squared-error reduction, the lowest feature and bin on ties. The
    /// reductions come from the packed sums, in the residuals' units.
    fn best_split(&self, hist: &Histogram, n: usize) -> Option<Best> {
        let min_leaf = self.params.min_samples_leaf;
        let total: i64 = hist.features[0]
            .iter()
            .map(|&b| self.packed.unpack(b).0)
            .sum();
        let sum = total as f64;
        let parent = sum * sum / n as f64;
        let unit = self.packed.scale * self.packed.scale;
        let mut best: Option<Best> = None;
        for (f, h) in hist.features.iter().enumerate() {
            let bins = &h[..self.binner.n_bins(f)];
            let (mut gl, mut cl) = (0i64, 0usize);
            for (b, &bin) in bins.iter().enumerate().take(bins.len().saturating_sub(1)) {
                let (g, c) = self.packed.unpack(bin);
                gl += g;
                cl += c;
                if c == 0 || cl < min_leaf {
                    continue;
                }
                let cr = n - cl;
                if cr < min_leaf {
                    break;
                }
                let (l, r) = (gl as f64, (total - gl) as f64);
                let gain = (l * l / cl as f64 + r * r / cr as f64 - parent) / unit;
                if gain
                    > best
                        .as_ref()
                        .map_or(1e-12 * (parent / unit).abs().max(1e-300), |b| b.gain)
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
