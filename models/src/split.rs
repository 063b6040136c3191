//! Held-out rows and CV folds. By default both follow time: the test rows are the latest calls of
//! each run or file, and the folds are contiguous blocks of calls, so no call is judged by a model
//! that saw the calls right after it. `Random` shuffles with a seed instead.
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum SplitKind {
    /// The last share of each run's (or file's) calls by timestamp; folds are contiguous in time.
    #[default]
    Time,
    /// A seeded shuffle of all rows.
    Random,
}

/// When each row happened and within which run or file: what the time split orders by.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub ts: Vec<u64>,
    /// Index into `group_names` of each row's run or file.
    pub group: Vec<u32>,
    pub group_names: Vec<String>,
    /// Rows marked to be the held-out rows, whatever the split (a sampled matrix's rows drawn apart
    /// from the fitted ones); empty when the split chooses them.
    pub held_out: Vec<bool>,
}

impl Timeline {
    /// Interns each row's group name in first-seen order.
    pub fn new<'a>(ts: Vec<u64>, groups: impl IntoIterator<Item = &'a str>) -> Self {
        let mut group_names: Vec<String> = Vec::new();
        let mut index = std::collections::HashMap::new();
        let group = groups
            .into_iter()
            .map(|g| {
                *index.entry(g).or_insert_with(|| {
                    group_names.push(g.to_string());
                    group_names.len() as u32 - 1
                })
            })
            .collect();
        Self {
            ts,
            group,
            group_names,
            held_out: Vec::new(),
        }
    }

    /// The same rows with `held_out` (one flag per row) as the rows any split holds out.
    pub fn with_held_out(self, held_out: Vec<bool>) -> Self {
        assert_eq!(held_out.len(), self.len(), "one flag per row");
        Self { held_out, ..self }
    }

    /// Rows in the order given, all in one group: for data without timestamps.
    pub fn sequential(n: usize) -> Self {
        Self::new((0..n as u64).collect(), std::iter::repeat_n("", n))
    }

    pub fn len(&self) -> usize {
        self.ts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }

    pub fn group_name(&self, row: usize) -> &str {
        &self.group_names[self.group[row] as usize]
    }

    /// The rows `rows`; they keep their held-out marks only if one of them has one, so that the
    /// fitted rows of a marked split are split again (into folds, or to stop early) as usual.
    pub fn select(&self, rows: &[usize]) -> Self {
        let held_out: Vec<bool> = rows
            .iter()
            .map(|&r| self.held_out.get(r).copied().unwrap_or(false))
            .collect();
        Self {
            ts: rows.iter().map(|&r| self.ts[r]).collect(),
            group: rows.iter().map(|&r| self.group[r]).collect(),
            group_names: self.group_names.clone(),
            held_out: if held_out.contains(&true) {
                held_out
            } else {
                Vec::new()
            },
        }
    }

    /// Each group's row positions in time order (then position), groups by name.
    fn by_group(&self) -> Vec<Vec<usize>> {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by_key(|&r| (self.group_name(r), self.ts[r], r));
        order
            .chunk_by(|&a, &b| self.group[a] == self.group[b])
            .map(<[usize]>::to_vec)
            .collect()
    }
}

pub fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    idx.shuffle(&mut StdRng::seed_from_u64(seed));
    idx
}

fn sorted(mut v: Vec<usize>) -> Vec<usize> {
    v.sort_unstable();
    v
}

/// How many of `n` rows [`train_test`] holds out: about `test_fraction` of them, at least one, and
/// at least one left to fit on.
pub fn test_rows(n: usize, test_fraction: f64) -> usize {
    ((n as f64 * test_fraction).round() as usize)
        .max(1)
        .min(n.saturating_sub(1))
}

/// The fewest rows that [`train_test`] splits into at least `min` held-out rows and `min` to fit on.
pub fn rows_for(min: usize, test_fraction: f64) -> usize {
    // round(n · share) >= min needs n >= (min - ½) / share; start just under it.
    let guess = ((min as f64 - 0.5) / test_fraction.min(1.0 - test_fraction)) as usize;
    (guess.saturating_sub(2)..)
        .find(|&n| test_rows(n, test_fraction) >= min && n - test_rows(n, test_fraction) >= min)
        .expect("some row count holds out enough")
}

/// (train, test) positions, each ascending; about `test_fraction` of the rows, at least one, are test,
/// or the rows the timeline marks held out where it marks some.
pub fn train_test(
    kind: SplitKind,
    time: &Timeline,
    test_fraction: f64,
    seed: u64,
) -> (Vec<usize>, Vec<usize>) {
    let n = time.len();
    if !time.held_out.is_empty() {
        return (0..n).partition(|&r| !time.held_out[r]);
    }
    let n_test = test_rows(n, test_fraction);
    match kind {
        SplitKind::Random => {
            let idx = shuffled(n, seed);
            (
                sorted(idx[n_test..].to_vec()),
                sorted(idx[..n_test].to_vec()),
            )
        }
        SplitKind::Time => {
            // Each group gives its latest calls; rounding the running total keeps the overall count
            // at n_test however small the groups are.
            let quota = |k: usize| (k as f64 * n_test as f64 / n as f64).round() as usize;
            let mut is_test = vec![false; n];
            let mut start = 0;
            for rows in time.by_group() {
                let end = start + rows.len();
                let take = quota(end) - quota(start);
                for &r in &rows[rows.len() - take..] {
                    is_test[r] = true;
                }
                start = end;
            }
            let (test, train): (Vec<usize>, Vec<usize>) = (0..n).partition(|&r| is_test[r]);
            (train, test)
        }
    }
}

/// k (fit, held-out) pairs of positions, every row held out exactly once. Under `Time`, fold f holds
/// out the f-th contiguous stretch of calls of every run or file (scikit-learn's unshuffled KFold within
/// each group), so each fold is judged on the same runs it was fitted on, as the test rows are.
pub fn folds(
    kind: SplitKind,
    time: &Timeline,
    k: usize,
    seed: u64,
) -> Vec<(Vec<usize>, Vec<usize>)> {
    let blocks: Vec<Vec<usize>> = match kind {
        SplitKind::Time => {
            let mut blocks = vec![Vec::new(); k];
            for rows in time.by_group() {
                for (f, block) in blocks.iter_mut().enumerate() {
                    block.extend_from_slice(&rows[kfold_bounds(rows.len(), k, f)]);
                }
            }
            blocks
        }
        SplitKind::Random => {
            let idx = shuffled(time.len(), seed);
            (0..k)
                .map(|f| idx[kfold_bounds(idx.len(), k, f)].to_vec())
                .collect()
        }
    };
    blocks
        .iter()
        .enumerate()
        .map(|(f, held)| {
            let fit = blocks
                .iter()
                .enumerate()
                .filter(|&(g, _)| g != f)
                .flat_map(|(_, b)| b.iter().copied())
                .collect();
            (sorted(fit), sorted(held.clone()))
        })
        .collect()
}

/// The positions of fold `f` of `k` over `n` items; the first n % k folds hold one more, as
/// scikit-learn's KFold.
fn kfold_bounds(n: usize, k: usize, f: usize) -> std::ops::Range<usize> {
    let bound = |f: usize| f * (n / k) + f.min(n % k);
    bound(f)..bound(f + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_split_holds_out_the_latest_calls_of_each_group() {
        // Two runs interleaved in the matrix, each with 10 calls whose timestamps run backwards.
        let ts: Vec<u64> = (0..20).map(|i| 100 - i as u64).collect();
        let groups = (0..20).map(|i| if i % 2 == 0 { "a" } else { "b" });
        let time = Timeline::new(ts, groups);
        let (train, test) = train_test(SplitKind::Time, &time, 0.2, 0);
        assert_eq!(test, [0, 1, 2, 3]);
        assert_eq!(train, (4..20).collect::<Vec<_>>());
        let held: Vec<Vec<usize>> = folds(SplitKind::Time, &time, 4, 0)
            .into_iter()
            .map(|(fit, held)| {
                assert_eq!(fit.len() + held.len(), 20);
                assert!(fit.iter().all(|r| !held.contains(r)));
                held
            })
            .collect();
        assert_eq!(
            held,
            [
                vec![14, 15, 16, 17, 18, 19],
                vec![8, 9, 10, 11, 12, 13],
                vec![4, 5, 6, 7],
                vec![0, 1, 2, 3]
            ]
        );
    }

    #[test]
    fn small_groups_still_give_the_overall_test_share() {
        let time = Timeline::new((0..30).collect(), (0..30).map(|i| ["x", "y", "z"][i / 10]));
        let (_, test) = train_test(SplitKind::Time, &time, 0.1, 0);
        assert_eq!(test, [9, 19, 29]);
        let time = Timeline::new(vec![5; 50], (0..50).map(|i| ["p", "q"][i % 2]));
        let (_, test) = train_test(SplitKind::Time, &time, 0.2, 0);
        assert_eq!(test, (40..50).collect::<Vec<_>>());
    }

    #[test]
    fn random_split_is_seeded() {
        let time = Timeline::sequential(100);
        let a = train_test(SplitKind::Random, &time, 0.2, 7);
        assert_eq!(a, train_test(SplitKind::Random, &time, 0.2, 7));
        assert_ne!(a, train_test(SplitKind::Random, &time, 0.2, 8));
        assert_eq!(a.1.len(), 20);
    }
}
