//! The edge with `features`: a FeatureMatrix becomes one Dataset per layer, or one over several layers
//! for the stack model, and the calls' kinds and exclusive times the stack model reports by.
use crate::dataset::{CONTEXT, Column, Dataset};
use crate::error::{ModelError, Result};
use crate::options::RankOptions;
use crate::split::Timeline;
use crate::stack::Calls;
use features::{FeatureKind, FeatureMatrix};

/// The pseudo-layer of `self_ns`: the part of a call's time that no layer accounts for, its own work.
/// It is ranked like a layer wherever the matrix has exclusive times, since only then is `self_ns` what
/// the layers leave over rather than the whole duration.
pub const SELF: &str = "self";

/// The matrix's layers, and [`SELF`] after them where the matrix has exclusive times.
fn layers_of(matrix: &FeatureMatrix) -> Vec<String> {
    let mut layers = matrix.layers();
    if matrix
        .features
        .iter()
        .any(|f| f.kind == FeatureKind::ExclusiveNs)
    {
        layers.push(SELF.to_string());
    }
    layers
}

/// The target per row (None where the row has none), and the feature column it came from, if any.
pub(crate) fn target_of<'a>(
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
    let present = layers_of(matrix);
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

/// The run (or, without one, the file) within which calls are ordered in time and the held-out
/// share is taken; `held_out` (one flag per row, or empty) marks the held-out rows instead.
fn timeline(matrix: &FeatureMatrix, held_out: &[bool]) -> Timeline {
    let group = matrix
        .run
        .iter()
        .zip(&matrix.file)
        .map(|(run, file)| run.as_deref().or(file.as_deref()).unwrap_or(""));
    let time = Timeline::new(matrix.ts_ns.clone(), group);
    if held_out.is_empty() {
        time
    } else {
        time.with_held_out(held_out.to_vec())
    }
}

/// The call's context ([`features::CONTEXT_COLUMNS`]) as numeric columns: one indicator per operation,
/// the transfer size (0 for calls that move no bytes), and `direct` and `sequential` as 1 or 0 (½ when
/// unknown).
fn context_of(matrix: &FeatureMatrix) -> Vec<(String, Vec<f64>)> {
    let flag =
        |v: &[Option<bool>]| -> Vec<f64> { v.iter().map(|b| b.map_or(0.5, f64::from)).collect() };
    let mut ops: Vec<&str> = matrix.op.iter().map(String::as_str).collect();
    ops.sort_unstable();
    ops.dedup();
    let mut columns: Vec<(String, Vec<f64>)> = ops
        .iter()
        .map(|&op| {
            let values = matrix.op.iter().map(|o| f64::from(o == op)).collect();
            (format!("op={op}"), values)
        })
        .collect();
    columns.push((
        "size".to_string(),
        matrix.size.iter().map(|s| s.unwrap_or(0) as f64).collect(),
    ));
    columns.push(("direct".to_string(), flag(&matrix.direct)));
    columns.push(("sequential".to_string(), flag(&matrix.sequential)));
    columns
}

/// The feature columns of `layers` and the context columns that vary over the rows with a target
/// (the target itself left out), over those rows; `held_out` as [`timeline`] takes it.
pub(crate) fn dataset_of(
    matrix: &FeatureMatrix,
    held_out: &[bool],
    label: &str,
    layers: &[&str],
    drop_constant: bool,
    opts: &RankOptions,
) -> Result<Dataset> {
    let (target, target_column) = target_of(matrix, &opts.target)?;
    let context = context_of(matrix);
    let varies = |v: &[f64]| {
        let mut with_target = target.iter().zip(v).filter(|(t, _)| t.is_some());
        let first = with_target.next().map(|(_, &x)| x);
        with_target.any(|(_, &x)| Some(x) != first)
    };
    let with_self = layers.contains(&SELF);
    let self_ns: Vec<f64> = if with_self {
        matrix.self_ns.iter().map(|&ns| ns as f64).collect()
    } else {
        Vec::new()
    };
    let mut own: Vec<Column<'_>> = matrix
        .features
        .iter()
        .filter(|f| layers.contains(&f.layer.as_str()) && Some(f.column.as_str()) != target_column)
        .map(|f| Column {
            name: &f.column,
            layer: &f.layer,
            values: &f.values,
        })
        .collect();
    if with_self {
        own.push(Column {
            name: "self_ns",
            layer: SELF,
            values: &self_ns,
        });
    }
    if own.is_empty() {
        return Err(ModelError::EmptyLayer {
            layer: label.to_string(),
            available: layers_of(matrix).join(", "),
        });
    }
    let mut columns: Vec<Column<'_>> = context
        .iter()
        .filter(|(name, v)| *name != opts.target && varies(v))
        .map(|(name, v)| Column {
            name,
            layer: CONTEXT,
            values: v,
        })
        .collect();
    let n_context = columns.len();
    columns.extend(own);
    let ds = Dataset::build(
        label,
        &opts.target,
        &target,
        &timeline(matrix, held_out),
        &columns,
        drop_constant,
    )?;
    if ds.layers.iter().all(|l| l == CONTEXT) {
        return Err(ModelError::AllConstant {
            layer: label.to_string(),
            columns: columns.len() - n_context,
        });
    }
    Ok(ds)
}

/// Over `rows` of the matrix: the kind of each call (operation, and buffered or direct), its duration,
/// and each layer's exclusive time in it.
pub(crate) fn calls_of(matrix: &FeatureMatrix, rows: &[usize]) -> Calls {
    let mode = |direct: Option<bool>| match direct {
        Some(true) => "direct",
        Some(false) => "buffered",
        None => "unknown",
    };
    let mut exclusive_ns: Vec<(String, Vec<f64>)> = matrix
        .features
        .iter()
        .filter(|f| f.kind == FeatureKind::ExclusiveNs)
        .map(|f| (f.layer.clone(), rows.iter().map(|&r| f.values[r]).collect()))
        .collect();
    exclusive_ns.push((
        SELF.to_string(),
        rows.iter().map(|&r| matrix.self_ns[r] as f64).collect(),
    ));
    Calls {
        group: rows
            .iter()
            .map(|&r| format!("{} {}", matrix.op[r], mode(matrix.direct[r])))
            .collect(),
        dur_ns: rows.iter().map(|&r| matrix.dur_ns[r] as f64).collect(),
        exclusive_ns,
    }
}

/// One layer's feature columns and the context columns, with the target, over the rows that have one.
pub fn layer_dataset(matrix: &FeatureMatrix, layer: &str, opts: &RankOptions) -> Result<Dataset> {
    dataset_of(matrix, &[], layer, &[layer], opts.drop_constant, opts)
}
