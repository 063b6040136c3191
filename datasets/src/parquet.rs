//! Trace → Parquet, with a schema declared once ([`event_schema`]) and explicit column types.
//!
//! Times stay integer nanoseconds (`UInt64`, not a Parquet timestamp, which Spark rejects).
//! Hashes are `FixedSizeBinary(16)`, big-endian, so 128-bit DataCrumbs hashes survive exactly
//! (they exceed `Decimal128(38)`) and byte order sorts like the number. `fname`/`hostname` are
//! the names the hashes resolve to through the trace's metadata (or the inline names).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ::parquet::arrow::ArrowWriter;
use ::parquet::basic::Compression;
use ::parquet::file::properties::WriterProperties;
use arrow_array::builder::{FixedSizeBinaryBuilder, Int64Builder, StringBuilder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::output::{Existing, Output};
use crate::read::{ReadOptions, ReadStats, TraceReader};
use crate::strings::StringTable;
use crate::write::{push_arg, push_str};
use crate::{Event, Hash};

const ROWS_PER_BATCH: usize = 1 << 16;

/// The event table's columns, in order.
pub fn event_schema() -> SchemaRef {
    let hash = DataType::FixedSizeBinary(16);
    Arc::new(Schema::new(vec![
        Field::new("source", DataType::Utf8, false),
        Field::new("id", DataType::UInt64, true),
        Field::new("name", DataType::Utf8, false),
        Field::new("cat", DataType::Utf8, false),
        Field::new("ph", DataType::Utf8, false),
        Field::new("pid", DataType::UInt64, false),
        Field::new("tid", DataType::UInt64, false),
        Field::new("ts_ns", DataType::UInt64, false),
        Field::new("dur_ns", DataType::UInt64, false),
        Field::new("fhash", hash.clone(), true),
        Field::new("hhash", hash, true),
        Field::new("fname", DataType::Utf8, true),
        Field::new("hostname", DataType::Utf8, true),
        Field::new("size", DataType::Int64, true),
        Field::new("ret", DataType::Int64, true),
        Field::new("offset", DataType::Int64, true),
        Field::new("args", DataType::Utf8, true),
    ]))
}

/// The bytes a hash column stores: the u128, big-endian.
pub fn hash_bytes(h: Hash) -> [u8; 16] {
    h.0.to_be_bytes()
}

#[derive(Clone, Debug)]
pub struct ConvertStats {
    pub rows: u64,
    /// Events whose `fhash` no metadata seen before them resolved.
    pub unresolved_files: u64,
    pub read: ReadStats,
}

struct Columns {
    source: StringBuilder,
    id: UInt64Builder,
    name: StringBuilder,
    cat: StringBuilder,
    ph: StringBuilder,
    pid: UInt64Builder,
    tid: UInt64Builder,
    ts: UInt64Builder,
    dur: UInt64Builder,
    fhash: FixedSizeBinaryBuilder,
    hhash: FixedSizeBinaryBuilder,
    fname: StringBuilder,
    hostname: StringBuilder,
    size: Int64Builder,
    ret: Int64Builder,
    offset: Int64Builder,
    args: StringBuilder,
    len: usize,
    json: Vec<u8>,
}

impl Columns {
    fn new() -> Columns {
        Columns {
            source: StringBuilder::new(),
            id: UInt64Builder::new(),
            name: StringBuilder::new(),
            cat: StringBuilder::new(),
            ph: StringBuilder::new(),
            pid: UInt64Builder::new(),
            tid: UInt64Builder::new(),
            ts: UInt64Builder::new(),
            dur: UInt64Builder::new(),
            fhash: FixedSizeBinaryBuilder::new(16),
            hhash: FixedSizeBinaryBuilder::new(16),
            fname: StringBuilder::new(),
            hostname: StringBuilder::new(),
            size: Int64Builder::new(),
            ret: Int64Builder::new(),
            offset: Int64Builder::new(),
            args: StringBuilder::new(),
            len: 0,
            json: Vec::new(),
        }
    }

    fn push(&mut self, (source, input): (&str, u32), e: &Event, strings: &StringTable) -> bool {
        self.source.append_value(source);
        self.id.append_option(e.id);
        self.name.append_value(&e.name);
        self.cat.append_value(&e.cat);
        let ph = [e.ph.as_byte()];
        self.ph.append_value(String::from_utf8_lossy(&ph));
        self.pid.append_value(e.pid);
        self.tid.append_value(e.tid);
        self.ts.append_value(e.ts_ns);
        self.dur.append_value(e.dur_ns);
        for (b, h) in [
            (&mut self.fhash, e.args.fhash),
            (&mut self.hhash, e.args.hhash),
        ] {
            match h {
                Some(h) => b.append_value(hash_bytes(h)).expect("16 bytes"),
                None => b.append_null(),
            }
        }
        let fname = strings.file_of_in(input, e);
        self.fname.append_option(fname);
        self.hostname.append_option(strings.host_of_in(input, e));
        self.size.append_option(e.args.size);
        self.ret.append_option(e.args.ret);
        self.offset.append_option(e.args.offset);
        if e.args.other.is_empty() && e.args.name.is_none() && e.args.value.is_none() {
            self.args.append_null();
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
            self.args.append_value(String::from_utf8_lossy(&self.json));
        }
        self.len += 1;
        e.args.fhash.is_none() || fname.is_some()
    }

    fn finish(&mut self, schema: &SchemaRef) -> RecordBatch {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.source.finish()),
            Arc::new(self.id.finish()),
            Arc::new(self.name.finish()),
            Arc::new(self.cat.finish()),
            Arc::new(self.ph.finish()),
            Arc::new(self.pid.finish()),
            Arc::new(self.tid.finish()),
            Arc::new(self.ts.finish()),
            Arc::new(self.dur.finish()),
            Arc::new(self.fhash.finish()),
            Arc::new(self.hhash.finish()),
            Arc::new(self.fname.finish()),
            Arc::new(self.hostname.finish()),
            Arc::new(self.size.finish()),
            Arc::new(self.ret.finish()),
            Arc::new(self.offset.finish()),
            Arc::new(self.args.finish()),
        ];
        self.len = 0;
        RecordBatch::try_new(schema.clone(), cols).expect("columns match event_schema")
    }
}

/// Traces as Arrow record batches of [`event_schema`], streaming: memory holds one batch. A hash resolves through
/// the metadata read before its event, as in the file.
pub struct EventBatches {
    reader: TraceReader,
    strings: StringTable,
    cols: Columns,
    schema: SchemaRef,
    /// The reader's batch being turned into rows: its source and input, its events and the next one to take.
    current: Option<(String, u32, Vec<Event>, usize)>,
    rows: u64,
    unresolved: u64,
}

impl EventBatches {
    pub fn open(paths: &[PathBuf], opts: ReadOptions) -> Result<EventBatches> {
        Ok(EventBatches {
            reader: TraceReader::open(paths, opts)?,
            strings: StringTable::new(),
            cols: Columns::new(),
            schema: event_schema(),
            current: None,
            rows: 0,
            unresolved: 0,
        })
    }

    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Counts so far; complete once the iterator has ended.
    pub fn stats(&self) -> ConvertStats {
        ConvertStats {
            rows: self.rows,
            unresolved_files: self.unresolved,
            read: self.reader.stats().clone(),
        }
    }
}

impl Iterator for EventBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        loop {
            if let Some((source, input, events, next)) = &mut self.current {
                while let Some(e) = events.get(*next) {
                    *next += 1;
                    self.strings.insert_event_in(*input, e);
                    if !self.cols.push((source, *input), e, &self.strings) {
                        self.unresolved += 1;
                    }
                    self.rows += 1;
                    if self.cols.len == ROWS_PER_BATCH {
                        return Some(Ok(self.cols.finish(&self.schema)));
                    }
                }
                self.current = None;
            }
            match self.reader.next() {
                Some(Ok(batch)) => {
                    let source = batch.source.to_string_lossy().into_owned();
                    self.current = Some((source, batch.input, batch.events, 0));
                }
                Some(Err(e)) => return Some(Err(e)),
                None => return (self.cols.len > 0).then(|| Ok(self.cols.finish(&self.schema))),
            }
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
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut batches = EventBatches::open(paths, opts)?;
    let mut writer = ArrowWriter::try_new(file, batches.schema(), Some(props)).map_err(perr)?;
    for batch in batches.by_ref() {
        writer.write(&batch?).map_err(perr)?;
    }
    writer.into_inner().map_err(perr)?.commit()?;
    Ok(batches.stats())
}
