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

use super::args::put;
use crate::parse::LineError;
use crate::table::{Read, TableReader};
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
/// One batch of a table's columns, all of them, with their names and types.
struct Rows<'a> {
    names: &'a [String],
    types: &'a [String],
    /// None for a column of a type not read here.
    columns: Vec<Option<Read>>,
}

impl Rows<'_> {
    fn column(&self, name: &str) -> Result<(usize, &Read), LineError> {
        let i = self
            .names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| err(name, "missing: the KernMLOps schema has this column"))?;
        self.read(i).map(|c| (i, c))
    }

    fn read(&self, i: usize) -> Result<&Read, LineError> {
        self.columns[i].as_ref().ok_or_else(|| {
            err(
                &self.names[i],
                format!("{} is not a type read here", self.types[i]),
            )
        })
    }

    fn int(&self, name: &str, row: usize) -> Result<i64, LineError> {
        let (i, c) = self.column(name)?;
        match c {
            Read::Int(v) if self.types[i] == "Int64" => v[row]
                .map(|v| i64::try_from(v).expect("an Int64 column's values fit"))
                .ok_or_else(|| err(name, "null")),
            _ => Err(err(
                name,
                format!("is {}, the KernMLOps schema says Int64", self.types[i]),
            )),
        }
    }

    fn uint(&self, name: &str, row: usize) -> Result<u64, LineError> {
        let v = self.int(name, row)?;
        u64::try_from(v).map_err(|_| err(name, format!("{v} is negative")))
    }

    fn string(&self, name: &str, row: usize) -> Result<String, LineError> {
        let (i, c) = self.column(name)?;
        match c {
            Read::Str(v) => v[row].clone().ok_or_else(|| err(name, "null")),
            _ => Err(err(
                name,
                format!("is {}, the KernMLOps schema says String", self.types[i]),
            )),
        }
    }

    fn any(&self, col: usize, row: usize) -> Result<ArgValue, LineError> {
        let null = ArgValue::Null;
        Ok(match self.read(col)? {
            Read::Int(v) => v[row].map_or(null, |x| match i64::try_from(x) {
                Ok(x) => ArgValue::Int(x),
                Err(_) => ArgValue::Float(x as f64),
            }),
            Read::Str(v) => v[row].clone().map_or(null, ArgValue::Str),
            Read::Bool(v) => v[row].map_or(null, ArgValue::Bool),
            Read::Float(v) => v[row].map_or(null, ArgValue::Float),
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
            for (i, name) in r.names.iter().enumerate() {
                put(&mut e, name, r.any(i, row)?);
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
    let reader = match TableReader::new(bytes::Bytes::from(data)) {
        Ok(r) => r,
        Err(e) => {
            return (
                events,
                vec![(0, 0, err("-", format!("not Parquet: {e}")))],
                0,
            );
        }
    };
    let names = reader.columns();
    let table = match table_of(&names) {
        Ok(t) => t,
        Err(e) => return (events, vec![(0, 0, e)], 0),
    };
    let types: Vec<String> = (0..names.len()).map(|i| reader.type_of(i)).collect();
    let readable: Vec<usize> = (0..names.len()).filter(|&i| reader.readable(i)).collect();
    let mut row0 = 0u64;
    for batch in reader.batches(readable.clone(), 1 << 16) {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                let field = e.column.unwrap_or_else(|| "-".into());
                errors.push((
                    row0,
                    events.len(),
                    err(&field, format!("unreadable rows: {}", e.error)),
                ));
                return (events, errors, row0 + 1);
            }
        };
        let n = batch.rows;
        let mut columns: Vec<Option<Read>> = vec![None; names.len()];
        for (&i, c) in readable.iter().zip(batch.columns) {
            columns[i] = Some(c);
        }
        let rows = Rows {
            names: &names,
            types: &types,
            columns,
        };
        for row in 0..n {
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
        row0 += n as u64;
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
