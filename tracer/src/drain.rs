//! Two threads between the kernel and the file: the reader empties the ring buffer into batches
//! (a copy, nothing more, so that the buffer frees quickly), and the writer decodes them into the
//! trace. Between them, a [`Spool`]: the reader never waits for the writer, so a writer that falls
//! behind costs disk space for a while, not events.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Context, Result};
use aya::maps::{MapData, RingBuf};
use datasets::output::Existing;
use datasets::write::{DEFAULT_LEVEL, Header, TraceWriter, WriteOptions};
use tracer_ebpf::{ProfileKey, ProfileValue};

use crate::decode::Decoder;
pub use crate::spool::Msg;
use crate::spool::{Popped, Spool, SpoolStats};

/// Bytes of records per batch.
const BATCH: usize = 1 << 18;
/// How long the reader sleeps on an empty buffer: records are submitted without wakeups.
const IDLE: Duration = Duration::from_millis(2);
/// The nice value of the threads that format and compress: on a busy machine the traced workload
/// goes first, and the spool keeps what they have not written yet. The reader keeps the default.
const WRITER_NICE: i32 = 10;

/// Creates `path` with one thread compressing while the writer thread formats. It is created on a
/// thread at the writer's priority, which the compression thread inherits.
pub fn create_writer(
    path: &Path,
    existing: Existing,
    header: Header,
) -> datasets::error::Result<TraceWriter> {
    let opts = WriteOptions {
        level: DEFAULT_LEVEL,
        compress_threads: 1,
        existing,
    };
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("dc-trace-writer".into())
            .spawn_scoped(s, || {
                lower_priority();
                TraceWriter::create_with(path, header, opts)
            })
            .expect("spawning a thread")
            .join()
            .expect("creating the writer panicked")
    })
}

/// Gives the calling thread [`WRITER_NICE`]; on failure it keeps its priority, which costs the
/// workload time, not events.
fn lower_priority() {
    // SAFETY: setpriority takes no pointers; `who` 0 is the calling thread.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, WRITER_NICE) } != 0 {
        log::warn!(
            "could not lower the writer's priority: {}",
            std::io::Error::last_os_error()
        );
    }
}

pub struct Drain {
    stop: Arc<AtomicBool>,
    spool: Arc<Spool>,
    reader: JoinHandle<Result<(u64, RingBuf<MapData>)>>,
    writer: JoinHandle<Result<(Decoder, TraceWriter)>>,
}

/// What the drain did, beside the events it wrote.
pub struct Drained {
    /// Records read from the ring buffer.
    pub records: u64,
    pub spool: SpoolStats,
    /// Why the backlog could not go to disk, if it could not.
    pub spool_error: Option<String>,
}

impl Drain {
    /// Starts both threads; a backlog past `memory` bytes spills into an unlinked file in the
    /// trace's directory, and the writer writes what it has to the file every `flush_interval`.
    pub fn start(
        ring: RingBuf<MapData>,
        decoder: Decoder,
        writer: TraceWriter,
        memory: usize,
        flush_interval: Duration,
    ) -> Drain {
        let spool_dir = match writer.path().parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let spool = Arc::new(Spool::new(spool_dir, memory));
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let stop = stop.clone();
            let spool = spool.clone();
            std::thread::Builder::new()
                .name("dc-trace-reader".into())
                .spawn(move || read_loop(ring, &stop, &spool))
                .expect("spawning the reader thread")
        };
        let writer = {
            let spool = spool.clone();
            std::thread::Builder::new()
                .name("dc-trace-writer".into())
                .spawn(move || {
                    lower_priority();
                    let written = write_loop(&spool, decoder, writer, flush_interval);
                    if written.is_err() {
                        spool.abandon();
                    }
                    written
                })
                .expect("spawning the writer thread")
        };
        Drain {
            stop,
            spool,
            reader,
            writer,
        }
    }

    /// Queues profile counters after every record read so far.
    pub fn send(&self, counters: Vec<(ProfileKey, ProfileValue)>) -> Result<()> {
        Ok(self.spool.push(Msg::Counters(counters))?)
    }

    /// Call once no program can write any more: empties the buffer, writes `counters` after the
    /// last record (which may name their files), then returns the decoder (for its counts) and
    /// the writer (to close the file) once every batch is written, and the ring buffer, empty, for
    /// the next run of a session.
    pub fn finish(
        self,
        counters: Vec<(ProfileKey, ProfileValue)>,
    ) -> Result<(Drained, Decoder, TraceWriter, RingBuf<MapData>)> {
        self.stop.store(true, Ordering::SeqCst);
        let read = self.reader.join().expect("reader thread panicked");
        if read.is_ok() && !counters.is_empty() {
            self.spool.push(Msg::Counters(counters))?;
        }
        self.spool.close();
        let (decoder, writer) = self.writer.join().expect("writer thread panicked")?;
        let (records, ring) = read?;
        let drained = Drained {
            records,
            spool: self.spool.stats(),
            spool_error: self.spool.disk_error(),
        };
        Ok((drained, decoder, writer, ring))
    }
}

fn read_loop(
    mut ring: RingBuf<MapData>,
    stop: &AtomicBool,
    spool: &Spool,
) -> Result<(u64, RingBuf<MapData>)> {
    let mut records = 0u64;
    let mut batch = Vec::with_capacity(BATCH + 4096);
    loop {
        // Read the flag before draining, so that the last pass sees every record.
        let last = stop.load(Ordering::SeqCst);
        while let Some(item) = ring.next() {
            batch.extend_from_slice(&(item.len() as u32).to_ne_bytes());
            batch.extend_from_slice(&item);
            records += 1;
            if batch.len() >= BATCH {
                send(spool, &mut batch)?;
            }
        }
        if !batch.is_empty() {
            send(spool, &mut batch)?;
        }
        if last {
            return Ok((records, ring));
        }
        std::thread::sleep(IDLE);
    }
}

fn send(spool: &Spool, batch: &mut Vec<u8>) -> Result<()> {
    let full = std::mem::replace(batch, Vec::with_capacity(BATCH + 4096));
    Ok(spool.push(Msg::Records(full))?)
}

fn write_loop(
    spool: &Spool,
    mut decoder: Decoder,
    mut writer: TraceWriter,
    flush_interval: Duration,
) -> Result<(Decoder, TraceWriter)> {
    let mut flushed = Instant::now();
    loop {
        let popped = spool
            .pop(flush_interval.saturating_sub(flushed.elapsed()))
            .context("reading the spooled backlog back")?;
        if flushed.elapsed() >= flush_interval {
            writer.flush()?;
            flushed = Instant::now();
        }
        let msg = match popped {
            Popped::Msg(msg) => msg,
            Popped::Idle => continue,
            Popped::Closed => break,
        };
        match msg {
            Msg::Records(batch) => {
                let mut rest = &batch[..];
                while rest.len() >= 4 {
                    let len = u32::from_ne_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
                    let end = (4 + len).min(rest.len());
                    decoder.record(&rest[4..end], &mut writer)?;
                    rest = &rest[end..];
                }
            }
            Msg::Counters(rows) => {
                for (k, v) in &rows {
                    decoder.counter(k, v, &mut writer)?;
                }
            }
        }
    }
    Ok((decoder, writer))
}
