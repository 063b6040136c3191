//! A matrix that another tool rewrote reads back as the matrix dc-features wrote: polars writes
//! strings as `large_string` or `string_view`, keeps no key-value metadata, and a user may narrow
//! an integer or float column; a matrix written before the `thread` and `process` columns existed,
//! or built in pandas, has neither.
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

/// Rewrites the Parquet file `from` to `to`, each column as `edit` gives it (left out for None),
/// with or without the layer metadata.
fn rewrite(
    from: &Path,
    to: &Path,
    edit: impl Fn(&str, &ArrayRef) -> Option<ArrayRef>,
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
                .filter_map(|(f, c)| Some((f.name().clone(), edit(f.name(), c)?)));
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
fn cast_to(types: &[(&str, DataType)]) -> impl Fn(&str, &ArrayRef) -> Option<ArrayRef> {
    move |name, column| match types.iter().find(|(n, _)| *n == name) {
        Some((_, ty)) => Some(cast(column, ty).unwrap()),
        None => Some(column.clone()),
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
    let negative = |name: &str, column: &ArrayRef| -> Option<ArrayRef> {
        Some(if name == "self_ns" {
            Arc::new(Int64Array::from_iter_values(
                (0..column.len() as i64).map(|i| if i == 3 { -1 } else { i }),
            ))
        } else {
            column.clone()
        })
    };
    rewrite(&p, &q, negative, true);
    assert_eq!(
        FeatureMatrix::read(&q).unwrap_err().to_string(),
        format!(
            "{}:4: field `self_ns`: value -1 of a column of type Int64 does not fit in UInt64",
            q.display()
        )
    );
}

/// The matrix as a reader gives it back once `thread` and `process` are gone: null on every row.
fn without_names(mut m: FeatureMatrix) -> FeatureMatrix {
    m.thread = vec![None; m.n_rows()];
    m.process = vec![None; m.n_rows()];
    m
}

#[test]
fn a_matrix_without_thread_and_process_reads_them_as_null_and_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let (p, q) = (dir.path().join("p.parquet"), dir.path().join("q.parquet"));
    let m = matrix();
    m.write(&p, Existing::Refuse).unwrap();
    let drop_names = |name: &str, column: &ArrayRef| {
        (name != "thread" && name != "process").then(|| column.clone())
    };
    rewrite(&p, &q, drop_names, false);
    let got = FeatureMatrix::read(&q).unwrap();
    assert_eq!(got, without_names(m.clone()));
    std::fs::remove_file(&q).unwrap();
    rewrite(&p, &q, |name, c| (name != "run").then(|| c.clone()), true);
    assert_eq!(
        FeatureMatrix::read(&q).unwrap_err().to_string(),
        format!("{}: field `run`: column is missing", q.display()),
        "only thread and process are optional"
    );
    let opts = models::RankOptions {
        layers: vec!["vfs".to_string()],
        ..models::RankOptions::default()
    };
    let from_file = models::rank(&got, &opts).unwrap();
    let written = models::rank(&without_names(m.clone()), &opts).unwrap();
    assert_eq!(
        serde_json::to_value(&from_file).unwrap(),
        serde_json::to_value(&written).unwrap()
    );

    // The text formats: the same columns cut from each line.
    for ext in ["csv", "jsonl"] {
        let path = dir.path().join(format!("m.{ext}"));
        m.write(&path, Existing::Refuse).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let cut = if ext == "csv" {
            let mut r = csv::Reader::from_reader(text.as_bytes());
            let header = r.headers().unwrap().clone();
            let keep: Vec<usize> = (0..header.len())
                .filter(|&i| header[i] != *"thread" && header[i] != *"process")
                .collect();
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(keep.iter().map(|&i| &header[i])).unwrap();
            for rec in r.records() {
                let rec = rec.unwrap();
                w.write_record(keep.iter().map(|&i| &rec[i])).unwrap();
            }
            String::from_utf8(w.into_inner().unwrap()).unwrap()
        } else {
            text.lines()
                .map(|line| {
                    let mut row: serde_json::Map<String, serde_json::Value> =
                        serde_json::from_str(line).unwrap();
                    assert!(row.remove("thread").is_some() && row.remove("process").is_some());
                    serde_json::to_string(&row).unwrap() + "\n"
                })
                .collect()
        };
        std::fs::write(&path, cut).unwrap();
        assert_eq!(
            FeatureMatrix::read(&path).unwrap(),
            without_names(m.clone()),
            "{ext}"
        );
    }
}
