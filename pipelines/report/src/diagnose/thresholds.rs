//! Every threshold the findings and the comparison use, named once with its source (the README lists them).

/// A read or write that asks for fewer bytes than this is a small request (Drishti's 1 MiB).
pub const SMALL_REQUEST_BYTES: u64 = 1 << 20;
/// Small requests in a direction are a finding when they are more than this share of its data calls (Drishti's
/// `thresholds['small_requests']`: 10%).
pub const SMALL_REQUEST_SHARE: f64 = 0.1;
/// ...and more than this many (Drishti's `thresholds['small_requests_absolute']`, 1000: a handful of small
/// requests costs nothing). The same rule for Darshan's counters and for traced calls or DXT segments.
pub const SMALL_REQUEST_MIN_COUNT: f64 = 1000.0;
/// Calls whose offset does not continue the previous call on the file are random access: a finding from more than
/// this share of a direction's calls whose offsets are known (Drishti's `thresholds['random_operations']`: 20%).
pub const RANDOM_SHARE: f64 = 0.2;
/// ...and more than this many (Drishti's `thresholds['random_operations_absolute']`, 1000), for counters and calls
/// alike.
pub const RANDOM_MIN_COUNT: f64 = 1000.0;
/// Random calls are priced at the speed of sequential calls of their kind (or direction and mode) only when at least
/// this many sequential calls give it: a few offsets of fio's random job that happened to follow each other, read
/// between two bursts of a throttle, once priced its throttled reads as random access.
pub const RANDOM_REFERENCE_MIN: usize = 100;
/// An application pattern found in the calls is a finding only when removing it would save at least this share of
/// the job's I/O time: the same share below which a kind of call gets no layer finding ([`KIND_SHARE_MIN`]).
/// Drishti has no time rule; DFAnalyzer weighs its insights by time.
pub const PATTERN_MIN_GAIN_SHARE: f64 = KIND_SHARE_MIN;
/// The cheapest kind of call prices a call saved by larger requests only when the trace has at least this many
/// of it: its median is then not one call's accident.
pub const FLOOR_MIN_CALLS: usize = 10;
/// The alignment of offsets and sizes: the page and the usual file-system block.
pub const ALIGNMENT_BYTES: u64 = 4096;
/// Misaligned offsets or sizes are a finding from this share of the data calls (Drishti: 10%).
pub const MISALIGNED_SHARE: f64 = 0.1;
/// A candidate whose requests in a direction are, on average, below [`SMALL_REQUEST_BYTES`] and at most this many
/// times smaller than the baseline's makes other calls for its data: the comparison names its cause over the whole
/// job, where the extra calls' time is `small_requests`.
pub const SMALLER_REQUESTS_RATIO: f64 = 2.0;
/// Metadata calls (open, stat, close, lseek) are a finding from this share of the I/O time (Drishti names 30 s a
/// rank, DFAnalyzer 50% of the time; a share works for jobs of any length).
pub const METADATA_SHARE: f64 = 0.3;
/// A file synced after every this many writes or fewer is fsync-heavy...
pub const WRITES_PER_SYNC: f64 = 4.0;
/// ...once it was synced at least this often...
pub const SYNC_MIN_CALLS: u64 = 3;
/// ...unless, between its consecutive syncs, its thread slept waiting for something to wake it more often than this
/// many times per sync: then each sync answers a request (a database server's commit per client transaction), not
/// input the application already held and could have committed at once.
pub const SYNCS_PACED_SHARE: f64 = 0.5;
/// Processes (or, in a one-process job, threads) that ran at the same time (their data calls' spans overlap) are
/// imbalanced when the slowest one's I/O time exceeds the
/// fastest one's by this share of the slowest; in Darshan's counters, a shared file's slowest rank exceeds its
/// fastest by this share of the file's I/O time over all ranks (Drishti's straggler rule: 15%)...
pub const IMBALANCE_SHARE: f64 = 0.15;
/// ...counting only those with at least this many data calls.
pub const IMBALANCE_MIN_CALLS: u64 = 10;
/// Processes (or threads) are peers for `imbalance` only when each made at least this share of the slowest one's data
/// calls: fio's main process reads a few files while its jobs do the I/O, and that is different work, not a straggler.
pub const IMBALANCE_PEER_CALLS: f64 = 0.25;
/// Bytes of a file read again are a finding from this share of the bytes read from it.
pub const REREAD_SHARE: f64 = 0.1;
/// STDIO is a finding when it moves at least this share of the bytes (Drishti: 10%).
pub const STDIO_SHARE: f64 = 0.1;
/// A kind of call with less than this share of the I/O time gets no finding about its layers.
pub const KIND_SHARE_MIN: f64 = 0.01;
/// A layer's reason is a finding for a kind of call when it carries at least this share of the kind's time; the
/// kind's largest reason is a finding regardless.
pub const REASON_SHARE_MIN: f64 = 0.1;
/// Block time above the device (queued, or waiting for a request to be issued) beyond this many times the device's
/// own time names the block layer's time `throttled_above_device` rather than `device_bound`: btt's Q2C against
/// D2C. Healthy runs of dd, pgbench and four O_DIRECT writers measured 0.08–0.68 (2026-11-27) once a woken thread's
/// wait for a CPU is its own (`offcpu_R`; 1.1–1.2 before, on a loaded machine); a blkio throttle 73–93, a
/// competitor's requests 1.5–8.5.
pub const ABOVE_DEVICE_RATIO: f64 = 1.0;
/// Block time is `queue_depth` when waits for a request tag (a free slot in the device's queue, `nr_requests`) are
/// more than this share of it.
pub const TAG_WAIT_SHARE: f64 = 0.5;
/// A kind of call needs at least this many calls in both runs for a confidence interval.
pub const MIN_CALLS_FOR_INTERVAL: usize = 10;
/// Bootstrap resamples of each kind of call's change in mean time.
pub const BOOTSTRAP_RESAMPLES: usize = 1000;
/// The bootstrap's seed: the same inputs give the same interval.
pub const BOOTSTRAP_SEED: u64 = 28;
/// The interval's coverage.
pub const CONFIDENCE: f64 = 0.95;
/// Events or functions named per layer in a comparison.
pub const TOP_EVENTS: usize = 3;
/// A comparison names a cause of the change in wall-clock time only when the wall-clock time grew by more than this
/// share of the baseline's, and the cause itself adds more than this share: two runs of the same fio job on the
/// loaded 2-core machine differed by 3.5% of their wall-clock time, one of their parts by 11%.
pub const WALL_NOISE_SHARE: f64 = 0.10;
/// A process holding at least this share of a run's time in calls is one of the programs it ran, for the note that
/// two compared runs share none.
pub const PROGRAM_SHARE: f64 = 0.01;
/// The job's wait for a CPU between its calls is a finding when it is at least this share of its wall-clock time
/// ([`crate::diagnose::between`]): RocksDB's db_bench sharing its CPU with two busy loops waited 42% of its run between
/// calls; healthy runs on the idle 2-core machine wait under 2%.
pub const CPU_WAIT_BETWEEN_CALLS_SHARE: f64 = 0.10;
/// The job's waits for pages its faults read between its calls, with readahead below the kernel's default, are a
/// finding from this share of its wall-clock time ([`crate::diagnose::limits::readahead_between_calls`]).
pub const PAGE_IN_BETWEEN_CALLS_SHARE: f64 = 0.10;
/// The calls' sleeps that a task outside the job ended are noted from this share of the job's I/O time
/// ([`crate::diagnose::elsewhere`]).
pub const ELSEWHERE_SHARE: f64 = 0.10;
/// A job whose buffered writes reached this many times `vm.dirty_bytes` ran with writeback under way throughout: the
/// kernel starts it at half the limit and throttles writers at the limit.
pub const DIRTY_LIMIT_FILLS: f64 = 2.0;
