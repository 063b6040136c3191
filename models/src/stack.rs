//! The stack model: one GBM over the context and every ranked layer's features. Its mean |SHAP| on
//! the test rows, summed per layer, says which layer explains the target.
use crate::dataset::{CONTEXT, Dataset};
use crate::error::{ModelError, Result, model_err};
use crate::fit::{Parts, Split, fit_gbm, quality, r2_on_columns};
use crate::importance::mean_abs_shap;
use crate::rank::RankOptions;
use crate::report::{LayerReport, StackLayer, StackReport};
use crate::stats::r2;
use ndarray::Axis;

pub fn fit(ds: &Dataset, layers: &[LayerReport], opts: &RankOptions) -> Result<StackReport> {
    if ds.n_rows() < opts.min_rows() {
        return Err(ModelError::TooFewRows {
            layer: "stack".to_string(),
            target: opts.target.clone(),
            rows: ds.n_rows(),
            min: opts.min_rows(),
        });
    }
    let split = Split::new(&ds.time, opts);
    let parts = Parts::new(ds, &split);
    let (xt, yt) = (parts.xt.view(), parts.yt.view());
    let gbm = fit_gbm(xt, yt, &split.train_time, opts);
    let pred = gbm.predict(parts.xh.view());
    let cv: Vec<f64> = split
        .folds
        .iter()
        .map(|(fit, held)| {
            let model = fit_gbm(
                xt.select(Axis(0), fit).view(),
                yt.select(Axis(0), fit).view(),
                &split.train_time.select(fit),
                opts,
            );
            let yv = yt.select(Axis(0), held).to_vec();
            r2(&yv, &model.predict(xt.select(Axis(0), held).view()))
        })
        .collect();

    let shap = mean_abs_shap(&gbm, parts.xh.view(), opts.shap_rows, opts.seed);
    let total: f64 = shap.iter().sum();
    if !(total > 0.0 && total.is_finite()) {
        return Err(model_err(
            "stack",
            "no feature has a positive SHAP importance",
        ));
    }
    let share_of = |layer: &str| -> f64 {
        (0..ds.n_features())
            .filter(|&j| ds.layers[j] == layer)
            .map(|j| shap[j])
            .sum::<f64>()
            / total
    };
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
    Ok(StackReport {
        quality: quality(&parts.yh, &pred, &cv),
        context_r2: r2_on_columns(&parts, &split, &context, opts),
        context_share: share_of(CONTEXT),
        layers: shares,
    })
}
