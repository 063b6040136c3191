//! The numeric core every model reads: one layer's features and the target, checked once.
use crate::error::{ModelError, Result};
use crate::split::Timeline;
use ndarray::{Array1, Array2, ArrayView1};

/// The layer name of the context columns (op, size, ...), which every layer's model also sees.
pub const CONTEXT: &str = "context";

/// Rows that carry a target, the feature columns of the layers asked for, and where each row came from.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub x: Array2<f64>,
    pub y: Array1<f64>,
    pub feature_names: Vec<String>,
    /// Layer of each feature column.
    pub layers: Vec<String>,
    /// Index of each row in the source matrix, so reports can point back at it.
    pub rows: Vec<usize>,
    /// Timestamp and run (or file) of each row.
    pub time: Timeline,
    /// Columns left out because they did not vary.
    pub dropped_constant: Vec<String>,
}

/// One candidate feature column before the rows without a target are removed.
pub struct Column<'a> {
    pub name: &'a str,
    pub layer: &'a str,
    pub values: &'a [f64],
}

impl Dataset {
    /// Keeps the rows whose target is present, rejects non-finite values and handles constant columns.
    /// `time` has one entry per source row, like `target`.
    pub fn build(
        label: &str,
        target_name: &str,
        target: &[Option<f64>],
        time: &Timeline,
        columns: &[Column<'_>],
        drop_constant: bool,
    ) -> Result<Self> {
        assert_eq!(time.len(), target.len(), "one timestamp per target row");
        for c in columns {
            if c.values.len() != target.len() {
                return Err(ModelError::Target {
                    target: target_name.to_string(),
                    reason: format!(
                        "has {} rows but column {} has {}",
                        target.len(),
                        c.name,
                        c.values.len()
                    ),
                });
            }
        }
        let mut rows = Vec::new();
        let mut y = Vec::new();
        for (row, t) in target.iter().enumerate() {
            if let Some(v) = *t {
                if !v.is_finite() {
                    return Err(ModelError::NonFinite {
                        row,
                        column: target_name.to_string(),
                        value: v,
                    });
                }
                rows.push(row);
                y.push(v);
            }
        }
        if rows.is_empty() {
            return Err(ModelError::Target {
                target: target_name.to_string(),
                reason: format!("missing on all {} rows", target.len()),
            });
        }
        if y.iter().all(|&v| v == y[0]) {
            return Err(ModelError::Target {
                target: target_name.to_string(),
                reason: format!("constant ({}) over all {} rows that have it", y[0], y.len()),
            });
        }
        if columns.is_empty() {
            return Err(ModelError::EmptyLayer {
                layer: label.to_string(),
                available: "none".to_string(),
            });
        }
        let mut kept = Vec::new();
        let mut dropped_constant = Vec::new();
        for c in columns {
            for &row in &rows {
                let v = c.values[row];
                if !v.is_finite() {
                    return Err(ModelError::NonFinite {
                        row,
                        column: c.name.to_string(),
                        value: v,
                    });
                }
            }
            let first = c.values[rows[0]];
            if rows.iter().all(|&r| c.values[r] == first) {
                if !drop_constant {
                    return Err(ModelError::ConstantColumn {
                        layer: label.to_string(),
                        column: c.name.to_string(),
                        value: first,
                        rows: rows.len(),
                    });
                }
                dropped_constant.push(c.name.to_string());
            } else {
                kept.push(c);
            }
        }
        if kept.is_empty() {
            return Err(ModelError::AllConstant {
                layer: label.to_string(),
                columns: columns.len(),
            });
        }
        let x = Array2::from_shape_fn((rows.len(), kept.len()), |(i, j)| kept[j].values[rows[i]]);
        Ok(Self {
            x,
            y: Array1::from(y),
            feature_names: kept.iter().map(|c| c.name.to_string()).collect(),
            layers: kept.iter().map(|c| c.layer.to_string()).collect(),
            time: time.select(&rows),
            rows,
            dropped_constant,
        })
    }

    /// Rows, from the target: a fit may have taken `x` ([`crate::fit::Parts::take`]).
    pub fn n_rows(&self) -> usize {
        self.y.len()
    }

    pub fn n_features(&self) -> usize {
        self.feature_names.len()
    }

    /// The same rows restricted to some feature columns, in the order given.
    pub fn select_features(&self, cols: &[usize]) -> Self {
        Self {
            x: self.x.select(ndarray::Axis(1), cols),
            y: self.y.clone(),
            feature_names: cols
                .iter()
                .map(|&c| self.feature_names[c].clone())
                .collect(),
            layers: cols.iter().map(|&c| self.layers[c].clone()).collect(),
            rows: self.rows.clone(),
            time: self.time.clone(),
            dropped_constant: self.dropped_constant.clone(),
        }
    }

    pub fn column(&self, j: usize) -> ArrayView1<'_, f64> {
        self.x.column(j)
    }
}
