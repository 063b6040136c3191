//! A row: one call of a row layer, as the matrix keeps it.

use std::sync::Arc;

use compact_str::CompactString;
use datasets::vocab::op;
use datasets::{ArgValue, Event, Hash};

use crate::syscall::op_name;

/// A row: what the matrix keeps of its event.
#[derive(Clone, Debug)]
pub struct Row {
    pub op: CompactString,
    pub pid: u64,
    pub tid: u64,
    pub ts: u64,
    pub dur: u64,
    pub fhash: Option<Hash>,
    pub fname: Option<String>,
    /// The input file the row came from (its index among the inputs), which scopes `fhash`.
    pub input: u32,
    pub size: Option<i64>,
    pub offset: Option<i64>,
    /// The run label of the input the row came from.
    pub run: Option<Arc<str>>,
}

impl Row {
    pub fn of(e: &Event, run: Option<&Arc<str>>, input: u32) -> Row {
        Row {
            op: op_name(&e.name).into(),
            pid: e.pid,
            tid: e.tid,
            ts: e.ts_ns,
            dur: e.dur_ns,
            fhash: e.args.fhash,
            fname: e.args.fname.clone(),
            input,
            size: row_size(e),
            offset: e.args.offset,
            run: run.cloned(),
        }
    }
}

/// Bytes a row transferred: for fread and fwrite the items they returned times the item size (`args.ret` ×
/// `args.size`, as DFTracer writes them); else `args.size`, or `args.size_sum` in DataCrumbs traces, or for a call
/// that returns the bytes it moved (read, write, ...) a non-negative `args.ret`, as in DFTracer traces.
pub fn row_size(e: &Event) -> Option<i64> {
    SizeRule::of(op_name(&e.name)).size(e)
}

/// How [`row_size`] reads an event's bytes, which its operation decides: a caller that meets one name many times
/// works it out once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeRule {
    items: bool,
    transfers: bool,
}

impl SizeRule {
    /// The rule of operation `op` (an [`op_name`]).
    pub fn of(op: &str) -> SizeRule {
        SizeRule {
            items: op::moves_items(op),
            transfers: op::transfers(op),
        }
    }

    /// [`row_size`] of an event of this rule's operation.
    pub fn size(self, e: &Event) -> Option<i64> {
        if self.items {
            return e.args.ret.filter(|&r| r >= 0)?.checked_mul(e.args.size?);
        }
        e.args
            .size
            .or_else(|| match e.args.get("size_sum") {
                Some(ArgValue::Int(v)) => Some(*v),
                _ => None,
            })
            .or_else(|| e.args.ret.filter(|&r| r >= 0 && self.transfers))
    }
}
