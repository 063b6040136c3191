//! Context columns that come from other calls than the row itself: `direct` (the flags the file was opened with)
//! and `sequential` (whether the row continues where the previous call on the file stopped); and from metadata,
//! `thread` and `process` (their names when the row started).

use std::collections::HashMap;

use datasets::strings::Scope;
use datasets::strings::thread_names::ThreadNames;
use datasets::vocab::op;
use datasets::{ArgValue, Event, Hash};

use crate::matrix::O_DIRECT;
use crate::process::Process;
use crate::row::Row;
use crate::syscall::op_name;

/// One open of a file, for `direct`.
#[derive(Clone, Debug, PartialEq)]
pub struct Open {
    pub pid: u64,
    pub ts: u64,
    pub fhash: Option<Hash>,
    pub fname: Option<String>,
    /// The input file the open came from, which scopes `fhash`.
    pub input: u32,
    pub flags: i64,
}

impl Open {
    /// The open `e` (of input `input`) is, when it is one and carries integer flags.
    pub fn of(e: &Event, input: u32) -> Option<Open> {
        if !op::opens(op_name(&e.name)) {
            return None;
        }
        let flags = match e.args.get("flags")? {
            ArgValue::Int(v) => *v,
            ArgValue::Str(s) => s.trim().parse().ok()?,
            _ => return None,
        };
        Some(Open {
            pid: e.pid,
            ts: e.ts_ns,
            fhash: e.args.fhash,
            fname: e.args.fname.clone(),
            input,
            flags,
        })
    }
}

/// What identifies a file: its resolved name, else its hash in its input.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FileKey {
    Name(String),
    Hash(u32, Hash),
}

impl FileKey {
    pub fn of(name: Option<&str>, input: u32, hash: Option<Hash>) -> Option<FileKey> {
        match (name, hash) {
            (Some(n), _) => Some(FileKey::Name(n.to_owned())),
            (None, Some(h)) => Some(FileKey::Hash(input, h)),
            (None, None) => None,
        }
    }
}

/// A row as the context rules see it.
pub struct Call {
    pub process: Process,
    pub ts: u64,
    pub file: Option<FileKey>,
    pub offset: Option<i64>,
    pub size: Option<i64>,
}

/// `direct` for each call, in `order`: the O_DIRECT bit of the latest open of the same file in the same process
/// that started no later than the call. `opens` are (process, file, open) with the file resolved.
pub fn direct(
    calls: &[Call],
    order: &[u32],
    opens: &[(Process, Option<FileKey>, Open)],
) -> Vec<Option<bool>> {
    let mut by_file: HashMap<(Process, &FileKey), Vec<(u64, i64)>> = HashMap::new();
    for (process, file, o) in opens {
        if let Some(f) = file {
            by_file
                .entry((*process, f))
                .or_default()
                .push((o.ts, o.flags));
        }
    }
    for v in by_file.values_mut() {
        v.sort_unstable();
    }
    let mut out = vec![None; calls.len()];
    for &i in order {
        let c = &calls[i as usize];
        out[i as usize] = c.file.as_ref().and_then(|f| {
            let v = by_file.get(&(c.process, f))?;
            let n = v.partition_point(|&(ts, _)| ts <= c.ts);
            n.checked_sub(1).map(|k| v[k].1 & O_DIRECT != 0)
        });
    }
    out
}

/// `sequential` for each call: walking the calls in `order`, whether its offset is the previous call's offset plus
/// its size on the same file in the same process. `None` for a call without an offset, or whose previous call had
/// none.
pub fn sequential(calls: &[Call], order: &[u32]) -> Vec<Option<bool>> {
    let mut next: HashMap<(Process, &FileKey), Option<i64>> = HashMap::new();
    let mut out = vec![None; calls.len()];
    for &i in order {
        let c = &calls[i as usize];
        let (Some(file), Some(offset)) = (&c.file, c.offset) else {
            continue;
        };
        let expected = next
            .insert((c.process, file), c.size.map(|s| offset + s))
            .flatten();
        out[i as usize] = expected.map(|e| e == offset);
    }
    out
}

/// `thread` and `process` for each row: the names their metadata gave them last at or before the row's start (the
/// first name, when every one is later), in the row's input and pid.
pub fn names(rows: &[Row], names: &ThreadNames) -> (Vec<Option<String>>, Vec<Option<String>>) {
    rows.iter()
        .map(|r| {
            let scope = Scope {
                input: r.input,
                pid: r.pid,
            };
            let owned = |n: Option<&str>| n.map(str::to_owned);
            (
                owned(names.thread_at(scope, r.tid, r.ts)),
                owned(names.process_at(scope, r.ts)),
            )
        })
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(pid: u64, ts: u64, file: &str, offset: Option<i64>, size: Option<i64>) -> Call {
        Call {
            process: Process { input: None, pid },
            ts,
            file: Some(FileKey::Name(file.into())),
            offset,
            size,
        }
    }

    #[test]
    fn sequential_follows_the_previous_call_on_the_same_file_and_pid() {
        let calls = [
            call(1, 0, "a", Some(0), Some(10)),
            call(1, 1, "a", Some(10), Some(10)),
            call(1, 2, "b", Some(0), Some(5)),
            call(1, 3, "a", Some(30), Some(10)),
            call(2, 4, "a", Some(40), Some(10)),
            call(1, 5, "a", None, Some(10)),
            call(1, 6, "a", Some(40), None),
            call(1, 7, "a", Some(40), Some(1)),
        ];
        let order: Vec<u32> = (0..calls.len() as u32).collect();
        assert_eq!(
            sequential(&calls, &order),
            [
                None,
                Some(true),
                None,
                Some(false),
                None,
                None,
                Some(true),
                None
            ]
        );
    }

    #[test]
    fn direct_takes_the_latest_open_before_the_call() {
        let open = |ts, flags| {
            (
                Process {
                    input: None,
                    pid: 1,
                },
                Some(FileKey::Name("a".into())),
                Open {
                    pid: 1,
                    ts,
                    fhash: None,
                    fname: Some("a".into()),
                    input: 0,
                    flags,
                },
            )
        };
        let opens = [open(0, 0o40002), open(10, 2)];
        let calls = [
            call(1, 0, "a", None, None),
            call(1, 5, "a", None, None),
            call(1, 10, "a", None, None),
            call(2, 5, "a", None, None),
            call(1, 5, "b", None, None),
        ];
        let order: Vec<u32> = (0..calls.len() as u32).collect();
        assert_eq!(
            direct(&calls, &order, &opens),
            [Some(true), Some(true), Some(false), None, None]
        );
    }
}
