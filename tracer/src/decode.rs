//! Turns ring-buffer records and profile counters into trace events, resolving file ids to
//! interned file names and probe ids to function and tracepoint names.

use std::collections::{BTreeMap, HashMap, hash_map::Entry};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;
use compact_str::CompactString;
use datasets::write::TraceWriter;
use datasets::{ArgValue, Args, Event, Hash, Phase};
use tracer_ebpf::{
    AIO_PROBE, AioEvent, BlockEvent, EventHeader, NameEvent, ProbeEvent, ProfileKey, ProfileValue,
    SchedEvent, StackEvent, SysEvent, SysPathEvent, TpEvent, URING_PROBE, UringEvent, kind, named,
};

use crate::layers::{Layer, Names, aio, block, oncpu, sched, sys, tracepoints, uring};
use crate::record::complete;
use crate::threads::ThreadNames;

/// The call whose file leaves the table of what is open.
const CLOSE: &str = "close";
const CHDIR: &str = "chdir";
const FCHDIR: &str = "fchdir";

/// Reads a `#[repr(C)]` record from the front of `b`.
pub fn read<T: aya::Pod>(b: &[u8]) -> Option<T> {
    // SAFETY: `b` holds at least `size_of::<T>()` bytes, read unaligned, and `Pod` makes any bytes
    // a valid `T`.
    (b.len() >= size_of::<T>()).then(|| unsafe { std::ptr::read_unaligned(b.as_ptr().cast()) })
}

pub struct Decoder {
    names: Names,
    /// File id → interned file name.
    files: HashMap<u64, Hash>,
    /// File id → path and the fds that name it, of what is open (opened while tracing and not yet
    /// closed, or open before tracing began): what `openat(dirfd, name)`'s relative names join to.
    /// The last close takes an entry out, so it holds no more than the traced processes' open files.
    open_paths: HashMap<u64, (String, u32)>,
    cwds: HashMap<u32, Option<PathBuf>>,
    /// Profile mode: records only teach file names; counters become the events.
    profile: Option<u64>,
    pub per_layer: BTreeMap<Layer, u64>,
    /// Records too short, or of an unknown kind or layer; counters of an unknown layer.
    pub malformed: u64,
    /// The event being filled: one per decoder, reused for every record.
    ev: Event,
    pub threads: ThreadNames,
    ignored: Option<Ignored>,
    /// The records, and in profile mode the calls counted, of the ignored process.
    pub ignored_events: u64,
}

/// A process of the tracer's own in the scope (`calibrate`'s helper), whose records are counted, never written.
struct Ignored {
    tgid: u32,
    /// The clock when it was reaped, `u64::MAX` until then: after it, its pid may be a traced process's.
    until: Arc<AtomicU64>,
}

impl Decoder {
    pub fn new(names: Names, profile_interval_ns: Option<u64>) -> Decoder {
        Decoder {
            names,
            files: HashMap::new(),
            open_paths: HashMap::new(),
            cwds: HashMap::new(),
            profile: profile_interval_ns,
            per_layer: BTreeMap::new(),
            malformed: 0,
            ev: Event {
                id: None,
                name: CompactString::default(),
                cat: CompactString::default(),
                ph: Phase::Complete,
                pid: 0,
                tid: 0,
                ts_ns: 0,
                dur_ns: 0,
                args: Args::default(),
            },
            threads: ThreadNames::default(),
            ignored: None,
            ignored_events: 0,
        }
    }

    /// Counts the records of process `tgid` that began before `until` (the clock when it was reaped, `u64::MAX`
    /// until then) in [`Decoder::ignored_events`] and writes nothing of them: no event, no name.
    pub fn ignore(&mut self, tgid: u32, until: Arc<AtomicU64>) {
        self.ignored = Some(Ignored { tgid, until });
    }

    /// Whether what process `tgid` did at `ts` is the ignored process's.
    fn ignores(&self, tgid: u32, ts: u64) -> bool {
        self.ignored
            .as_ref()
            .is_some_and(|i| i.tgid == tgid && ts < i.until.load(Ordering::Relaxed))
    }

    /// The names it resolved by, for the next run of a session.
    pub fn into_names(self) -> Names {
        self.names
    }

    /// Names `id` (a file open before tracing began).
    pub fn add_file(&mut self, w: &mut TraceWriter, id: u64, path: &str) -> Result<()> {
        let h = w.intern_file(path)?;
        self.files.insert(id, h);
        self.open_paths.insert(id, (path.to_owned(), 1));
        Ok(())
    }

    /// `path` made absolute: against the directory `dirfd` names when the call gave one other
    /// than `AT_FDCWD` (its file id `dir`, else what the process's fd names now), else against the
    /// process's working directory: as its chdir calls and its parent's left it, else as first read.
    fn resolve(&mut self, pid: u32, path: &str, dirfd: Option<i32>, dir: u64) -> String {
        if path.starts_with('/') {
            return path.to_owned();
        }
        if let Some(fd) = dirfd {
            let base = self
                .open_paths
                .get(&dir)
                .map(|(p, _)| PathBuf::from(p))
                .or_else(|| crate::procfs::fd_path(pid, fd));
            return match base {
                Some(d) => d.join(path).to_string_lossy().into_owned(),
                // Gone before it could be read: a name no other directory's file shares.
                None => format!("fd {fd} of process {pid}/{path}"),
            };
        }
        let cwd = self
            .cwds
            .entry(pid)
            .or_insert_with(|| crate::procfs::cwd(pid));
        match cwd {
            Some(c) => c.join(path).to_string_lossy().into_owned(),
            None => path.to_owned(),
        }
    }

    /// A forked process starts in its parent's working directory: known from the parent's chdir calls, else read
    /// now, while the parent still runs (the child may be gone before its first relative name is resolved).
    fn inherit_cwd(&mut self, parent: u32, child: u32) {
        if parent == child {
            return;
        }
        let cwd = self
            .cwds
            .entry(parent)
            .or_insert_with(|| crate::procfs::cwd(parent))
            .clone();
        self.cwds.insert(child, cwd);
    }

    fn file(&self, id: u64) -> Option<Hash> {
        if id == 0 {
            None
        } else {
            self.files.get(&id).copied()
        }
    }

    /// Decodes one record and writes its event.
    pub fn record(&mut self, rec: &[u8], w: &mut TraceWriter) -> Result<()> {
        let Some(hdr) = read::<EventHeader>(rec) else {
            self.malformed += 1;
            return Ok(());
        };
        if self.ignores(hdr.tgid, hdr.ts) {
            self.ignored_events += 1;
            return Ok(());
        }
        if hdr.kind == kind::NAME {
            match read::<NameEvent>(rec) {
                Some(n) => {
                    if n.by == named::FORK {
                        self.inherit_cwd(n.hdr.tgid, n.hdr.tid);
                    }
                    self.threads.record(w, &n)?
                }
                None => self.malformed += 1,
            }
            return Ok(());
        }
        self.threads.seen(w, hdr.tgid, hdr.tid)?;
        let Some(layer) = Layer::from_id(hdr.layer) else {
            self.malformed += 1;
            return Ok(());
        };
        let decoded = match hdr.kind {
            kind::SYS | kind::SYS_PATH => self.sys(rec, hdr.kind, w)?,
            kind::URING => read::<UringEvent>(rec)
                .map(|u| {
                    let fhash = self.file(u.file);
                    uring::decode(&mut self.ev, &u, &self.names.uring, fhash)
                })
                .is_some(),
            kind::AIO => read::<AioEvent>(rec)
                .map(|a| {
                    let fhash = self.file(a.file);
                    aio::decode(&mut self.ev, &a, fhash)
                })
                .is_some(),
            kind::PROBE => read::<ProbeEvent>(rec)
                .map(|p| self.probe(&p, layer))
                .is_some(),
            kind::TP => read::<TpEvent>(rec)
                .map(|t| tracepoints::decode(&mut self.ev, &t, layer, &self.names.tps))
                .is_some(),
            kind::SCHED => match read::<SchedEvent>(rec) {
                Some(mut s) => {
                    if self.ignores(s.holder_tgid, s.hdr.ts.saturating_add(s.hdr.dur)) {
                        // As the kernel side treats the tracer: its helper is not the job's CPU contention.
                        (s.holder_tgid, s.holder_tid, s.holder_comm) = (0, 0, [0; 16]);
                        (s.holder_work, s.woken) = (0, 0);
                    }
                    sched::decode(&mut self.ev, &s, &mut self.names);
                    if let Some(woken) = sched::woken(&s) {
                        if self.profile.is_none() {
                            *self.per_layer.entry(Layer::Sched).or_default() += 1;
                            w.write(&self.ev)?;
                        }
                        sched::runnable(&mut self.ev, &s, woken, &mut self.names);
                    }
                    true
                }
                None => false,
            },
            kind::SAMPLE => read::<StackEvent>(rec)
                .is_some_and(|s| oncpu::decode(&mut self.ev, &s, &mut self.names)),
            kind::STACK => {
                match read::<StackEvent>(rec) {
                    Some(s) => sched::stack(&s, &mut self.names),
                    None => self.malformed += 1,
                }
                return Ok(());
            }
            kind::BLOCK => match read::<BlockEvent>(rec) {
                Some(b) => {
                    if self.profile.is_none() && block::queue(&mut self.ev, &b) {
                        *self.per_layer.entry(Layer::Block).or_default() += 1;
                        w.write(&self.ev)?;
                    }
                    block::device(&mut self.ev, &b);
                    true
                }
                None => false,
            },
            _ => false,
        };
        match decoded {
            true if self.profile.is_none() => {
                *self.per_layer.entry(layer).or_default() += 1;
                w.write(&self.ev)?;
            }
            true => {}
            false if matches!(hdr.kind, kind::SYS | kind::SYS_PATH) => {}
            false => self.malformed += 1,
        }
        Ok(())
    }

    /// Fills the event of a system call record; false if it is malformed.
    fn sys(&mut self, rec: &[u8], k: u8, w: &mut TraceWriter) -> Result<bool> {
        let (ev, path) = if k == kind::SYS_PATH {
            match read::<SysPathEvent>(rec) {
                Some(p) => (p.sys, Some(p)),
                None => {
                    self.malformed += 1;
                    return Ok(false);
                }
            }
        } else {
            match read::<SysEvent>(rec) {
                Some(e) => (e, None),
                None => {
                    self.malformed += 1;
                    return Ok(false);
                }
            }
        };
        let call = sys::decode(&ev, path.as_ref());
        let mut fhash = self.file(call.file);
        // A call with a path names a directory fd in the copy source's place; AT_FDCWD names none.
        let (dirfd, src_fd) = match call.path {
            Some(_) => (call.src_fd.filter(|fd| *fd != libc::AT_FDCWD), None),
            None => (None, call.src_fd),
        };
        if let Some(p) = &call.path {
            let full = self.resolve(ev.hdr.tgid, p, dirfd, call.src_file);
            let h = w.intern_file(&full)?;
            if call.name == CHDIR && call.ret == 0 {
                // As the kernel keeps it: `..` and links resolved, while the directory is still there to ask.
                let cwd = std::fs::canonicalize(&full).unwrap_or_else(|_| PathBuf::from(&full));
                self.cwds.insert(ev.hdr.tgid, Some(cwd));
            }
            if call.opens {
                self.files.insert(call.file, h);
                // GNU tar opens directories without O_DIRECTORY: every open may become a dirfd.
                self.open_paths.insert(call.file, (full, 1));
            }
            fhash = Some(h);
        } else if call.name == CLOSE {
            if let Entry::Occupied(mut o) = self.open_paths.entry(call.file) {
                o.get_mut().1 -= 1;
                if o.get().1 == 0 {
                    o.remove();
                }
            }
        } else if call.dups {
            if let Some((_, fds)) = self.open_paths.get_mut(&call.file) {
                *fds += 1;
            }
        } else if call.name == FCHDIR && call.ret == 0 {
            let dir = (self
                .open_paths
                .get(&call.file)
                .map(|(p, _)| PathBuf::from(p)))
            .or_else(|| {
                call.fd
                    .and_then(|fd| crate::procfs::fd_path(ev.hdr.tgid, fd))
            });
            self.cwds.insert(ev.hdr.tgid, dir);
        }
        let src = src_fd.and_then(|_| self.file(call.src_file));
        let e = &mut self.ev;
        complete(e, call.name, Layer::Sys.name(), &ev.hdr);
        e.args.fhash = fhash;
        e.args.size = call.size;
        e.args.ret = Some(call.ret);
        e.args.offset = call.offset;
        if let Some(fd) = call.fd {
            e.args.other.push(("fd".into(), ArgValue::Int(fd as i64)));
        }
        if let Some(f) = call.oflags {
            e.args.other.push(("flags".into(), ArgValue::Int(f as i64)));
        }
        if let Some(fd) = src_fd {
            e.args
                .other
                .push(("src_fd".into(), ArgValue::Int(fd as i64)));
        }
        if let Some(fd) = dirfd {
            e.args
                .other
                .push(("dirfd".into(), ArgValue::Int(fd as i64)));
        }
        if let Some(h) = src {
            e.args.other.push(("src_fhash".into(), hash_arg(h)));
        }
        Ok(true)
    }

    fn probe(&mut self, p: &ProbeEvent, layer: Layer) {
        let fhash = self.file(p.file);
        let (name, cat) = if layer == Layer::Kernel {
            let name = self.names.ksyms.name(p.args[0]).unwrap_or("unknown");
            (name, self.names.klayers.layer(name))
        } else {
            let name = self
                .names
                .uprobes
                .get(p.probe as usize)
                .map_or("unknown", |(n, _)| n.as_str());
            (name, layer.name())
        };
        let e = &mut self.ev;
        complete(e, name, cat, &p.hdr);
        e.args.fhash = fhash;
        e.args.size = (p.size != 0).then_some(p.size);
        e.args.ret = Some(p.ret);
    }

    /// The name of a profile counter's probe.
    fn probe_name(&self, k: &ProfileKey, layer: Layer) -> String {
        match layer {
            Layer::Sys if k.probe & URING_PROBE != 0 => {
                uring::name(&self.names.uring, k.probe & !URING_PROBE).to_owned()
            }
            Layer::Sys if k.probe & AIO_PROBE != 0 => aio::name(k.probe & !AIO_PROBE).to_owned(),
            Layer::Sys => sys::by_nr(k.probe).map_or("unknown", |s| s.name).to_owned(),
            Layer::Libc | Layer::App => self
                .names
                .uprobes
                .get(k.probe as usize)
                .map_or_else(|| "unknown".to_owned(), |(n, _)| n.clone()),
            Layer::Block => ["block_read", "block_write", "block_other"]
                .get(k.probe as usize)
                .unwrap_or(&"block_other")
                .to_string(),
            Layer::Sched => sched::event_name(k.probe as u64).to_owned(),
            Layer::Kernel => self
                .names
                .ksyms
                .name(k.file)
                .unwrap_or("unknown")
                .to_owned(),
            _ => self
                .names
                .tps
                .get(&k.probe)
                .map_or_else(|| "unknown".to_owned(), |p| p.name.clone()),
        }
    }

    /// Writes one interval's counter as a `C` event (profile mode).
    pub fn counter(&mut self, k: &ProfileKey, v: &ProfileValue, w: &mut TraceWriter) -> Result<()> {
        let interval = self.profile.unwrap_or(1);
        if self.ignores(k.tgid, k.bucket.saturating_mul(interval)) {
            self.ignored_events += v.count;
            return Ok(());
        }
        self.threads.seen(w, k.tgid, k.tid)?;
        let Some(layer) = u8::try_from(k.layer).ok().and_then(Layer::from_id) else {
            self.malformed += 1;
            return Ok(());
        };
        let fhash = if layer == Layer::Kernel {
            None
        } else {
            self.file(k.file)
        };
        let mut args = Args {
            fhash,
            ..Args::default()
        };
        args.other
            .push(("freq".into(), ArgValue::Int(v.count as i64)));
        args.other
            .push(("time".into(), ArgValue::Float(v.time_ns as f64 / 1e9)));
        args.other
            .push(("size_sum".into(), ArgValue::Int(v.bytes as i64)));
        let name = self.probe_name(k, layer);
        let cat = if layer == Layer::Kernel {
            self.names.klayers.layer(&name).to_owned()
        } else {
            layer.name().to_owned()
        };
        let e = Event {
            id: None,
            name: name.into(),
            cat: cat.into(),
            ph: Phase::Counter,
            pid: k.tgid as u64,
            tid: k.tid as u64,
            ts_ns: k.bucket * interval,
            dur_ns: 0,
            args,
        };
        *self.per_layer.entry(layer).or_default() += 1;
        w.write(&e)?;
        Ok(())
    }
}

/// A file hash as an `args` value: an integer, exact whatever its width.
fn hash_arg(h: Hash) -> ArgValue {
    i64::try_from(h.0).map_or(ArgValue::BigInt(h.0 as i128), ArgValue::Int)
}
