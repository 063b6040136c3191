//! A matrix too large to rank whole, read one batch at a time into a stratified sample of its calls
//! and held-out rows drawn from the whole matrix, which no fit sees.
//!
//! Each kind of call (operation, buffered or direct, size class, and the file or process where the
//! matrix has a few of them) gives the sample its share of the rows, so that no kind is lost or
//! over-weighted and the sample needs no weights. Within a kind, the rows kept are those with the
//! smallest seeded hash of their row number: a smaller sample is the start of a larger one.
use std::collections::{BinaryHeap, HashMap};
use std::path::Path;

use features::FeatureMatrix;
use features::format::parquet::read_batches;
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};

use crate::error::{ModelError, Result};

/// Files or processes beyond which the matrix is not split by them: each kind's share then gets
/// too few rows to be worth its own stratum.
pub const MAX_SPLIT_VALUES: usize = 16;

/// Size classes, by their lower bound in bytes: none, then under 4 KiB, 4–64 KiB, 64 KiB–1 MiB, 1 MiB and more.
const SIZE_CLASSES: [(i64, &str); 4] = [
    (0, "<4KiB"),
    (4 << 10, "4-64KiB"),
    (64 << 10, "64KiB-1MiB"),
    (1 << 20, ">=1MiB"),
];

/// The kind of call a row is, as the sample stratifies by it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Kind {
    op: String,
    direct: Option<bool>,
    size: Option<usize>,
    file: Option<String>,
    pid: Option<u64>,
}

impl Kind {
    fn of(m: &FeatureMatrix, i: usize, by_file: bool, by_pid: bool) -> Self {
        let size = m.size[i].map(|s| {
            SIZE_CLASSES
                .iter()
                .rposition(|&(low, _)| s >= low)
                .unwrap_or(0)
        });
        Kind {
            op: m.op[i].clone(),
            direct: m.direct[i],
            size,
            file: if by_file { m.file[i].clone() } else { None },
            pid: by_pid.then_some(m.pid[i]),
        }
    }

    fn name(&self) -> String {
        let mode = match self.direct {
            Some(true) => "direct",
            Some(false) => "buffered",
            None => "unknown",
        };
        let size = self.size.map_or("no size", |c| SIZE_CLASSES[c].1);
        let mut name = format!("{} {mode} {size}", self.op);
        if let Some(f) = &self.file {
            name.push_str(&format!(" file={f}"));
        }
        if let Some(p) = self.pid {
            name.push_str(&format!(" pid={p}"));
        }
        name
    }
}

/// One kind of call: its rows with a target in the whole matrix, and how many the sample fits on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stratum {
    pub kind: String,
    pub rows: usize,
    pub sampled: usize,
}

/// A seeded hash of a row number in [0, 1): splitmix64, whose outputs pass as independent uniforms.
fn unit(seed: u64, row: usize, stream: u64) -> u64 {
    let mut z = seed
        .wrapping_add(stream.wrapping_mul(0xd1b5_4a32_d192_ed03))
        .wrapping_add((row as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn is_held_out(seed: u64, row: usize, threshold: u64) -> bool {
    unit(seed, row, 1) < threshold
}

/// Whether row `i` of a batch has the target `target` (as `input::target_of` reads it): bandwidth
/// and size may be missing; duration and feature columns never are.
fn has_target(m: &FeatureMatrix, i: usize, target: &str) -> bool {
    match target {
        "bandwidth" => m.bandwidth_mibs[i].is_some(),
        "size" => m.size[i].is_some(),
        _ => true,
    }
}

/// Distinct values up to [`MAX_SPLIT_VALUES`], and whether there were more.
struct Distinct<T> {
    seen: Vec<T>,
    more: bool,
}

impl<T: PartialEq> Distinct<T> {
    fn add(&mut self, v: T) {
        if !self.more && !self.seen.contains(&v) {
            self.seen.push(v);
            self.more = self.seen.len() > MAX_SPLIT_VALUES;
        }
    }

    /// Whether the sample splits by these values: there are a few, and more than one.
    fn splits(&self) -> bool {
        !self.more && self.seen.len() > 1
    }
}

/// What the first pass learns from the base columns: rows with a target per kind, with the file
/// and the process where the matrix has a few of them.
struct Census {
    rows: usize,
    counts: HashMap<Kind, usize>,
    by_file: bool,
    by_pid: bool,
}

fn census(path: &Path, target: &str, pb: &ProgressBar) -> Result<Census> {
    let mut files = Distinct {
        seen: Vec::new(),
        more: false,
    };
    let mut pids = Distinct {
        seen: Vec::new(),
        more: false,
    };
    let mut counts: HashMap<Kind, usize> = HashMap::new();
    let mut rows = 0;
    read_batches::<ModelError>(path, false, |_, m| {
        for i in 0..m.n_rows() {
            if !has_target(&m, i, target) {
                continue;
            }
            files.add(m.file[i].clone());
            pids.add(m.pid[i]);
            *counts
                .entry(Kind::of(&m, i, !files.more, !pids.more))
                .or_default() += 1;
        }
        rows += m.n_rows();
        pb.inc(m.n_rows() as u64);
        Ok(())
    })?;
    let (by_file, by_pid) = (files.splits(), pids.splits());
    let mut merged: HashMap<Kind, usize> = HashMap::new();
    for (mut kind, n) in counts {
        if !by_file {
            kind.file = None;
        }
        if !by_pid {
            kind.pid = None;
        }
        *merged.entry(kind).or_default() += n;
    }
    Ok(Census {
        rows,
        counts: merged,
        by_file,
        by_pid,
    })
}

/// Room for `n` rows in every column of `m`, exactly: the sample's columns never grow past it.
fn reserve_rows(m: &mut FeatureMatrix, n: usize) {
    let more = n.saturating_sub(m.n_rows());
    m.op.reserve_exact(more);
    m.pid.reserve_exact(more);
    m.tid.reserve_exact(more);
    m.ts_ns.reserve_exact(more);
    m.dur_ns.reserve_exact(more);
    m.file.reserve_exact(more);
    m.size.reserve_exact(more);
    m.bandwidth_mibs.reserve_exact(more);
    m.direct.reserve_exact(more);
    m.sequential.reserve_exact(more);
    m.run.reserve_exact(more);
    m.thread.reserve_exact(more);
    m.process.reserve_exact(more);
    m.self_ns.reserve_exact(more);
    for f in &mut m.features {
        f.values.reserve_exact(more);
    }
}

/// Keeps the rows of `m` where `keep` is true, in place, each column then shrunk to its rows.
pub(crate) fn keep_rows(m: &mut FeatureMatrix, keep: &[bool]) {
    fn retain<T>(v: &mut Vec<T>, keep: &[bool]) {
        let mut i = 0;
        v.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        v.shrink_to_fit();
    }
    retain(&mut m.op, keep);
    retain(&mut m.pid, keep);
    retain(&mut m.tid, keep);
    retain(&mut m.ts_ns, keep);
    retain(&mut m.dur_ns, keep);
    retain(&mut m.file, keep);
    retain(&mut m.size, keep);
    retain(&mut m.bandwidth_mibs, keep);
    retain(&mut m.direct, keep);
    retain(&mut m.sequential, keep);
    retain(&mut m.run, keep);
    retain(&mut m.thread, keep);
    retain(&mut m.process, keep);
    retain(&mut m.self_ns, keep);
    for f in &mut m.features {
        retain(&mut f.values, keep);
    }
}

/// Each kind's share of `n` rows, by largest remainder, at most the kind's own rows.
fn quotas(counts: &[usize], n: usize) -> Vec<usize> {
    let total: usize = counts.iter().sum();
    if n >= total {
        return counts.to_vec();
    }
    let exact: Vec<f64> = counts
        .iter()
        .map(|&c| c as f64 * n as f64 / total as f64)
        .collect();
    let mut q: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by(|&a, &b| {
        (exact[b] - exact[b].floor())
            .total_cmp(&(exact[a] - exact[a].floor()))
            .then(a.cmp(&b))
    });
    let short = n - q.iter().sum::<usize>();
    for &k in order.iter().take(short) {
        q[k] += 1;
    }
    q
}

/// How the sample is drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleOptions {
    /// Rows fitted on, at most.
    pub max_rows: usize,
    /// Rows held out from the whole matrix (about this many: each row is held out on its own draw).
    pub held_out_rows: usize,
    /// The half-width wanted for the 95% interval of each layer's importance share.
    pub share_error: f64,
    /// Refits on bootstrap resamples, for the intervals.
    pub bootstrap: usize,
    /// The first fit's rows, whose spread sets how many rows the ranking needs.
    pub pilot_rows: usize,
    /// Bytes the ranking may take; None: what the system has available.
    pub memory: Option<u64>,
}

impl Default for SampleOptions {
    fn default() -> Self {
        Self {
            max_rows: 200_000,
            held_out_rows: 50_000,
            share_error: 0.01,
            bootstrap: 10,
            pilot_rows: 20_000,
            memory: None,
        }
    }
}

/// Refuses sample options that cannot give a ranking.
pub fn validate(opts: &SampleOptions) -> Result<()> {
    let refuse = |option: &str, reason: &str| {
        Err(ModelError::Option {
            option: option.to_string(),
            reason: reason.to_string(),
        })
    };
    if opts.max_rows < 100 {
        return refuse("max_rows", "a sample of fewer than 100 rows ranks nothing");
    }
    if opts.held_out_rows < 10 {
        return refuse("held_out_rows", "fewer than 10 held-out rows judge nothing");
    }
    if !(opts.share_error > 0.0 && opts.share_error < 1.0) {
        return refuse("share_error", "a share's error is in (0, 1)");
    }
    if opts.bootstrap < 2 {
        return refuse("bootstrap", "an interval needs at least 2 refits");
    }
    if opts.pilot_rows < 100 || opts.pilot_rows > opts.max_rows {
        return refuse(
            "pilot_rows",
            "the first fit takes at least 100 rows and at most max_rows",
        );
    }
    Ok(())
}

/// The rows read: the fitted rows of every kind (up to `max_rows`) and the held-out rows, in matrix
/// order.
pub struct Sample {
    pub matrix: FeatureMatrix,
    /// Per row of `matrix`: it is held out.
    pub held_out: Vec<bool>,
    /// Per row of `matrix`: its index in the whole matrix.
    pub rows: Vec<usize>,
    /// Per row: its kind (an index into `strata`) and its hash; held-out rows have no kind.
    kind: Vec<Option<usize>>,
    key: Vec<u64>,
    /// Rows of the whole matrix, and those with a target.
    pub rows_total: usize,
    pub rows_with_target: usize,
    /// Every kind, by name, with its rows outside the held-out ones and those read.
    pub strata: Vec<Stratum>,
}

/// Reads the sample of the Parquet matrix at `path` in three passes over its batches: the base
/// columns to count each kind's rows, the base columns again to pick each kind's share of
/// `max_rows` and the held-out rows, then every column of the rows picked, into columns of their
/// final size. At most one batch and the rows picked are held, each once.
pub fn read(
    path: &Path,
    target: &str,
    opts: &SampleOptions,
    seed: u64,
    pb: &ProgressBar,
) -> Result<Sample> {
    let census = census(path, target, pb)?;
    let with_target: usize = census.counts.values().sum();
    let threshold = if with_target == 0 {
        0
    } else {
        let q = (opts.held_out_rows as f64 / with_target as f64).min(1.0);
        (q * u64::MAX as f64) as u64
    };
    // Each kind's share of `max_rows`, from the first pass's counts: held-out rows are drawn alike
    // from every kind, so the shares without them are the same.
    let mut names: Vec<Kind> = census.counts.keys().cloned().collect();
    names.sort();
    let counts: Vec<usize> = names.iter().map(|k| census.counts[k]).collect();
    let share = quotas(&counts, opts.max_rows);
    let kinds: HashMap<Kind, usize> = names.iter().cloned().zip(0..).collect();
    let mut population = vec![0usize; names.len()];
    // Per kind, the (hash, row) of the rows kept so far: the largest hash is the next to go.
    let mut heaps: Vec<BinaryHeap<(u64, usize)>> =
        names.iter().map(|_| BinaryHeap::new()).collect();
    let mut held: Vec<usize> = Vec::new();
    read_batches::<ModelError>(path, false, |first, m| {
        for i in 0..m.n_rows() {
            if !has_target(&m, i, target) {
                continue;
            }
            let row = first + i;
            if is_held_out(seed, row, threshold) {
                held.push(row);
                continue;
            }
            let kind = Kind::of(&m, i, census.by_file, census.by_pid);
            let Some(&k) = kinds.get(&kind) else {
                return Err(changed(
                    path,
                    row,
                    &format!("a kind of call ({})", kind.name()),
                ));
            };
            population[k] += 1;
            let key = unit(seed, row, 0);
            let heap = &mut heaps[k];
            if heap.len() < share[k] || heap.peek().is_some_and(|top| key < top.0) {
                if heap.len() == share[k] {
                    heap.pop();
                }
                heap.push((key, row));
            }
        }
        pb.inc(m.n_rows() as u64);
        Ok(())
    })?;
    let sampled: Vec<usize> = heaps.iter().map(BinaryHeap::len).collect();
    // (row, hash, kind) of every row picked, in matrix order; held-out rows have no kind.
    let mut picked: Vec<(usize, u64, Option<usize>)> =
        held.into_iter().map(|row| (row, 0, None)).collect();
    for (k, heap) in heaps.into_iter().enumerate() {
        picked.extend(heap.into_iter().map(|(key, row)| (row, key, Some(k))));
    }
    picked.sort_unstable_by_key(|p| p.0);
    let mut matrix = FeatureMatrix::default();
    let mut next = 0;
    let template = read_batches::<ModelError>(path, true, |first, m| {
        let n = m.n_rows();
        let start = next;
        while next < picked.len() && picked[next].0 < first + n {
            next += 1;
        }
        let local: Vec<usize> = picked[start..next].iter().map(|p| p.0 - first).collect();
        let part = m.select_rows(&local);
        drop(m);
        if matrix.n_rows() == 0 {
            matrix = part;
            reserve_rows(&mut matrix, picked.len());
        } else {
            matrix.append(part);
        }
        pb.inc(n as u64);
        Ok(())
    })?;
    if next < picked.len() {
        let e = changed(path, picked[next].0, "a row past the matrix's end");
        return Err(e);
    }
    if picked.is_empty() {
        matrix = template;
    }
    let strata = names
        .iter()
        .zip(&population)
        .zip(sampled)
        .map(|((kind, &rows), sampled)| Stratum {
            kind: kind.name(),
            rows,
            sampled,
        })
        .collect();
    Ok(Sample {
        held_out: picked.iter().map(|p| p.2.is_none()).collect(),
        kind: picked.iter().map(|p| p.2).collect(),
        key: picked.iter().map(|p| p.1).collect(),
        rows: picked.iter().map(|p| p.0).collect(),
        matrix,
        rows_total: census.rows,
        rows_with_target: with_target,
        strata,
    })
}

/// A matrix that changed between the passes that read it.
fn changed(path: &Path, row: usize, what: &str) -> ModelError {
    ModelError::Changed {
        path: path.to_path_buf(),
        row: row + 1,
        what: what.to_string(),
    }
}

impl Sample {
    /// The held-out rows and each kind's share of `n` fitted rows (those of smallest hash), as
    /// positions into `matrix`, ascending.
    pub fn subsample(&self, n: usize) -> Vec<usize> {
        let counts: Vec<usize> = self.strata.iter().map(|s| s.rows).collect();
        let quota = quotas(&counts, n);
        let mut by_kind: Vec<Vec<usize>> = vec![Vec::new(); self.strata.len()];
        for (i, k) in self.kind.iter().enumerate() {
            if let Some(k) = k {
                by_kind[*k].push(i);
            }
        }
        let mut out: Vec<usize> = (0..self.kind.len())
            .filter(|&i| self.kind[i].is_none())
            .collect();
        for (k, mut rows) in by_kind.into_iter().enumerate() {
            rows.sort_by_key(|&i| (self.key[i], self.rows[i]));
            out.extend(rows.into_iter().take(quota[k]));
        }
        out.sort_unstable();
        out
    }

    /// Fitted rows held: at most `max_rows`.
    pub fn fitted_rows(&self) -> usize {
        self.kind.iter().filter(|k| k.is_some()).count()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use datasets::output::Existing;
    use features::{FeatureColumn, FeatureKind};

    /// `n` calls of two operations, buffered or direct, three sizes and two files; bandwidth depends
    /// on `vfs::a` and `ext4::c`, not on `sched::e`; every tenth call has none.
    pub(crate) fn matrix(n: usize) -> FeatureMatrix {
        let h = |r: usize, s: u64| (unit(99, r, s) >> 11) as f64 / (1u64 << 53) as f64;
        let col = |s: u64| (0..n).map(|r| h(r, s)).collect::<Vec<f64>>();
        let (a, b, c, e) = (col(10), col(11), col(12), col(13));
        let size: Vec<i64> = (0..n).map(|r| [512, 8192, 1 << 21][r % 3]).collect();
        FeatureMatrix {
            op: (0..n)
                .map(|r| ["read", "write"][(r / 6) % 2].to_string())
                .collect(),
            pid: vec![7; n],
            tid: vec![7; n],
            ts_ns: (0..n as u64).map(|r| r * 100).collect(),
            dur_ns: vec![1000; n],
            file: (0..n).map(|r| Some(format!("/f{}", r % 2))).collect(),
            size: size.iter().map(|&s| Some(s)).collect(),
            bandwidth_mibs: (0..n)
                .map(|r| (r % 10 != 9).then(|| 100.0 + 80.0 * a[r] + 40.0 * c[r] + 5.0 * h(r, 14)))
                .collect(),
            direct: (0..n).map(|r| Some(r % 7 < 2)).collect(),
            sequential: vec![None; n],
            run: vec![None; n],
            thread: vec![None; n],
            process: vec![None; n],
            self_ns: vec![1000; n],
            features: vec![
                FeatureColumn::new("vfs", "a", FeatureKind::TimeNs, a),
                FeatureColumn::new("vfs", "b", FeatureKind::TimeNs, b),
                FeatureColumn::new("ext4", "c", FeatureKind::TimeNs, c),
                FeatureColumn::new("sched", "e", FeatureKind::TimeNs, e),
            ],
        }
    }

    pub(crate) fn written(m: &FeatureMatrix, dir: &Path) -> std::path::PathBuf {
        let path = dir.join("m.parquet");
        m.write(&path, Existing::Replace).unwrap();
        path
    }

    #[test]
    fn the_sample_is_each_kinds_share_of_smallest_hashes_and_the_held_out_rows_are_drawn_apart() {
        let dir = tempfile::tempdir().unwrap();
        let m = matrix(6000);
        let path = written(&m, dir.path());
        let opts = SampleOptions {
            max_rows: 1000,
            held_out_rows: 600,
            ..SampleOptions::default()
        };
        let s = read(&path, "bandwidth", &opts, 5, &ProgressBar::hidden()).unwrap();
        assert_eq!((s.rows_total, s.rows_with_target), (6000, 5400));
        // The oracle: every row with a target, by hand.
        let with_target: Vec<usize> = (0..6000).filter(|&r| r % 10 != 9).collect();
        let threshold = (600.0 / 5400.0 * u64::MAX as f64) as u64;
        let held: Vec<usize> = with_target
            .iter()
            .copied()
            .filter(|&r| is_held_out(5, r, threshold))
            .collect();
        let got_held: Vec<usize> = (0..s.rows.len())
            .filter(|&i| s.held_out[i])
            .map(|i| s.rows[i])
            .collect();
        assert_eq!(got_held, held);
        // Kinds: op × mode × size class × file (two files, one pid): 2 × 2 × 3 × 2 = 24.
        let kind = |r: usize| {
            let size = [0, 1, 3][r % 3];
            ((r / 6) % 2, r % 7 < 2, size, r % 2)
        };
        let mut kinds: Vec<_> = with_target.iter().map(|&r| kind(r)).collect();
        kinds.sort_unstable();
        kinds.dedup();
        assert_eq!(s.strata.len(), kinds.len());
        assert_eq!(kinds.len(), 24);
        let counts: Vec<usize> = kinds
            .iter()
            .map(|k| with_target.iter().filter(|&&r| kind(r) == *k).count())
            .collect();
        let total: usize = counts.iter().sum();
        let mut fitted = 0;
        for (k, &count) in kinds.iter().zip(&counts) {
            let mut mine: Vec<(u64, usize)> = with_target
                .iter()
                .copied()
                .filter(|&r| kind(r) == *k && !held.contains(&r))
                .map(|r| (unit(5, r, 0), r))
                .collect();
            mine.sort_unstable();
            let got: Vec<usize> = (0..s.rows.len())
                .filter(|&i| !s.held_out[i] && kind(s.rows[i]) == *k)
                .map(|i| s.rows[i])
                .collect();
            let share = 1000.0 * count as f64 / total as f64;
            assert!(
                (got.len() as f64 - share).abs() < 1.0,
                "{k:?}: {} for {share}",
                got.len()
            );
            let mut smallest: Vec<usize> = mine[..got.len()].iter().map(|&(_, r)| r).collect();
            smallest.sort_unstable();
            assert_eq!(got, smallest, "{k:?}");
            fitted += got.len();
        }
        assert_eq!(fitted, 1000);
        assert_eq!(s.fitted_rows(), 1000);
        // Every row read is the matrix's row.
        let back = m.select_rows(&s.rows);
        assert_eq!(s.matrix, back);
        // A smaller sample is the start of this one, with the same held-out rows.
        let sub = s.subsample(300);
        assert_eq!(sub.iter().filter(|&&i| s.held_out[i]).count(), held.len());
        assert_eq!(sub.iter().filter(|&&i| !s.held_out[i]).count(), 300);
    }

    #[test]
    fn rows_kept_in_place_are_the_rows_selected() {
        let m = matrix(500);
        let keep: Vec<bool> = (0..500).map(|i| i % 3 != 1).collect();
        let rows: Vec<usize> = (0..500).filter(|&i| keep[i]).collect();
        let mut kept = m.clone();
        keep_rows(&mut kept, &keep);
        assert_eq!(kept, m.select_rows(&rows));
    }

    #[test]
    fn quotas_are_proportional_and_sum_to_n() {
        assert_eq!(quotas(&[50, 30, 20], 10), [5, 3, 2]);
        assert_eq!(quotas(&[1, 1, 1], 2), [1, 1, 0]);
        assert_eq!(quotas(&[3, 4], 100), [3, 4]);
        let q = quotas(&[997, 2, 1], 100);
        assert_eq!(q.iter().sum::<usize>(), 100);
        assert_eq!(q, [100, 0, 0]);
    }

    #[test]
    fn hashes_spread_evenly() {
        let n = 100_000;
        let below = (0..n).filter(|&r| is_held_out(3, r, u64::MAX / 4)).count();
        // A binomial(100000, 1/4) is within 5 sd (685) of its mean but for 1 in 3.5 million.
        assert!((below as f64 - 25_000.0).abs() < 685.0, "{below}");
    }
}
