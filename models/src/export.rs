//! Writes one layer's modelling dataset as CSV (features, `y`, `split`), the rows and split that
//! `rank` uses, so other tools (the scikit-learn reference) can fit the very same numbers.
use crate::dataset::Dataset;
use crate::split::train_test;
use std::io::Write;

pub fn write_csv(
    ds: &Dataset,
    test_fraction: f64,
    seed: u64,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let (_, test) = train_test(ds.n_rows(), test_fraction, seed);
    let mut is_test = vec![false; ds.n_rows()];
    for t in test {
        is_test[t] = true;
    }
    writeln!(out, "{},y,split", ds.feature_names.join(","))?;
    for (i, row) in ds.x.rows().into_iter().enumerate() {
        for v in row {
            write!(out, "{v:?},")?;
        }
        writeln!(
            out,
            "{:?},{}",
            ds.y[i],
            if is_test[i] { "test" } else { "train" }
        )?;
    }
    Ok(())
}
