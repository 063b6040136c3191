//! KernMLOps' Parquet tables (github.com/utcs-scea/KernMLOps, `python/kernmlops/data_schema/`;
//! seed 002 reads them with `pl.read_parquet`). A table is known by its columns:
//! - `block_io_latency` (`block_io.py`): `cpu, device, sector, segments, block_io_bytes,
//!   ts_uptime_us, block_latency_us, block_io_latency_us, block_io_flags, collection_id`, all Int64
//!   but the id. `ts_uptime_us` is the completion (KernMLOps joins it as `finish_ts_uptime_us`), so
//!   a request starts `block_latency_us` before it. The operation is `block_io_flags & 0xff`.
//! - `file_data` (`file_data.py`): `cpu, pid, tgid, ts_uptime_us, file_inode, file_size_bytes,
//!   file_name, collection_id`: one file opened by a thread (`pid` is the kernel's thread id).
//! - `system_info` (`schema.py`): one row about the collection (`collection_id`, `uptime_sec`,
//!   `collection_pid`, `benchmark_name`, `cores`, ...), kept whole as a metadata event.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::args::put;
use crate::parse::LineError;
use crate::{ArgValue, Event, Phase};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    BlockIoLatency,
    FileData,
    SystemInfo,
}

/// Operation names of `block_io_flags & 0xff` (`REQ_OP_*`, as KernMLOps' `req_opf` lists them).
fn op_name(flags: i64) -> &'static str {
    match flags & 0xff {
        0 => "read",
        1 => "write",
        2 => "flush",
        3 => "discard",
        5 => "secure_erase",
        6 => "zone_reset",
        7 => "write_same",
        9 => "write_zeros",
        _ => "unknown",
    }
}

/// Whether the first bytes are a Parquet file's.
pub fn sniff(head: &[u8]) -> bool {
    head.starts_with(b"PAR1")
}

fn err(field: &str, msg: impl Into<String>) -> LineError {
    LineError {
        field: field.to_owned().into(),
        msg: msg.into(),
    }
}

fn table_of(cols: &[String]) -> Result<Table, LineError> {
    let has = |c: &str| cols.iter().any(|n| n == c);
    if has("block_latency_us") {
        Ok(Table::BlockIoLatency)
    } else if has("file_inode") {
        Ok(Table::FileData)
    } else if has("uptime_sec") && has("collection_id") {
        Ok(Table::SystemInfo)
    } else {
        Err(err(
            "-",
            format!(
                "columns {} are none of the KernMLOps tables read here (block_io_latency, file_data, system_info)",
                cols.join(", ")
            ),
        ))
    }
}

/// One batch's columns, read by name with the schema's types.
struct Rows<'a> {
    batch: &'a RecordBatch,
}

impl Rows<'_> {
    fn column(&self, name: &str) -> Result<&dyn Array, LineError> {
        self.batch
            .column_by_name(name)
            .map(|c| c.as_ref())
            .ok_or_else(|| err(name, "missing: the KernMLOps schema has this column"))
    }

    fn int(&self, name: &str, row: usize) -> Result<i64, LineError> {
        let c = self.column(name)?;
        if c.data_type() != &DataType::Int64 {
            return Err(err(
                name,
                format!("is {}, the KernMLOps schema says Int64", c.data_type()),
            ));
        }
        if c.is_null(row) {
            return Err(err(name, "null"));
        }
        Ok(c.as_primitive::<Int64Type>().value(row))
    }

    fn uint(&self, name: &str, row: usize) -> Result<u64, LineError> {
        let v = self.int(name, row)?;
        u64::try_from(v).map_err(|_| err(name, format!("{v} is negative")))
    }

    fn string(&self, name: &str, row: usize) -> Result<String, LineError> {
        let c = self.column(name)?;
        let s = match c.data_type() {
            DataType::Utf8 => c.as_string::<i32>(),
            t => {
                return Err(err(
                    name,
                    format!("is {t}, the KernMLOps schema says String"),
                ));
            }
        };
        if s.is_null(row) {
            return Err(err(name, "null"));
        }
        Ok(s.value(row).to_owned())
    }

    /// Any column's value as an argument.
    fn any(&self, col: usize, row: usize) -> Result<ArgValue, LineError> {
        let c = self.batch.column(col);
        if c.is_null(row) {
            return Ok(ArgValue::Null);
        }
        Ok(match c.data_type() {
            DataType::Int64 => ArgValue::Int(c.as_primitive::<Int64Type>().value(row)),
            DataType::Utf8 => ArgValue::Str(c.as_string::<i32>().value(row).to_owned()),
            DataType::Boolean => ArgValue::Bool(c.as_boolean().value(row)),
            DataType::Float64 => ArgValue::Float(c.as_primitive::<Float64Type>().value(row)),
            t => {
                let name = self.batch.schema().field(col).name().clone();
                return Err(err(&name, format!("{t} is not a type read here")));
            }
        })
    }
}

fn row_event(table: Table, r: &Rows, row: usize) -> Result<Event, LineError> {
    let us = 1000;
    Ok(match table {
        Table::BlockIoLatency => {
            let flags = r.int("block_io_flags", row)?;
            let mut e = Event::new(op_name(flags), "block", Phase::Complete);
            let end = r.uint("ts_uptime_us", row)?.saturating_mul(us);
            e.dur_ns = r.uint("block_latency_us", row)?.saturating_mul(us);
            e.ts_ns = end.checked_sub(e.dur_ns).ok_or_else(|| {
                err(
                    "block_latency_us",
                    "longer than the time since boot at completion",
                )
            })?;
            e.args.size = Some(r.int("block_io_bytes", row)?);
            put(
                &mut e,
                "io_latency_us",
                ArgValue::Int(r.int("block_io_latency_us", row)?),
            );
            for k in ["cpu", "device", "sector", "segments"] {
                put(&mut e, k, ArgValue::Int(r.int(k, row)?));
            }
            put(&mut e, "block_io_flags", ArgValue::Int(flags));
            put(
                &mut e,
                "collection_id",
                ArgValue::Str(r.string("collection_id", row)?),
            );
            e
        }
        Table::FileData => {
            let mut e = Event::new("file_data", "file", Phase::Instant);
            e.pid = r.uint("tgid", row)?;
            e.tid = r.uint("pid", row)?;
            e.ts_ns = r.uint("ts_uptime_us", row)?.saturating_mul(us);
            e.args.fname = Some(r.string("file_name", row)?);
            e.args.size = Some(r.int("file_size_bytes", row)?);
            put(&mut e, "inode", ArgValue::Int(r.int("file_inode", row)?));
            put(&mut e, "cpu", ArgValue::Int(r.int("cpu", row)?));
            put(
                &mut e,
                "collection_id",
                ArgValue::Str(r.string("collection_id", row)?),
            );
            e
        }
        Table::SystemInfo => {
            let mut e = Event::new("kernmlops_system_info", "kernmlops", Phase::Metadata);
            r.string("collection_id", row)?;
            r.int("uptime_sec", row)?;
            for (i, f) in r.batch.schema().fields().iter().enumerate() {
                put(&mut e, f.name(), r.any(i, row)?);
            }
            e
        }
    })
}

/// The table's events and its bad rows as (0-based row, events before it, error); stops at the
/// first bad row unless `skip`. A file that is not Parquet at all is an error at row 0.
pub fn read(data: Vec<u8>, skip: bool) -> (Vec<Event>, Vec<(u64, usize, LineError)>, u64) {
    let mut events = Vec::new();
    let mut errors = Vec::new();
    let builder = match ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(data)) {
        Ok(b) => b,
        Err(e) => {
            return (
                events,
                vec![(0, 0, err("-", format!("not Parquet: {e}")))],
                0,
            );
        }
    };
    let cols: Vec<String> = builder
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let table = match table_of(&cols) {
        Ok(t) => t,
        Err(e) => return (events, vec![(0, 0, e)], 0),
    };
    let reader = match builder.build() {
        Ok(r) => r,
        Err(e) => return (events, vec![(0, 0, err("-", e.to_string()))], 0),
    };
    let mut row0 = 0u64;
    for batch in reader {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                errors.push((
                    row0,
                    events.len(),
                    err("-", format!("unreadable rows: {e}")),
                ));
                return (events, errors, row0 + 1);
            }
        };
        let rows = Rows { batch: &batch };
        for row in 0..batch.num_rows() {
            match row_event(table, &rows, row) {
                Ok(e) => events.push(e),
                Err(e) => {
                    errors.push((row0 + row as u64, events.len(), e));
                    if !skip {
                        return (events, errors, row0 + row as u64 + 1);
                    }
                }
            }
        }
        row0 += batch.num_rows() as u64;
    }
    if table == Table::SystemInfo && row0 != 1 {
        errors.push((
            0,
            0,
            err(
                "-",
                format!("system_info has {row0} rows, KernMLOps writes one"),
            ),
        ));
    }
    (events, errors, row0)
}
