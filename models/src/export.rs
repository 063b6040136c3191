//! Writes one layer's modelling dataset as CSV (features, `y`, `split`, and `row`, `ts`, `group`: the
//! matrix row, its timestamp and the run or file within which the split was made), the rows and
//! split that `rank` uses, so other tools (the scikit-learn reference) can fit and check the same numbers.
use crate::dataset::Dataset;
use crate::split::{SplitKind, train_test};
use std::io::Write;

pub fn write_csv(
    ds: &Dataset,
    split: SplitKind,
    test_fraction: f64,
    seed: u64,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let (_, test) = train_test(split, &ds.time, test_fraction, seed);
    let mut is_test = vec![false; ds.n_rows()];
    for t in test {
        is_test[t] = true;
    }
    writeln!(out, "{},y,split,row,ts,group", ds.feature_names.join(","))?;
    for (i, row) in ds.x.rows().into_iter().enumerate() {
        for v in row {
            write!(out, "{v:?},")?;
        }
        writeln!(
            out,
            "{:?},{},{},{},{}",
            ds.y[i],
            if is_test[i] { "test" } else { "train" },
            ds.rows[i],
            ds.time.ts[i],
            csv_field(ds.time.group_name(i)),
        )?;
    }
    Ok(())
}

/// A field quoted as RFC 4180 wants when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
