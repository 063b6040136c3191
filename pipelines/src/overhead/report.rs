//! What `dc-pipeline overhead` writes: `overhead.json` ([`OverheadReport`]) and `overhead.md`, one table per run, a
//! row per setup and, per figure, its median (range) and its median over the untraced median. It imports nothing
//! of [`super`], which measures and fills it.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// `overhead.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct OverheadReport {
    pub rounds: u32,
    /// The 1-minute load average read before each attempt: the lowest and the highest.
    pub load_average: (f64, f64),
    pub rows: Vec<Overhead>,
}

/// One figure of one run in one setup.
#[derive(Debug, Serialize, Deserialize)]
pub struct Overhead {
    pub run: String,
    pub name: String,
    pub label: String,
    pub setup: String,
    /// dc-trace's layers; empty when dc-trace did not trace.
    pub layers: Vec<String>,
    /// Whether the application's own tracer was on.
    pub app_tracer: bool,
    pub values: Vec<Attempt>,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// The median of the attempts' ratios (1 for untraced).
    pub ratio: f64,
}

/// A value and the attempt's directory (under the output folder), whose `app.out` and `app.err` hold it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Attempt {
    pub dir: String,
    pub value: f64,
    /// The value over the mean of the untraced attempts run just before and just after it; none for those.
    pub ratio: Option<f64>,
}

pub fn markdown(r: &OverheadReport) -> String {
    let mut s = format!(
        "{} round(s); each round runs every setup once, each on a fresh setup and between two untraced \
         attempts, in reverse order every other round. Each cell is the application's own figure, median \
         (min–max), and × is the median over the rounds of the figure over the mean of the two untraced \
         attempts around it. Load average (1 min) before the attempts: {:.2}–{:.2}.\n",
        r.rounds, r.load_average.0, r.load_average.1
    );
    let mut runs: Vec<&str> = r.rows.iter().map(|o| o.run.as_str()).collect();
    runs.dedup();
    for run in runs {
        let rows: Vec<&Overhead> = r.rows.iter().filter(|o| o.run == run).collect();
        // A figure the application reports as 0 everywhere (fio's reads in a write-only job) says nothing.
        let mut figures: Vec<(&str, &str)> = rows
            .iter()
            .filter(|o| o.values.iter().any(|a| a.value != 0.0))
            .map(|o| (o.name.as_str(), o.label.as_str()))
            .collect();
        figures.dedup();
        let mut setups: Vec<(&str, String)> = Vec::new();
        for o in &rows {
            if !setups.iter().any(|(name, _)| *name == o.setup) {
                setups.push((&o.setup, o.layers.join(", ")));
            }
        }
        let _ = write!(s, "\n`{run}`:\n\n| setup | layers |");
        for (name, label) in &figures {
            let sep = if label.is_empty() { "" } else { " " };
            let _ = write!(s, " {name}{sep}{label} | × |");
        }
        s.push_str("\n|---|---|");
        s.push_str(&"---:|---:|".repeat(figures.len()));
        s.push('\n');
        for (setup, layers) in &setups {
            let _ = write!(s, "| {setup} | {layers} |");
            for (name, label) in &figures {
                match rows
                    .iter()
                    .find(|o| o.setup == *setup && o.name == *name && o.label == *label)
                {
                    Some(o) => {
                        let _ = write!(
                            s,
                            " {} ({}–{}) | {:.2} |",
                            number(o.median),
                            number(o.min),
                            number(o.max),
                            o.ratio
                        );
                    }
                    None => s.push_str(" | |"),
                }
            }
            s.push('\n');
        }
    }
    s
}

/// Thousands grouped above 1,000; two decimals below 100 (DLIO's samples/s).
fn number(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    if v.abs() < 100.0 {
        return format!("{v:.2}");
    }
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 { format!("-{out}") } else { out }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(setup: &str, layers: &[&str], values: &[f64], ratio: f64) -> Overhead {
        Overhead {
            run: "db".into(),
            name: "ops/s".into(),
            label: "fillseq".into(),
            setup: setup.into(),
            layers: layers.iter().map(|l| l.to_string()).collect(),
            app_tracer: false,
            values: values
                .iter()
                .map(|&value| Attempt {
                    dir: "d".into(),
                    value,
                    ratio: None,
                })
                .collect(),
            median: values[values.len() / 2],
            min: values[0],
            max: values[values.len() - 1],
            ratio,
        }
    }

    #[test]
    fn one_row_per_setup_with_median_range_and_ratio() {
        let r = OverheadReport {
            rounds: 3,
            load_average: (0.5, 1.25),
            rows: vec![
                row("untraced", &[], &[334_735.0, 350_000.0, 368_199.0], 1.0),
                row(
                    "dc-trace: sys",
                    &["sys"],
                    &[223_332.0, 230_000.0, 235_960.0],
                    230_000.0 / 350_000.0,
                ),
            ],
        };
        let md = markdown(&r);
        let lines: Vec<&str> = md.lines().collect();
        assert!(lines[0].ends_with("Load average (1 min) before the attempts: 0.50–1.25."));
        assert_eq!(
            &lines[2..],
            [
                "`db`:",
                "",
                "| setup | layers | ops/s fillseq | × |",
                "|---|---|---:|---:|",
                "| untraced |  | 350,000 (334,735–368,199) | 1.00 |",
                "| dc-trace: sys | sys | 230,000 (223,332–235,960) | 0.66 |",
            ]
        );
        assert_eq!(number(66.637), "66.64");
        assert_eq!(number(2_042_337.4), "2,042,337");
    }
}
