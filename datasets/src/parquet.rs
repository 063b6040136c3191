//! Trace → Parquet, with a schema declared once ([`event_schema`]) and explicit column types.
//!
//! Times stay integer nanoseconds (`UInt64`, not a Parquet timestamp, which Spark rejects).
//! Hashes are `FixedSizeBinary(16)` (Parquet's `FIXED_LEN_BYTE_ARRAY(16)`), big-endian, so 128-bit DataCrumbs hashes survive exactly
//! (they exceed `Decimal128(38)`) and byte order sorts like the number. `fname`/`hostname` are
//! the names the hashes resolve to through the trace's metadata (or the inline names).

use std::path::{Path, PathBuf};
#[cfg(feature = "arrow")]
use std::sync::Arc;

#[cfg(feature = "arrow")]
use arrow_array::{
    ArrayRef, FixedSizeBinaryArray, Int64Array, RecordBatch, StringArray, UInt64Array,
};
#[cfg(feature = "arrow")]
use arrow_schema::{DataType, Field as ArrowField, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::output::{Existing, Output};
use crate::read::{ReadOptions, ReadStats, TraceReader};
use crate::strings::StringTable;
use crate::table::{Column, Field, Strings, TableWriter, Type};
use crate::write::{push_arg, push_str};
use crate::{Event, Hash};

const ROWS_PER_BATCH: usize = 1 << 16;

/// The event table's columns, in order.
pub fn event_fields() -> Vec<Field> {
    [
        ("source", Type::Utf8, false),
        ("id", Type::UInt64, true),
        ("name", Type::Utf8, false),
        ("cat", Type::Utf8, false),
        ("ph", Type::Utf8, false),
        ("pid", Type::UInt64, false),
        ("tid", Type::UInt64, false),
        ("ts_ns", Type::UInt64, false),
        ("dur_ns", Type::UInt64, false),
        ("fhash", Type::Fixed16, true),
        ("hhash", Type::Fixed16, true),
        ("fname", Type::Utf8, true),
        ("hostname", Type::Utf8, true),
        ("size", Type::Int64, true),
        ("ret", Type::Int64, true),
        ("offset", Type::Int64, true),
        ("args", Type::Utf8, true),
    ]
    .into_iter()
    .map(|(name, ty, nullable)| {
        let f = Field::new(name, ty, nullable);
        if name == "ts_ns" { f.deltas() } else { f }
    })
    .collect()
}

/// [`event_fields`] as an Arrow schema.
#[cfg(feature = "arrow")]
pub fn event_schema() -> SchemaRef {
    let fields = event_fields()
        .into_iter()
        .map(|f| {
            let ty = match f.ty {
                Type::Utf8 => DataType::Utf8,
                Type::UInt64 => DataType::UInt64,
                Type::Int64 => DataType::Int64,
                Type::Float64 => DataType::Float64,
                Type::Boolean => DataType::Boolean,
                Type::Fixed16 => DataType::FixedSizeBinary(16),
            };
            ArrowField::new(f.name, ty, f.nullable)
        })
        .collect::<Vec<_>>();
    Arc::new(Schema::new(fields))
}

pub fn hash_bytes(h: Hash) -> [u8; 16] {
    h.0.to_be_bytes()
}

#[derive(Clone, Debug)]
pub struct ConvertStats {
    pub rows: u64,
    pub unresolved_files: u64,
    pub read: ReadStats,
}

/// Rows of the event table being gathered, column by column.
#[derive(Default)]
struct Rows {
    source: Strings,
    id: Vec<Option<u64>>,
    name: Strings,
    cat: Strings,
    ph: Strings,
    pid: Vec<u64>,
    tid: Vec<u64>,
    ts: Vec<u64>,
    dur: Vec<u64>,
    fhash: Vec<Option<[u8; 16]>>,
    hhash: Vec<Option<[u8; 16]>>,
    fname: Strings,
    hostname: Strings,
    size: Vec<Option<i64>>,
    ret: Vec<Option<i64>>,
    offset: Vec<Option<i64>>,
    args: Strings,
    json: Vec<u8>,
}

impl Rows {
    fn len(&self) -> usize {
        self.source.len()
    }

    fn push(&mut self, (source, input): (&str, u32), e: &Event, strings: &StringTable) -> bool {
        self.source.push(Some(source));
        self.id.push(e.id);
        self.name.push(Some(&e.name));
        self.cat.push(Some(&e.cat));
        let ph = [e.ph.as_byte()];
        self.ph.push(Some(&String::from_utf8_lossy(&ph)));
        self.pid.push(e.pid);
        self.tid.push(e.tid);
        self.ts.push(e.ts_ns);
        self.dur.push(e.dur_ns);
        self.fhash.push(e.args.fhash.map(hash_bytes));
        self.hhash.push(e.args.hhash.map(hash_bytes));
        let fname = strings.file_of_in(input, e);
        let resolved = e.args.fhash.is_none() || fname.is_some();
        self.fname.push(fname);
        self.hostname.push(strings.host_of_in(input, e));
        self.size.push(e.args.size);
        self.ret.push(e.args.ret);
        self.offset.push(e.args.offset);
        if e.args.other.is_empty() && e.args.name.is_none() && e.args.value.is_none() {
            self.args.push(None);
        } else {
            self.json.clear();
            self.json.push(b'{');
            let mut first = true;
            let mut key = |j: &mut Vec<u8>, k: &str| {
                if !first {
                    j.push(b',');
                }
                first = false;
                push_str(j, k);
                j.push(b':');
            };
            if let Some(n) = &e.args.name {
                key(&mut self.json, "name");
                push_str(&mut self.json, n);
            }
            if let Some(v) = e.args.value {
                key(&mut self.json, "value");
                self.json.extend_from_slice(v.0.to_string().as_bytes());
            }
            for (k, v) in &e.args.other {
                key(&mut self.json, k);
                push_arg(&mut self.json, v);
            }
            self.json.push(b'}');
            self.args.push(Some(&String::from_utf8_lossy(&self.json)));
        }
        resolved
    }

    /// The rows as the table's columns, in [`event_fields`]' order; the rows are emptied.
    fn take_columns(&mut self) -> Vec<Column> {
        let r = std::mem::take(self);
        self.json = r.json;
        let u64s = |v: Vec<u64>| Column::u64s(v.into_iter().map(Some));
        vec![
            Column::from(r.source),
            Column::u64s(r.id),
            Column::from(r.name),
            Column::from(r.cat),
            Column::from(r.ph),
            u64s(r.pid),
            u64s(r.tid),
            u64s(r.ts),
            u64s(r.dur),
            Column::fixed16s(r.fhash),
            Column::fixed16s(r.hhash),
            Column::from(r.fname),
            Column::from(r.hostname),
            Column::i64s(r.size),
            Column::i64s(r.ret),
            Column::i64s(r.offset),
            Column::from(r.args),
        ]
    }

    /// The rows as an Arrow record batch of [`event_schema`]; the rows are emptied.
    #[cfg(feature = "arrow")]
    fn take_batch(&mut self, schema: &SchemaRef) -> RecordBatch {
        let r = std::mem::take(self);
        self.json = r.json;
        let fixed = |v: Vec<Option<[u8; 16]>>| -> ArrayRef {
            Arc::new(
                FixedSizeBinaryArray::try_from_sparse_iter_with_size(v.into_iter(), 16)
                    .expect("16 bytes each"),
            )
        };
        let strings = |s: Strings| -> ArrayRef { Arc::new(StringArray::from_iter(s.iter())) };
        let cols: Vec<ArrayRef> = vec![
            strings(r.source),
            Arc::new(UInt64Array::from(r.id)),
            strings(r.name),
            strings(r.cat),
            strings(r.ph),
            Arc::new(UInt64Array::from(r.pid)),
            Arc::new(UInt64Array::from(r.tid)),
            Arc::new(UInt64Array::from(r.ts)),
            Arc::new(UInt64Array::from(r.dur)),
            fixed(r.fhash),
            fixed(r.hhash),
            strings(r.fname),
            strings(r.hostname),
            Arc::new(Int64Array::from(r.size)),
            Arc::new(Int64Array::from(r.ret)),
            Arc::new(Int64Array::from(r.offset)),
            strings(r.args),
        ];
        RecordBatch::try_new(schema.clone(), cols).expect("columns match event_schema")
    }
}

/// Traces read into [`Rows`], a batch at a time. A hash resolves through the metadata read before its event, as in
/// the file.
struct Source {
    reader: TraceReader,
    strings: StringTable,
    /// The reader's batch being turned into rows: its source and input, its events and the next one to take.
    current: Option<(String, u32, Vec<Event>, usize)>,
    rows: u64,
    unresolved: u64,
}

impl Source {
    fn open(paths: &[PathBuf], opts: ReadOptions) -> Result<Source> {
        Ok(Source {
            reader: TraceReader::open(paths, opts)?,
            strings: StringTable::new(),
            current: None,
            rows: 0,
            unresolved: 0,
        })
    }

    /// Adds events to `rows` until it holds a batch or the traces end; false when it ends empty.
    fn fill(&mut self, rows: &mut Rows) -> Result<bool> {
        loop {
            if let Some((source, input, events, next)) = &mut self.current {
                while let Some(e) = events.get(*next) {
                    *next += 1;
                    self.strings.insert_event_in(*input, e);
                    if !rows.push((source, *input), e, &self.strings) {
                        self.unresolved += 1;
                    }
                    self.rows += 1;
                    if rows.len() == ROWS_PER_BATCH {
                        return Ok(true);
                    }
                }
                self.current = None;
            }
            match self.reader.next() {
                Some(Ok(batch)) => {
                    let source = batch.source.to_string_lossy().into_owned();
                    self.current = Some((source, batch.input, batch.events, 0));
                }
                Some(Err(e)) => return Err(e),
                None => return Ok(rows.len() > 0),
            }
        }
    }

    /// Counts so far; complete once the traces have ended.
    fn stats(&self) -> ConvertStats {
        ConvertStats {
            rows: self.rows,
            unresolved_files: self.unresolved,
            read: self.reader.stats().clone(),
        }
    }
}

/// Traces as Arrow record batches of [`event_schema`], streaming: memory holds one batch.
#[cfg(feature = "arrow")]
pub struct EventBatches {
    source: Source,
    rows: Rows,
    schema: SchemaRef,
}

#[cfg(feature = "arrow")]
impl EventBatches {
    pub fn open(paths: &[PathBuf], opts: ReadOptions) -> Result<EventBatches> {
        Ok(EventBatches {
            source: Source::open(paths, opts)?,
            rows: Rows::default(),
            schema: event_schema(),
        })
    }

    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Counts so far; complete once the iterator has ended.
    pub fn stats(&self) -> ConvertStats {
        self.source.stats()
    }
}

#[cfg(feature = "arrow")]
impl Iterator for EventBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        match self.source.fill(&mut self.rows) {
            Ok(true) => Some(Ok(self.rows.take_batch(&self.schema))),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

/// Converts traces to one Parquet file (Snappy), streaming: memory holds one row group.
pub fn write_events(
    paths: &[PathBuf],
    opts: ReadOptions,
    out: &Path,
    existing: Existing,
) -> Result<ConvertStats> {
    let perr = |e: ::parquet::errors::ParquetError| Error::Convert {
        path: out.to_path_buf(),
        msg: e.to_string(),
    };
    let file = Output::create(out, existing)?;
    let mut source = Source::open(paths, opts)?;
    let mut rows = Rows::default();
    let mut writer = TableWriter::new(file, event_fields(), Vec::new()).map_err(perr)?;
    while source.fill(&mut rows)? {
        writer.write(rows.take_columns()).map_err(perr)?;
    }
    writer.finish().map_err(perr)?.commit()?;
    Ok(source.stats())
}
