//! Correlation details the reference fixtures do not cover: ties and near-duplicate groups.
use models::correlation::Correlations;
use models::stats::average_ranks;
use ndarray::{Array1, Array2, array};

#[test]
fn tied_values_share_their_mean_rank() {
    let r = average_ranks(array![3.0, 1.0, 3.0, 2.0, 3.0].view());
    assert_eq!(r.to_vec(), [4.0, 1.0, 4.0, 2.0, 4.0]);
}

#[test]
fn near_duplicates_are_grouped_under_the_one_closest_to_the_target() {
    let n = 200;
    let a = Array1::from_iter((0..n).map(|i| ((i * 37) % 101) as f64));
    let noise = Array1::from_iter((0..n).map(|i| ((i * 13) % 7) as f64 * 0.01));
    let b = &a * 2.0 + &noise;
    let c = Array1::from_iter((0..n).map(|i| ((i * 53) % 89) as f64));
    let y = &a + &c * 0.2;
    let x = Array2::from_shape_fn((n, 3), |(i, j)| [b[i], c[i], a[i]][j]);
    let corr = Correlations::compute(x.view(), y.view());
    let groups = corr.near_duplicate_groups(0.95);
    let lead = if corr.pearson_to_target(0).abs() > corr.pearson_to_target(2).abs() {
        0
    } else {
        2
    };
    assert_eq!(groups, vec![vec![lead, 2 - lead], vec![1]]);
    assert_eq!(
        corr.near_duplicate_groups(1.0),
        vec![vec![lead], vec![2 - lead], vec![1]]
    );
}
