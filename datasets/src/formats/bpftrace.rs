//! Text that bpftrace and bcc tools print, found by its header line, and bpftrace's `-f json`.
//!
//! Tables (columns as each tool's header names them):
//! - mlperf-traces `bio.out` (seed 004; github.com/jovonho/mlperf-traces `trace_bio.bt`):
//!   `TIMESTAMP [TIME] PID COMM DONEPID DONECOMM DISK T [SECTOR] BYTES LAT(ns)`. The line is printed
//!   at completion, so TIMESTAMP is the completion time; DONEPID/DONECOMM are whatever process the
//!   completion ran in (often not the requester: seed 004, note 1), so the event's pid is PID, the
//!   requester's, and the completion context is kept in `done_pid`/`done_comm`.
//! - mlperf-traces `open.out` (`trace_open.bt`): `TIMESTAMP TIME PID COMM FUNC LAT(ns) FILENAME`.
//! - mlperf-traces `vfs_rw.out` (`trace_vfs_rw.bt`): `TIMESTAMP TIME PID COMM R/W LAT(ns) REQUESTED
//!   RETURNED FILE`. Seed 004 notes an integer overflow in these latencies: the script prints them
//!   with `%d`, and latencies of 2^31 ns (2.1 s) or more came out negative. As the notes do, a
//!   negative latency is read as the unsigned 32-bit number it was (plus 2^32).
//! - bcc `biosnoop` (`biosnoop-bpfcc`): `TIME(s) COMM PID DISK T SECTOR BYTES [P] [QUE(ms)] LAT(ms)`,
//!   TIME(s) being seconds since the first completion it printed.
//! - bpftrace `biosnoop.bt`: `TIME(ms) DISK COMM PID LAT(ms)`, TIME(ms) since bpftrace started.
//!
//! Times are printed at completion, so an event starts at that time minus its latency (at 0 for
//! biosnoop's requests issued before its clock started). Lines before the header are the tool's
//! own messages (`Attaching 4 probes...`); after it, every line must be a row.

use serde_json::Value;

use super::args::put;
use crate::parse::LineError;
use crate::{ArgValue, Event, Phase};

/// How many leading lines may come before the header.
const PREAMBLE: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    MlperfBio,
    MlperfOpen,
    MlperfVfsRw,
    BccBiosnoop,
    BpftraceBiosnoop,
}

impl Table {
    /// The table whose header `line` is.
    fn of_header(line: &str) -> Option<Table> {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let has = |c: &str| cols.contains(&c);
        match cols.first().copied()? {
            "TIMESTAMP" if has("DONEPID") => Some(Table::MlperfBio),
            "TIMESTAMP" if has("FUNC") => Some(Table::MlperfOpen),
            "TIMESTAMP" if has("R/W") => Some(Table::MlperfVfsRw),
            "TIME(s)" if has("LAT(ms)") => Some(Table::BccBiosnoop),
            "TIME(ms)" if has("LAT(ms)") => Some(Table::BpftraceBiosnoop),
            _ => None,
        }
    }
}

fn err(field: &str, msg: impl Into<String>) -> LineError {
    LineError {
        field: field.to_owned().into(),
        msg: msg.into(),
    }
}

/// The columns of one table, and the one row being read.
struct Row<'a> {
    cols: &'a [String],
    values: Vec<&'a str>,
}

impl<'a> Row<'a> {
    /// Splits `line` on whitespace; a last column named FILE or FILENAME takes the rest of the
    /// line, which may be empty (an anonymous file has no name).
    fn split(cols: &'a [String], line: &'a str) -> Result<Row<'a>, LineError> {
        let n = cols.len();
        let rest_col = cols.last().is_some_and(|c| c == "FILE" || c == "FILENAME");
        let values: Vec<&str> = if rest_col {
            let mut v = Vec::with_capacity(n);
            let mut rest = line.trim();
            while v.len() + 1 < n && !rest.is_empty() {
                let (word, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                v.push(word);
                rest = tail.trim_start();
            }
            if v.len() + 1 == n {
                v.push(rest);
            }
            v
        } else {
            line.split_whitespace().collect()
        };
        if values.len() != n {
            return Err(err(
                "-",
                format!(
                    "{} columns, the header has {n} ({})",
                    values.len(),
                    cols.join(" ")
                ),
            ));
        }
        Ok(Row { cols, values })
    }

    fn get(&self, col: &str) -> Option<&'a str> {
        self.cols
            .iter()
            .position(|c| c == col)
            .map(|i| self.values[i])
    }

    fn str(&self, col: &str) -> Result<&'a str, LineError> {
        self.get(col)
            .ok_or_else(|| err(col, "the header has no such column"))
    }

    fn int(&self, col: &str) -> Result<i64, LineError> {
        let v = self.str(col)?;
        v.parse()
            .map_err(|_| err(col, format!("`{v}` is not an integer")))
    }

    fn uint(&self, col: &str) -> Result<u64, LineError> {
        let v = self.str(col)?;
        v.parse()
            .map_err(|_| err(col, format!("`{v}` is not a non-negative integer")))
    }

    /// A decimal number of `unit` nanoseconds (`0.0123` seconds), as nanoseconds.
    fn decimal_ns(&self, col: &str, unit: f64) -> Result<u64, LineError> {
        let v = self.str(col)?;
        match v.parse::<f64>() {
            Ok(x) if x >= 0.0 && x.is_finite() => Ok((x * unit).round() as u64),
            _ => Err(err(col, format!("`{v}` is not a non-negative number"))),
        }
    }
}

/// A row printed at `end_ns` that took `lat_ns`.
fn printed(name: &str, cat: &str, pid: u64, end_ns: u64, lat_ns: u64) -> Event {
    Event {
        pid,
        tid: pid,
        ts_ns: end_ns.saturating_sub(lat_ns),
        dur_ns: lat_ns,
        ..Event::new(name, cat, Phase::Complete)
    }
}

/// `R`/`W` (or seed 004's `0`/`1`) as the operation.
fn direction(row: &Row, col: &str) -> Result<&'static str, LineError> {
    match row.str(col)? {
        "R" | "0" => Ok("read"),
        "W" | "1" => Ok("write"),
        v => Err(err(col, format!("`{v}` is not R, W, 0 or 1"))),
    }
}

/// A latency printed with `%d`: negative values wrapped around 2^31 (seed 004's overflow bug).
fn wrapped_latency(row: &Row, col: &str) -> Result<u64, LineError> {
    let v = row.int(col)?;
    let fixed = if v < 0 { v + (1 << 32) } else { v };
    u64::try_from(fixed).map_err(|_| err(col, format!("{v} is below -2^32, no 32-bit overflow")))
}

fn row_event(table: Table, row: &Row) -> Result<Event, LineError> {
    Ok(match table {
        Table::MlperfBio => {
            let mut e = printed(
                direction(row, "T")?,
                "block",
                row.uint("PID")?,
                row.uint("TIMESTAMP")?,
                row.uint("LAT(ns)")?,
            );
            e.args.size = Some(row.int("BYTES")?);
            put(&mut e, "comm", ArgValue::Str(row.str("COMM")?.into()));
            put(&mut e, "disk", ArgValue::Str(row.str("DISK")?.into()));
            put(&mut e, "done_pid", ArgValue::Int(row.int("DONEPID")?));
            put(
                &mut e,
                "done_comm",
                ArgValue::Str(row.str("DONECOMM")?.into()),
            );
            if row.get("SECTOR").is_some() {
                put(&mut e, "sector", ArgValue::Int(row.int("SECTOR")?));
            }
            e
        }
        Table::MlperfOpen => {
            let func = row.str("FUNC")?;
            let cat = if func.starts_with("vfs_") {
                "vfs"
            } else {
                "sys"
            };
            let mut e = printed(
                func,
                cat,
                row.uint("PID")?,
                row.uint("TIMESTAMP")?,
                row.uint("LAT(ns)")?,
            );
            let file = row.get("FILENAME").or(row.get("FILE"));
            e.args.fname = Some(
                file.ok_or_else(|| err("FILENAME", "the header has no such column"))?
                    .into(),
            );
            put(&mut e, "comm", ArgValue::Str(row.str("COMM")?.into()));
            e
        }
        Table::MlperfVfsRw => {
            let name = match direction(row, "R/W")? {
                "read" => "vfs_read",
                _ => "vfs_write",
            };
            let lat = wrapped_latency(row, "LAT(ns)")?;
            let mut e = printed(name, "vfs", row.uint("PID")?, row.uint("TIMESTAMP")?, lat);
            let ret = row.int("RETURNED")?;
            e.args.ret = Some(ret);
            e.args.size = (ret >= 0).then_some(ret);
            e.args.fname = Some(row.str("FILE")?.into());
            put(&mut e, "requested", ArgValue::Int(row.int("REQUESTED")?));
            put(&mut e, "comm", ArgValue::Str(row.str("COMM")?.into()));
            e
        }
        Table::BccBiosnoop => {
            let lat = row.decimal_ns("LAT(ms)", 1e6)?;
            let mut e = printed(
                direction(row, "T")?,
                "block",
                row.uint("PID")?,
                row.decimal_ns("TIME(s)", 1e9)?,
                lat,
            );
            e.args.size = Some(row.int("BYTES")?);
            put(&mut e, "comm", ArgValue::Str(row.str("COMM")?.into()));
            put(&mut e, "disk", ArgValue::Str(row.str("DISK")?.into()));
            put(&mut e, "sector", ArgValue::Int(row.int("SECTOR")?));
            if row.get("QUE(ms)").is_some() {
                put(
                    &mut e,
                    "queue_ns",
                    ArgValue::Int(row.decimal_ns("QUE(ms)", 1e6)? as i64),
                );
            }
            e
        }
        Table::BpftraceBiosnoop => {
            let end = row.uint("TIME(ms)")?.saturating_mul(1_000_000);
            let lat = row.uint("LAT(ms)")?.saturating_mul(1_000_000);
            let mut e = printed("request", "block", row.uint("PID")?, end, lat);
            put(&mut e, "comm", ArgValue::Str(row.str("COMM")?.into()));
            put(&mut e, "disk", ArgValue::Str(row.str("DISK")?.into()));
            e
        }
    })
}

/// Reads text lines into events; errors carry 0-based line numbers.
#[derive(Default)]
pub struct TextReader {
    header: Option<(Table, Vec<String>)>,
    lines_before_header: usize,
}

impl TextReader {
    /// One line of text (without its newline): an event, nothing (preamble or blank), or an error.
    pub fn line(&mut self, line: &str) -> Result<Option<Event>, LineError> {
        let Some((table, cols)) = &self.header else {
            if let Some(t) = Table::of_header(line) {
                self.header = Some((t, line.split_whitespace().map(str::to_owned).collect()));
            } else if self.lines_before_header >= PREAMBLE {
                return Err(err(
                    "-",
                    format!("no known table header in the first {PREAMBLE} lines"),
                ));
            }
            self.lines_before_header += 1;
            return Ok(None);
        };
        if line.trim().is_empty() {
            return Ok(None);
        }
        row_event(*table, &Row::split(cols, line)?).map(Some)
    }
}

/// Whether some line among the first of `head` is a header this module reads.
pub fn sniff_text(head: &[u8]) -> bool {
    String::from_utf8_lossy(head)
        .lines()
        .take(PREAMBLE + 1)
        .any(|l| Table::of_header(l).is_some())
}

/// Whether `head` starts like bpftrace's `-f json` output.
pub fn sniff_json(head: &[u8]) -> bool {
    head.starts_with(b"{\"type\":")
}

/// The events of a file, and its bad lines as (0-based line, events before it, error).
pub type Lines = (Vec<Event>, Vec<(u64, usize, LineError)>);

fn add(out: &mut Lines, i: u64, r: Result<Option<Event>, LineError>, skip: bool) -> bool {
    match r {
        Ok(Some(e)) => out.0.push(e),
        Ok(None) => {}
        Err(e) => {
            out.1.push((i, out.0.len(), e));
            return skip;
        }
    }
    true
}

/// Reads text output; stops at the first bad line unless `skip`.
pub fn read_text(text: &str, skip: bool) -> Lines {
    let mut r = TextReader::default();
    let mut out = Lines::default();
    for (i, line) in text.lines().enumerate() {
        if !add(&mut out, i as u64, r.line(line), skip) {
            break;
        }
    }
    out
}

fn json_event(ty: &str, data: &Value) -> Result<Vec<Event>, LineError> {
    let base = |name: &str, ph| Event::new(name, "bpftrace", ph);
    let obj = data
        .as_object()
        .ok_or_else(|| err("data", format!("a `{ty}` line's data is not an object")))?;
    let mut out = Vec::new();
    match ty {
        "attached_probes" | "lost_events" => {
            let mut e = base(&format!("bpftrace_{ty}"), Phase::Metadata);
            for (k, v) in obj {
                put(&mut e, k, ArgValue::Json(v.to_string()));
            }
            out.push(e);
        }
        "map" | "hist" | "lhist" | "stats" => {
            for (map, v) in obj {
                match v.as_object().filter(|_| ty == "map") {
                    Some(keys) => {
                        for (k, v) in keys {
                            let mut e = base(map, Phase::Counter);
                            put(&mut e, "key", ArgValue::Str(k.clone()));
                            put(&mut e, "value", ArgValue::Json(v.to_string()));
                            out.push(e);
                        }
                    }
                    None => {
                        let mut e = base(map, Phase::Counter);
                        put(&mut e, "value", ArgValue::Json(v.to_string()));
                        out.push(e);
                    }
                }
            }
        }
        other => {
            return Err(err(
                "type",
                format!("unknown bpftrace output type `{other}`"),
            ));
        }
    }
    Ok(out)
}

/// Reads `bpftrace -f json` output: `printf` and `time` text is joined and read as a table,
/// maps become counter events; stops at the first bad line unless `skip`.
pub fn read_json(text: &str, skip: bool) -> Lines {
    let mut r = TextReader::default();
    let mut out = Lines::default();
    let mut pending = String::new();
    for (i, line) in text.lines().enumerate() {
        let i = i as u64;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Result<Value, _> = serde_json::from_str(line);
        let (ty, data) = match &parsed {
            Ok(v) => (v.get("type").and_then(Value::as_str), v.get("data")),
            Err(e) => {
                if !add(&mut out, i, Err(err("-", format!("not JSON: {e}"))), skip) {
                    return out;
                }
                continue;
            }
        };
        let (Some(ty), Some(data)) = (ty, data) else {
            if !add(
                &mut out,
                i,
                Err(err("type", "a line needs `type` and `data`")),
                skip,
            ) {
                return out;
            }
            continue;
        };
        if ty == "printf" || ty == "time" {
            let Some(s) = data.as_str() else {
                if !add(
                    &mut out,
                    i,
                    Err(err("data", "printf data is not a string")),
                    skip,
                ) {
                    return out;
                }
                continue;
            };
            pending.push_str(s);
            while let Some(n) = pending.find('\n') {
                let row: String = pending.drain(..=n).collect();
                if !add(&mut out, i, r.line(&row[..n]), skip) {
                    return out;
                }
            }
            continue;
        }
        match json_event(ty, data) {
            Ok(events) => out.0.extend(events),
            Err(e) => {
                if !add(&mut out, i, Err(e), skip) {
                    return out;
                }
            }
        }
    }
    if !pending.trim().is_empty() {
        let last = text.lines().count().saturating_sub(1) as u64;
        add(&mut out, last, r.line(&pending), skip);
    }
    out
}
