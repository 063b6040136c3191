//! The processes of `--pid`, each held by a pidfd from the start: a pid that names no process is
//! refused before anything is loaded, and the end of every one is seen, even once its pid is reused.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

use crate::error::{Context, Error, Result, Target};

pub struct Pids(Vec<OwnedFd>);

impl Pids {
    /// Opens every pid, failing on the first that is not a running process.
    pub fn open(pids: &[u32]) -> Result<Pids> {
        pids.iter()
            .map(|&p| open(p))
            .collect::<Result<_>>()
            .map(Pids)
    }

    /// Whether every process has exited (true for none).
    pub fn all_exited(&self) -> Result<bool> {
        let mut polled: Vec<libc::pollfd> = self
            .0
            .iter()
            .map(|fd| libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: `polled` holds `polled.len()` initialized entries for the duration of the call.
        let n = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error()).context("polling the traced processes");
        }
        // A pidfd is readable once its process has exited.
        Ok(polled.iter().all(|p| p.revents & libc::POLLIN != 0))
    }

    pub fn fds(&self) -> impl Iterator<Item = BorrowedFd<'_>> {
        self.0.iter().map(AsFd::as_fd)
    }
}

/// A pidfd on child process `pid` of this process, which cannot be reused before it is reaped.
pub fn open_child(pid: u32) -> Result<OwnedFd> {
    // SAFETY: pidfd_open takes no pointers.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error()).with_context(|| format!("pidfd_open of {pid}"));
    }
    // SAFETY: the kernel just returned this fd, and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Sleeps until a process of `pidfds` that was running exits, a signal arrives, or `timeout`
/// passes, whichever comes first.
pub fn wait_for_exit<'a>(
    pidfds: impl IntoIterator<Item = BorrowedFd<'a>>,
    timeout: Duration,
) -> Result<()> {
    let mut polled: Vec<libc::pollfd> = pidfds
        .into_iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // Those that already exited would wake the wait at once.
    // SAFETY: `polled` holds `polled.len()` initialized entries for the duration of the call.
    if unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, 0) } < 0 {
        return Err(io::Error::last_os_error()).context("polling processes");
    }
    polled.retain(|p| p.revents == 0);
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: as above.
    let n = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, ms) };
    let e = io::Error::last_os_error();
    if n < 0 && e.kind() != io::ErrorKind::Interrupted {
        return Err(e).context("waiting for processes");
    }
    Ok(())
}

fn open(pid: u32) -> Result<OwnedFd> {
    if pid == 0 {
        return Err(Error::PidZero.about(Target::Pid(0)));
    }
    let Ok(id) = libc::pid_t::try_from(pid) else {
        return Err(Error::NoProcess.about(Target::Pid(pid)));
    };
    // SAFETY: pidfd_open takes no pointers.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, id, 0) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ESRCH) => Err(Error::NoProcess.about(Target::Pid(pid))),
            // How pidfd_open refuses a thread that does not lead its thread group: EINVAL on older
            // kernels, ENOENT on this one (6.18).
            Some(libc::EINVAL | libc::ENOENT) => match thread_group(pid) {
                Some(tgid) => Err(Error::Thread { tgid }.about(Target::Pid(pid))),
                None => Err(Error::NoProcess.about(Target::Pid(pid))),
            },
            _ => Err(Error::from(e).context("pidfd_open").about(Target::Pid(pid))),
        };
    }
    // SAFETY: the kernel just returned this fd, and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The `Tgid` of `/proc/TID/status`.
fn thread_group(tid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error about `pid`, checked to be about that process, and its message.
    fn error(pid: u32) -> (Error, String) {
        let err = Pids::open(&[pid]).err().unwrap();
        let Error::Target { target, source } = err else {
            panic!("not about a process: {err:?}")
        };
        assert_eq!(target, Target::Pid(pid));
        let text = datasets::error::chain(&source);
        (*source, text)
    }

    #[test]
    fn pid_0_a_pid_past_pid_max_and_a_thread_are_refused() {
        let (zero, text) = error(0);
        assert!(matches!(zero, Error::PidZero), "{zero:?}");
        assert_eq!(text, "not a process (process ids start at 1)");
        let pid_max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let (past, text) = error(pid_max);
        assert!(matches!(past, Error::NoProcess), "{past:?}");
        assert_eq!(text, "no such process");
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, wait) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            // SAFETY: gettid takes no arguments.
            tx.send(unsafe { libc::gettid() } as u32).unwrap();
            wait.recv().unwrap();
        });
        let tid = rx.recv().unwrap();
        let me = std::process::id();
        let (thread_err, text) = error(tid);
        assert!(
            matches!(thread_err, Error::Thread { tgid } if tgid == me),
            "{thread_err:?}"
        );
        assert_eq!(
            thread_err.remedy(),
            Some(crate::error::Remedy::TraceProcess(me))
        );
        assert_eq!(text, format!("a thread of process {me}, not a process"));
        stop.send(()).unwrap();
        thread.join().unwrap();
    }

    #[test]
    fn the_end_of_every_process_is_seen() {
        let mut a = std::process::Command::new("sleep")
            .arg("1000")
            .spawn()
            .unwrap();
        let mut b = std::process::Command::new("true").spawn().unwrap();
        let pids = Pids::open(&[a.id(), b.id()]).unwrap();
        b.wait().unwrap();
        assert!(!pids.all_exited().unwrap());
        a.kill().unwrap();
        a.wait().unwrap();
        assert!(pids.all_exited().unwrap());
        assert!(Pids::open(&[]).unwrap().all_exited().unwrap());
    }

    #[test]
    fn a_wait_ends_when_a_running_process_exits_and_not_for_one_that_had() {
        let done = std::process::Command::new("true").spawn().unwrap();
        let done_fd = open_child(done.id()).unwrap();
        let mut done = done;
        done.wait().unwrap();
        let mut child = std::process::Command::new("sh")
            .args(["-c", "read x; exit 0"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let fd = open_child(child.id()).unwrap();
        let stdin = child.stdin.take().unwrap();
        let waiter = std::thread::spawn(move || {
            wait_for_exit([done_fd.as_fd(), fd.as_fd()], Duration::from_secs(3600)).unwrap();
        });
        // The wait goes on while the child reads; closing its input ends it, and the wait.
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished());
        drop(stdin);
        waiter.join().unwrap();
        assert!(child.wait().unwrap().success());
    }
}
