//! BGZF members compressed on worker threads and written to the file in order, so the thread
//! that formats events never waits for deflate.

use std::io::{self, BufWriter, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crate::gz;
use crate::output::Output;

/// Room for a member's worth of text and the line that crosses the limit.
pub(super) const TEXT_CAPACITY: usize = gz::MAX_BLOCK + 4096;

/// The level of blocks compressed while the workers are behind.
pub(super) const CATCH_UP_LEVEL: u32 = 1;

/// BGZF members compressed on worker threads and written in order. A block of text carries its
/// sequence number; workers take blocks in that order, and each writes its member once all
/// earlier ones are written. Memory stays bounded: only a fixed number of blocks exist, and the
/// caller waits for one to come back before it hands over more text.
///
/// Workers that fall behind catch up at a cheaper level: a block taken while every other block
/// waits behind it (the caller is about to wait for one) is compressed at [`CATCH_UP_LEVEL`]
/// (libdeflate level 7 costs about four times level 1's CPU per byte), so a tracer's drain keeps
/// up with millions of events per second, and only as many blocks as that takes are larger.
pub(super) struct Pipeline {
    workers: Workers,
    free: Receiver<Block>,
    shared: Arc<Shared>,
    next_seq: u64,
}

/// The job queue and the threads that drain it; dropping it closes the queue and waits for them.
struct Workers {
    jobs: Option<SyncSender<Block>>,
    threads: Vec<JoinHandle<()>>,
}

struct Block {
    seq: u64,
    text: Vec<u8>,
    member: Vec<u8>,
}

struct Shared {
    turn: Mutex<Turn>,
    turn_taken: Condvar,
    failed: AtomicBool,
    /// Bytes written to the file, read by the caller without waiting for a write in progress.
    file_bytes: AtomicU64,
    /// Blocks handed to the workers: the worker that writes the last of them flushes the file,
    /// so the file holds every member as soon as the workers are idle.
    submitted: AtomicU64,
}

/// The file and the sequence number of the member to be written next.
struct Turn {
    next: u64,
    out: BufWriter<Output>,
    error: Option<io::Error>,
}

impl Pipeline {
    pub(super) fn start(out: BufWriter<Output>, level: u32, threads: usize) -> Pipeline {
        // A few blocks per thread: enough that a thread descheduled on a busy machine does not
        // stall the others at once; at most (64 KiB of text + its member) each.
        let blocks = 4 * threads + 4;
        let (jobs, job_rx) = mpsc::sync_channel::<Block>(blocks);
        let (free_tx, free) = mpsc::channel();
        for _ in 0..blocks {
            let block = Block {
                seq: 0,
                text: Vec::with_capacity(TEXT_CAPACITY),
                member: Vec::new(),
            };
            free_tx.send(block).expect("receiver is alive");
        }
        let shared = Arc::new(Shared {
            turn: Mutex::new(Turn {
                next: 0,
                out,
                error: None,
            }),
            turn_taken: Condvar::new(),
            failed: AtomicBool::new(false),
            file_bytes: AtomicU64::new(0),
            submitted: AtomicU64::new(0),
        });
        let job_rx = Arc::new(Mutex::new(job_rx));
        // Blocks waiting behind the one a worker takes when the caller has none left.
        let behind = (blocks - threads) as u64;
        let threads = (0..threads)
            .map(|_| {
                let (job_rx, free_tx, shared) = (job_rx.clone(), free_tx.clone(), shared.clone());
                std::thread::Builder::new()
                    .name("trace-deflate".into())
                    .spawn(move || compress_and_write(level, behind, &job_rx, &free_tx, &shared))
                    .expect("spawn a compression thread")
            })
            .collect();
        Pipeline {
            workers: Workers {
                jobs: Some(jobs),
                threads,
            },
            free,
            shared,
            next_seq: 0,
        }
    }

    pub(super) fn failed(&self) -> bool {
        self.shared.failed.load(Ordering::Relaxed)
    }

    /// The write error that stopped the pipeline, again for every caller that asks.
    pub(super) fn error(&self) -> io::Error {
        let turn = lock(&self.shared.turn);
        match &turn.error {
            Some(e) => crate::output::copy_error(e),
            None => io::Error::other("a compression thread stopped"),
        }
    }

    pub(super) fn file_bytes(&self) -> u64 {
        self.shared.file_bytes.load(Ordering::Relaxed)
    }

    /// Hands the first `n` bytes of `text` to the workers, keeping the rest in `text`. The
    /// buffers are swapped, so only the rest is copied.
    pub(super) fn submit(&mut self, text: &mut Vec<u8>, n: usize) -> io::Result<()> {
        let stopped = || io::Error::other("compression threads stopped");
        let mut block = self.free.recv().map_err(|_| stopped())?;
        if self.failed() {
            return Err(self.error());
        }
        std::mem::swap(&mut block.text, text);
        text.clear();
        text.extend_from_slice(&block.text[n..]);
        block.text.truncate(n);
        block.seq = self.next_seq;
        self.next_seq += 1;
        self.shared.submitted.store(self.next_seq, Ordering::SeqCst);
        let jobs = self.workers.jobs.as_ref().expect("open until finish");
        jobs.send(block).map_err(|_| stopped())
    }

    /// Waits for every member to be written and returns the file and its size so far.
    pub(super) fn finish(self) -> io::Result<(BufWriter<Output>, u64)> {
        let Pipeline {
            workers,
            shared,
            next_seq,
            ..
        } = self;
        drop(workers);
        let shared = Arc::into_inner(shared).expect("the workers have exited");
        let file_bytes = shared.file_bytes.into_inner();
        let turn = shared
            .turn
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        match turn.error {
            Some(e) => Err(e),
            None if turn.next != next_seq => Err(io::Error::other(format!(
                "compression threads stopped after {} of {next_seq} members",
                turn.next
            ))),
            None => Ok((turn.out, file_bytes)),
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.jobs = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Stops the pipeline if its worker panics, so that workers waiting for its turn and the caller
/// waiting for a block do not wait forever.
struct PanicGuard<'a>(&'a Shared);

impl Drop for PanicGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut turn = lock(&self.0.turn);
            turn.error
                .get_or_insert_with(|| io::Error::other("a compression thread panicked"));
            self.0.failed.store(true, Ordering::Relaxed);
            drop(turn);
            self.0.turn_taken.notify_all();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A worker: takes blocks in sequence order, compresses each into a member, waits for its turn,
/// writes it (unless an earlier write failed) and returns the block.
fn compress_and_write(
    level: u32,
    behind: u64,
    jobs: &Mutex<Receiver<Block>>,
    free: &Sender<Block>,
    shared: &Shared,
) {
    let _guard = PanicGuard(shared);
    let mut deflate = gz::compressor(level);
    let mut catch_up = gz::compressor(level.min(CATCH_UP_LEVEL));
    loop {
        let Ok(mut block) = lock(jobs).recv() else {
            return;
        };
        block.member.clear();
        let waiting = shared.submitted.load(Ordering::SeqCst) - block.seq - 1;
        let c = if waiting >= behind {
            &mut catch_up
        } else {
            &mut deflate
        };
        gz::deflate_member(c, &block.text, &mut block.member);
        let mut turn = lock(&shared.turn);
        while turn.next != block.seq && turn.error.is_none() {
            turn = shared
                .turn_taken
                .wait(turn)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if turn.error.is_none() {
            let last = block.seq + 1 == shared.submitted.load(Ordering::SeqCst);
            let written = turn.out.write_all(&block.member);
            match written.and_then(|()| if last { turn.out.flush() } else { Ok(()) }) {
                Ok(()) => {
                    let n = block.member.len() as u64;
                    shared.file_bytes.fetch_add(n, Ordering::Relaxed);
                }
                Err(e) => {
                    turn.error = Some(e);
                    shared.failed.store(true, Ordering::Relaxed);
                }
            }
        }
        turn.next += 1;
        drop(turn);
        shared.turn_taken.notify_all();
        // The writer may be gone (dropped without finishing); the block is then not needed.
        let _ = free.send(block);
    }
}
