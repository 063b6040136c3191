//! The queue between the ring-buffer reader and the trace writer. The reader must never wait:
//! while it waits, the ring buffer fills and the kernel drops events. So the queue keeps up to a
//! byte limit in memory and past it appends to an unlinked file next to the trace, which the writer
//! reads back, in order, as it catches up. Memory stays bounded and the disk holds the backlog.
//! Only if the disk refuses a write does a producer wait for room in memory, and the kernel then
//! counts what the full ring buffer could not take.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tracer_ebpf::{ProfileKey, ProfileValue};

use crate::decode::read;

pub enum Msg {
    /// Records, each preceded by its length as a native u32.
    Records(Vec<u8>),
    /// Profile counters of finished intervals.
    Counters(Vec<(ProfileKey, ProfileValue)>),
}

const COUNTER_BYTES: usize = size_of::<ProfileKey>() + size_of::<ProfileValue>();

impl Msg {
    fn bytes(&self) -> usize {
        match self {
            Msg::Records(b) => b.len(),
            Msg::Counters(c) => c.len() * COUNTER_BYTES,
        }
    }
}

/// What [`Spool::pop`] found.
pub enum Popped {
    Msg(Msg),
    /// Nothing arrived within the wait.
    Idle,
    /// The queue is closed and empty.
    Closed,
}

pub use crate::error::Abandoned;

/// What the queue did over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpoolStats {
    /// Bytes that went through the file because the writer was behind.
    pub spilled_bytes: u64,
    /// The most bytes waiting for the writer at once, in memory and on disk.
    pub peak_backlog: u64,
}

/// Where a message waits on disk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tag {
    Records,
    Counters,
}

struct State {
    mem: VecDeque<Msg>,
    mem_bytes: usize,
    /// Messages in the file, oldest first, each `(tag, length)`; they follow everything in `mem`.
    disk: VecDeque<(Tag, u64)>,
    file: Option<File>,
    /// File offsets: the writer has taken everything before `read`; producers append at `written`.
    read: u64,
    written: u64,
    /// Why the file stopped taking messages; from then on producers wait for memory.
    disk_error: Option<String>,
    closed: bool,
    /// The writer stopped (on an error): messages have nowhere to go.
    abandoned: bool,
    stats: SpoolStats,
}

pub struct Spool {
    dir: PathBuf,
    mem_limit: usize,
    state: Mutex<State>,
    /// Signalled when a message arrives or the queue closes.
    more: Condvar,
    /// Signalled when the writer takes a message.
    room: Condvar,
}

impl Spool {
    /// A queue holding up to `mem_limit` bytes in memory, spilling into a file in `dir`.
    pub fn new(dir: &Path, mem_limit: usize) -> Spool {
        Spool {
            dir: dir.to_path_buf(),
            mem_limit,
            state: Mutex::new(State {
                mem: VecDeque::new(),
                mem_bytes: 0,
                disk: VecDeque::new(),
                file: None,
                read: 0,
                written: 0,
                disk_error: None,
                closed: false,
                abandoned: false,
                stats: SpoolStats::default(),
            }),
            more: Condvar::new(),
            room: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("spool lock poisoned")
    }

    /// Queues `msg` after everything queued before it. Returns without waiting unless the disk
    /// has refused a write; fails once the writer has stopped.
    pub fn push(&self, msg: Msg) -> Result<(), Abandoned> {
        let size = msg.bytes();
        let mut s = self.lock();
        if s.abandoned {
            return Err(Abandoned);
        }
        let fits = |s: &State| s.disk.is_empty() && s.mem_bytes + size <= self.mem_limit;
        if !fits(&s) && s.disk_error.is_none() {
            match self.spill(&mut s, &msg) {
                Ok(()) => {
                    note_backlog(&mut s);
                    self.more.notify_one();
                    return Ok(());
                }
                Err(e) => {
                    s.disk_error = Some(format!(
                        "spooling to {} failed ({e}); from then on the ring buffer waited for the writer",
                        self.dir.display()
                    ))
                }
            }
        }
        // An empty memory queue always takes a message, however large, once the disk is empty.
        while s.disk_error.is_some() && !fits(&s) && !(s.disk.is_empty() && s.mem.is_empty()) {
            s = self.room.wait(s).expect("spool lock poisoned");
            if s.abandoned {
                return Err(Abandoned);
            }
        }
        s.mem_bytes += size;
        s.mem.push_back(msg);
        note_backlog(&mut s);
        self.more.notify_one();
        Ok(())
    }

    /// The writer stopped: every later `push` fails, and producers waiting for room wake.
    pub fn abandon(&self) {
        let mut s = self.lock();
        s.abandoned = true;
        s.mem.clear();
        s.disk.clear();
        self.room.notify_all();
    }

    fn spill(&self, s: &mut State, msg: &Msg) -> io::Result<()> {
        if s.file.is_none() {
            s.file = Some(tempfile::tempfile_in(&self.dir)?);
        }
        let file = s.file.as_ref().expect("created above");
        let (tag, len) = match msg {
            Msg::Records(b) => {
                file.write_all_at(b, s.written)?;
                (Tag::Records, b.len())
            }
            Msg::Counters(c) => {
                let bytes = encode_counters(c);
                file.write_all_at(&bytes, s.written)?;
                (Tag::Counters, bytes.len())
            }
        };
        s.written += len as u64;
        s.disk.push_back((tag, len as u64));
        s.stats.spilled_bytes += len as u64;
        Ok(())
    }

    /// No message will follow: `pop` returns `None` once the queue is empty.
    pub fn close(&self) {
        self.lock().closed = true;
        self.more.notify_all();
    }

    /// The oldest message, waiting up to `wait` for one.
    pub fn pop(&self, wait: Duration) -> io::Result<Popped> {
        let deadline = Instant::now() + wait;
        let mut s = self.lock();
        loop {
            if let Some(m) = s.mem.pop_front() {
                s.mem_bytes -= m.bytes();
                self.room.notify_all();
                return Ok(Popped::Msg(m));
            }
            if let Some((tag, len)) = s.disk.pop_front() {
                let at = s.read;
                s.read += len;
                let file = s.file.as_ref().expect("messages on disk have a file");
                let mut bytes = vec![0u8; len as usize];
                file.read_exact_at(&mut bytes, at)?;
                self.room.notify_all();
                return Ok(Popped::Msg(match tag {
                    Tag::Records => Msg::Records(bytes),
                    Tag::Counters => Msg::Counters(decode_counters(&bytes)),
                }));
            }
            if s.read > 0 {
                // Caught up: give the backlog's disk space back.
                if let Some(f) = &s.file {
                    f.set_len(0)?;
                }
                s.read = 0;
                s.written = 0;
            }
            if s.closed {
                return Ok(Popped::Closed);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(Popped::Idle);
            }
            s = self
                .more
                .wait_timeout(s, left)
                .expect("spool lock poisoned")
                .0;
        }
    }

    pub fn stats(&self) -> SpoolStats {
        self.lock().stats
    }

    /// Why the disk stopped taking the backlog, if it did.
    pub fn disk_error(&self) -> Option<String> {
        self.lock().disk_error.clone()
    }
}

fn note_backlog(s: &mut State) {
    let backlog = s.mem_bytes as u64 + (s.written - s.read);
    s.stats.peak_backlog = s.stats.peak_backlog.max(backlog);
}

fn encode_counters(c: &[(ProfileKey, ProfileValue)]) -> Vec<u8> {
    let mut b = Vec::with_capacity(c.len() * COUNTER_BYTES);
    for (k, v) in c {
        b.extend_from_slice(&k.bucket.to_ne_bytes());
        for n in [k.tgid, k.tid, k.layer, k.probe] {
            b.extend_from_slice(&n.to_ne_bytes());
        }
        for n in [k.file, v.count, v.time_ns, v.bytes] {
            b.extend_from_slice(&n.to_ne_bytes());
        }
    }
    b
}

fn decode_counters(b: &[u8]) -> Vec<(ProfileKey, ProfileValue)> {
    b.chunks_exact(COUNTER_BYTES)
        .filter_map(|c| {
            Some((
                read::<ProfileKey>(c)?,
                read::<ProfileValue>(&c[size_of::<ProfileKey>()..])?,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(first: u32, n: u32) -> Msg {
        let mut b = Vec::new();
        for i in first..first + n {
            b.extend_from_slice(&4u32.to_ne_bytes());
            b.extend_from_slice(&i.to_ne_bytes());
        }
        Msg::Records(b)
    }

    fn values(m: Msg) -> Vec<u32> {
        match m {
            Msg::Records(b) => b
                .chunks_exact(8)
                .map(|c| u32::from_ne_bytes(c[4..].try_into().unwrap()))
                .collect(),
            Msg::Counters(c) => c.iter().map(|(k, _)| k.tid).collect(),
        }
    }

    fn counters(tids: &[u32]) -> Msg {
        Msg::Counters(
            tids.iter()
                .map(|&tid| {
                    (
                        ProfileKey {
                            bucket: 7,
                            tgid: 1,
                            tid,
                            layer: 2,
                            probe: 3,
                            file: u64::MAX,
                        },
                        ProfileValue {
                            count: 5,
                            time_ns: 6,
                            bytes: 1 << 40,
                        },
                    )
                })
                .collect(),
        )
    }

    /// The next message, however long it takes; `None` once closed and empty.
    fn next(spool: &Spool) -> Option<Msg> {
        loop {
            match spool.pop(Duration::from_secs(1)).unwrap() {
                Popped::Msg(m) => return Some(m),
                Popped::Idle => {}
                Popped::Closed => return None,
            }
        }
    }

    fn drain(spool: &Spool) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(m) = next(spool) {
            out.extend(values(m));
        }
        out
    }

    #[test]
    fn pop_returns_idle_after_the_wait_and_a_message_as_soon_as_it_arrives() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path(), 80);
        assert!(matches!(
            spool.pop(Duration::from_millis(10)).unwrap(),
            Popped::Idle
        ));
        spool.push(records(0, 2)).unwrap();
        let Popped::Msg(m) = spool.pop(Duration::ZERO).unwrap() else {
            panic!("a message expected")
        };
        assert_eq!(values(m), [0, 1]);
        spool.close();
        assert!(matches!(spool.pop(Duration::ZERO).unwrap(), Popped::Closed));
    }

    #[test]
    fn a_backlog_past_the_memory_limit_goes_through_the_file_in_order() {
        let dir = tempfile::tempdir().unwrap();
        // 10 records (80 bytes) fit in memory; the rest spill.
        let spool = Spool::new(dir.path(), 80);
        for i in 0..10 {
            spool.push(records(i * 10, 10)).unwrap();
        }
        spool.push(counters(&[1000, 1001])).unwrap();
        spool.push(records(100, 3)).unwrap();
        spool.close();
        let mut want: Vec<u32> = (0..100).collect();
        want.extend([1000, 1001, 100, 101, 102]);
        assert_eq!(drain(&spool), want);
        let stats = spool.stats();
        assert_eq!(stats.spilled_bytes, 9 * 80 + 2 * COUNTER_BYTES as u64 + 24);
        assert_eq!(stats.peak_backlog, 10 * 80 + 2 * COUNTER_BYTES as u64 + 24);
        assert_eq!(spool.disk_error(), None);
    }

    #[test]
    fn counters_come_back_from_disk_field_for_field() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path(), 0);
        spool.push(records(0, 1)).unwrap();
        let Msg::Counters(want) = counters(&[9, 10]) else {
            unreachable!()
        };
        spool.push(Msg::Counters(want.clone())).unwrap();
        spool.close();
        assert_eq!(values(next(&spool).unwrap()), [0]);
        let Some(Msg::Counters(got)) = next(&spool) else {
            panic!("counters expected")
        };
        assert_eq!(got, want);
        assert!(next(&spool).is_none());
    }

    #[test]
    fn once_caught_up_new_messages_stay_in_memory_and_the_file_is_emptied() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path(), 8);
        spool.push(records(0, 1)).unwrap();
        spool.push(records(1, 1)).unwrap();
        assert_eq!(drain_n(&spool, 2), [0, 1]);
        spool.push(records(2, 1)).unwrap();
        spool.close();
        assert_eq!(drain(&spool), [2]);
        let s = spool.lock();
        assert_eq!((s.read, s.written), (0, 0));
        assert_eq!(s.file.as_ref().unwrap().metadata().unwrap().len(), 0);
        assert_eq!(s.stats.spilled_bytes, 8);
    }

    fn drain_n(spool: &Spool, n: usize) -> Vec<u32> {
        (0..n).flat_map(|_| values(next(spool).unwrap())).collect()
    }

    #[test]
    fn when_the_disk_refuses_producers_wait_for_memory_and_nothing_is_lost() {
        let spool = std::sync::Arc::new(Spool::new(Path::new("/nonexistent/dir"), 16));
        let producer = {
            let spool = spool.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    spool.push(records(i, 1)).unwrap();
                }
                spool.close();
            })
        };
        // Draining starts once the producer has filled the memory and met the refusing disk;
        // a consumer that kept up from the start would leave nothing to spill.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while spool.disk_error().is_none() {
            assert!(std::time::Instant::now() < deadline, "no spill was tried");
            std::thread::yield_now();
        }
        let got = drain(&spool);
        producer.join().unwrap();
        assert_eq!(got, (0..50).collect::<Vec<_>>());
        let err = spool.disk_error().expect("the spill failed");
        assert!(err.contains("/nonexistent/dir"), "{err}");
        assert_eq!(spool.stats().spilled_bytes, 0);
        assert!(spool.stats().peak_backlog <= 16);
    }

    #[test]
    fn after_the_writer_stops_pushes_fail() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path(), 8);
        spool.push(records(0, 1)).unwrap();
        spool.abandon();
        assert_eq!(spool.push(records(1, 1)), Err(Abandoned));
    }

    #[test]
    fn concurrent_producer_and_consumer_keep_order_through_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let spool = std::sync::Arc::new(Spool::new(dir.path(), 64));
        let producer = {
            let spool = spool.clone();
            std::thread::spawn(move || {
                for i in 0..2000 {
                    spool.push(records(i * 3, 3)).unwrap();
                }
                spool.close();
            })
        };
        let got = drain(&spool);
        producer.join().unwrap();
        assert_eq!(got, (0..6000).collect::<Vec<_>>());
    }
}
