//! Flat Parquet tables through parquet's own column API: typed columns written a row group at a time, and read back
//! by name in batches, any integer width and sign as one integer type and any float width as one float type.
//!
//! Arrow is not needed for this: its reader and writer (parquet's `arrow` feature, with `arrow-select`, `arrow-ipc`
//! and their kernels) were more than a third of a cold build's CPU time, for tables of flat columns. A file written
//! here reads in pyarrow, polars and pandas with the same types as before: strings, unsigned and signed 64-bit
//! integers, doubles and booleans, by their Parquet logical types.

use std::io::Write;
use std::sync::Arc;

use parquet::basic::{
    Compression, ConvertedType, Encoding, LogicalType, Repetition, Type as Physical,
};
use parquet::column::reader::{ColumnReader, ColumnReaderImpl, get_typed_column_reader};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DoubleType, FixedLenByteArray, FixedLenByteArrayType,
    FloatType, Int32Type, Int64Type,
};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{ChunkReader, FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnDescriptor, ColumnPath, Type as SchemaType};

/// A column's type as written: each maps to one Parquet physical and logical type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    /// `BYTE_ARRAY` of logical type `String`.
    Utf8,
    /// `INT64` of logical type `Integer(64, unsigned)`.
    UInt64,
    /// `INT64`.
    Int64,
    /// `DOUBLE`.
    Float64,
    /// `BOOLEAN`.
    Boolean,
    /// `FIXED_LEN_BYTE_ARRAY(16)`.
    Fixed16,
}

#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub ty: Type,
    pub nullable: bool,
    /// Written as deltas (`DELTA_BINARY_PACKED`) rather than through a dictionary: for an integer column whose values
    /// are nearly all distinct and near each other, as timestamps are.
    pub delta: bool,
}

impl Field {
    pub fn new(name: impl Into<String>, ty: Type, nullable: bool) -> Field {
        Field {
            name: name.into(),
            ty,
            nullable,
            delta: false,
        }
    }

    /// This field, written as deltas ([`Field::delta`]).
    pub fn deltas(self) -> Field {
        Field {
            delta: true,
            ..self
        }
    }
}

/// Strings gathered in one buffer, so that a column of them is written without an allocation for each value.
#[derive(Clone, Debug, Default)]
pub struct Strings {
    text: String,
    /// Each value's end in `text`, and whether it is one (false for a null).
    ends: Vec<(usize, bool)>,
}

impl Strings {
    pub fn push(&mut self, value: Option<&str>) {
        if let Some(v) = value {
            self.text.push_str(v);
        }
        self.ends.push((self.text.len(), value.is_some()));
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = Option<&str>> {
        let starts = std::iter::once(0).chain(self.ends.iter().map(|&(end, _)| end));
        starts
            .zip(&self.ends)
            .map(|(start, &(end, valid))| valid.then(|| &self.text[start..end]))
    }
}

/// One row group's values of a column, in Parquet's physical representation; `defs` holds 1 for a value and 0 for
/// a null, one a row.
pub struct Column {
    values: Values,
    defs: Vec<i16>,
}

enum Values {
    Bytes(Vec<ByteArray>),
    Int64(Vec<i64>),
    Double(Vec<f64>),
    Bool(Vec<bool>),
    Fixed(Vec<FixedLenByteArray>),
}

impl Values {
    fn name(&self) -> &'static str {
        match self {
            Values::Bytes(_) => "strings",
            Values::Int64(_) => "64-bit integers",
            Values::Double(_) => "doubles",
            Values::Bool(_) => "booleans",
            Values::Fixed(_) => "16-byte values",
        }
    }
}

fn column<T, V>(
    items: impl IntoIterator<Item = Option<T>>,
    to: impl Fn(T) -> V,
    wrap: impl FnOnce(Vec<V>) -> Values,
) -> Column {
    let mut values = Vec::new();
    let mut defs = Vec::new();
    for item in items {
        match item {
            Some(v) => {
                values.push(to(v));
                defs.push(1);
            }
            None => defs.push(0),
        }
    }
    Column {
        values: wrap(values),
        defs,
    }
}

impl Column {
    pub fn strings<S: AsRef<str>>(items: impl IntoIterator<Item = Option<S>>) -> Column {
        let mut all = Strings::default();
        for s in items {
            all.push(s.as_ref().map(AsRef::as_ref));
        }
        Column::from(all)
    }

    /// Stored in `INT64`'s bits, as Parquet stores an unsigned 64-bit integer.
    pub fn u64s(items: impl IntoIterator<Item = Option<u64>>) -> Column {
        column(items, |v| v as i64, Values::Int64)
    }

    pub fn i64s(items: impl IntoIterator<Item = Option<i64>>) -> Column {
        column(items, |v| v, Values::Int64)
    }

    pub fn f64s(items: impl IntoIterator<Item = Option<f64>>) -> Column {
        column(items, |v| v, Values::Double)
    }

    pub fn bools(items: impl IntoIterator<Item = Option<bool>>) -> Column {
        column(items, |v| v, Values::Bool)
    }

    pub fn fixed16s(items: impl IntoIterator<Item = Option<[u8; 16]>>) -> Column {
        column(
            items,
            |v| FixedLenByteArray::from(v.to_vec()),
            Values::Fixed,
        )
    }

    fn rows(&self) -> usize {
        self.defs.len()
    }
}

impl From<Strings> for Column {
    /// Each value a slice of one shared buffer.
    fn from(s: Strings) -> Column {
        let text = bytes::Bytes::from(s.text.into_bytes());
        let mut start = 0;
        let mut values = Vec::with_capacity(s.ends.len());
        let mut defs = Vec::with_capacity(s.ends.len());
        for (end, valid) in s.ends {
            if valid {
                values.push(ByteArray::from(text.slice(start..end)));
            }
            defs.push(i16::from(valid));
            start = end;
        }
        Column {
            values: Values::Bytes(values),
            defs,
        }
    }
}

fn schema_of(fields: &[Field]) -> Result<SchemaType, ParquetError> {
    let columns = fields
        .iter()
        .map(|f| {
            let (physical, logical) = match f.ty {
                Type::Utf8 => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
                Type::UInt64 => (Physical::INT64, Some(LogicalType::integer(64, false))),
                Type::Int64 => (Physical::INT64, None),
                Type::Float64 => (Physical::DOUBLE, None),
                Type::Boolean => (Physical::BOOLEAN, None),
                Type::Fixed16 => (Physical::FIXED_LEN_BYTE_ARRAY, None),
            };
            let mut b = SchemaType::primitive_type_builder(&f.name, physical)
                .with_repetition(if f.nullable {
                    Repetition::OPTIONAL
                } else {
                    Repetition::REQUIRED
                })
                .with_logical_type(logical);
            if f.ty == Type::Fixed16 {
                b = b.with_length(16);
            }
            b.build().map(Arc::new)
        })
        .collect::<Result<Vec<_>, _>>()?;
    SchemaType::group_type_builder("schema")
        .with_fields(columns)
        .build()
}

/// A Parquet file of flat columns (Snappy), written a row group at a time.
pub struct TableWriter<W: Write + Send> {
    inner: SerializedFileWriter<W>,
    fields: Vec<Field>,
}

impl<W: Write + Send> TableWriter<W> {
    /// `metadata` goes into the footer's key-value metadata.
    pub fn new(
        out: W,
        fields: Vec<Field>,
        metadata: Vec<(String, String)>,
    ) -> Result<Self, ParquetError> {
        let kv = (!metadata.is_empty()).then(|| {
            metadata
                .into_iter()
                .map(|(k, v)| KeyValue::new(k, v))
                .collect()
        });
        let mut props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_key_value_metadata(kv);
        for f in fields.iter().filter(|f| f.delta) {
            let path = ColumnPath::new(vec![f.name.clone()]);
            props = props
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
        }
        let props = props.build();
        let inner = SerializedFileWriter::new(out, Arc::new(schema_of(&fields)?), Arc::new(props))?;
        Ok(TableWriter { inner, fields })
    }

    /// Writes one row group: a column for each field, in the fields' order, of one length.
    pub fn write(&mut self, columns: Vec<Column>) -> Result<(), ParquetError> {
        if columns.len() != self.fields.len() {
            return Err(ParquetError::General(format!(
                "{} columns for {} fields",
                columns.len(),
                self.fields.len()
            )));
        }
        let rows = columns.first().map_or(0, Column::rows);
        let mut group = self.inner.next_row_group()?;
        for (field, column) in self.fields.iter().zip(columns) {
            if column.rows() != rows {
                return Err(ParquetError::General(format!(
                    "column `{}` has {} rows, the first {rows}",
                    field.name,
                    column.rows()
                )));
            }
            if !field.nullable && column.defs.contains(&0) {
                return Err(ParquetError::General(format!(
                    "column `{}` holds a null, and is not nullable",
                    field.name
                )));
            }
            let defs = field.nullable.then_some(column.defs.as_slice());
            let mut w = group
                .next_column()?
                .ok_or_else(|| ParquetError::General("more columns than the schema".into()))?;
            let mismatch = |v: &Values| {
                ParquetError::General(format!(
                    "column `{}` of type {:?} given {}",
                    field.name,
                    field.ty,
                    v.name()
                ))
            };
            match (w.untyped(), &column.values) {
                (ColumnWriter::ByteArrayColumnWriter(c), Values::Bytes(v)) => {
                    c.write_batch(v, defs, None)?;
                }
                (ColumnWriter::Int64ColumnWriter(c), Values::Int64(v)) => {
                    c.write_batch(v, defs, None)?;
                }
                (ColumnWriter::DoubleColumnWriter(c), Values::Double(v)) => {
                    c.write_batch(v, defs, None)?;
                }
                (ColumnWriter::BoolColumnWriter(c), Values::Bool(v)) => {
                    c.write_batch(v, defs, None)?;
                }
                (ColumnWriter::FixedLenByteArrayColumnWriter(c), Values::Fixed(v)) => {
                    c.write_batch(v, defs, None)?;
                }
                (_, v) => return Err(mismatch(v)),
            }
            w.close()?;
        }
        group.close()?;
        Ok(())
    }

    /// Writes the footer and gives back the output.
    pub fn finish(self) -> Result<W, ParquetError> {
        self.inner.into_inner()
    }
}

/// A column's values as read: every integer type as `i128` (wide enough for both `u64` and `i64`), every float type
/// as `f64`; `None` for a null.
#[derive(Clone, Debug, PartialEq)]
pub enum Read {
    Str(Vec<Option<String>>),
    Int(Vec<Option<i128>>),
    Float(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
}

impl Read {
    pub fn len(&self) -> usize {
        match self {
            Read::Str(v) => v.len(),
            Read::Int(v) => v.len(),
            Read::Float(v) => v.len(),
            Read::Bool(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How a column is read, from its physical and logical types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bool,
    Int32 {
        unsigned: bool,
    },
    Int64 {
        unsigned: bool,
    },
    Float32,
    Float64,
    Float16,
    Utf8,
    /// A type nothing here reads (binary, decimal, a timestamp, ...).
    Other,
}

fn kind_of(c: &ColumnDescriptor) -> Kind {
    let logical = c.logical_type_ref();
    let unsigned = matches!(logical, Some(LogicalType::Integer(t)) if !t.is_signed)
        || matches!(
            c.converted_type(),
            ConvertedType::UINT_8
                | ConvertedType::UINT_16
                | ConvertedType::UINT_32
                | ConvertedType::UINT_64
        );
    let plain_int = logical.is_none_or(|l| matches!(l, LogicalType::Integer(_)))
        && matches!(
            c.converted_type(),
            ConvertedType::NONE
                | ConvertedType::INT_8
                | ConvertedType::INT_16
                | ConvertedType::INT_32
                | ConvertedType::INT_64
                | ConvertedType::UINT_8
                | ConvertedType::UINT_16
                | ConvertedType::UINT_32
                | ConvertedType::UINT_64
        );
    match c.physical_type() {
        Physical::BOOLEAN => Kind::Bool,
        Physical::INT32 if plain_int => Kind::Int32 { unsigned },
        Physical::INT64 if plain_int => Kind::Int64 { unsigned },
        Physical::FLOAT => Kind::Float32,
        Physical::DOUBLE => Kind::Float64,
        Physical::FIXED_LEN_BYTE_ARRAY
            if logical == Some(&LogicalType::Float16) && c.type_length() == 2 =>
        {
            Kind::Float16
        }
        Physical::BYTE_ARRAY
            if matches!(
                logical,
                Some(LogicalType::String | LogicalType::Enum | LogicalType::Json)
            ) || c.converted_type() == ConvertedType::UTF8 =>
        {
            Kind::Utf8
        }
        _ => Kind::Other,
    }
}

/// A column's type in Arrow's words (`UInt64`, `Utf8`, `Float32`, ...), as pyarrow and polars name it.
pub fn type_name(c: &ColumnDescriptor) -> String {
    let width = |c: &ColumnDescriptor, default: i8| match c.logical_type_ref() {
        Some(LogicalType::Integer(t)) => t.bit_width,
        _ => match c.converted_type() {
            ConvertedType::INT_8 | ConvertedType::UINT_8 => 8,
            ConvertedType::INT_16 | ConvertedType::UINT_16 => 16,
            ConvertedType::INT_32 | ConvertedType::UINT_32 => 32,
            _ => default,
        },
    };
    let int = |unsigned: bool, default| {
        format!(
            "{}{}",
            if unsigned { "UInt" } else { "Int" },
            width(c, default)
        )
    };
    match kind_of(c) {
        Kind::Bool => "Boolean".into(),
        Kind::Int32 { unsigned } => int(unsigned, 32),
        Kind::Int64 { unsigned } => int(unsigned, 64),
        Kind::Float32 => "Float32".into(),
        Kind::Float64 => "Float64".into(),
        Kind::Float16 => "Float16".into(),
        Kind::Utf8 => "Utf8".into(),
        Kind::Other => match c.logical_type_ref() {
            Some(l) => format!("{:?} ({})", l, c.physical_type()),
            None => c.physical_type().to_string(),
        },
    }
}

fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits >> 15 == 1 { -1.0 } else { 1.0 };
    let exp = i32::from((bits >> 10) & 0x1f);
    let frac = f64::from(bits & 0x3ff);
    sign * match exp {
        0 => frac * 2f64.powi(-24),
        31 if frac == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    }
}

/// A Parquet file of flat columns, read by name.
pub struct TableReader<R: ChunkReader + 'static> {
    file: SerializedFileReader<R>,
}

impl<R: ChunkReader + 'static> TableReader<R> {
    pub fn new(input: R) -> Result<Self, ParquetError> {
        Ok(TableReader {
            file: SerializedFileReader::new(input)?,
        })
    }

    pub fn num_rows(&self) -> u64 {
        self.file.metadata().file_metadata().num_rows() as u64
    }

    /// The columns' names, in the file's order.
    pub fn columns(&self) -> Vec<String> {
        self.descriptors().map(|c| c.name().to_owned()).collect()
    }

    fn descriptors(&self) -> impl Iterator<Item = &ColumnDescriptor> {
        self.file
            .metadata()
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .map(|c| c.as_ref())
    }

    /// The index of the column named `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.descriptors().position(|c| c.name() == name)
    }

    /// Whether [`TableReader::batches`] reads column `i`: false for a type nothing here reads (binary, decimal, a
    /// timestamp, ...).
    pub fn readable(&self, i: usize) -> bool {
        kind_of(self.descriptor(i)) != Kind::Other
    }

    /// The type of column `i` in Arrow's words ([`type_name`]).
    pub fn type_of(&self, i: usize) -> String {
        type_name(self.descriptor(i))
    }

    fn descriptor(&self, i: usize) -> &ColumnDescriptor {
        self.file
            .metadata()
            .file_metadata()
            .schema_descr()
            .columns()[i]
            .as_ref()
    }

    /// A value of the footer's key-value metadata.
    pub fn metadata(&self, key: &str) -> Option<&str> {
        self.file
            .metadata()
            .file_metadata()
            .key_value_metadata()?
            .iter()
            .find(|kv| kv.key == key)?
            .value
            .as_deref()
    }

    /// Reads columns `columns` (indexes) in batches of at most `rows` rows, row group after row group. A column of a
    /// type nothing here reads is an error naming it; check [`TableReader::type_of`] first to say more.
    pub fn batches(&self, columns: Vec<usize>, rows: usize) -> Batches<'_, R> {
        Batches {
            reader: self,
            columns,
            rows: rows.max(1),
            group: 0,
            left: 0,
            row: 0,
            done: false,
            cursors: Vec::new(),
        }
    }
}

enum Cursor {
    Bool(ColumnReaderImpl<BoolType>),
    Int32(ColumnReaderImpl<Int32Type>, bool),
    Int64(ColumnReaderImpl<Int64Type>, bool),
    Float32(ColumnReaderImpl<FloatType>),
    Float64(ColumnReaderImpl<DoubleType>),
    Float16(ColumnReaderImpl<FixedLenByteArrayType>),
    Utf8(ColumnReaderImpl<ByteArrayType>),
}

/// Reads `n` records of a flat column into options: `values` holds the non-null ones, `defs` says which rows they
/// fill.
fn read_n<T: parquet::data_type::DataType, U>(
    reader: &mut ColumnReaderImpl<T>,
    n: usize,
    nullable: bool,
    to: impl Fn(&T::T) -> Result<U, ParquetError>,
) -> Result<Vec<Option<U>>, ParquetError> {
    let mut values = Vec::with_capacity(n);
    let mut defs = Vec::with_capacity(n);
    let mut got = 0;
    while got < n {
        let (records, _, _) =
            reader.read_records(n - got, nullable.then_some(&mut defs), None, &mut values)?;
        if records == 0 {
            return Err(ParquetError::General(format!(
                "the column ended after {got} of its row group's {n} rows"
            )));
        }
        got += records;
    }
    if !nullable {
        return values.iter().map(|v| to(v).map(Some)).collect();
    }
    let mut values = values.iter();
    defs.iter()
        .map(|&d| {
            if d == 0 {
                Ok(None)
            } else {
                let v = values.next().ok_or_else(|| {
                    ParquetError::General("fewer values than definition levels".into())
                })?;
                to(v).map(Some)
            }
        })
        .collect()
}

impl Cursor {
    fn new(reader: ColumnReader, kind: Kind) -> Option<Cursor> {
        Some(match kind {
            Kind::Bool => Cursor::Bool(get_typed_column_reader(reader)),
            Kind::Int32 { unsigned } => Cursor::Int32(get_typed_column_reader(reader), unsigned),
            Kind::Int64 { unsigned } => Cursor::Int64(get_typed_column_reader(reader), unsigned),
            Kind::Float32 => Cursor::Float32(get_typed_column_reader(reader)),
            Kind::Float64 => Cursor::Float64(get_typed_column_reader(reader)),
            Kind::Float16 => Cursor::Float16(get_typed_column_reader(reader)),
            Kind::Utf8 => Cursor::Utf8(get_typed_column_reader(reader)),
            Kind::Other => return None,
        })
    }

    fn read(&mut self, n: usize, nullable: bool) -> Result<Read, ParquetError> {
        Ok(match self {
            Cursor::Bool(r) => Read::Bool(read_n(r, n, nullable, |v| Ok(*v))?),
            Cursor::Int32(r, unsigned) => {
                let u = *unsigned;
                Read::Int(read_n(r, n, nullable, |&v| {
                    Ok(if u {
                        i128::from(v as u32)
                    } else {
                        i128::from(v)
                    })
                })?)
            }
            Cursor::Int64(r, unsigned) => {
                let u = *unsigned;
                Read::Int(read_n(r, n, nullable, |&v| {
                    Ok(if u {
                        i128::from(v as u64)
                    } else {
                        i128::from(v)
                    })
                })?)
            }
            Cursor::Float32(r) => Read::Float(read_n(r, n, nullable, |&v| Ok(f64::from(v)))?),
            Cursor::Float64(r) => Read::Float(read_n(r, n, nullable, |&v| Ok(v))?),
            Cursor::Float16(r) => Read::Float(read_n(r, n, nullable, |v| {
                let b = v.data();
                Ok(f16_to_f64(u16::from_le_bytes([b[0], b[1]])))
            })?),
            Cursor::Utf8(r) => Read::Str(read_n(r, n, nullable, |v| {
                v.as_utf8()
                    .map(str::to_owned)
                    .map_err(|e| ParquetError::General(format!("not UTF-8: {e}")))
            })?),
        })
    }
}

/// Rows of the columns asked for, from [`Batches`].
#[derive(Debug)]
pub struct Batch {
    /// The batch's first row in the file, from 0.
    pub row: u64,
    pub rows: usize,
    /// In the order asked.
    pub columns: Vec<Read>,
}

/// Batches of columns, from [`TableReader::batches`].
pub struct Batches<'a, R: ChunkReader + 'static> {
    reader: &'a TableReader<R>,
    columns: Vec<usize>,
    rows: usize,
    group: usize,
    /// Rows left in the current row group.
    left: usize,
    /// The next batch's first row.
    row: u64,
    /// After the last batch or an error.
    done: bool,
    cursors: Vec<(Cursor, bool)>,
}

/// A read that failed: the column (None for the file as a whole) and the first row of the batch.
#[derive(Debug)]
pub struct BatchError {
    pub column: Option<String>,
    pub row: u64,
    pub error: ParquetError,
}

impl<R: ChunkReader + 'static> Batches<'_, R> {
    fn fail(&self, column: Option<usize>, row: u64, error: ParquetError) -> BatchError {
        BatchError {
            column: column.map(|c| {
                self.reader
                    .file
                    .metadata()
                    .file_metadata()
                    .schema_descr()
                    .column(c)
                    .name()
                    .to_owned()
            }),
            row,
            error,
        }
    }

    fn next_group(&mut self, row: u64) -> Result<bool, BatchError> {
        let meta = self.reader.file.metadata();
        while self.group < meta.num_row_groups() {
            let g = self.group;
            self.group += 1;
            let rows = meta.row_group(g).num_rows() as usize;
            if rows == 0 {
                continue;
            }
            let group = self
                .reader
                .file
                .get_row_group(g)
                .map_err(|e| self.fail(None, row, e))?;
            let descr = meta.file_metadata().schema_descr();
            let mut cursors = Vec::with_capacity(self.columns.len());
            for &c in &self.columns {
                let d = descr.column(c);
                let reader = group
                    .get_column_reader(c)
                    .map_err(|e| self.fail(Some(c), row, e))?;
                let cursor = Cursor::new(reader, kind_of(&d)).ok_or_else(|| {
                    self.fail(
                        Some(c),
                        row,
                        ParquetError::General(format!(
                            "a column of type {} is not read here",
                            type_name(&d)
                        )),
                    )
                })?;
                cursors.push((cursor, d.max_def_level() > 0));
            }
            self.cursors = cursors;
            self.left = rows;
            return Ok(true);
        }
        Ok(false)
    }
}

impl<R: ChunkReader + 'static> Iterator for Batches<'_, R> {
    type Item = Result<Batch, BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let row = self.row;
        if self.left == 0 {
            match self.next_group(row) {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        let n = self.rows.min(self.left);
        let mut out = Vec::with_capacity(self.cursors.len());
        for (i, (cursor, nullable)) in self.cursors.iter_mut().enumerate() {
            match cursor.read(n, *nullable) {
                Ok(r) => out.push(r),
                Err(e) => {
                    let c = self.columns[i];
                    self.done = true;
                    return Some(Err(self.fail(Some(c), row, e)));
                }
            }
        }
        self.left -= n;
        self.row += n as u64;
        Some(Ok(Batch {
            row,
            rows: n,
            columns: out,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::f16_to_f64;

    #[test]
    fn half_floats_widen_exactly() {
        assert_eq!(f16_to_f64(0x3c00), 1.0);
        assert_eq!(f16_to_f64(0xc000), -2.0);
        assert_eq!(f16_to_f64(0x7bff), 65504.0);
        assert_eq!(f16_to_f64(0x0001), 2f64.powi(-24));
        assert_eq!(f16_to_f64(0x3555), 0.333251953125);
        assert_eq!(f16_to_f64(0x7c00), f64::INFINITY);
        assert!(f16_to_f64(0x7e00).is_nan());
    }
}
