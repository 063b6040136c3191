//! Parquet conversion keeps types, 128-bit hashes and resolved names.

use crate::common::{Oracle, fixture};
use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt64Type};
use arrow_schema::DataType;
use datasets::Hash;
use datasets::output::Existing;
use datasets::parquet::{event_schema, hash_bytes, write_events};
use datasets::read::ReadOptions;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn read_back(path: &std::path::Path) -> Vec<arrow_array::RecordBatch> {
    let f = std::fs::File::open(path).unwrap();
    let r = ParquetRecordBatchReaderBuilder::try_new(f).unwrap();
    assert_eq!(r.schema().as_ref(), event_schema().as_ref());
    r.build().unwrap().map(Result::unwrap).collect()
}

#[test]
fn datacrumbs_trace_to_parquet() {
    let src = fixture("datacrumbs/case-read-simple.trace.pfw.gz");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("events.parquet");
    let stats = write_events(
        std::slice::from_ref(&src),
        ReadOptions::default(),
        &out,
        Existing::Refuse,
    )
    .unwrap();
    assert_eq!(stats.rows, 216_630);
    assert_eq!(stats.unresolved_files, 0);
    let batches = read_back(&out);
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 216_630);
    assert_eq!(
        event_schema().field_with_name("fhash").unwrap().data_type(),
        &DataType::FixedSizeBinary(16)
    );

    let conf = Hash(133_892_054_826_312_681_618_397_557_253_802_428_535);
    let mut with_conf = 0;
    let mut dur_sum = 0u64;
    let mut size_sum_rows = 0;
    for b in &batches {
        let fhash = b.column_by_name("fhash").unwrap().as_fixed_size_binary();
        let fname = b.column_by_name("fname").unwrap().as_string::<i32>();
        let dur = b
            .column_by_name("dur_ns")
            .unwrap()
            .as_primitive::<UInt64Type>();
        let args = b.column_by_name("args").unwrap().as_string::<i32>();
        for i in 0..b.num_rows() {
            dur_sum += dur.value(i);
            if !fhash.is_null(i) && fhash.value(i) == hash_bytes(conf) {
                with_conf += 1;
                assert_eq!(fname.value(i), "/etc/openmpi/openmpi-mca-params.conf");
            }
            if !args.is_null(i) && args.value(i).contains("\"size_sum\"") {
                size_sum_rows += 1;
            }
        }
    }
    let o = Oracle::scan(&src);
    // serde_json::Value cannot hold the 128-bit hash exactly; match its text instead.
    let conf_text = "\"fhash\": 133892054826312681618397557253802428535}";
    let oracle_conf = o.texts.iter().filter(|t| t.contains(conf_text)).count();
    assert_eq!(with_conf, oracle_conf);
    assert!(with_conf > 0);
    let oracle_dur: u64 = o
        .events
        .iter()
        .map(|e| Oracle::int(&e["dur"]).unwrap_or(0) * 1000)
        .sum();
    assert_eq!(dur_sum, oracle_dur);
    assert_eq!(
        size_sum_rows,
        o.events
            .iter()
            .filter(|e| !e["args"]["size_sum"].is_null())
            .count()
    );
}

#[test]
fn dftracer_to_parquet_with_inline_names() {
    let src = fixture("dftracer/posix-old.pfw");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("events.parquet");
    let stats = write_events(
        std::slice::from_ref(&src),
        ReadOptions::default(),
        &out,
        Existing::Refuse,
    )
    .unwrap();
    assert_eq!(stats.rows, 1012);
    let b = &read_back(&out)[0];
    let host = b.column_by_name("hostname").unwrap().as_string::<i32>();
    let fname = b.column_by_name("fname").unwrap().as_string::<i32>();
    let ret = b.column_by_name("ret").unwrap().as_primitive::<Int64Type>();
    let ts = b
        .column_by_name("ts_ns")
        .unwrap()
        .as_primitive::<UInt64Type>();
    assert_eq!(host.value(0), "corona237");
    assert_eq!(
        fname.value(2),
        "/p/lustre1/haridev/dftracer_data/file_0-40.bat"
    );
    assert_eq!(ret.value(2), 18);
    assert_eq!(ts.value(0), 1_698_080_323_775_554_000);
    let args = b.column_by_name("args").unwrap().as_string::<i32>();
    assert_eq!(args.value(2), r#"{"flags":66,"mode":420}"#);
}
