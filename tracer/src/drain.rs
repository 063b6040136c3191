//! Two threads between the kernel and the file: the reader empties the ring buffer into batches
//! (a copy, nothing more, so that the buffer frees quickly), and the writer decodes them into the
//! trace. The channel between them is bounded: when the writer falls behind, the ring buffer fills
//! and the kernel counts drops rather than this process growing without end.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use aya::maps::{MapData, RingBuf};
use datasets::write::TraceWriter;
use tracer_ebpf::{ProfileKey, ProfileValue};

use crate::decode::Decoder;

/// Bytes of records per batch.
const BATCH: usize = 1 << 18;
/// Batches in flight between the threads.
const QUEUE: usize = 256;
/// How long the reader sleeps on an empty buffer: records are submitted without wakeups.
const IDLE: Duration = Duration::from_millis(2);

pub enum Msg {
    /// Records, each preceded by its length as a native u32.
    Records(Vec<u8>),
    /// Profile counters of finished intervals.
    Counters(Vec<(ProfileKey, ProfileValue)>),
}

pub struct Drain {
    stop: Arc<AtomicBool>,
    reader: JoinHandle<Result<u64>>,
    writer: JoinHandle<Result<(Decoder, TraceWriter)>>,
    pub tx: SyncSender<Msg>,
}

impl Drain {
    pub fn start(ring: RingBuf<MapData>, decoder: Decoder, writer: TraceWriter) -> Drain {
        let (tx, rx) = sync_channel(QUEUE);
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let stop = stop.clone();
            let tx = tx.clone();
            std::thread::Builder::new()
                .name("dc-trace-reader".into())
                .spawn(move || read_loop(ring, &stop, &tx))
                .expect("spawning the reader thread")
        };
        let writer = std::thread::Builder::new()
            .name("dc-trace-writer".into())
            .spawn(move || write_loop(rx, decoder, writer))
            .expect("spawning the writer thread");
        Drain {
            stop,
            reader,
            writer,
            tx,
        }
    }

    /// Call once no program can write any more: empties the buffer, writes `counters` after the
    /// last record (which may name their files), then returns the decoder (for its counts) and
    /// the writer (to close the file) once every batch is written.
    pub fn finish(
        self,
        counters: Vec<(ProfileKey, ProfileValue)>,
    ) -> Result<(u64, Decoder, TraceWriter)> {
        self.stop.store(true, Ordering::SeqCst);
        let records = self.reader.join().expect("reader thread panicked")?;
        if !counters.is_empty() {
            self.tx
                .send(Msg::Counters(counters))
                .context("the writer thread stopped")?;
        }
        drop(self.tx);
        let (decoder, writer) = self.writer.join().expect("writer thread panicked")?;
        Ok((records, decoder, writer))
    }
}

fn read_loop(mut ring: RingBuf<MapData>, stop: &AtomicBool, tx: &SyncSender<Msg>) -> Result<u64> {
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
                send(tx, &mut batch)?;
            }
        }
        if !batch.is_empty() {
            send(tx, &mut batch)?;
        }
        if last {
            return Ok(records);
        }
        std::thread::sleep(IDLE);
    }
}

fn send(tx: &SyncSender<Msg>, batch: &mut Vec<u8>) -> Result<()> {
    let full = std::mem::replace(batch, Vec::with_capacity(BATCH + 4096));
    tx.send(Msg::Records(full))
        .context("the writer thread stopped")
}

fn write_loop(
    rx: Receiver<Msg>,
    mut decoder: Decoder,
    mut writer: TraceWriter,
) -> Result<(Decoder, TraceWriter)> {
    for msg in rx {
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
