//! A fit that would not fit in the memory given (`--memory`) is refused before it starts, on the
//! full path and on the sample's, with the rows, the columns, the memory needed and available, and
//! the option that would do it; and a matrix without the nullable `thread` and `process` columns
//! ranks on the sample's path too.
use std::fs::File;
use std::path::Path;
use std::process::{Command, Output};

use arrow_array::RecordBatch;
use datasets::output::Existing;
use features::{FeatureColumn, FeatureKind, FeatureMatrix};
use models::sampled::{BYTES_PER_CELL, SAMPLE_BYTES_PER_CELL};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::properties::WriterProperties;

const ROWS: usize = 3000;

/// `ROWS` reads and writes whose bandwidth depends on `vfs::f0` and `ext4::f1`, not on `sched::f2`.
fn matrix() -> FeatureMatrix {
    let u = |i: usize, k: usize| ((i * (37 + 14 * k) + 11 * k) % 101) as f64 / 100.0;
    let layers = ["vfs", "ext4", "sched"];
    FeatureMatrix {
        op: (0..ROWS)
            .map(|i| ["read", "write"][i % 2].to_string())
            .collect(),
        pid: vec![7; ROWS],
        tid: vec![7; ROWS],
        ts_ns: (0..ROWS as u64).map(|i| 1000 * i).collect(),
        dur_ns: vec![1000; ROWS],
        file: vec![Some("/data/f".to_string()); ROWS],
        size: (0..ROWS).map(|i| Some(4096 << (i % 3))).collect(),
        bandwidth_mibs: (0..ROWS)
            .map(|i| Some(100.0 + 50.0 * u(i, 0) + 20.0 * u(i, 1)))
            .collect(),
        direct: vec![Some(false); ROWS],
        sequential: vec![None; ROWS],
        run: vec![None; ROWS],
        thread: (0..ROWS)
            .map(|i| Some(format!("worker-{}", i % 3)))
            .collect(),
        process: vec![Some("app".to_string()); ROWS],
        self_ns: vec![100; ROWS],
        features: layers
            .iter()
            .enumerate()
            .map(|(k, layer)| {
                FeatureColumn::new(
                    layer,
                    &format!("f{k}"),
                    FeatureKind::TimeNs,
                    (0..ROWS).map(|i| u(i, k)).collect(),
                )
            })
            .collect(),
    }
}

fn dc_model(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dc-model"))
        .args(args)
        .output()
        .unwrap()
}

/// The rows and columns of a Parquet file, from its footer.
fn shape(path: &Path) -> (usize, usize) {
    let b = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let meta = b.metadata().file_metadata();
    (meta.num_rows() as usize, meta.schema_descr().num_columns())
}

fn mb(bytes: f64) -> String {
    format!("{:.1} MB", bytes / 1e6)
}

#[test]
fn a_fit_larger_than_the_memory_given_is_refused_with_the_numbers_and_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.parquet");
    matrix().write(&path, Existing::Refuse).unwrap();
    let p = path.to_str().unwrap();
    let (rows, columns) = shape(&path);
    assert_eq!(rows, ROWS);

    let out = dc_model(&["rank", p, "--layer", "all", "--memory", "0.001"]);
    assert!(!out.status.success());
    let need = (rows * columns) as f64 * BYTES_PER_CELL;
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "dc-model: {p}: {rows} rows × {columns} columns: the full fit needs about {} of memory, \
             and 1.0 MB is available; rank a stratified sample of it instead (--sample), or fit \
             every row on a Dask cluster (datacrumbs.dask.rank in the Python package)\n",
            mb(need)
        )
    );

    // The sample holds --max-rows and --held-out-rows rows.
    let sample = [
        "rank",
        p,
        "--layer",
        "all",
        "--sample",
        "--max-rows",
        "2000",
        "--held-out-rows",
        "500",
        "--pilot-rows",
        "500",
    ];
    let out = dc_model(&[&sample[..], &["--memory", "0.0005"]].concat());
    assert!(!out.status.success());
    let need = (2500 * columns) as f64 * SAMPLE_BYTES_PER_CELL;
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "dc-model: {p}: 2500 rows × {columns} columns: the sample's fit needs about {} of \
             memory, and 0.5 MB is available; hold fewer rows (--max-rows, --held-out-rows), or \
             fit every row on a Dask cluster (datacrumbs.dask.rank in the Python package)\n",
            mb(need)
        )
    );

    // Given what they need, both run.
    let enough = format!("{}", 2.0 * (rows * columns) as f64 * BYTES_PER_CELL / 1e9);
    for args in [
        &["rank", p, "--layer", "all", "--memory", &enough][..],
        &[&sample[..], &["--memory", &enough]].concat(),
    ] {
        let out = dc_model(args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_matrix_without_thread_and_process_ranks_on_a_sample() {
    let dir = tempfile::tempdir().unwrap();
    let (full, cut) = (dir.path().join("m.parquet"), dir.path().join("cut.parquet"));
    matrix().write(&full, Existing::Refuse).unwrap();
    // The same file without the two columns, its layer metadata kept.
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(&full).unwrap()).unwrap();
    let kv = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .cloned();
    let batches: Vec<RecordBatch> = builder
        .build()
        .unwrap()
        .map(|b| {
            let b = b.unwrap();
            let keep: Vec<usize> = (0..b.num_columns())
                .filter(|&i| !["thread", "process"].contains(&b.schema().field(i).name().as_str()))
                .collect();
            b.project(&keep).unwrap()
        })
        .collect();
    let props = WriterProperties::builder()
        .set_key_value_metadata(kv)
        .build();
    let mut w = ArrowWriter::try_new(
        File::create(&cut).unwrap(),
        batches[0].schema(),
        Some(props),
    )
    .unwrap();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
    assert_eq!(shape(&cut).1 + 2, shape(&full).1);

    let rank = |path: &Path, json: &Path| {
        let args = [
            "rank",
            path.to_str().unwrap(),
            "--layer",
            "all",
            "--sample",
            "--max-rows",
            "2000",
            "--held-out-rows",
            "500",
            "--pilot-rows",
            "500",
            "--json",
            json.to_str().unwrap(),
        ];
        let out = dc_model(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(json).unwrap()).unwrap()
    };
    let with = rank(&full, &dir.path().join("with.json"));
    let without = rank(&cut, &dir.path().join("without.json"));
    // The sample neither stratifies nor models by thread or process: the same ranking.
    assert_eq!(without, with);
    assert_eq!(without["sample"]["rows_total"], ROWS);
}
