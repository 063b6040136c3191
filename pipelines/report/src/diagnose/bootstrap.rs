//! A percentile bootstrap of the change in mean between two samples, seeded so that the same samples give the same
//! interval.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::diagnose::thresholds::{
    BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CONFIDENCE, MIN_CALLS_FOR_INTERVAL,
};

/// An interval around the change in mean (candidate − baseline).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    pub confidence: f64,
    pub resamples: usize,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn resampled_mean(v: &[f64], rng: &mut StdRng) -> f64 {
    (0..v.len())
        .map(|_| v[rng.gen_range(0..v.len())])
        .sum::<f64>()
        / v.len() as f64
}

/// The interval of `mean(cand) − mean(base)`; an error saying how many calls there are when either sample has
/// fewer than [`MIN_CALLS_FOR_INTERVAL`].
pub fn delta_mean(base: &[f64], cand: &[f64]) -> Result<Interval, String> {
    if base.len() < MIN_CALLS_FOR_INTERVAL || cand.len() < MIN_CALLS_FOR_INTERVAL {
        return Err(format!(
            "too few calls for an interval: {} in the baseline, {} in the candidate (at least {MIN_CALLS_FOR_INTERVAL} in each)",
            base.len(),
            cand.len()
        ));
    }
    let mut rng = StdRng::seed_from_u64(BOOTSTRAP_SEED);
    let mut deltas: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| resampled_mean(cand, &mut rng) - resampled_mean(base, &mut rng))
        .collect();
    deltas.sort_by(f64::total_cmp);
    let at = |q: f64| deltas[((deltas.len() - 1) as f64 * q).round() as usize];
    let tail = (1.0 - CONFIDENCE) / 2.0;
    Ok(Interval {
        low: at(tail),
        high: at(1.0 - tail),
        confidence: CONFIDENCE,
        resamples: BOOTSTRAP_RESAMPLES,
    })
}

/// The plain difference of means.
pub fn delta(base: &[f64], cand: &[f64]) -> f64 {
    mean(cand) - mean(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_holds_the_change_and_is_the_same_every_time() {
        let base: Vec<f64> = (0..50).map(|i| 100.0 + (i % 7) as f64).collect();
        let cand: Vec<f64> = (0..40).map(|i| 300.0 + (i % 5) as f64).collect();
        let a = delta_mean(&base, &cand).unwrap();
        assert_eq!(a, delta_mean(&base, &cand).unwrap());
        let d = delta(&base, &cand);
        assert!(a.low < d && d < a.high, "{a:?} {d}");
        assert!(a.low > 190.0 && a.high < 210.0, "{a:?}");
    }

    #[test]
    fn too_few_calls_give_no_interval() {
        let e = delta_mean(&[1.0; 9], &[2.0; 30]).unwrap_err();
        assert_eq!(
            e,
            "too few calls for an interval: 9 in the baseline, 30 in the candidate (at least 10 in each)"
        );
    }
}
