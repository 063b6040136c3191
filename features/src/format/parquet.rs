//! Parquet matrices through `datasets::table`; the layer metadata rides in the file's key-value metadata.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use datasets::output::{Existing, Output};
use datasets::table::{Column, Field, Read, TableReader, TableWriter, Type};

use super::meta::empty_features;
use crate::InputError;
use crate::matrix::{
    FeatureColumn, FeatureKind, FeatureMatrix, METADATA_KEY, Metadata, OPTIONAL_COLUMNS,
};

const ROWS_PER_BATCH: usize = 64 * 1024;

/// The columns every matrix has, in the file's order: name, type, nullable. The feature columns follow, each a
/// `Float64` without nulls.
const BASE: [(&str, Type, bool); 14] = [
    ("op", Type::Utf8, false),
    ("pid", Type::UInt64, false),
    ("tid", Type::UInt64, false),
    ("ts", Type::UInt64, false),
    ("dur", Type::UInt64, false),
    ("file", Type::Utf8, true),
    ("size", Type::Int64, true),
    ("bandwidth", Type::Float64, true),
    ("direct", Type::Boolean, true),
    ("sequential", Type::Boolean, true),
    ("run", Type::Utf8, true),
    ("thread", Type::Utf8, true),
    ("process", Type::Utf8, true),
    ("self_ns", Type::UInt64, false),
];

fn fields(matrix: &FeatureMatrix) -> Vec<Field> {
    BASE.iter()
        .map(|&(name, ty, nullable)| {
            let f = Field::new(name, ty, nullable);
            if name == "ts" { f.deltas() } else { f }
        })
        .chain(
            matrix
                .features
                .iter()
                .map(|f| Field::new(&f.column, Type::Float64, false)),
        )
        .collect()
}

pub fn write(matrix: &FeatureMatrix, path: &Path, existing: Existing) -> Result<()> {
    let mut w = Writer::create(path, matrix, existing)?;
    w.write(matrix)?;
    w.finish()
}

/// A Parquet matrix written a part at a time, so that a matrix larger than memory can be written:
/// every part has the columns of the matrix the writer was created with.
pub struct Writer {
    writer: TableWriter<Output>,
    path: PathBuf,
}

impl Writer {
    /// Creates `path` for a matrix with `columns`' feature columns (its rows are not written).
    pub fn create(path: &Path, columns: &FeatureMatrix, existing: Existing) -> Result<Self> {
        let meta =
            serde_json::to_string(&Metadata::of(columns)).map_err(|e| Error::write(path, e))?;
        let file = Output::create(path, existing)?;
        Ok(Self {
            writer: TableWriter::new(file, fields(columns), vec![(METADATA_KEY.to_owned(), meta)])
                .map_err(|e| Error::write(path, e))?,
            path: path.to_owned(),
        })
    }

    /// Appends `matrix`'s rows, a row group of at most 64 Ki rows at a time.
    pub fn write(&mut self, matrix: &FeatureMatrix) -> Result<()> {
        matrix.check_shape()?;
        let n = matrix.n_rows();
        let mut start = 0;
        while start < n {
            let end = (start + ROWS_PER_BATCH).min(n);
            self.write_batch(matrix, start..end)?;
            start = end;
        }
        Ok(())
    }

    fn write_batch(&mut self, matrix: &FeatureMatrix, r: std::ops::Range<usize>) -> Result<()> {
        let u64s = |v: &[u64]| Column::u64s(v.iter().copied().map(Some));
        let strings = |v: &[Option<String>]| Column::strings(v.iter().map(Option::as_deref));
        let mut columns = vec![
            Column::strings(matrix.op[r.clone()].iter().map(Some)),
            u64s(&matrix.pid[r.clone()]),
            u64s(&matrix.tid[r.clone()]),
            u64s(&matrix.ts_ns[r.clone()]),
            u64s(&matrix.dur_ns[r.clone()]),
            strings(&matrix.file[r.clone()]),
            Column::i64s(matrix.size[r.clone()].iter().copied()),
            Column::f64s(matrix.bandwidth_mibs[r.clone()].iter().copied()),
            Column::bools(matrix.direct[r.clone()].iter().copied()),
            Column::bools(matrix.sequential[r.clone()].iter().copied()),
            strings(&matrix.run[r.clone()]),
            strings(&matrix.thread[r.clone()]),
            strings(&matrix.process[r.clone()]),
            u64s(&matrix.self_ns[r.clone()]),
        ];
        columns.extend(
            matrix
                .features
                .iter()
                .map(|f| Column::f64s(f.values[r.clone()].iter().copied().map(Some))),
        );
        self.writer
            .write(columns)
            .map_err(|e| Error::write(&self.path, e))
    }

    /// Writes the footer and puts the file in place.
    pub fn finish(self) -> Result<()> {
        let file = self
            .writer
            .finish()
            .map_err(|e| Error::write(&self.path, e))?;
        Ok(file.commit()?)
    }
}

pub fn read(path: &Path) -> Result<FeatureMatrix> {
    let mut matrix = FeatureMatrix::default();
    let template = read_each(path, true, |_, batch| {
        matrix.append(batch);
        true
    })?;
    if matrix.features.is_empty() {
        matrix.features = template.features;
    }
    Ok(matrix)
}

fn open(path: &Path) -> Result<TableReader<File>> {
    let file = File::open(path).map_err(|e| InputError::new(path, None, None, e.to_string()))?;
    Ok(TableReader::new(file)
        .map_err(|e| InputError::new(path, None, None, format!("not a Parquet file: {e}")))?)
}

/// The rows and columns of a Parquet matrix, from its footer alone.
pub fn shape(path: &Path) -> Result<(usize, usize)> {
    let reader = open(path)?;
    Ok((reader.num_rows() as usize, reader.columns().len()))
}

/// Reads a Parquet matrix one batch of at most 64 Ki rows at a time, row group after row group, so
/// that no more than a batch is held: `each` gets the index of the batch's first row and the batch as
/// a matrix. Without `features`, only the base columns are decoded and the batches have no feature
/// columns. Returns the matrix's columns, without rows. An error of `each` stops the reading and is returned.
pub fn read_batches<E: From<Error>>(
    path: &Path,
    features: bool,
    mut each: impl FnMut(usize, FeatureMatrix) -> Result<(), E>,
) -> Result<FeatureMatrix, E> {
    let mut failed = None;
    let template = read_each(path, features, |first, m| match each(first, m) {
        Ok(()) => true,
        Err(e) => {
            failed = Some(e);
            false
        }
    })?;
    failed.map_or(Ok(template), Err)
}

/// Whether a column read as `read` (see [`datasets::table::Read`]) can fill a column of type `ty`: any integer width
/// and sign fills an integer column (each value is checked to fit), any float width a float column. Strings are
/// `Utf8` whatever Arrow type (polars' `large_string` or `string_view`, a dictionary) the writer recorded.
fn fills(read: &str, ty: Type) -> bool {
    match ty {
        Type::Utf8 => read == "Utf8",
        Type::UInt64 | Type::Int64 => read.starts_with("Int") || read.starts_with("UInt"),
        Type::Float64 => matches!(read, "Float16" | "Float32" | "Float64"),
        Type::Boolean => read == "Boolean",
        Type::Fixed16 => false,
    }
}

fn type_word(ty: Type) -> &'static str {
    match ty {
        Type::Utf8 => "Utf8",
        Type::UInt64 => "UInt64",
        Type::Int64 => "Int64",
        Type::Float64 => "Float64",
        Type::Boolean => "Boolean",
        Type::Fixed16 => "FixedSizeBinary(16)",
    }
}

/// A column of the file being read: its name, the type it fills and the type the file has.
struct Wanted {
    name: String,
    ty: Type,
    has: String,
}

/// [`read_batches`], until `each` returns false.
fn read_each(
    path: &Path,
    features: bool,
    mut each: impl FnMut(usize, FeatureMatrix) -> bool,
) -> Result<FeatureMatrix> {
    let reader = open(path)?;
    let meta = match reader.metadata(METADATA_KEY) {
        Some(text) => Metadata::parse(text, path)?,
        None => metadata_from_names(path, &reader.columns())?,
    };
    let template = FeatureMatrix {
        features: empty_features(&meta),
        ..Default::default()
    };
    let base = FeatureMatrix::default();
    let asked = fields(if features { &template } else { &base });
    let mut wanted = Vec::new();
    let mut indexes = Vec::new();
    let mut missing = Vec::new();
    for f in asked {
        let Some(i) = reader.index(&f.name) else {
            if OPTIONAL_COLUMNS.contains(&f.name.as_str()) {
                missing.push(f.name);
                continue;
            }
            return Err(InputError::new(path, None, Some(&f.name), "column is missing").into());
        };
        let has = reader.type_of(i);
        if !fills(&has, f.ty) {
            return Err(InputError::new(
                path,
                None,
                Some(&f.name),
                format!("column has type {has}, expected {}", type_word(f.ty)),
            )
            .into());
        }
        indexes.push(i);
        wanted.push(Wanted {
            name: f.name,
            ty: f.ty,
            has,
        });
    }
    for batch in reader.batches(indexes, ROWS_PER_BATCH) {
        let batch = batch.map_err(|e| {
            InputError::new(
                path,
                Some(e.row + 1),
                e.column.as_deref(),
                e.error.to_string(),
            )
        })?;
        let (row, n, columns) = (batch.row, batch.rows, batch.columns);
        let mut matrix = FeatureMatrix {
            features: if features {
                empty_features(&meta)
            } else {
                Vec::new()
            },
            ..Default::default()
        };
        let at = |i: usize, w: &Wanted, msg: &str| {
            Error::from(InputError::new(
                path,
                Some(row + i as u64 + 1),
                Some(&w.name),
                msg,
            ))
        };
        let mut features_left = matrix.features.iter_mut();
        for (w, column) in wanted.iter().zip(columns) {
            match (w.name.as_str(), column) {
                ("op", Read::Str(v)) => {
                    for (i, s) in v.into_iter().enumerate() {
                        matrix.op.push(s.ok_or_else(|| at(i, w, "null op"))?);
                    }
                }
                (name, Read::Int(v)) => {
                    let out: &mut Vec<u64> = match name {
                        "pid" => &mut matrix.pid,
                        "tid" => &mut matrix.tid,
                        "ts" => &mut matrix.ts_ns,
                        "dur" => &mut matrix.dur_ns,
                        "self_ns" => &mut matrix.self_ns,
                        _ => {
                            for (i, x) in v.into_iter().enumerate() {
                                matrix.size.push(x.map(|x| fit(x, i, w, &at)).transpose()?);
                            }
                            continue;
                        }
                    };
                    for (i, x) in v.into_iter().enumerate() {
                        out.push(fit(x.ok_or_else(|| at(i, w, "null value"))?, i, w, &at)?);
                    }
                }
                ("bandwidth", Read::Float(v)) => matrix.bandwidth_mibs.extend(v),
                (_, Read::Float(v)) => {
                    let f = features_left
                        .next()
                        .expect("a feature column for each asked");
                    for (i, x) in v.into_iter().enumerate() {
                        f.values
                            .push(x.ok_or_else(|| at(i, w, "null feature value"))?);
                    }
                }
                ("direct", Read::Bool(v)) => matrix.direct.extend(v),
                ("sequential", Read::Bool(v)) => matrix.sequential.extend(v),
                ("file", Read::Str(v)) => matrix.file.extend(v),
                ("run", Read::Str(v)) => matrix.run.extend(v),
                ("thread", Read::Str(v)) => matrix.thread.extend(v),
                ("process", Read::Str(v)) => matrix.process.extend(v),
                (name, _) => unreachable!("column `{name}` was checked to be of type {:?}", w.ty),
            }
        }
        for name in &missing {
            let out = if name == "thread" {
                &mut matrix.thread
            } else {
                &mut matrix.process
            };
            out.extend(std::iter::repeat_n(None, n));
        }
        if !each(row as usize, matrix) {
            break;
        }
    }
    Ok(template)
}

/// An integer read from any width and sign, as the column's type; an error naming the row when it does not fit.
fn fit<T: TryFrom<i128>>(
    x: i128,
    i: usize,
    w: &Wanted,
    at: &impl Fn(usize, &Wanted, &str) -> Error,
) -> Result<T> {
    T::try_from(x).map_err(|_| {
        at(
            i,
            w,
            &format!(
                "value {x} of a column of type {} does not fit in {}",
                w.has,
                type_word(w.ty)
            ),
        )
    })
}

/// The layer metadata of a matrix another tool rewrote without it (polars keeps no key-value
/// metadata), from its feature columns' names, which spell each one's layer, name and kind
/// ([`FeatureColumn::column_name`]).
fn metadata_from_names(path: &Path, columns: &[String]) -> Result<Metadata> {
    let features = columns
        .iter()
        .filter(|name| !BASE.iter().any(|(base, _, _)| base == name))
        .map(|column| {
            let (layer, name, kind) = if let Some(layer) = column.strip_prefix("excl::") {
                (layer, "", FeatureKind::ExclusiveNs)
            } else if let Some((layer, name)) = column
                .strip_prefix("count::")
                .and_then(|c| c.split_once("::"))
            {
                (layer, name, FeatureKind::Count)
            } else {
                let (layer, name) = column.split_once("::").ok_or_else(|| {
                    InputError::new(
                        path,
                        None,
                        Some(column),
                        format!(
                            "the file has no layer metadata ({METADATA_KEY}), and this column's \
                             name is not a feature column's (layer::name)"
                        ),
                    )
                })?;
                (layer, name, FeatureKind::TimeNs)
            };
            Ok(FeatureColumn::new(layer, name, kind, Vec::new()))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Metadata::of(&FeatureMatrix {
        features,
        ..FeatureMatrix::default()
    }))
}
