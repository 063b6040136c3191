//! `dc-model rules`: what sets the slowest calls apart, as rules a person can read. A call is slow
//! when its target (bandwidth) is among the lowest 10% of its kind of call (same op and size):
//! the threshold of each kind is taken on the training rows alone, and only kinds with at least
//! ten training calls whose targets differ have one (a kind of zero-byte reads has no slow call). A shallow decision tree
//! (linfa-trees, Gini) learns slow against the rest on the training rows; each of its leaves that
//! predicts slow is one rule, the conditions on the path to it, judged on the held-out rows.

use std::collections::HashMap;

use linfa::prelude::*;
use linfa_trees::{DecisionTree, TreeNode};
use ndarray::{Array1, Axis};
use serde::Serialize;

use crate::dataset::{CONTEXT, Dataset};
use crate::error::{Result, model_err};
use crate::fit::Split;
use crate::interrupt;
use crate::options::RankOptions;

/// The share of each kind's training calls that are slow.
pub const SLOW_SHARE: f64 = 0.1;
/// Rules of at most three conditions.
pub const DEPTH: usize = 3;
/// The context columns that define a kind of call.
const KIND_COLUMNS: [&str; 2] = ["op", "size"];
/// Training calls a kind needs for its slowest 10% to be at least one call.
const MIN_KIND_CALLS: usize = 10;

#[derive(Debug, Clone, Serialize)]
pub struct RulesReport {
    pub layer: String,
    pub slow_share: f64,
    pub depth: usize,
    /// Slow calls among the training and the held-out rows.
    pub slow_train: usize,
    pub slow_test: usize,
    /// Rows of a kind of call without a threshold (fewer than ten training calls, or all with one
    /// target): left out of the tree and of its judgement.
    pub unjudged_train: usize,
    pub unjudged_test: usize,
    /// The tree as a whole on the held-out rows.
    pub precision: Option<f64>,
    pub recall: Option<f64>,
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Rule {
    pub conditions: Vec<Condition>,
    /// Held-out rows the rule matches, and how many of them are slow.
    pub matched: usize,
    pub slow: usize,
    pub precision: Option<f64>,
    pub recall: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Condition {
    pub feature: String,
    /// The feature's column in the dataset.
    #[serde(skip)]
    pub column: usize,
    /// `<=` or `>`.
    pub op: &'static str,
    pub value: f64,
}

impl Rule {
    /// "`a` <= 1.5 and `b` > 2".
    pub fn text(&self) -> String {
        let parts: Vec<String> = self
            .conditions
            .iter()
            .map(|c| format!("`{}` {} {}", c.feature, c.op, c.value))
            .collect();
        parts.join(" and ")
    }
}

/// The kind of each row: its values of the op and size context columns.
fn kinds(ds: &Dataset) -> Vec<Vec<u64>> {
    let cols: Vec<usize> = (0..ds.n_features())
        .filter(|&j| {
            ds.layers[j] == CONTEXT && KIND_COLUMNS.contains(&ds.feature_names[j].as_str())
        })
        .collect();
    (0..ds.n_rows())
        .map(|r| cols.iter().map(|&j| ds.x[(r, j)].to_bits()).collect())
        .collect()
}

/// Per row, whether it is slow (`None`: a kind without a threshold). A kind's threshold is the
/// `ceil(SLOW_SHARE · n)`-th lowest of its `n` training targets; its calls at or below it are slow.
pub fn slow_labels(ds: &Dataset, train: &[usize]) -> Vec<Option<bool>> {
    let kind = kinds(ds);
    let mut by_kind: HashMap<&[u64], Vec<usize>> = HashMap::new();
    for &r in train {
        by_kind.entry(&kind[r]).or_default().push(r);
    }
    let threshold: HashMap<&[u64], f64> = by_kind
        .into_iter()
        .filter_map(|(k, mut rows)| {
            rows.sort_by(|&a, &b| ds.y[a].total_cmp(&ds.y[b]));
            let (lowest, highest) = (ds.y[rows[0]], ds.y[rows[rows.len() - 1]]);
            if rows.len() < MIN_KIND_CALLS || lowest == highest {
                return None;
            }
            let n = (SLOW_SHARE * rows.len() as f64).ceil() as usize;
            Some((k, ds.y[rows[n - 1]]))
        })
        .collect();
    (0..ds.n_rows())
        .map(|r| threshold.get(kind[r].as_slice()).map(|&t| ds.y[r] <= t))
        .collect()
}

fn paths(
    node: &TreeNode<f64, bool>,
    names: &[String],
    path: &mut Vec<Condition>,
    out: &mut Vec<Vec<Condition>>,
) {
    if node.is_leaf() {
        if node.prediction() == Some(true) {
            out.push(path.clone());
        }
        return;
    }
    let (feature, value, _) = node.split();
    for (child, op) in node.children().into_iter().zip(["<=", ">"]) {
        if let Some(child) = child {
            path.push(Condition {
                feature: names[feature].clone(),
                column: feature,
                op,
                value,
            });
            paths(child, names, path, out);
            path.pop();
        }
    }
}

fn matches(conditions: &[Condition], ds: &Dataset, r: usize) -> bool {
    conditions.iter().all(|c| {
        let v = ds.x[(r, c.column)];
        if c.op == "<=" {
            v <= c.value
        } else {
            v > c.value
        }
    })
}

fn ratio(num: usize, den: usize) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// Learns the rules on the training rows of `ds` (the rank split of `opts`) and judges them on its
/// held-out rows.
pub fn learn(layer: &str, ds: &Dataset, opts: &RankOptions) -> Result<RulesReport> {
    opts.validate()?;
    opts.enough_rows(layer, "the rules", ds.n_rows(), false)?;
    let split = &Split::new(&ds.time, opts);
    let labels = slow_labels(ds, &split.train);
    let judged_train: Vec<usize> = (split.train.iter().copied())
        .filter(|&r| labels[r].is_some())
        .collect();
    let yt: Array1<bool> = judged_train
        .iter()
        .map(|&r| labels[r] == Some(true))
        .collect();
    let slow_train = yt.iter().filter(|&&s| s).count();
    if slow_train == 0 || slow_train == yt.len() {
        return Err(model_err(
            layer,
            "rules: the training rows are all slow or all not",
        ));
    }
    let train = linfa::Dataset::new(ds.x.select(Axis(0), &judged_train), yt);
    let tree = DecisionTree::params()
        .max_depth(Some(DEPTH))
        .fit(&train)
        .map_err(|e| model_err(layer, format!("rules: {e}")))?;
    interrupt::check()?;
    let mut found = Vec::new();
    paths(
        tree.root_node(),
        &ds.feature_names,
        &mut Vec::new(),
        &mut found,
    );
    let judged: Vec<usize> = split
        .test
        .iter()
        .copied()
        .filter(|&r| labels[r].is_some())
        .collect();
    let slow_test = judged.iter().filter(|&&r| labels[r] == Some(true)).count();
    let rules: Vec<Rule> = found
        .into_iter()
        .map(|conditions| {
            let hits: Vec<usize> = judged
                .iter()
                .copied()
                .filter(|&r| matches(&conditions, ds, r))
                .collect();
            let slow = hits.iter().filter(|&&r| labels[r] == Some(true)).count();
            Rule {
                matched: hits.len(),
                slow,
                precision: ratio(slow, hits.len()),
                recall: ratio(slow, slow_test),
                conditions,
            }
        })
        .collect();
    // The tree's leaves do not overlap: the calls it flags as slow are the rules' matches added up.
    let flagged: usize = rules.iter().map(|r| r.matched).sum();
    let right: usize = rules.iter().map(|r| r.slow).sum();
    Ok(RulesReport {
        layer: layer.to_string(),
        slow_share: SLOW_SHARE,
        depth: DEPTH,
        slow_train,
        slow_test,
        unjudged_train: split.train.len() - judged_train.len(),
        unjudged_test: split.test.len() - judged.len(),
        precision: ratio(right, flagged),
        recall: ratio(right, slow_test),
        rules,
    })
}
