//! dc-trace-testload: the workload the tracer's tests and benchmark trace. It writes N blocks of S
//! bytes to a file with write(2), fsyncs, reads them back with pread(2), reads them again with
//! O_DIRECT (with `--loopback`, sends itself a datagram over loopback with write(2)), then does the same through unbuffered stdio (fopen/fwrite/fflush/fclose, then
//! fopen/fread/fclose), so that each libc call maps to exactly one syscall.
//!
//! `dc-trace-testload DIR N S [--loop K] [--loopback]`: files DIR/raw.dat and DIR/stdio.dat; S must be a
//! multiple of 4096 for O_DIRECT. `--loop K` repeats the whole sequence K times. With
//! `--syscalls M [--threads T] [--op pwrite|pread]` it instead makes M one-byte pwrite64 (or
//! pread64, from a page-cached 4 KiB) calls (the benchmark), split over T threads with a file each
//! (thread 0: DIR/bench.dat), and writes how long they took, in nanoseconds, to DIR/elapsed_ns. With `--cache N S` it writes N blocks of S bytes to
//! DIR/cache.dat with write(2), fsyncs, drops the file's pages from the page cache
//! (POSIX_FADV_DONTNEED), and reads it back with read(2): the page cache layer's workload.
//! With `--names` it renames itself `dc-main` (prctl), starts a thread named `dc-worker` that
//! the main thread renames `dc-renamed` (through /proc), and appends `TID COMM` to DIR/names,
//! read from /proc, after each step. With `--mmap N` it writes N pages to DIR/mmap.dat, drops them
//! from the page cache, and a thread maps the file and reads one byte of each page through the
//! mapping, with no system call between its mmap and munmap; it writes that thread's tid to
//! DIR/mmap_tid.

use std::ffi::CString;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dc-trace-testload: {e}");
            ExitCode::from(2)
        }
    }
}

fn number(args: &[String], i: usize, what: &str) -> Result<usize, String> {
    let v = args
        .get(i)
        .ok_or_else(|| format!("argument {i} ({what}) is missing"))?;
    v.parse()
        .map_err(|_| format!("argument {i} ({what}): `{v}` is not a number"))
}

fn run(args: &[String]) -> Result<(), String> {
    let dir = args
        .get(1)
        .ok_or(
            "usage: dc-trace-testload DIR N S [--loop K] [--loopback] | DIR --syscalls M [--threads T] [--op pwrite|pread] | DIR --cache N S | DIR --mmap N",
        )?;
    if args.get(2).map(String::as_str) == Some("--syscalls") {
        let mut threads = 1;
        let mut op = Op::Pwrite;
        let mut i = 4;
        while let Some(flag) = args.get(i) {
            match flag.as_str() {
                "--threads" => threads = number(args, i + 1, "T")?,
                "--op" => {
                    op = match args.get(i + 1).map(String::as_str) {
                        Some("pwrite") => Op::Pwrite,
                        Some("pread") => Op::Pread,
                        other => {
                            return Err(format!(
                                "argument {} (--op): {other:?} is neither pwrite nor pread",
                                i + 1
                            ));
                        }
                    }
                }
                other => return Err(format!("argument {i}: unknown option `{other}`")),
            }
            i += 2;
        }
        return syscalls(dir, number(args, 3, "M")?, threads, op);
    }
    if args.get(2).map(String::as_str) == Some("--names") {
        return names(dir);
    }
    if args.get(2).map(String::as_str) == Some("--mmap") {
        let n = number(args, 3, "N")?;
        return mapped(dir, n);
    }
    if args.get(2).map(String::as_str) == Some("--cache") {
        return cache(
            &format!("{dir}/cache.dat"),
            number(args, 3, "N")?,
            number(args, 4, "S")?,
        );
    }
    let n = number(args, 2, "N")?;
    let s = number(args, 3, "S")?;
    if s == 0 || s % 4096 != 0 {
        return Err(format!(
            "argument 3 (S): {s} is not a positive multiple of 4096"
        ));
    }
    let (mut loops, mut send) = (1, false);
    let mut i = 4;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "--loop" => {
                loops = number(args, i + 1, "K")?;
                i += 2;
            }
            "--loopback" => {
                send = true;
                i += 1;
            }
            other => return Err(format!("argument {i}: unknown option `{other}`")),
        }
    }
    for _ in 0..loops {
        raw(&format!("{dir}/raw.dat"), n, s)?;
        if send {
            loopback()?;
        }
        stdio(&format!("{dir}/stdio.dat"), n, s)?;
    }
    Ok(())
}

fn check(ok: bool, what: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("{what}: {}", std::io::Error::last_os_error()))
    }
}

/// A page-aligned buffer, as O_DIRECT needs.
struct Aligned {
    ptr: *mut u8,
    len: usize,
}

impl Aligned {
    fn new(len: usize, fill: u8) -> Aligned {
        let mut ptr = std::ptr::null_mut();
        let rc = unsafe { libc::posix_memalign(&mut ptr, 4096, len) };
        assert_eq!(rc, 0, "posix_memalign");
        unsafe { std::ptr::write_bytes(ptr.cast::<u8>(), fill, len) };
        Aligned {
            ptr: ptr.cast(),
            len,
        }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        unsafe { libc::free(self.ptr.cast()) };
    }
}

fn raw(path: &str, n: usize, s: usize) -> Result<(), String> {
    let c = CString::new(path).map_err(|e| e.to_string())?;
    let buf = Aligned::new(s, b'x');
    unsafe {
        let fd = libc::open(
            c.as_ptr(),
            libc::O_CREAT | libc::O_TRUNC | libc::O_WRONLY,
            0o644,
        );
        check(fd >= 0, "open for writing")?;
        for _ in 0..n {
            check(libc::write(fd, buf.ptr.cast(), s) == s as isize, "write")?;
        }
        check(libc::fsync(fd) == 0, "fsync")?;
        check(libc::close(fd) == 0, "close")?;
        let fd = libc::open(c.as_ptr(), libc::O_RDONLY);
        check(fd >= 0, "open for reading")?;
        for i in 0..n {
            check(
                libc::pread(fd, buf.ptr.cast(), s, (i * s) as i64) == s as isize,
                "pread",
            )?;
        }
        check(libc::close(fd) == 0, "close")?;
        let fd = libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECT);
        check(fd >= 0, "open with O_DIRECT")?;
        for i in 0..n {
            check(
                libc::pread(fd, buf.ptr.cast(), buf.len, (i * s) as i64) == s as isize,
                "O_DIRECT pread",
            )?;
        }
        check(libc::close(fd) == 0, "close")?;
    }
    Ok(())
}

/// A datagram to itself over loopback, sent with write(2): the kernel delivers it in a softirq
/// that runs inside that write, so the irq layer sees the traced call.
fn loopback() -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let err = |e: std::io::Error| format!("loopback socket: {e}");
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").map_err(err)?;
    sock.connect(sock.local_addr().map_err(err)?).map_err(err)?;
    let sent = unsafe { libc::write(sock.as_raw_fd(), b"x".as_ptr().cast(), 1) };
    check(sent == 1, "write to a loopback socket")?;
    let mut back = [0u8; 1];
    sock.recv(&mut back).map_err(err)?;
    check(back == *b"x", "the loopback datagram")
}

fn stdio(path: &str, n: usize, s: usize) -> Result<(), String> {
    let c = CString::new(path).map_err(|e| e.to_string())?;
    let buf = vec![b'y'; s];
    let mut back = vec![0u8; s];
    unsafe {
        let f = libc::fopen(c.as_ptr(), c"w".as_ptr());
        check(!f.is_null(), "fopen for writing")?;
        check(
            libc::setvbuf(f, std::ptr::null_mut(), libc::_IONBF, 0) == 0,
            "setvbuf",
        )?;
        for _ in 0..n {
            check(libc::fwrite(buf.as_ptr().cast(), 1, s, f) == s, "fwrite")?;
        }
        check(libc::fflush(f) == 0, "fflush")?;
        check(libc::fsync(libc::fileno(f)) == 0, "fsync")?;
        check(libc::fclose(f) == 0, "fclose")?;
        let f = libc::fopen(c.as_ptr(), c"r".as_ptr());
        check(!f.is_null(), "fopen for reading")?;
        check(
            libc::setvbuf(f, std::ptr::null_mut(), libc::_IONBF, 0) == 0,
            "setvbuf",
        )?;
        for _ in 0..n {
            check(libc::fread(back.as_mut_ptr().cast(), 1, s, f) == s, "fread")?;
        }
        check(libc::fclose(f) == 0, "fclose")?;
    }
    if back != buf {
        return Err(format!("{path}: read back different bytes"));
    }
    Ok(())
}

fn cache(path: &str, n: usize, s: usize) -> Result<(), String> {
    let c = CString::new(path).map_err(|e| e.to_string())?;
    let mut buf = vec![b'z'; s];
    unsafe {
        let fd = libc::open(
            c.as_ptr(),
            libc::O_CREAT | libc::O_TRUNC | libc::O_RDWR,
            0o644,
        );
        check(fd >= 0, "open")?;
        for _ in 0..n {
            check(
                libc::write(fd, buf.as_ptr().cast(), s) == s as isize,
                "write",
            )?;
        }
        check(libc::fsync(fd) == 0, "fsync")?;
        check(
            libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED) == 0,
            "posix_fadvise",
        )?;
        check(libc::lseek(fd, 0, libc::SEEK_SET) == 0, "lseek")?;
        for _ in 0..n {
            check(
                libc::read(fd, buf.as_mut_ptr().cast(), s) == s as isize,
                "read",
            )?;
        }
        check(libc::close(fd) == 0, "close")?;
    }
    Ok(())
}

/// See `--mmap` in the module.
fn mapped(dir: &str, pages: usize) -> Result<(), String> {
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let len = pages * page;
    let path = format!("{dir}/mmap.dat");
    std::fs::write(&path, vec![1u8; len]).map_err(|e| format!("{path}: {e}"))?;
    let file = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    unsafe {
        check(libc::fsync(fd) == 0, "fsync")?;
        check(
            libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED) == 0,
            "posix_fadvise",
        )?;
    }
    let reader = std::thread::spawn(move || {
        let tid = unsafe { libc::gettid() };
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        check(p != libc::MAP_FAILED, "mmap")?;
        let sum: usize = (0..pages)
            .map(|i| unsafe { std::ptr::read_volatile(p.cast::<u8>().add(i * page)) } as usize)
            .sum();
        check(unsafe { libc::munmap(p, len) } == 0, "munmap")?;
        Ok::<_, String>((tid, sum))
    });
    let (tid, sum) = reader.join().map_err(|_| "the mmap reader panicked")??;
    if sum != pages {
        return Err(format!("read {sum} through the mapping, expected {pages}"));
    }
    std::fs::write(format!("{dir}/mmap_tid"), tid.to_string()).map_err(|e| e.to_string())
}

#[derive(Clone, Copy)]
enum Op {
    Pwrite,
    Pread,
}

fn syscalls(dir: &str, m: usize, threads: usize, op: Op) -> Result<(), String> {
    if threads == 0 {
        return Err("argument 5 (T): 0 threads".to_owned());
    }
    // A file per thread: threads writing one file would wait on its lock, not make calls.
    let mut fds = Vec::with_capacity(threads);
    for t in 0..threads {
        let name = if t == 0 {
            format!("{dir}/bench.dat")
        } else {
            format!("{dir}/bench-{t}.dat")
        };
        let c = CString::new(name).map_err(|e| e.to_string())?;
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_CREAT | libc::O_TRUNC | libc::O_RDWR,
                0o644,
            )
        };
        check(fd >= 0, "open")?;
        if let Op::Pread = op {
            let page = [7u8; 4096];
            let n = unsafe { libc::pwrite(fd, page.as_ptr().cast(), page.len(), 0) };
            check(n == 4096, "pwrite")?;
        }
        fds.push(fd);
    }
    let start = std::time::Instant::now();
    std::thread::scope(|s| {
        let workers: Vec<_> = fds
            .iter()
            .enumerate()
            .map(|(t, &fd)| {
                let calls = m / threads + usize::from(t < m % threads);
                s.spawn(move || {
                    let mut b = 0u8;
                    for i in 0..calls {
                        let at = (i % 4096) as i64;
                        let n = match op {
                            Op::Pwrite => unsafe { libc::pwrite(fd, (&raw const b).cast(), 1, at) },
                            Op::Pread => unsafe { libc::pread(fd, (&raw mut b).cast(), 1, at) },
                        };
                        check(n == 1, "pwrite or pread")?;
                    }
                    Ok::<(), String>(())
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().expect("worker thread panicked"))
    })?;
    let elapsed = start.elapsed().as_nanos();
    for fd in fds {
        check(unsafe { libc::close(fd) } == 0, "close")?;
    }
    std::fs::write(format!("{dir}/elapsed_ns"), elapsed.to_string()).map_err(|e| e.to_string())
}

fn names(dir: &str) -> Result<(), String> {
    use std::io::Write;
    let log = std::sync::Mutex::new(
        std::fs::File::create(format!("{dir}/names")).map_err(|e| format!("{dir}/names: {e}"))?,
    );
    let note = |tid: i32| {
        let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).unwrap();
        write!(log.lock().unwrap(), "{tid} {comm}").unwrap();
    };
    let main_tid = unsafe { libc::gettid() };
    note(main_tid);
    let name = CString::new("dc-main").unwrap();
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
    note(main_tid);
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("dc-worker".into())
            .spawn_scoped(s, move || {
                let tid = unsafe { libc::gettid() };
                note(tid);
                tid_tx.send(tid).unwrap();
                go_rx.recv().unwrap();
                note(tid);
            })
            .unwrap();
        let worker = tid_rx.recv().unwrap();
        std::fs::write(format!("/proc/self/task/{worker}/comm"), "dc-renamed").unwrap();
        go_tx.send(()).unwrap();
    });
    Ok(())
}
