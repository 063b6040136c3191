//! CSV with a header row; an empty field is null. Floats are written in their shortest exact form.

use std::path::Path;
use std::str::FromStr;

use crate::error::{Error, Result};
use datasets::output::{Existing, Output};

use super::meta::{empty_features, read_sidecar, write_sidecar};
use crate::InputError;
use crate::matrix::{BASE_COLUMNS, FeatureMatrix, OPTIONAL_COLUMNS};

pub fn write(matrix: &FeatureMatrix, path: &Path, existing: Existing) -> Result<()> {
    let mut w = csv::Writer::from_writer(Output::create(path, existing)?);
    let header = BASE_COLUMNS
        .iter()
        .copied()
        .chain(matrix.features.iter().map(|f| f.column.as_str()));
    w.write_record(header).map_err(|e| Error::write(path, e))?;
    let mut record: Vec<String> = Vec::with_capacity(BASE_COLUMNS.len() + matrix.features.len());
    for i in 0..matrix.n_rows() {
        record.clear();
        record.push(matrix.op[i].clone());
        record.push(matrix.pid[i].to_string());
        record.push(matrix.tid[i].to_string());
        record.push(matrix.ts_ns[i].to_string());
        record.push(matrix.dur_ns[i].to_string());
        record.push(matrix.file[i].clone().unwrap_or_default());
        record.push(matrix.size[i].map(|v| v.to_string()).unwrap_or_default());
        record.push(
            matrix.bandwidth_mibs[i]
                .map(|v| v.to_string())
                .unwrap_or_default(),
        );
        record.push(matrix.direct[i].map(|v| v.to_string()).unwrap_or_default());
        record.push(
            matrix.sequential[i]
                .map(|v| v.to_string())
                .unwrap_or_default(),
        );
        record.push(matrix.run[i].clone().unwrap_or_default());
        record.push(matrix.thread[i].clone().unwrap_or_default());
        record.push(matrix.process[i].clone().unwrap_or_default());
        record.push(matrix.self_ns[i].to_string());
        record.extend(matrix.features.iter().map(|f| f.values[i].to_string()));
        w.write_record(&record).map_err(|e| Error::write(path, e))?;
    }
    let file = w
        .into_inner()
        .map_err(|e| Error::write(path, e.into_error()))?;
    write_sidecar(matrix, path, existing)?;
    Ok(file.commit()?)
}

pub fn read(path: &Path) -> Result<FeatureMatrix> {
    let meta = read_sidecar(path)?;
    let mut r = csv::Reader::from_path(path)
        .map_err(|e| InputError::new(path, None, None, e.to_string()))?;
    let header = r
        .headers()
        .map_err(|e| InputError::new(path, Some(1), None, e.to_string()))?
        .clone();
    let find = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| InputError::new(path, Some(1), Some(name), "column is missing"))
    };
    let mut base = std::collections::HashMap::new();
    for c in BASE_COLUMNS {
        match find(c) {
            Ok(i) => {
                base.insert(c, i);
            }
            Err(_) if OPTIONAL_COLUMNS.contains(&c) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let mut matrix = FeatureMatrix {
        features: empty_features(&meta),
        ..Default::default()
    };
    let feat: Vec<usize> = matrix
        .features
        .iter()
        .map(|f| find(&f.column))
        .collect::<Result<_, _>>()?;
    for record in r.records() {
        let record = record.map_err(|e| {
            let line = e.position().map(|p| p.line());
            InputError::new(path, line, None, e.to_string())
        })?;
        let line = record.position().map(|p| p.line());
        let field = |col: usize| record.get(col).unwrap_or("");
        let opt = |col: usize| Some(field(col)).filter(|v| !v.is_empty());
        let num = |col: usize, name: &str| parse_num::<u64>(path, line, name, field(col));
        matrix.op.push(field(base["op"]).to_owned());
        matrix.pid.push(num(base["pid"], "pid")?);
        matrix.tid.push(num(base["tid"], "tid")?);
        matrix.ts_ns.push(num(base["ts"], "ts")?);
        matrix.dur_ns.push(num(base["dur"], "dur")?);
        matrix.file.push(opt(base["file"]).map(str::to_owned));
        matrix
            .size
            .push(parse_opt(path, line, "size", opt(base["size"]))?);
        matrix
            .bandwidth_mibs
            .push(parse_opt(path, line, "bandwidth", opt(base["bandwidth"]))?);
        matrix
            .direct
            .push(parse_opt(path, line, "direct", opt(base["direct"]))?);
        matrix.sequential.push(parse_opt(
            path,
            line,
            "sequential",
            opt(base["sequential"]),
        )?);
        matrix.run.push(opt(base["run"]).map(str::to_owned));
        matrix
            .thread
            .push(base.get("thread").and_then(|&c| opt(c)).map(str::to_owned));
        matrix
            .process
            .push(base.get("process").and_then(|&c| opt(c)).map(str::to_owned));
        matrix.self_ns.push(num(base["self_ns"], "self_ns")?);
        for (f, &col) in matrix.features.iter_mut().zip(&feat) {
            f.values.push(parse_num(path, line, &f.column, field(col))?);
        }
    }
    Ok(matrix)
}

/// An optional column's value: `None` for an empty field.
fn parse_opt<T: FromStr>(
    path: &Path,
    line: Option<u64>,
    field: &str,
    text: Option<&str>,
) -> Result<Option<T>, InputError>
where
    T::Err: std::fmt::Display,
{
    text.map(|v| parse_num(path, line, field, v)).transpose()
}

fn parse_num<T: FromStr>(
    path: &Path,
    line: Option<u64>,
    field: &str,
    text: &str,
) -> Result<T, InputError>
where
    T::Err: std::fmt::Display,
{
    text.parse()
        .map_err(|e| InputError::new(path, line, Some(field), format!("`{text}`: {e}")))
}
