//! Seeded row splits: one held-out test split and k folds.
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

pub fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    idx.shuffle(&mut StdRng::seed_from_u64(seed));
    idx
}

/// (train, test) positions, each sorted; `test_fraction` of the rows (at least one) go to test.
pub fn train_test(n: usize, test_fraction: f64, seed: u64) -> (Vec<usize>, Vec<usize>) {
    let idx = shuffled(n, seed);
    let n_test = ((n as f64 * test_fraction).round() as usize).clamp(1, n - 1);
    let mut test = idx[..n_test].to_vec();
    let mut train = idx[n_test..].to_vec();
    test.sort_unstable();
    train.sort_unstable();
    (train, test)
}

/// k (train, held-out) pairs of positions into `n` rows, every row held out exactly once.
pub fn kfold(n: usize, k: usize, seed: u64) -> Vec<(Vec<usize>, Vec<usize>)> {
    let idx = shuffled(n, seed);
    (0..k)
        .map(|f| {
            let lo = f * n / k;
            let hi = (f + 1) * n / k;
            let mut held: Vec<usize> = idx[lo..hi].to_vec();
            let mut fit: Vec<usize> = idx[..lo].iter().chain(&idx[hi..]).copied().collect();
            held.sort_unstable();
            fit.sort_unstable();
            (fit, held)
        })
        .collect()
}
