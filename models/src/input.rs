//! The edge with `features`: a FeatureMatrix becomes one Dataset per layer, and the report is assembled.
use crate::autoreg::{self, Series};
use crate::dataset::{Column, Dataset};
use crate::error::{ModelError, Result};
use crate::rank::{RankOptions, rank_dataset};
use crate::report::{RankReport, SkippedLayer};
use features::FeatureMatrix;
use rayon::prelude::*;

/// The target per row (None where the row has none), and the feature column it came from, if any.
fn target_of<'a>(
    matrix: &'a FeatureMatrix,
    target: &str,
) -> Result<(Vec<Option<f64>>, Option<&'a str>)> {
    let values = match target {
        "bandwidth" => matrix.bandwidth_mibs.clone(),
        "duration" | "dur" => matrix.dur_ns.iter().map(|&d| Some(d as f64)).collect(),
        "size" => matrix.size.iter().map(|s| s.map(|v| v as f64)).collect(),
        name => {
            let col = matrix
                .features
                .iter()
                .find(|f| f.column == name)
                .ok_or_else(|| ModelError::Target {
                    target: name.to_string(),
                    reason:
                        "is neither bandwidth, duration, size nor a feature column of the matrix"
                            .to_string(),
                })?;
            return Ok((
                col.values.iter().map(|&v| Some(v)).collect(),
                Some(&col.column),
            ));
        }
    };
    Ok((values, None))
}

/// The layers asked for, every layer for `all`; an unknown layer is an error naming those present.
pub fn resolve_layers(matrix: &FeatureMatrix, asked: &[String]) -> Result<Vec<String>> {
    let present = matrix.layers();
    if asked.is_empty() || asked.iter().any(|l| l == "all") {
        if present.is_empty() {
            return Err(ModelError::EmptyLayer {
                layer: "all".to_string(),
                available: "none".to_string(),
            });
        }
        return Ok(present);
    }
    for l in asked {
        if !present.contains(l) {
            return Err(ModelError::EmptyLayer {
                layer: l.clone(),
                available: present.join(", "),
            });
        }
    }
    Ok(asked.to_vec())
}

/// One layer's feature columns and the target, over the rows that have a target.
pub fn layer_dataset(matrix: &FeatureMatrix, layer: &str, opts: &RankOptions) -> Result<Dataset> {
    let (target, target_column) = target_of(matrix, &opts.target)?;
    let columns: Vec<Column<'_>> = matrix
        .features
        .iter()
        .filter(|f| f.layer == layer && Some(f.column.as_str()) != target_column)
        .map(|f| Column {
            name: &f.column,
            layer: &f.layer,
            values: &f.values,
        })
        .collect();
    if columns.is_empty() {
        return Err(ModelError::EmptyLayer {
            layer: layer.to_string(),
            available: matrix.layers().join(", "),
        });
    }
    Dataset::build(layer, &opts.target, &target, &columns, opts.drop_constant)
}

/// Ranks the features of each layer asked for by how much they explain the target.
pub fn rank(matrix: &FeatureMatrix, opts: &RankOptions) -> Result<RankReport> {
    opts.validate()?;
    let layers = resolve_layers(matrix, &opts.layers)?;
    let (target, _) = target_of(matrix, &opts.target)?;
    let every = opts.layers.is_empty() || opts.layers.iter().any(|l| l == "all");
    let mut datasets = Vec::new();
    let mut skipped_layers = Vec::new();
    for layer in &layers {
        match layer_dataset(matrix, layer, opts) {
            Ok(ds) => datasets.push((layer, ds)),
            Err(e @ ModelError::AllConstant { .. }) if every => skipped_layers.push(SkippedLayer {
                layer: layer.clone(),
                reason: e.to_string(),
            }),
            Err(e) => return Err(e),
        }
    }
    if datasets.is_empty() {
        return Err(ModelError::Target {
            target: opts.target.clone(),
            reason: format!(
                "no layer has a feature that varies over the rows with a target: {}",
                skipped_layers
                    .iter()
                    .map(|s| s.layer.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    let reports = datasets
        .par_iter()
        .map(|(l, ds)| rank_dataset(l, ds, opts))
        .collect::<Result<Vec<_>>>()?;
    let series = Series {
        target: &target,
        file: &matrix.file,
        ts_ns: &matrix.ts_ns,
    };
    Ok(RankReport {
        target: opts.target.clone(),
        importance: opts.importance,
        cumulative: opts.cumulative,
        folds: opts.folds,
        seed: opts.seed,
        test_fraction: opts.test_fraction,
        rows_total: matrix.n_rows(),
        autoregression: autoreg::fit(&series, opts.autoregression_lags, opts.test_fraction),
        layers: reports,
        skipped_layers,
    })
}
