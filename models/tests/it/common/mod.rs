//! Reads the datasets the scikit-learn reference script wrote, so both sides see the same numbers.
use models::Dataset;
use models::dataset::Column;
use models::split::Timeline;
use serde::Deserialize;
use std::path::PathBuf;

pub mod json;

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures")).join(name)
}

#[derive(Deserialize)]
pub struct Expected {
    pub features: Vec<String>,
    pub pearson: Vec<Vec<f64>>,
    pub spearman: Vec<Vec<f64>>,
    pub pca_explained_variance_ratio: Vec<f64>,
    pub lasso_alpha: f64,
    pub lasso_coef: Vec<f64>,
    pub lasso_intercept: f64,
    pub lasso_cv: LassoCv,
    pub gbm_test_r2: f64,
    pub lightgbm_test_r2: f64,
    #[serde(default)]
    pub informative: Vec<String>,
}

/// scikit-learn's LassoCV on the standardized training rows, folds contiguous in time.
#[derive(Deserialize)]
pub struct LassoCv {
    pub alphas: Vec<f64>,
    pub cv_mse: Vec<f64>,
    pub alpha: f64,
}

pub struct Fixture {
    pub data: Dataset,
    /// Positions of the rows the reference held out.
    pub test: Vec<usize>,
    pub train: Vec<usize>,
    pub expected: Expected,
}

pub fn load(stem: &str) -> Fixture {
    let mut reader = csv::Reader::from_path(fixture(&format!("{stem}.csv"))).expect("fixture csv");
    let header: Vec<String> = reader
        .headers()
        .expect("header")
        .iter()
        .map(str::to_string)
        .collect();
    let p = header.iter().position(|h| h == "y").expect("a y column");
    let mut cols = vec![Vec::new(); p];
    let mut y = Vec::new();
    let (mut train, mut test) = (Vec::new(), Vec::new());
    let (mut ts, mut group) = (Vec::new(), Vec::new());
    for (i, rec) in reader.records().enumerate() {
        let rec = rec.expect("record");
        for (j, c) in cols.iter_mut().enumerate() {
            c.push(rec[j].parse::<f64>().expect("number"));
        }
        y.push(Some(rec[p].parse::<f64>().expect("target")));
        if &rec[p + 1] == "test" {
            test.push(i)
        } else {
            train.push(i)
        }
        ts.push(rec[p + 3].parse::<u64>().expect("ts"));
        group.push(rec[p + 4].to_string());
    }
    let time = Timeline::new(ts, group.iter().map(String::as_str));
    let columns: Vec<Column<'_>> = (0..p)
        .map(|j| Column {
            name: &header[j],
            layer: "fixture",
            values: &cols[j],
        })
        .collect();
    let data = Dataset::build("fixture", "y", &y, &time, &columns, false).expect("valid fixture");
    let text =
        std::fs::read_to_string(fixture(&format!("{stem}.expected.json"))).expect("expected json");
    Fixture {
        data,
        test,
        train,
        expected: serde_json::from_str(&text).expect("expected json parses"),
    }
}
