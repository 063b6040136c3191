//! The built-in I/O benchmark, after the L41 io-benchmark: a file of a total size, read or written with
//! one buffer size, optionally with O_DIRECT and fsync, for a number of iterations, each measured with
//! the wall clock and getrusage.

use std::fs::{self, File, OpenOptions};
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use datasets::output::Output;
use report::size::format_size;

use crate::error::io_at;
use serde::{Deserialize, Serialize};

/// Why the benchmark cannot run or stopped, each naming the file it was at.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Options that cannot run (what [`IoBenchOptions::check`] says).
    #[error("{0}")]
    Options(String),
    #[error(transparent)]
    Io(#[from] crate::error::IoAt),
    #[error("{op} {} at offset {offset}", path.display())]
    Transfer {
        op: &'static str,
        path: PathBuf,
        offset: u64,
        #[source]
        source: io::Error,
    },
    /// The file is shorter than the total size: someone truncated it while the benchmark ran.
    #[error("{} ended at {done} of {total} bytes", path.display())]
    Short {
        path: PathBuf,
        done: u64,
        total: u64,
    },
    #[error("dropping the page cache (writing /proc/sys/vm/drop_caches needs root)")]
    DropCaches(#[source] io::Error),
    #[error("getrusage")]
    Rusage(#[source] io::Error),
    #[error("encoding the report as JSON")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Output(#[from] datasets::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// O_DIRECT needs the buffer address, the transfer size and the file offset aligned to the logical
/// block size; 4 KiB covers every block device this project runs on.
pub const DIRECT_ALIGN: u64 = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    Write,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
        }
    }
}

/// The system calls that move the data. Each family takes its own path through the VFS (`ksys_read` and
/// `vfs_read`; `__x64_sys_pread64`, into which 6.18 inlines `ksys_pread64`; `do_readv`, `vfs_readv` and
/// `do_iter_readv_writev`; `do_preadv`), so a sweep over them gives the kernel functions of each its own calls.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Call {
    /// read(2) and write(2), at the file's position.
    #[default]
    Plain,
    /// pread64(2) and pwrite64(2), at explicit offsets.
    Positional,
    /// readv(2) and writev(2) with one buffer, at the file's position.
    Vectored,
    /// preadv(2) and pwritev(2) with one buffer, at explicit offsets.
    PositionalVectored,
}

impl Call {
    pub fn name(self) -> &'static str {
        match self {
            Call::Plain => "plain",
            Call::Positional => "positional",
            Call::Vectored => "vectored",
            Call::PositionalVectored => "positional-vectored",
        }
    }
}

/// One benchmark run; `dc-pipeline iobench`'s flags (`l41::IoBenchArgs`) make one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IoBenchOptions {
    /// The benchmark file; (re)created with `total_size` bytes when it is missing or of another size.
    pub file: PathBuf,
    pub op: Op,
    /// Which system calls move the data.
    #[serde(default)]
    pub call: Call,
    /// Bytes read or written per iteration: the file's size.
    pub total_size: u64,
    /// Bytes per read or write call.
    pub buffer_size: u64,
    /// Open with O_DIRECT (buffer, buffer size and total size aligned to 4 KiB).
    pub direct: bool,
    /// fsync(2) before closing, inside the measured time.
    pub fsync: bool,
    pub iterations: u32,
    /// sync(2) and `echo 3 > /proc/sys/vm/drop_caches` before every iteration (needs root).
    pub drop_caches: bool,
    /// Where `dc-pipeline iobench` writes this report ([`BenchReport`]).
    pub json: Option<PathBuf>,
    /// Replace the `json` file if it exists (a regular file only: never a symbolic link).
    #[serde(default)]
    pub force: bool,
}

/// One iteration's measurements; `utime_s`/`stime_s`/`inblock`/`oublock` are getrusage differences.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub iteration: u32,
    pub bytes: u64,
    /// read(2) or write(2) calls made.
    pub calls: u64,
    pub time_s: f64,
    pub bandwidth_mibs: f64,
    pub utime_s: f64,
    pub stime_s: f64,
    /// Blocks (512 bytes) read from storage, as the kernel accounts them.
    pub inblock: i64,
    pub oublock: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// The process that ran the benchmark: rows of a trace with this pid belong to it.
    pub pid: u32,
    pub options: IoBenchOptions,
    /// Whether the file had to be (re)created before the first iteration.
    pub created: bool,
    pub samples: Vec<Sample>,
}

impl IoBenchOptions {
    pub fn new(file: PathBuf, op: Op, total_size: u64, buffer_size: u64) -> Self {
        IoBenchOptions {
            file,
            op,
            call: Call::Plain,
            total_size,
            buffer_size,
            direct: false,
            fsync: false,
            iterations: 1,
            drop_caches: false,
            json: None,
            force: false,
        }
    }

    /// Why these options cannot run, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.total_size == 0 {
            return Err("total size must be at least 1 byte".into());
        }
        if self.buffer_size == 0 {
            return Err("buffer size must be at least 1 byte".into());
        }
        if self.iterations == 0 {
            return Err("iterations must be at least 1".into());
        }
        if self.direct {
            for (what, v) in [
                ("buffer size", self.buffer_size),
                ("total size", self.total_size),
            ] {
                if !v.is_multiple_of(DIRECT_ALIGN) {
                    return Err(format!(
                        "direct I/O needs the {what} to be a multiple of {}, not {}",
                        format_size(DIRECT_ALIGN),
                        format_size(v)
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Makes `path` a file of exactly `total_size` bytes unless it already is one; true when it wrote.
pub fn prepare(path: &Path, total_size: u64) -> Result<bool> {
    if fs::metadata(path)
        .map(|m| m.is_file() && m.len() == total_size)
        .unwrap_or(false)
    {
        return Ok(false);
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(io_at("creating", dir))?;
    }
    let mut f = File::create(path).map_err(io_at("creating", path))?;
    let chunk: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
    let mut left = total_size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n]).map_err(io_at("writing", path))?;
        left -= n as u64;
    }
    f.sync_all().map_err(io_at("fsync", path))?;
    Ok(true)
}

/// Runs every iteration and returns the samples; the file is prepared first.
pub fn run(opts: &IoBenchOptions) -> Result<BenchReport> {
    opts.check().map_err(Error::Options)?;
    let created = prepare(&opts.file, opts.total_size)?;
    let mut storage = vec![0u8; opts.buffer_size as usize + DIRECT_ALIGN as usize];
    let buf = aligned(&mut storage, opts.buffer_size as usize);
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i % 253) as u8;
    }
    let mut samples = Vec::with_capacity(opts.iterations as usize);
    for iteration in 0..opts.iterations {
        if opts.drop_caches {
            drop_page_cache()?;
        }
        samples.push(iterate(opts, buf, iteration)?);
    }
    Ok(BenchReport {
        pid: std::process::id(),
        options: opts.clone(),
        created,
        samples,
    })
}

/// Writes the report as JSON to `out`, made before the iterations so that a path that cannot be
/// written fails before them.
pub fn write_report(report: &BenchReport, mut out: Output) -> Result<()> {
    let path = out.path().to_path_buf();
    serde_json::to_writer_pretty(&mut out, report)?;
    out.write_all(b"\n").map_err(io_at("writing", &path))?;
    Ok(out.commit()?)
}

/// The `len`-byte window of `storage` that starts on a [`DIRECT_ALIGN`] boundary.
fn aligned(storage: &mut [u8], len: usize) -> &mut [u8] {
    let offset = storage.as_ptr().align_offset(DIRECT_ALIGN as usize);
    &mut storage[offset..offset + len]
}

fn iterate(opts: &IoBenchOptions, buf: &mut [u8], iteration: u32) -> Result<Sample> {
    let mut oo = OpenOptions::new();
    match opts.op {
        Op::Read => oo.read(true),
        Op::Write => oo.write(true),
    };
    if opts.direct {
        oo.custom_flags(libc::O_DIRECT);
    }
    let before = rusage()?;
    let start = Instant::now();
    let f = oo.open(&opts.file).map_err(io_at("opening", &opts.file))?;
    let (mut done, mut calls) = (0u64, 0u64);
    while done < opts.total_size {
        let want = (opts.total_size - done).min(opts.buffer_size) as usize;
        let n = transfer(&f, opts, &mut buf[..want], done).map_err(|source| Error::Transfer {
            op: opts.op.name(),
            path: opts.file.clone(),
            offset: done,
            source,
        })?;
        calls += 1;
        if n == 0 {
            return Err(Error::Short {
                path: opts.file.clone(),
                done,
                total: opts.total_size,
            });
        }
        done += n as u64;
    }
    if opts.fsync {
        f.sync_all().map_err(io_at("fsync", &opts.file))?;
    }
    drop(f);
    let time_s = start.elapsed().as_secs_f64();
    let after = rusage()?;
    Ok(Sample {
        iteration,
        bytes: done,
        calls,
        time_s,
        bandwidth_mibs: done as f64 / (1 << 20) as f64 / time_s,
        utime_s: seconds(&after.ru_utime) - seconds(&before.ru_utime),
        stime_s: seconds(&after.ru_stime) - seconds(&before.ru_stime),
        inblock: after.ru_inblock - before.ru_inblock,
        oublock: after.ru_oublock - before.ru_oublock,
    })
}

/// One call of `opts`' family moving `buf` at `offset` (the file's position for the unpositioned calls).
fn transfer(f: &File, opts: &IoBenchOptions, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut f = f;
    match (opts.op, opts.call) {
        (Op::Read, Call::Plain) => f.read(buf),
        (Op::Write, Call::Plain) => f.write(buf),
        (Op::Read, Call::Positional) => f.read_at(buf, offset),
        (Op::Write, Call::Positional) => f.write_at(buf, offset),
        (Op::Read, Call::Vectored) => f.read_vectored(&mut [IoSliceMut::new(buf)]),
        (Op::Write, Call::Vectored) => f.write_vectored(&[IoSlice::new(buf)]),
        (op, Call::PositionalVectored) => {
            let iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            let offset = libc::off_t::try_from(offset)
                .map_err(|_| io::Error::other(format!("offset {offset} is past off_t")))?;
            // SAFETY: `iov` describes `buf`, borrowed mutably for the length of the call.
            let n = unsafe {
                match op {
                    Op::Read => libc::preadv(f.as_raw_fd(), &iov, 1, offset),
                    Op::Write => libc::pwritev(f.as_raw_fd(), &iov, 1, offset),
                }
            };
            usize::try_from(n).map_err(|_| io::Error::last_os_error())
        }
    }
}

fn drop_page_cache() -> Result<()> {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    fs::write("/proc/sys/vm/drop_caches", "3\n").map_err(Error::DropCaches)
}

fn rusage() -> Result<libc::rusage> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    if rc != 0 {
        return Err(Error::Rusage(io::Error::last_os_error()));
    }
    // SAFETY: getrusage returned 0, so it wrote the whole struct (and it started zeroed).
    Ok(unsafe { ru.assume_init() })
}

fn seconds(t: &libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 * 1e-6
}

#[cfg(test)]
mod tests {
    use super::*;
    use datasets::output::Existing;

    fn opts(dir: &Path, op: Op, total: u64, buffer: u64) -> IoBenchOptions {
        IoBenchOptions {
            iterations: 2,
            ..IoBenchOptions::new(dir.join("bench.dat"), op, total, buffer)
        }
    }

    #[test]
    fn prepare_writes_exact_size_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/f.dat");
        assert!(prepare(&path, 3 * (1 << 20) + 17).unwrap());
        assert_eq!(fs::metadata(&path).unwrap().len(), 3 * (1 << 20) + 17);
        assert!(!prepare(&path, 3 * (1 << 20) + 17).unwrap());
        assert!(prepare(&path, 5000).unwrap());
        assert_eq!(fs::metadata(&path).unwrap().len(), 5000);
    }

    #[test]
    fn read_counts_exact_bytes_and_calls() {
        let dir = tempfile::tempdir().unwrap();
        let r = run(&opts(dir.path(), Op::Read, 100_000, 4096)).unwrap();
        assert!(r.created);
        assert_eq!(r.pid, std::process::id());
        assert_eq!(r.samples.len(), 2);
        for (i, s) in r.samples.iter().enumerate() {
            assert_eq!(s.iteration, i as u32);
            assert_eq!(s.bytes, 100_000);
            // 24 full buffers and one of 1696 bytes.
            assert_eq!(s.calls, 25);
        }
    }

    #[test]
    fn write_overwrites_in_place_with_the_pattern() {
        let dir = tempfile::tempdir().unwrap();
        let o = IoBenchOptions {
            fsync: true,
            ..opts(dir.path(), Op::Write, 1 << 20, 64 << 10)
        };
        let r = run(&o).unwrap();
        assert_eq!(r.samples.iter().map(|s| s.bytes).sum::<u64>(), 2 << 20);
        assert_eq!(r.samples[0].calls, 16);
        let data = fs::read(&o.file).unwrap();
        assert_eq!(data.len(), 1 << 20);
        let expected: Vec<u8> = (0..64 << 10).map(|i| (i % 253) as u8).collect();
        assert!(data.chunks(64 << 10).all(|c| c == expected.as_slice()));
    }

    #[test]
    fn direct_read_and_write() {
        let dir = tempfile::tempdir().unwrap();
        for op in [Op::Write, Op::Read] {
            let o = IoBenchOptions {
                direct: true,
                ..opts(dir.path(), op, 256 << 10, 16 << 10)
            };
            let r = run(&o).unwrap();
            assert_eq!(r.samples[1].bytes, 256 << 10);
            assert_eq!(r.samples[1].calls, 16);
        }
        assert_eq!(
            fs::metadata(dir.path().join("bench.dat")).unwrap().len(),
            256 << 10
        );
    }

    #[test]
    fn every_call_family_moves_exact_bytes_and_the_file_matches() {
        let dir = tempfile::tempdir().unwrap();
        for call in [
            Call::Plain,
            Call::Positional,
            Call::Vectored,
            Call::PositionalVectored,
        ] {
            for direct in [false, true] {
                let written = run(&IoBenchOptions {
                    call,
                    direct,
                    ..opts(dir.path(), Op::Write, 96 << 10, 8 << 10)
                })
                .unwrap();
                let read = run(&IoBenchOptions {
                    call,
                    direct,
                    ..opts(dir.path(), Op::Read, 96 << 10, 8 << 10)
                })
                .unwrap();
                for s in written.samples.iter().chain(&read.samples) {
                    assert_eq!(
                        (s.bytes, s.calls),
                        (96 << 10, 12),
                        "{call:?} direct {direct}"
                    );
                }
                let data = fs::read(dir.path().join("bench.dat")).unwrap();
                assert!(
                    data.iter()
                        .enumerate()
                        .all(|(i, &b)| b == ((i % (8 << 10)) % 253) as u8),
                    "{call:?} direct {direct}"
                );
            }
        }
    }

    #[test]
    fn rejects_unaligned_direct_and_zero_sizes() {
        let dir = tempfile::tempdir().unwrap();
        let o = IoBenchOptions {
            direct: true,
            ..opts(dir.path(), Op::Read, 1 << 20, 1000)
        };
        assert_eq!(
            run(&o).unwrap_err().to_string(),
            "direct I/O needs the buffer size to be a multiple of 4KiB, not 1000B"
        );
        assert!(run(&opts(dir.path(), Op::Read, 0, 4096)).is_err());
        assert!(!dir.path().join("bench.dat").exists());
    }

    #[test]
    fn report_round_trips_through_json() {
        let dir = tempfile::tempdir().unwrap();
        let r = run(&opts(dir.path(), Op::Read, 8192, 4096)).unwrap();
        let out = Output::create(dir.path().join("s.json"), Existing::Refuse).unwrap();
        write_report(&r, out).unwrap();
        let back: BenchReport =
            serde_json::from_str(&fs::read_to_string(dir.path().join("s.json")).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
