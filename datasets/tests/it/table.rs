//! Flat Parquet tables (`datasets::table`): what it writes reads back in Arrow's reader with Arrow's types, and what
//! Arrow's writer writes in narrower types reads back widened, with errors that name the column and the row.

use std::sync::Arc;

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt64Type};
use arrow_array::{
    ArrayRef, Float32Array, Int8Array, Int32Array, LargeStringArray, RecordBatch,
    TimestampMillisecondArray, UInt16Array, UInt32Array,
};
use arrow_schema::DataType;
use datasets::table::{Column, Field, Read, TableReader, TableWriter, Type};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::properties::WriterProperties;

fn fields() -> Vec<Field> {
    vec![
        Field::new("name", Type::Utf8, false),
        Field::new("count", Type::UInt64, false),
        Field::new("delta", Type::Int64, true),
        Field::new("rate", Type::Float64, true),
        Field::new("flag", Type::Boolean, true),
        Field::new("hash", Type::Fixed16, true),
    ]
}

/// Rows `from..to` of the table the tests write: row i has a null in every nullable column when i % 3 == 0.
fn columns(from: u64, to: u64) -> Vec<Column> {
    let nth = |i: u64| !i.is_multiple_of(3);
    vec![
        Column::strings((from..to).map(|i| Some(format!("row-{i}")))),
        Column::u64s((from..to).map(|i| Some(u64::MAX - i))),
        Column::i64s((from..to).map(|i| nth(i).then_some(-(i as i64)))),
        Column::f64s((from..to).map(|i| nth(i).then_some(i as f64 / 4.0))),
        Column::bools((from..to).map(|i| nth(i).then_some(i.is_multiple_of(2)))),
        Column::fixed16s((from..to).map(|i| nth(i).then_some([i as u8; 16]))),
    ]
}

fn write(path: &std::path::Path) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = TableWriter::new(file, fields(), vec![("k".into(), "v".into())]).unwrap();
    w.write(columns(0, 1000)).unwrap();
    w.write(columns(1000, 1500)).unwrap();
    w.finish().unwrap();
}

#[test]
fn a_written_table_reads_back_in_arrows_reader_with_arrows_types() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    write(&path);
    let r = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&path).unwrap()).unwrap();
    let types: Vec<DataType> = r
        .schema()
        .fields()
        .iter()
        .map(|f| f.data_type().clone())
        .collect();
    assert_eq!(
        types,
        [
            DataType::Utf8,
            DataType::UInt64,
            DataType::Int64,
            DataType::Float64,
            DataType::Boolean,
            DataType::FixedSizeBinary(16)
        ]
    );
    let nullable: Vec<bool> = r
        .schema()
        .fields()
        .iter()
        .map(|f| f.is_nullable())
        .collect();
    assert_eq!(nullable, [false, false, true, true, true, true]);
    let meta = r.metadata().file_metadata().key_value_metadata().unwrap();
    assert_eq!(
        (meta[0].key.as_str(), meta[0].value.as_deref()),
        ("k", Some("v"))
    );
    let batches: Vec<RecordBatch> = r.build().unwrap().map(Result::unwrap).collect();
    let mut i = 0u64;
    for b in &batches {
        for row in 0..b.num_rows() {
            assert_eq!(
                b.column(0).as_string::<i32>().value(row),
                format!("row-{i}")
            );
            assert_eq!(
                b.column(1).as_primitive::<UInt64Type>().value(row),
                u64::MAX - i
            );
            let delta = b.column(2).as_primitive::<Int64Type>();
            let rate = b.column(3).as_primitive::<Float64Type>();
            if i.is_multiple_of(3) {
                assert!(delta.is_null(row) && rate.is_null(row) && b.column(5).is_null(row));
            } else {
                assert_eq!(delta.value(row), -(i as i64));
                assert_eq!(rate.value(row), i as f64 / 4.0);
                assert_eq!(b.column(4).as_boolean().value(row), i.is_multiple_of(2));
                assert_eq!(b.column(5).as_fixed_size_binary().value(row), [i as u8; 16]);
            }
            i += 1;
        }
    }
    assert_eq!(i, 1500);
}

#[test]
fn batches_cross_row_groups_and_number_their_rows_from_the_file_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    write(&path);
    let r = TableReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    assert_eq!(r.num_rows(), 1500);
    assert_eq!(r.metadata("k"), Some("v"));
    let cols = vec![r.index("delta").unwrap(), r.index("name").unwrap()];
    let mut rows = Vec::new();
    for b in r.batches(cols, 300) {
        let b = b.unwrap();
        rows.push((b.row, b.rows));
        let Read::Int(delta) = &b.columns[0] else {
            panic!("delta is an integer column")
        };
        let Read::Str(name) = &b.columns[1] else {
            panic!("name is a string column")
        };
        for k in 0..b.rows {
            let i = b.row + k as u64;
            assert_eq!(delta[k], (!i.is_multiple_of(3)).then_some(-i128::from(i)));
            assert_eq!(name[k].as_deref(), Some(format!("row-{i}").as_str()));
        }
    }
    assert_eq!(
        rows,
        [
            (0, 300),
            (300, 300),
            (600, 300),
            (900, 100),
            (1000, 300),
            (1300, 200)
        ]
    );
}

#[test]
fn narrower_numbers_another_writer_chose_read_widened_and_their_types_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "i8",
            Arc::new(Int8Array::from(vec![Some(-128), None, Some(127)])),
        ),
        ("u16", Arc::new(UInt16Array::from(vec![65535, 0, 1]))),
        (
            "i32",
            Arc::new(Int32Array::from(vec![i32::MIN, 0, i32::MAX])),
        ),
        ("u32", Arc::new(UInt32Array::from(vec![u32::MAX, 0, 7]))),
        ("f32", Arc::new(Float32Array::from(vec![0.5, -1.25, 3.0]))),
        ("big", Arc::new(LargeStringArray::from(vec!["a", "b", "c"]))),
        (
            "when",
            Arc::new(TimestampMillisecondArray::from(vec![1, 2, 3])),
        ),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let file = std::fs::File::create(&path).unwrap();
    let mut w =
        ArrowWriter::try_new(file, batch.schema(), Some(WriterProperties::default())).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();

    let r = TableReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    let types: Vec<String> = (0..7).map(|i| r.type_of(i)).collect();
    assert_eq!(
        &types[..6],
        ["Int8", "UInt16", "Int32", "UInt32", "Float32", "Utf8"]
    );
    assert!(types[6].starts_with("Timestamp"), "{}", types[6]);
    let b = r.batches((0..6).collect(), 10).next().unwrap().unwrap();
    assert_eq!(
        b.columns,
        [
            Read::Int(vec![Some(-128), None, Some(127)]),
            Read::Int(vec![Some(65535), Some(0), Some(1)]),
            Read::Int(vec![Some(i32::MIN.into()), Some(0), Some(i32::MAX.into())]),
            Read::Int(vec![Some(u32::MAX.into()), Some(0), Some(7)]),
            Read::Float(vec![Some(0.5), Some(-1.25), Some(3.0)]),
            Read::Str(vec![Some("a".into()), Some("b".into()), Some("c".into())]),
        ]
    );
    let e = r.batches(vec![6], 10).next().unwrap().unwrap_err();
    assert_eq!(e.column.as_deref(), Some("when"));
    assert!(
        e.error.to_string().contains("is not read here"),
        "{}",
        e.error
    );
}

#[test]
fn a_null_in_a_column_that_is_not_nullable_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = std::fs::File::create(dir.path().join("t.parquet")).unwrap();
    let mut w = TableWriter::new(file, fields(), Vec::new()).unwrap();
    let mut cols = columns(0, 3);
    cols[1] = Column::u64s([Some(1), None, Some(3)]);
    let e = w.write(cols).unwrap_err().to_string();
    assert!(e.contains("column `count` holds a null"), "{e}");
}
