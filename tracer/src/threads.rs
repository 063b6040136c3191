//! Thread and process names as Chrome-trace metadata (`thread_name`, `process_name`), which
//! Perfetto shows on each thread's track. A name whose record does not say the thread's process
//! (a fork's child, a thread renamed by another) waits for the thread's first event.

use std::collections::HashMap;

use crate::error::Result;
use datasets::write::TraceWriter;
use datasets::{Args, Event, Phase};
use tracer_ebpf::{NameEvent, named};

#[derive(Default)]
struct Thread {
    pid: Option<u32>,
    /// A name not yet written, and since when it holds.
    pending: Option<(String, u64)>,
    /// The last name written: exec fires both sched_process_exec and task_rename.
    written: Option<String>,
}

#[derive(Default)]
pub struct ThreadNames {
    threads: HashMap<u32, Thread>,
    /// The last tid [`ThreadNames::seen`] found settled: most records repeat the previous one's.
    last: Option<(u32, u32)>,
}

impl ThreadNames {
    /// Names thread `tid` of process `pid` from `ts` on.
    pub fn name(
        &mut self,
        w: &mut TraceWriter,
        pid: u32,
        tid: u32,
        name: &str,
        ts: u64,
    ) -> Result<()> {
        let t = self.threads.entry(tid).or_default();
        if t.pid != Some(pid) {
            t.written = None;
        }
        t.pid = Some(pid);
        t.pending = None;
        if self.last.is_some_and(|(_, l)| l == tid) {
            self.last = None;
        }
        write(w, t, pid, tid, name, ts)
    }

    pub fn record(&mut self, w: &mut TraceWriter, n: &NameEvent) -> Result<()> {
        let name = comm(&n.comm);
        let tid = n.hdr.tid;
        match n.by {
            named::SELF => self.name(w, n.hdr.tgid, tid, &name, n.hdr.ts),
            by => {
                let t = self.threads.entry(tid).or_default();
                if by == named::FORK {
                    // A tid reused by a new task.
                    t.pid = None;
                    t.written = None;
                }
                if self.last.is_some_and(|(_, l)| l == tid) {
                    self.last = None;
                }
                match t.pid {
                    Some(pid) => write(w, t, pid, tid, &name, n.hdr.ts),
                    None => {
                        t.pending = Some((name, n.hdr.ts));
                        Ok(())
                    }
                }
            }
        }
    }

    /// An event of thread `tid` of process `pid`: writes the name it waited for.
    pub fn seen(&mut self, w: &mut TraceWriter, pid: u32, tid: u32) -> Result<()> {
        if self.last == Some((pid, tid)) {
            return Ok(());
        }
        self.last = Some((pid, tid));
        let t = self.threads.entry(tid).or_default();
        if t.pid.is_none() {
            t.pid = Some(pid);
        }
        match t.pending.take() {
            Some((name, ts)) => write(w, t, pid, tid, &name, ts),
            None => Ok(()),
        }
    }
}

/// A task's name as the kernel keeps it: up to 16 bytes, NUL-terminated when shorter.
pub(crate) fn comm(c: &[u8; 16]) -> String {
    let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
    String::from_utf8_lossy(&c[..end]).into_owned()
}

fn write(
    w: &mut TraceWriter,
    t: &mut Thread,
    pid: u32,
    tid: u32,
    name: &str,
    ts: u64,
) -> Result<()> {
    if t.written.as_deref() == Some(name) {
        return Ok(());
    }
    t.written = Some(name.to_owned());
    let kinds: &[&str] = if pid == tid {
        &["thread_name", "process_name"]
    } else {
        &["thread_name"]
    };
    for k in kinds {
        w.write(&Event {
            id: None,
            name: (*k).into(),
            cat: "datacrumbs".into(),
            ph: Phase::Metadata,
            pid: pid as u64,
            tid: tid as u64,
            ts_ns: ts,
            dur_ns: 0,
            args: Args {
                name: Some(name.to_owned()),
                ..Args::default()
            },
        })?;
    }
    Ok(())
}
