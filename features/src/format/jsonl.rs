//! JSON lines: one object per row, keys are the column names, null where a value is missing.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use crate::error::{Error, Result};
use datasets::output::{Existing, Output};
use serde_json::{Map, Value};

use super::meta::{empty_features, read_sidecar, write_sidecar};
use crate::InputError;
use crate::matrix::{FeatureMatrix, OPTIONAL_COLUMNS};

pub fn write(matrix: &FeatureMatrix, path: &Path, existing: Existing) -> Result<()> {
    let mut w = BufWriter::new(Output::create(path, existing)?);
    for i in 0..matrix.n_rows() {
        let mut row = Map::new();
        row.insert("op".into(), matrix.op[i].clone().into());
        row.insert("pid".into(), matrix.pid[i].into());
        row.insert("tid".into(), matrix.tid[i].into());
        row.insert("ts".into(), matrix.ts_ns[i].into());
        row.insert("dur".into(), matrix.dur_ns[i].into());
        row.insert("file".into(), matrix.file[i].clone().into());
        row.insert("size".into(), matrix.size[i].into());
        row.insert("bandwidth".into(), matrix.bandwidth_mibs[i].into());
        row.insert("direct".into(), matrix.direct[i].into());
        row.insert("sequential".into(), matrix.sequential[i].into());
        row.insert("run".into(), matrix.run[i].clone().into());
        row.insert("thread".into(), matrix.thread[i].clone().into());
        row.insert("process".into(), matrix.process[i].clone().into());
        row.insert("self_ns".into(), matrix.self_ns[i].into());
        for f in &matrix.features {
            row.insert(f.column.clone(), f.values[i].into());
        }
        serde_json::to_writer(&mut w, &row).map_err(|e| Error::write(path, e))?;
        w.write_all(b"\n").map_err(|e| Error::write(path, e))?;
    }
    let file = w
        .into_inner()
        .map_err(|e| Error::write(path, e.into_error()))?;
    write_sidecar(matrix, path, existing)?;
    Ok(file.commit()?)
}

pub fn read(path: &Path) -> Result<FeatureMatrix> {
    let meta = read_sidecar(path)?;
    let file = File::open(path).map_err(|e| InputError::new(path, None, None, e.to_string()))?;
    let mut matrix = FeatureMatrix {
        features: empty_features(&meta),
        ..Default::default()
    };
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line_no = Some(n as u64 + 1);
        let line = line.map_err(|e| InputError::new(path, line_no, None, e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        let row: Map<String, Value> = serde_json::from_str(&line)
            .map_err(|e| InputError::new(path, line_no, None, format!("not a JSON object: {e}")))?;
        let err = |field: &str, msg: &str| InputError::new(path, line_no, Some(field), msg);
        let get = |field: &str| row.get(field).ok_or_else(|| err(field, "missing"));
        let u64_of = |field: &str| {
            get(field)?
                .as_u64()
                .ok_or_else(|| err(field, "not an unsigned integer"))
        };
        let nullable = |field: &str| get(field).map(|v| Some(v).filter(|v| !v.is_null()));
        matrix.op.push(
            get("op")?
                .as_str()
                .ok_or_else(|| err("op", "not a string"))?
                .to_owned(),
        );
        matrix.pid.push(u64_of("pid")?);
        matrix.tid.push(u64_of("tid")?);
        matrix.ts_ns.push(u64_of("ts")?);
        matrix.dur_ns.push(u64_of("dur")?);
        matrix.file.push(
            nullable("file")?
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| err("file", "not a string"))
                })
                .transpose()?,
        );
        matrix.size.push(
            nullable("size")?
                .map(|v| v.as_i64().ok_or_else(|| err("size", "not an integer")))
                .transpose()?,
        );
        matrix.bandwidth_mibs.push(
            nullable("bandwidth")?
                .map(|v| v.as_f64().ok_or_else(|| err("bandwidth", "not a number")))
                .transpose()?,
        );
        let bool_of = |field: &str| {
            nullable(field)?
                .map(|v| v.as_bool().ok_or_else(|| err(field, "not a boolean")))
                .transpose()
        };
        matrix.direct.push(bool_of("direct")?);
        matrix.sequential.push(bool_of("sequential")?);
        let string_of = |field: &str| {
            nullable(field)?
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| err(field, "not a string"))
                })
                .transpose()
        };
        matrix.run.push(string_of("run")?);
        let optional_string_of = |field: &str| match row.get(field) {
            None if OPTIONAL_COLUMNS.contains(&field) => Ok(None),
            _ => string_of(field),
        };
        matrix.thread.push(optional_string_of("thread")?);
        matrix.process.push(optional_string_of("process")?);
        matrix.self_ns.push(u64_of("self_ns")?);
        for f in &mut matrix.features {
            let v = get(&f.column)?
                .as_f64()
                .ok_or_else(|| err(&f.column, "not a number"))?;
            f.values.push(v);
        }
    }
    Ok(matrix)
}
