//! The application's own figures (pgbench's tps, db_bench's ops/s, fio's bandwidth, DLIO's samples/s), read
//! from its output.

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Metric;

/// One figure of one run, as `runs/<id>/metrics.json` lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricValue {
    pub name: String,
    /// What the `label` group captured (db_bench's benchmark, fio's direction); empty without one.
    pub label: String,
    pub value: f64,
}

/// The figures of a run whose command wrote `dir/app.out` and `dir/app.err`: its standard output, then its
/// standard error (where DLIO's logger writes its figures).
pub fn read_run(metrics: &[Metric], dir: &Path) -> Vec<MetricValue> {
    ["app.out", "app.err"]
        .iter()
        .flat_map(|f| {
            read(
                metrics,
                &fs::read_to_string(dir.join(f)).unwrap_or_default(),
            )
        })
        .collect()
}

/// Every match of every metric in `output`, in order.
pub fn read(metrics: &[Metric], output: &str) -> Vec<MetricValue> {
    let mut out = Vec::new();
    for m in metrics {
        for c in m.regex.0.captures_iter(output) {
            let Some(value) = c.name("value").and_then(|v| number(v.as_str())) else {
                continue;
            };
            out.push(MetricValue {
                name: m.name.clone(),
                label: c
                    .name("label")
                    .map(|l| l.as_str().to_string())
                    .unwrap_or_default(),
                value,
            });
        }
    }
    out
}

/// A number with an optional `k` or `M` (fio writes `IOPS=12.3k`).
fn number(s: &str) -> Option<f64> {
    let (n, scale) = match s.strip_suffix('k') {
        Some(n) => (n, 1e3),
        None => match s.strip_suffix('M') {
            Some(n) => (n, 1e6),
            None => (s, 1.0),
        },
    };
    n.parse::<f64>().ok().map(|v| v * scale)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::Pattern;

    #[test]
    fn each_match_is_a_value_with_its_label() {
        let m = Metric {
            name: "ops/s".into(),
            regex: Pattern(
                regex::Regex::new(
                    r"(?m)^(?P<label>\w+)\s+:\s+[\d.]+ micros/op (?P<value>\d+) ops/sec",
                )
                .unwrap(),
            ),
        };
        let text = "fillseq      :       2.893 micros/op 345610 ops/sec 0.579 seconds\nreadrandom   :       9.5 micros/op 105263 ops/sec\n";
        assert_eq!(
            read(&[m], text),
            [
                MetricValue {
                    name: "ops/s".into(),
                    label: "fillseq".into(),
                    value: 345610.0
                },
                MetricValue {
                    name: "ops/s".into(),
                    label: "readrandom".into(),
                    value: 105263.0
                }
            ]
        );
        assert_eq!(number("12.5k"), Some(12500.0));
    }
}
