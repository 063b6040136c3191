//! What the tracer adds to one cheap system call ([`CallCost`]): a helper process times batches of one-byte
//! `pread`s of a cached regular file (its own executable) before any probe is attached, then again in the trace's
//! scope with every probe attached, and keeps each phase's fastest batch. The decoder drops its records and counts
//! them. A regular file, not `/dev/zero`: the probes do more for a file's calls (its id, its offset); traced, dd's
//! one-byte reads of a cached file gained about 1.5 times what its reads of `/dev/zero` gained.
//!
//! Like [`crate::scope::spawn_held`], it forks directly, and the child calls only async-signal-safe functions
//! and allocates nothing: a lock another of the tracer's threads held at the fork stays held in the child.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aya::Ebpf;
use aya::maps::HashMap;
use datasets::limits::CallCost;
use tracer_ebpf::TracedPid;

use crate::clock::monotonic_ns;
use crate::error::{Context, Result, bail};
use crate::options::CollectOptions;
use crate::scope::pipe;

/// The call timed, as the reading names it.
pub const CALL: &str = "pread64(/proc/self/exe, 1 byte at 0)";
/// The file read: the helper's own executable, cached since it runs, and on a file system whatever the machine.
const FILE: &std::ffi::CStr = c"/proc/self/exe";
/// Batches a phase: enough that the fastest ran free of interrupts and preemption.
pub const BATCHES: u64 = 16;
/// Calls a batch: enough that the clock reads around it vanish, few enough that both phases cost milliseconds.
pub const CALLS: u64 = 256;
/// How long a phase may take: it takes milliseconds.
const ANSWER: Duration = Duration::from_secs(3);
/// What the helper writes in place of a time when it failed.
const FAILED: u64 = u64::MAX;
/// The helper's exit codes.
const OPEN_FAILED: i32 = 1;
const READ_FAILED: i32 = 2;
const WRITE_FAILED: i32 = 3;
const GATE_CLOSED: i32 = 4;

/// The helper, forked and done with its untraced phase, waiting to run its traced one. Dropped before that, it
/// is killed.
pub(crate) struct Helper {
    pid: libc::pid_t,
    /// Its times.
    result: OwnedFd,
    /// A byte written to it starts the traced phase.
    gate: Option<OwnedFd>,
    untraced_ns: u64,
    /// The clock when it was reaped, `u64::MAX` until then (the decoder's bound on its pid).
    reaped_at: Arc<AtomicU64>,
    status: Option<i32>,
}

impl Helper {
    /// Forks the helper and waits for its untraced phase: call before any probe is attached.
    pub(crate) fn start() -> Result<Helper> {
        let (result_r, result_w) = pipe()?;
        let (gate_r, gate_w) = pipe()?;
        // SAFETY: the child runs only `helper`, which calls async-signal-safe functions and never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(std::io::Error::last_os_error()).context("fork");
        }
        if pid == 0 {
            unsafe {
                libc::close(result_r.as_raw_fd());
                libc::close(gate_w.as_raw_fd());
                helper(result_w.as_raw_fd(), gate_r.as_raw_fd())
            }
        }
        drop((result_w, gate_r));
        let mut h = Helper {
            pid,
            result: result_r,
            gate: Some(gate_w),
            untraced_ns: FAILED,
            reaped_at: Arc::new(AtomicU64::new(u64::MAX)),
            status: None,
        };
        h.untraced_ns = h.answer().context("timing the calls untraced")?;
        Ok(h)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// The clock when it was reaped, `u64::MAX` until then: after it, its pid may be another process's.
    pub(crate) fn reaped_at(&self) -> Arc<AtomicU64> {
        self.reaped_at.clone()
    }

    /// Puts the helper in the scope `opts` traces, as `collect::admit` puts the roots: in `TRACED`, or in the
    /// traced cgroup. Every process but the tracer is in the scope of a trace of every process.
    pub(crate) fn enter_scope(&self, ebpf: &mut Ebpf, opts: &CollectOptions) -> Result<()> {
        if opts.all {
            return Ok(());
        }
        if let Some(dir) = &opts.cgroup {
            let procs = dir.join("cgroup.procs");
            return std::fs::write(&procs, self.pid.to_string())
                .with_context(|| format!("moving the helper into {}", procs.display()));
        }
        let mut traced: HashMap<_, TracedPid, u32> =
            HashMap::try_from(ebpf.map_mut("TRACED").context("TRACED map")?)?;
        traced
            .insert(TracedPid { tgid: self.pid() }, 0, 0)
            .context("adding the helper to the scope")
    }

    /// Runs the traced phase and reaps the helper: call with it in the scope, every probe attached and the ring
    /// buffer drained. The cost's `events` are the decoder's to count.
    pub(crate) fn traced(mut self) -> Result<CallCost> {
        let gate = self.gate.take().expect("the gate opens once");
        // SAFETY: one byte from a live local, to an fd this owns.
        if unsafe { libc::write(gate.as_raw_fd(), b"g".as_ptr().cast(), 1) } != 1 {
            return Err(std::io::Error::last_os_error()).context("starting the traced phase");
        }
        drop(gate);
        let traced_ns = self.answer().context("timing the calls traced")?;
        match self.reap()? {
            0 => {}
            code => bail!("the helper exited with {code}"),
        }
        Ok(CallCost {
            call: CALL.to_owned(),
            batches: BATCHES,
            calls_per_batch: CALLS,
            untraced_ns: self.untraced_ns,
            traced_ns,
            events: 0,
        })
    }

    /// The helper's next time; on a failure or past [`ANSWER`], it is killed and reaped, and the error says why.
    fn answer(&mut self) -> Result<u64> {
        let deadline = Instant::now() + ANSWER;
        let mut buf = [0u8; 8];
        let mut got = 0;
        while got < buf.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut fd = libc::pollfd {
                fd: self.result.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd, a live local.
            let ready = unsafe { libc::poll(&mut fd, 1, left.as_millis() as i32) };
            if ready == 0 {
                self.kill();
                bail!(
                    "the helper did not answer in {} s, and was killed",
                    ANSWER.as_secs()
                );
            }
            let n = if ready > 0 {
                // SAFETY: into the unfilled rest of a live local buffer.
                unsafe {
                    libc::read(
                        self.result.as_raw_fd(),
                        buf[got..].as_mut_ptr().cast(),
                        buf.len() - got,
                    )
                }
            } else {
                ready as isize
            };
            if n == 0 {
                let code = self.reap()?;
                bail!("the helper ended without answering ({})", exit(code));
            }
            if n > 0 {
                got += n as usize;
                continue;
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                self.kill();
                return Err(e).context("reading the helper's answer");
            }
        }
        match u64::from_ne_bytes(buf) {
            FAILED => {
                let code = self.reap()?;
                bail!("{}", exit(code))
            }
            ns => Ok(ns),
        }
    }

    fn kill(&mut self) {
        if self.status.is_none() {
            // SAFETY: a signal to this process's own unreaped child.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
            let _ = self.reap();
        }
    }

    /// Waits for the helper's end; returns its exit code, or 128 + the signal that ended it.
    fn reap(&mut self) -> Result<i32> {
        if let Some(code) = self.status {
            return Ok(code);
        }
        let mut st = 0;
        loop {
            // SAFETY: a live local for the status.
            if unsafe { libc::waitpid(self.pid, &mut st, 0) } == self.pid {
                break;
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e).context("waiting for the helper");
            }
        }
        self.reaped_at.store(monotonic_ns(), Ordering::Relaxed);
        let code = if libc::WIFEXITED(st) {
            libc::WEXITSTATUS(st)
        } else {
            128 + libc::WTERMSIG(st)
        };
        self.status = Some(code);
        Ok(code)
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What the helper's exit code says.
fn exit(code: i32) -> String {
    match code {
        OPEN_FAILED => "the helper could not open /proc/self/exe".to_owned(),
        READ_FAILED => "a read of /proc/self/exe failed in the helper".to_owned(),
        WRITE_FAILED => "the helper could not write its time".to_owned(),
        GATE_CLOSED => "the helper's gate closed before it opened".to_owned(),
        code => format!("the helper exited with {code}"),
    }
}

/// The child: times the untraced phase, waits for the gate, times the traced phase. Async-signal-safe calls only,
/// no allocation, no unwinding.
unsafe fn helper(result: RawFd, gate: RawFd) -> ! {
    unsafe {
        send(result, phase());
        let mut go = 0u8;
        loop {
            match libc::read(gate, (&raw mut go).cast(), 1) {
                1 => break,
                n if n < 0 && *libc::__errno_location() == libc::EINTR => {}
                // The tracer gave up, or is gone.
                _ => fail(result, GATE_CLOSED),
            }
        }
        send(result, phase());
        libc::_exit(0)
    }
}

/// One phase: the file opened (in the traced phase, traced, as a traced program's files are), then the fastest of
/// [`BATCHES`] batches of [`CALLS`] reads of its first byte, in nanoseconds.
unsafe fn phase() -> Result<u64, i32> {
    let fd = unsafe { libc::open(FILE.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(OPEN_FAILED);
    }
    let mut byte = 0u8;
    let mut best = u64::MAX;
    for _ in 0..BATCHES {
        let start = monotonic_ns();
        for _ in 0..CALLS {
            if unsafe { libc::pread(fd, (&raw mut byte).cast(), 1, 0) } != 1 {
                return Err(READ_FAILED);
            }
        }
        best = best.min(monotonic_ns().saturating_sub(start));
    }
    unsafe { libc::close(fd) };
    Ok(best)
}

/// Writes `time` to the tracer, or [`FAILED`] and exits with the failure's code.
unsafe fn send(result: RawFd, time: Result<u64, i32>) {
    match time {
        Ok(ns) if unsafe { write_u64(result, ns) } => {}
        Ok(_) => unsafe { libc::_exit(WRITE_FAILED) },
        Err(code) => unsafe { fail(result, code) },
    }
}

unsafe fn fail(result: RawFd, code: i32) -> ! {
    unsafe {
        write_u64(result, FAILED);
        libc::_exit(code)
    }
}

unsafe fn write_u64(fd: RawFd, v: u64) -> bool {
    let bytes = v.to_ne_bytes();
    unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) == bytes.len() as isize }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helper_times_both_phases_and_is_reaped() {
        let h = Helper::start().unwrap();
        let reaped_at = h.reaped_at();
        assert_eq!(reaped_at.load(Ordering::Relaxed), u64::MAX);
        let before = monotonic_ns();
        let cost = h.traced().unwrap();
        assert!(reaped_at.load(Ordering::Relaxed) > before);
        assert_eq!(
            (
                cost.call.as_str(),
                cost.batches,
                cost.calls_per_batch,
                cost.events
            ),
            (CALL, BATCHES, CALLS, 0)
        );
        // A read of a byte takes more than a nanosecond and less than a millisecond.
        for ns in [cost.untraced_ns, cost.traced_ns] {
            assert!((CALLS..CALLS * 1_000_000).contains(&ns), "{cost:?}");
        }
    }

    #[test]
    fn a_helper_dropped_before_its_traced_phase_is_killed_and_reaped() {
        let h = Helper::start().unwrap();
        let pid = h.pid;
        drop(h);
        // SAFETY: signal 0 only asks whether the process exists.
        assert_eq!(unsafe { libc::kill(pid, 0) }, -1);
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::ESRCH)
        );
    }
}
