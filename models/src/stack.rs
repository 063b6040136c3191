//! The stack model: one GBM over the context and every ranked layer's features. Its mean |SHAP| on
//! the test rows, summed per layer, says which layer explains the target; the same within each kind
//! of call, beside the share of those calls' time each layer carries.
use crate::dataset::{CONTEXT, Dataset};
use crate::error::{Result, model_err};
use crate::fit::{ContextR2, Parts, Split, TrainBins, fit_gbm, quality};
use crate::importance::mean_abs_shap;
use crate::options::RankOptions;
use crate::report::{LayerRanking, StackGroup, StackGroupLayer, StackLayer, StackReport};
use crate::stats::r2;
use indicatif::ProgressBar;
use ndarray::Axis;
use rayon::prelude::*;

/// What the stack model knows of each dataset row beyond its features.
pub struct Calls {
    /// The kind of call (see [`StackGroup::group`]).
    pub group: Vec<String>,
    pub dur_ns: Vec<f64>,
    /// Each layer's exclusive time in the call, for the layers that have one.
    pub exclusive_ns: Vec<(String, Vec<f64>)>,
}

/// Fits the stack model, advancing `pb` by [`crate::progress::steps`] as its fits end; its context
/// model is the one `context_r2` holds when the layers fitted it.
pub fn fit(
    ds: &mut Dataset,
    layers: &[LayerRanking],
    calls: &Calls,
    opts: &RankOptions,
    context_r2: &ContextR2,
    pb: &ProgressBar,
) -> Result<StackReport> {
    opts.enough_rows("stack", "the stack model", ds.n_rows(), true)?;
    let split = Split::new(&ds.time, opts);
    let parts = Parts::take(ds, &split);
    let (xt, yt) = (parts.xt(), parts.yt.view());
    let bins = TrainBins::new(xt);
    let all: Vec<usize> = (0..split.train.len()).collect();
    let gbm = fit_gbm(&bins, yt, &all, &split.train_time, opts)?;
    let pred = gbm.predict(parts.xh());
    pb.inc(1);
    let cv: Vec<f64> = split
        .folds
        .par_iter()
        .map(|(fit, held)| {
            let model = fit_gbm(&bins, yt, fit, &split.train_time.select(fit), opts)?;
            let yv = yt.select(Axis(0), held).to_vec();
            pb.inc(1);
            Ok(r2(&yv, &model.predict(xt.select(Axis(0), held).view())))
        })
        .collect::<Result<_>>()?;

    let shap = mean_abs_shap(&gbm, parts.xh(), opts.shap_rows, opts.seed);
    let total: f64 = shap.iter().sum();
    if !(total > 0.0 && total.is_finite()) {
        return Err(model_err(
            "stack",
            "no feature has a positive SHAP importance",
        ));
    }
    let share_of = |layer: &str| layer_sum(ds, &shap, layer) / total;
    let mut shares: Vec<StackLayer> = layers
        .iter()
        .map(|l| StackLayer {
            layer: l.layer.clone(),
            share: share_of(&l.layer),
            delta_r2: l.delta_r2,
        })
        .collect();
    shares.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.layer.cmp(&b.layer)));
    let context: Vec<usize> = (0..ds.n_features())
        .filter(|&j| ds.layers[j] == CONTEXT)
        .collect();
    let context_r2 = context_r2.of(ds, &parts, &bins, &split, &context, opts)?;
    pb.inc(1);
    Ok(StackReport {
        quality: quality(&parts.yh, &pred, &cv),
        context_r2,
        context_share: share_of(CONTEXT),
        groups: groups(ds, &split.test, layers, calls, |held| {
            if held.len() == split.test.len() {
                shap.clone()
            } else {
                let xh = parts.xh().select(Axis(0), held);
                mean_abs_shap(&gbm, xh.view(), opts.shap_rows, opts.seed)
            }
        }),
        layers: shares,
    })
}

fn layer_sum(ds: &Dataset, per_feature: &[f64], layer: &str) -> f64 {
    (0..ds.n_features())
        .filter(|&j| ds.layers[j] == layer)
        .map(|j| per_feature[j])
        .sum()
}

/// Per kind of call, in name order: the stack model's SHAP shares on the group's test rows and each
/// layer's share of the group's call time. Groups without a test row, or whose SHAP is all zero, are
/// left out (they have no share to report). `shap_of` gives the mean |SHAP| over some of the test
/// rows (positions into `test`); a group that holds them all reuses the whole model's.
fn groups(
    ds: &Dataset,
    test: &[usize],
    layers: &[LayerRanking],
    calls: &Calls,
    shap_of: impl Fn(&[usize]) -> Vec<f64>,
) -> Vec<StackGroup> {
    let mut names: Vec<&str> = calls.group.iter().map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .filter_map(|name| {
            let rows: Vec<usize> = (0..ds.n_rows())
                .filter(|&r| calls.group[r] == name)
                .collect();
            let held: Vec<usize> = (0..test.len())
                .filter(|&i| calls.group[test[i]] == name)
                .collect();
            if held.is_empty() {
                return None;
            }
            let shap = shap_of(&held);
            let total: f64 = shap.iter().sum();
            if !(total > 0.0 && total.is_finite()) {
                return None;
            }
            let dur: f64 = rows.iter().map(|&r| calls.dur_ns[r]).sum();
            let mut shares: Vec<StackGroupLayer> = layers
                .iter()
                .map(|l| StackGroupLayer {
                    layer: l.layer.clone(),
                    share: layer_sum(ds, &shap, &l.layer) / total,
                    time_share: calls
                        .exclusive_ns
                        .iter()
                        .find(|(layer, _)| *layer == l.layer)
                        .filter(|_| dur > 0.0)
                        .map(|(_, ns)| rows.iter().map(|&r| ns[r]).sum::<f64>() / dur),
                })
                .collect();
            shares.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.layer.cmp(&b.layer)));
            Some(StackGroup {
                group: name.to_string(),
                rows: rows.len(),
                test_rows: held.len(),
                context_share: layer_sum(ds, &shap, CONTEXT) / total,
                layers: shares,
            })
        })
        .collect()
}
