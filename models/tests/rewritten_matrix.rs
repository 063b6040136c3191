//! A matrix that another tool rewrote reads back as the matrix dc-features wrote: polars writes
//! strings as `large_string` or `string_view`, keeps no key-value metadata, and a user may narrow
//! an integer or float column.
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow_cast::cast;
use arrow_schema::DataType;
use datasets::output::Existing;
use features::{FeatureColumn, FeatureKind, FeatureMatrix};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::properties::WriterProperties;

fn matrix() -> FeatureMatrix {
    let n = 200;
    FeatureMatrix {
        op: (0..n)
            .map(|i| ["read", "write"][i % 2].to_string())
            .collect(),
        pid: vec![7; n],
        tid: (0..n as u64).map(|i| 7 + i % 3).collect(),
        ts_ns: (0..n as u64).map(|i| 1000 * i).collect(),
        dur_ns: (0..n as u64).map(|i| 500 + (i * 37) % 101).collect(),
        file: (0..n)
            .map(|i| (i % 5 != 0).then(|| format!("/data/f{}", i % 3)))
            .collect(),
        size: (0..n as i64).map(|i| Some(4096 * (1 + i % 4))).collect(),
        bandwidth_mibs: (0..n)
            .map(|i| (i % 7 != 0).then(|| 10.0 + ((i * 53) % 97) as f64))
            .collect(),
        direct: (0..n)
            .map(|i| [Some(true), Some(false), None][i % 3])
            .collect(),
        sequential: (0..n).map(|i| Some(i % 2 == 0)).collect(),
        run: vec![Some("run-1".to_string()); n],
        thread: (0..n).map(|i| Some(format!("worker-{}", i % 3))).collect(),
        process: vec![None; n],
        self_ns: (0..n as u64).map(|i| 100 + i % 9).collect(),
        features: vec![
            FeatureColumn::new(
                "vfs",
                "vfs_read",
                FeatureKind::TimeNs,
                (0..n).map(|i| ((i * 37) % 101) as f64).collect(),
            ),
            FeatureColumn::new(
                "vfs",
                "vfs_read",
                FeatureKind::Count,
                (0..n).map(|i| (i % 4) as f64).collect(),
            ),
            FeatureColumn::new(
                "ext4",
                "",
                FeatureKind::ExclusiveNs,
                (0..n).map(|i| ((i * 11) % 13) as f64 * 0.5).collect(),
            ),
        ],
    }
}

/// Rewrites the Parquet file `from` to `to`, each column as `edit` gives it, with or without the
/// layer metadata.
fn rewrite(
    from: &Path,
    to: &Path,
    edit: impl Fn(&str, &ArrayRef) -> ArrayRef,
    keep_metadata: bool,
) {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(from).unwrap()).unwrap();
    let kv = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .cloned();
    let batches: Vec<RecordBatch> = builder
        .build()
        .unwrap()
        .map(|batch| {
            let batch = batch.unwrap();
            let schema = batch.schema();
            let columns = schema
                .fields()
                .iter()
                .zip(batch.columns())
                .map(|(f, c)| (f.name().clone(), edit(f.name(), c)));
            RecordBatch::try_from_iter(columns).unwrap()
        })
        .collect();
    let props = WriterProperties::builder()
        .set_key_value_metadata(kv.filter(|_| keep_metadata))
        .build();
    let mut w =
        ArrowWriter::try_new(File::create(to).unwrap(), batches[0].schema(), Some(props)).unwrap();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
}

/// Casts the columns named in `types` to their type.
fn cast_to(types: &[(&str, DataType)]) -> impl Fn(&str, &ArrayRef) -> ArrayRef {
    move |name, column| match types.iter().find(|(n, _)| *n == name) {
        Some((_, ty)) => cast(column, ty).unwrap(),
        None => column.clone(),
    }
}

#[test]
fn other_string_integer_and_float_types_read_as_the_matrix_written() {
    let dir = tempfile::tempdir().unwrap();
    let (p, q) = (dir.path().join("p.parquet"), dir.path().join("q.parquet"));
    let m = matrix();
    m.write(&p, Existing::Refuse).unwrap();
    let types = [
        ("op", DataType::Utf8View),
        ("file", DataType::LargeUtf8),
        (
            "run",
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::LargeUtf8)),
        ),
        ("pid", DataType::UInt16),
        ("tid", DataType::Int32),
        ("size", DataType::Int32),
        ("vfs::vfs_read", DataType::Float32),
        ("count::vfs::vfs_read", DataType::Float16),
    ];
    for keep_metadata in [true, false] {
        rewrite(&p, &q, cast_to(&types), keep_metadata);
        let got = FeatureMatrix::read(&q).unwrap();
        assert_eq!(got, m, "layer metadata kept: {keep_metadata}");
        std::fs::remove_file(&q).unwrap();
    }
}

#[test]
fn a_column_of_another_kind_or_a_value_that_does_not_fit_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (p, q) = (dir.path().join("p.parquet"), dir.path().join("q.parquet"));
    matrix().write(&p, Existing::Refuse).unwrap();
    rewrite(&p, &q, cast_to(&[("pid", DataType::Utf8)]), true);
    assert_eq!(
        FeatureMatrix::read(&q).unwrap_err().to_string(),
        format!(
            "{}: field `pid`: column has type Utf8, expected UInt64",
            q.display()
        )
    );
    std::fs::remove_file(&q).unwrap();
    let negative = |name: &str, column: &ArrayRef| -> ArrayRef {
        if name == "self_ns" {
            Arc::new(Int64Array::from_iter_values(
                (0..column.len() as i64).map(|i| if i == 3 { -1 } else { i }),
            ))
        } else {
            column.clone()
        }
    };
    rewrite(&p, &q, negative, true);
    assert_eq!(
        FeatureMatrix::read(&q).unwrap_err().to_string(),
        format!(
            "{}: field `self_ns`: column of type Int64 as UInt64: Cast error: \
             Can't cast value -1 to type UInt64",
            q.display()
        )
    );
}
