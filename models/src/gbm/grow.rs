//! Growing one tree depth-first from per-node histograms of the residuals. Only the smaller child's
//! histogram is built from its rows (in parallel over blocks of features); the larger one's is the
//! parent's minus it, and the root's is the previous tree's, updated by that tree's leaves ([`Packed`]).
//! A feature nearly all of whose rows share one code ([`Sparse`]) is filled from its other rows alone.
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
/// subtraction gives the larger child's bins exactly. Only the choice of split reads these sums; leaf
/// values are the exact means.
///
/// The packed residuals live from one tree to the next: a leaf lowers its rows' by its value, rounded,
/// and the root's histogram by that value times the leaf's counts, so the root's histogram is never
/// rebuilt from the rows. The scale leaves the residuals room to grow fourfold before the sum of every
/// row's could leave its bits; past that, the next tree packs them anew. With 72,000 rows a residual
/// is rounded to 4e-9 of the largest, and 200 trees' roundings move it by at most 100 times that.
pub(super) struct Packed {
    values: Vec<i64>,
    count_bits: u32,
    scale: f64,
    /// The largest |rounded residual| for which no sum of them leaves its bits.
    limit: i64,
    root: Option<Histogram>,
}

impl Packed {
    fn new(residual: &[f64]) -> Self {
        let count_bits = u64::BITS - (residual.len() as u64).leading_zeros();
        let limit = (((1u64 << (63 - count_bits)) - 1) / residual.len().max(1) as u64) as i64;
        let max_r = residual.iter().fold(0.0f64, |m, r| m.max(r.abs()));
        let scale = if max_r > 0.0 {
            (limit / 4) as f64 / max_r
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
            limit,
            root: None,
        }
    }

    /// The rounded residual sum and the row count of a bin.
    fn unpack(&self, bin: i64) -> (i64, usize) {
        let count = bin & ((1 << self.count_bits) - 1);
        ((bin - count) >> self.count_bits, count as usize)
    }
}

/// A feature is sparse when at most one row in this many has a code other than its commonest.
const SPARSE: usize = 16;

/// The features nearly all of whose fitting rows share one code, as most of a trace's are (a kernel
/// function that runs in few calls is 0 in the others). Such a feature's histogram is filled from
/// its other rows that are in the node, and its commonest code's bin is the node's total minus
/// theirs: exact, as every bin of [`Packed`] sums is.
pub(super) struct Sparse {
    /// Per feature: None when dense; else its commonest code and the rows (ascending) with another.
    features: Vec<Option<(u8, Vec<u32>)>>,
}

impl Sparse {
    fn dense(features: usize) -> Self {
        Self {
            features: vec![None; features],
        }
    }

    /// The sparse features of `binned`, from each code's row count in the histogram of all its rows.
    fn of(binned: &Binned, every: &Histogram, packed: &Packed) -> Self {
        let n = binned.n_rows;
        let features = binned
            .codes
            .par_iter()
            .zip(&every.features)
            .map(|(codes, h)| {
                let (common, count) = h
                    .iter()
                    .map(|&b| packed.unpack(b).1)
                    .enumerate()
                    .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
                    .expect("256 codes");
                ((n - count) * SPARSE <= n).then(|| {
                    let others = (0..n as u32)
                        .filter(|&r| codes[r as usize] as usize != common)
                        .collect();
                    (common as u8, others)
                })
            })
            .collect();
        Self { features }
    }
}

/// What one fit's trees share besides their packed residuals: its sparse features, and room for
/// the rows of a node.
pub(super) struct Scratch {
    /// All dense until the first tree's root histogram counts each code's rows.
    sparse: Sparse,
    found: bool,
    /// Room for the rows a partition sends right.
    right: Vec<u32>,
    /// `mark[r] == stamp` for the rows of the node whose histogram is being filled.
    mark: Vec<u32>,
    stamp: u32,
}

impl Scratch {
    pub(super) fn new(binned: &Binned) -> Self {
        Self {
            sparse: Sparse::dense(binned.codes.len()),
            found: false,
            right: vec![0; binned.n_rows],
            mark: vec![0; binned.n_rows],
            stamp: 0,
        }
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
    hists: &mut [&mut [i64; MAX_BINS]],
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
    /// The parent's bins minus these, over each feature's bins (the others are 0 in both).
    fn subtract_from(&self, parent: &Histogram, binner: &Binner) -> Histogram {
        let mut features = vec![[0i64; MAX_BINS]; parent.features.len()];
        for (f, ((d, p), c)) in features
            .iter_mut()
            .zip(&parent.features)
            .zip(&self.features)
            .enumerate()
        {
            let bins = binner.n_bins(f);
            for ((d, p), c) in d[..bins].iter_mut().zip(&p[..bins]).zip(&c[..bins]) {
                *d = p - c;
            }
        }
        Histogram { features }
    }
}

/// What one tree's growth reads and writes, so the recursion passes only the node's own state.
struct Grower<'a> {
    binned: &'a Binned,
    binner: &'a Binner,
    residual: &'a [f64],
    packed: Packed,
    /// The root's histogram for the next tree: this one's, lowered by each leaf as it is made.
    next_root: Histogram,
    /// False once a packed residual has passed its limit.
    within_limit: bool,
    params: &'a TreeParams,
    /// Each fitting row's running prediction, to which the tree's output is added.
    pred: &'a mut [f64],
    nodes: Vec<Node>,
    scratch: &'a mut Scratch,
}

impl Tree {
    /// Grows a tree on the residuals of the binned rows and adds its output to `pred`. `packed` holds
    /// the previous tree's packed residuals ([`Packed`]), None for the first tree or to pack anew;
    /// `scratch` is made once for the fit's trees.
    pub(super) fn fit(
        binned: &Binned,
        binner: &Binner,
        residual: &[f64],
        params: &TreeParams,
        pred: &mut [f64],
        packed: &mut Option<Packed>,
        scratch: &mut Scratch,
    ) -> Self {
        let mut rows: Vec<u32> = (0..binned.n_rows as u32).collect();
        let mut grower = Grower {
            binned,
            binner,
            residual,
            packed: packed.take().unwrap_or_else(|| Packed::new(residual)),
            next_root: Histogram {
                features: Vec::new(),
            },
            within_limit: true,
            params,
            pred,
            nodes: Vec::new(),
            scratch,
        };
        let root = match grower.packed.root.take() {
            Some(root) => root,
            None => {
                let root = grower.histogram(&rows);
                if !grower.scratch.found {
                    grower.scratch.sparse = Sparse::of(binned, &root, &grower.packed);
                    grower.scratch.found = true;
                }
                root
            }
        };
        grower.next_root = Histogram {
            features: root.features.clone(),
        };
        grower.grow(&mut rows, root, 0);
        let Grower {
            nodes,
            packed: mut kept,
            next_root,
            within_limit,
            ..
        } = grower;
        kept.root = Some(next_root);
        *packed = within_limit.then_some(kept);
        Tree { nodes }
    }
}

/// The histogram of the rows `rows` of `binned`, whose packed residuals are `packed`; the dense
/// features' bins are filled from the rows, the sparse ones' ([`Sparse`]) from their other rows.
fn histogram(
    binned: &Binned,
    binner: &Binner,
    packed: &[i64],
    rows: &[u32],
    scratch: &mut Scratch,
) -> Histogram {
    let mut features = vec![[0i64; MAX_BINS]; binned.codes.len()];
    let every = rows.len() == binned.n_rows;
    // The node's total and its rows' marks serve the sparse features only.
    let any_sparse = scratch.sparse.features.iter().any(Option::is_some);
    let total: i64 = if !any_sparse {
        0
    } else if every {
        packed.iter().sum()
    } else {
        scratch.stamp += 1;
        let (mark, stamp) = (&mut scratch.mark, scratch.stamp);
        rows.iter()
            .map(|&r| {
                mark[r as usize] = stamp;
                packed[r as usize]
            })
            .sum()
    };
    let sparse = &scratch.sparse.features;
    let (mut dense, codes): (Vec<&mut [i64; MAX_BINS]>, Vec<&[u8]>) = features
        .iter_mut()
        .zip(&binned.codes)
        .zip(sparse)
        .filter(|(_, s)| s.is_none())
        .map(|((h, c), _)| (h, c.as_slice()))
        .unzip();
    let blocks = dense.par_chunks_mut(BLOCK).zip(codes.par_chunks(BLOCK));
    if every {
        // Every row, in order: the codes and values are read straight, without the row list.
        blocks.for_each(|(hists, cols)| {
            let cols: Vec<&[u8]> = cols.iter().map(|c| &c[..packed.len()]).collect();
            fill(hists, &cols, packed, |i| i);
        });
    } else {
        // The node's values gathered once, so each block's pass reads them in order.
        let values: Vec<i64> = rows.iter().map(|&r| packed[r as usize]).collect();
        blocks.for_each(|(hists, cols)| fill(hists, cols, &values, |i| rows[i] as usize));
    }
    let (mark, stamp) = (&scratch.mark, scratch.stamp);
    for (f, ((h, codes), s)) in features
        .iter_mut()
        .zip(&binned.codes)
        .zip(sparse)
        .enumerate()
    {
        let Some((common, others)) = s else { continue };
        for &r in others {
            if every || mark[r as usize] == stamp {
                h[codes[r as usize] as usize] += packed[r as usize];
            }
        }
        let filled: i64 = h[..binner.n_bins(f)].iter().sum();
        h[*common as usize] = total - filled;
    }
    Histogram { features }
}

impl Grower<'_> {
    fn histogram(&mut self, rows: &[u32]) -> Histogram {
        histogram(
            self.binned,
            self.binner,
            &self.packed.values,
            rows,
            self.scratch,
        )
    }

    fn can_split(&self, depth: usize, rows: usize) -> bool {
        depth < self.params.max_depth && rows >= 2 * self.params.min_samples_leaf
    }

    /// Grows the node of `rows`, whose histogram is `hist`; returns its index and its rows' residual
    /// sum. A leaf sums its rows' residuals in their order, and a split node its children's sums:
    /// each row's residual is added once per tree, not once per level, and only a leaf's value
    /// (the exact mean) is ever predicted with.
    fn grow(&mut self, rows: &mut [u32], hist: Histogram, depth: usize) -> (usize, f64) {
        let n = rows.len() as f64;
        let id = self.nodes.len();
        self.nodes.push(Node {
            value: 0.0,
            cover: n,
            split: None,
        });
        let best = if self.can_split(depth, rows.len()) {
            self.best_split(&hist, rows.len())
        } else {
            None
        };
        let Some(best) = best else {
            let sum: f64 = rows.iter().map(|&r| self.residual[r as usize]).sum();
            let value = self.params.learning_rate * sum / n;
            self.nodes[id].value = value;
            self.leaf(rows, &hist, value);
            return (id, sum);
        };
        // A stable partition keeps each side's rows ascending, so histogram reads stay sequential.
        // Each row is written to both sides and only its own side's end moves: no branch to
        // mispredict on a split that sends rows either way at random.
        let codes = &self.binned.codes[best.feature];
        let right = &mut self.scratch.right[..rows.len()];
        let (mut lo, mut hi) = (0, 0);
        for i in 0..rows.len() {
            let r = rows[i];
            let left = codes[r as usize] <= best.bin;
            rows[lo] = r;
            right[hi] = r;
            lo += usize::from(left);
            hi += usize::from(!left);
        }
        rows[lo..].copy_from_slice(&right[..hi]);
        let (left_rows, right_rows) = rows.split_at_mut(lo);
        let (left_hist, right_hist) = if left_rows.len() <= right_rows.len() {
            let small = self.histogram(left_rows);
            let large = small.subtract_from(&hist, self.binner);
            (small, large)
        } else {
            let small = self.histogram(right_rows);
            let large = small.subtract_from(&hist, self.binner);
            (large, small)
        };
        drop(hist);
        let (left, left_sum) = self.grow(left_rows, left_hist, depth + 1);
        let (right, right_sum) = self.grow(right_rows, right_hist, depth + 1);
        let sum = left_sum + right_sum;
        self.nodes[id].value = self.params.learning_rate * sum / n;
        self.nodes[id].split = Some(Split {
            feature: best.feature,
            bin: best.bin,
            threshold: self.binner.edges[best.feature][best.bin as usize],
            left,
            right,
            gain: best.gain,
        });
        (id, sum)
    }

    /// Adds the leaf's `value` to its rows' predictions, and takes it, rounded, off their packed
    /// residuals and, times the leaf's counts, off the next root histogram's bins.
    fn leaf(&mut self, rows: &[u32], hist: &Histogram, value: f64) {
        let step = (value * self.packed.scale).round() as i64 * (1 << self.packed.count_bits);
        let (bits, limit) = (self.packed.count_bits, self.packed.limit);
        for &r in rows {
            self.pred[r as usize] += value;
            let v = &mut self.packed.values[r as usize];
            *v -= step;
            self.within_limit &= (*v >> bits).abs() <= limit;
        }
        if step == 0 {
            return;
        }
        let mask = (1 << bits) - 1;
        for (f, (root, h)) in self
            .next_root
            .features
            .iter_mut()
            .zip(&hist.features)
            .enumerate()
        {
            let bins = self.binner.n_bins(f);
            for (r, &b) in root[..bins].iter_mut().zip(&h[..bins]) {
                *r -= step * (b & mask);
            }
        }
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
        let floor = 1e-12 * (parent / unit).abs().max(1e-300);
        hist.features
            .par_iter()
            .enumerate()
            .filter_map(|(f, h)| {
                let bins = &h[..self.binner.n_bins(f)];
                let (mut gl, mut cl) = (0i64, 0usize);
                let mut best: Option<Best> = None;
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
                    if gain > best.as_ref().map_or(floor, |b| b.gain) {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn the_root_histogram_carried_from_tree_to_tree_is_the_one_built_from_the_rows() {
        let mut rng = StdRng::seed_from_u64(11);
        let x: Array2<f64> = Array2::from_shape_fn((3000, 5), |_| rng.gen_range(0.0..1.0));
        let y: Vec<f64> = x
            .rows()
            .into_iter()
            .map(|r| 50.0 * (3.0 * r[0]).sin() + 20.0 * r[1] * r[2] + rng.gen_range(-1.0..1.0))
            .collect();
        let binner = Binner::fit(x.view());
        let binned = binner.transform(x.view());
        let params = TreeParams {
            max_depth: 3,
            min_samples_leaf: 1,
            learning_rate: 0.1,
        };
        let mut pred = vec![0.0; y.len()];
        let mut packed = None;
        let mut scratch = Scratch::new(&binned);
        let rows: Vec<u32> = (0..y.len() as u32).collect();
        for trees in 1..=40 {
            let residual: Vec<f64> = y.iter().zip(&pred).map(|(a, b)| a - b).collect();
            Tree::fit(
                &binned,
                &binner,
                &residual,
                &params,
                &mut pred,
                &mut packed,
                &mut scratch,
            );
            let p = packed
                .as_ref()
                .expect("the residuals shrink, so no tree packs anew");
            let built = histogram(&binned, &binner, &p.values, &rows, &mut scratch);
            let carried = p.root.as_ref().expect("kept for the next tree");
            assert!(carried.features == built.features, "tree {trees}");
            for (i, &v) in p.values.iter().enumerate() {
                let (q, count) = p.unpack(v);
                assert_eq!(count, 1);
                let r = y[i] - pred[i];
                assert!(
                    (q as f64 / p.scale - r).abs() <= 0.5 * (trees + 1) as f64 / p.scale,
                    "row {i} after {trees} trees: packed {}, residual {r}",
                    q as f64 / p.scale
                );
            }
        }
    }

    /// Columns nearly all 0 (as a trace's rare kernel functions are), a rare flag, and dense ones.
    fn sparse_matrix(rows: usize, seed: u64) -> (Array2<f64>, Vec<f64>) {
        let mut rng = StdRng::seed_from_u64(seed);
        let x = Array2::from_shape_fn((rows, 6), |(_, j)| match j {
            0 | 1 => rng.gen_range(0.0..1.0),
            2 if rng.gen_bool(0.03) => 1.0,
            3 | 4 if rng.gen_bool(0.02) => f64::from(rng.gen_range(1..40u8)),
            5 if rng.gen_bool(0.001) => rng.gen_range(0.0..1.0),
            _ => 0.0,
        });
        let y = x
            .rows()
            .into_iter()
            .map(|r| 10.0 * r[0] + 30.0 * r[2] + r[3] - 2.0 * r[4] + 50.0 * r[5] + r[1] * r[3])
            .collect();
        (x, y)
    }

    fn all_dense(binned: &Binned) -> Scratch {
        Scratch {
            found: true,
            ..Scratch::new(binned)
        }
    }

    #[test]
    fn a_histogram_with_sparse_features_has_the_bins_of_its_rows() {
        let (x, y) = sparse_matrix(4000, 5);
        let binner = Binner::fit(x.view());
        let binned = binner.transform(x.view());
        let mut scratch = Scratch::new(&binned);
        let packed = Packed::new(&y);
        let every: Vec<u32> = (0..4000).collect();
        let dense = histogram(&binned, &binner, &packed.values, &every, &mut scratch);
        scratch.sparse = Sparse::of(&binned, &dense, &packed);
        let sparse: Vec<bool> = scratch
            .sparse
            .features
            .iter()
            .map(Option::is_some)
            .collect();
        assert_eq!(sparse, [false, false, true, true, true, true]);
        let mut rng = StdRng::seed_from_u64(6);
        let some: Vec<u32> = (0..4000).filter(|_| rng.gen_bool(0.3)).collect();
        for rows in [&every, &some, &every] {
            let built = histogram(&binned, &binner, &packed.values, rows, &mut scratch);
            for (f, h) in built.features.iter().enumerate() {
                let mut by_row = [0i64; MAX_BINS];
                for &r in rows.iter() {
                    by_row[binned.codes[f][r as usize] as usize] += packed.values[r as usize];
                }
                assert!(h[..] == by_row[..], "feature {f}, {} rows", rows.len());
            }
        }
    }

    #[test]
    fn trees_grown_with_sparse_features_are_the_trees_grown_with_all_dense() {
        let (x, y) = sparse_matrix(5000, 9);
        let binner = Binner::fit(x.view());
        let binned = binner.transform(x.view());
        let params = TreeParams {
            max_depth: 4,
            min_samples_leaf: 1,
            learning_rate: 0.1,
        };
        let grow = |mut scratch: Scratch| {
            let (mut pred, mut packed) = (vec![0.0; y.len()], None);
            (0..30)
                .map(|_| {
                    let residual: Vec<f64> = y.iter().zip(&pred).map(|(a, b)| a - b).collect();
                    let t = Tree::fit(
                        &binned,
                        &binner,
                        &residual,
                        &params,
                        &mut pred,
                        &mut packed,
                        &mut scratch,
                    );
                    t.nodes
                        .iter()
                        .map(|n| {
                            let s = n
                                .split
                                .as_ref()
                                .map(|s| (s.feature, s.bin, s.gain.to_bits()));
                            (n.value.to_bits(), n.cover.to_bits(), s)
                        })
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        };
        let sparse = grow(Scratch::new(&binned));
        let on_sparse = sparse
            .iter()
            .flatten()
            .filter(|n| n.2.is_some_and(|s| s.0 >= 2))
            .count();
        assert!(on_sparse > 10, "the trees split on the sparse features");
        assert!(sparse == grow(all_dense(&binned)));
    }
}
