//! Starting the traced command held before exec, so that it is in the kernel's scope map (and its
//! inherited fds in the fd table) before it runs a single instruction of its own.
//!
//! `std::process::Command::spawn` waits for the exec, so a child held before it would deadlock
//! the parent; this forks directly and, in the child, only calls async-signal-safe functions.

use std::ffi::CString;
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::error::{Context, Error, Result, bail};

/// A child process waiting, between fork and exec, for [`HeldCommand::release`].
pub struct HeldCommand {
    pid: i32,
    gate: Option<RawFd>,
    /// The child's end of the gate, which it reads.
    gate_read: RawFd,
    /// Reports the exec's errno, or closes on a successful exec.
    exec_error: RawFd,
    status: Option<i32>,
}

/// How long a child just forked may take to reach its read of the gate.
const HOLD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// `program` as execvp would find it.
pub fn find(program: &str) -> Option<PathBuf> {
    let executable = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .is_ok_and(|c| unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0)
            && p.is_file()
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| executable(p))
}

/// Both ends of a pipe, closed on exec.
pub(crate) fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: two fds into a live local array; on success both are new and this owns them.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(std::io::Error::last_os_error()).context("pipe2");
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

pub fn spawn_held(command: &[String]) -> Result<HeldCommand> {
    let Some(program) = command.first() else {
        bail!("empty command");
    };
    let path = find(program).ok_or_else(|| Error::NotExecutable {
        command: command.join(" "),
        program: program.clone(),
    })?;
    let path = CString::new(path.as_os_str().as_bytes()).context("a NUL byte in the command")?;
    let argv: Vec<CString> = command
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .context("a NUL byte in the command")?;
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let (gate_r, gate_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let (gate_r, gate_w) = (gate_r.into_raw_fd(), gate_w.into_raw_fd());
    let (err_r, err_w) = (err_r.into_raw_fd(), err_w.into_raw_fd());
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()).context("fork");
    }
    if pid == 0 {
        unsafe {
            libc::close(gate_w);
            libc::close(err_r);
            let mut b = [0u8; 2];
            while libc::read(gate_r, b.as_mut_ptr().cast(), b.len()) < 0 {}
            libc::execv(path.as_ptr(), argv_ptrs.as_ptr());
            let errno = *libc::__errno_location();
            libc::write(err_w, (&raw const errno).cast(), size_of::<i32>());
            libc::_exit(127);
        }
    }
    unsafe {
        libc::close(gate_r);
        libc::close(err_w);
    }
    Ok(HeldCommand {
        pid,
        gate: Some(gate_w),
        gate_read: gate_r,
        exec_error: err_r,
        status: None,
    })
}

impl HeldCommand {
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Returns once the child waits in its read of the gate, so that nothing it does before
    /// the release is left to do: from then on, its first system call is that read's end.
    /// An attach done before the spawn, as in a [`crate::Session`], would otherwise see the
    /// child's last steps towards the read, or not, as the scheduler has it.
    pub fn wait_until_held(&self) -> Result<()> {
        let path = format!("/proc/{}/syscall", self.pid);
        let blocked_in = format!("{} {:#x} ", libc::SYS_read, self.gate_read);
        let start = std::time::Instant::now();
        loop {
            // "running" while it runs; the number and arguments of the call it waits in.
            let now = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
            if now.starts_with(&blocked_in) {
                return Ok(());
            }
            if start.elapsed() > HOLD_TIMEOUT {
                bail!(
                    "the command did not reach its hold in {} s ({path}: {})",
                    HOLD_TIMEOUT.as_secs(),
                    now.trim()
                );
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }

    /// Lets the child exec, and reports whether the exec failed.
    pub fn release(&mut self) -> Result<()> {
        let Some(gate) = self.gate.take() else {
            return Ok(());
        };
        let n = unsafe { libc::write(gate, b"go".as_ptr().cast(), 2) };
        unsafe { libc::close(gate) };
        if n != 2 {
            return Err(std::io::Error::last_os_error()).context("releasing the traced command");
        }
        let mut errno = 0i32;
        let got = unsafe { libc::read(self.exec_error, (&raw mut errno).cast(), size_of::<i32>()) };
        if got == size_of::<i32>() as isize {
            bail!("exec failed: {}", std::io::Error::from_raw_os_error(errno));
        }
        Ok(())
    }

    /// The exit status once the child has ended: its code, or 128 + the signal that ended it.
    pub fn try_wait(&mut self) -> Result<Option<i32>> {
        self.reap(libc::WNOHANG)
    }

    pub fn wait(&mut self) -> Result<i32> {
        Ok(self.reap(0)?.expect("a blocking waitpid returns a status"))
    }

    fn reap(&mut self, flags: i32) -> Result<Option<i32>> {
        if self.status.is_some() {
            return Ok(self.status);
        }
        let mut st = 0;
        let r = unsafe { libc::waitpid(self.pid, &mut st, flags) };
        if r < 0 {
            return Err(std::io::Error::last_os_error()).context("waiting for the command");
        }
        if r == 0 {
            return Ok(None);
        }
        let code = if libc::WIFEXITED(st) {
            libc::WEXITSTATUS(st)
        } else {
            128 + libc::WTERMSIG(st)
        };
        self.status = Some(code);
        Ok(self.status)
    }

    pub fn signal(&self, sig: i32) {
        if self.status.is_none() {
            unsafe { libc::kill(self.pid, sig) };
        }
    }
}

impl Drop for HeldCommand {
    fn drop(&mut self) {
        if self.status.is_none() {
            self.signal(libc::SIGKILL);
            let _ = self.wait();
        }
        if let Some(g) = self.gate.take() {
            unsafe { libc::close(g) };
        }
        unsafe { libc::close(self.exec_error) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_runs_only_after_release() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let mut held =
            spawn_held(&["touch".into(), marker.to_string_lossy().into_owned()]).unwrap();
        // Held between fork and exec, the child is still a copy of this test binary.
        let exe = std::fs::read_link(format!("/proc/{}/exe", held.pid())).unwrap();
        assert_eq!(exe, std::env::current_exe().unwrap());
        assert!(!marker.exists());
        held.wait_until_held().unwrap();
        let syscall = std::fs::read_to_string(format!("/proc/{}/syscall", held.pid())).unwrap();
        let read: Vec<&str> = syscall.split_whitespace().take(2).collect();
        assert_eq!(
            read,
            [libc::SYS_read.to_string(), format!("{:#x}", held.gate_read)]
        );
        held.release().unwrap();
        assert_eq!(held.wait().unwrap(), 0);
        assert!(marker.exists());
    }

    #[test]
    fn exit_codes_and_missing_programs() {
        let mut held = spawn_held(&["sh".into(), "-c".into(), "exit 3".into()]).unwrap();
        held.release().unwrap();
        assert_eq!(held.wait().unwrap(), 3);
        let err = spawn_held(&["/no/such/program".into()]).err().unwrap();
        assert_eq!(
            err.to_string(),
            "starting `/no/such/program`: `/no/such/program` is not an executable file or in PATH"
        );
    }
}
