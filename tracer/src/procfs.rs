//! What /proc says about processes: their open files (fds opened before tracing began), the
//! processes of a cgroup, and the cgroup's id; and the one way a cgroup is emptied and removed.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Context, Error, Result, Target};

/// The fds of `pid` and the files they name, sorted by fd. Sockets, pipes and anonymous inodes
/// keep the kernel's names (`pipe:[123]`). With `survive_exec`, only fds without close-on-exec.
pub fn open_files(pid: u32, survive_exec: bool) -> Vec<(i32, String)> {
    let dir = PathBuf::from(format!("/proc/{pid}/fd"));
    let mut out: Vec<(i32, String)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let fd = e.file_name().to_str()?.parse::<i32>().ok()?;
            if survive_exec && cloexec(pid, fd) {
                return None;
            }
            let target = std::fs::read_link(e.path()).ok()?;
            Some((fd, target.to_string_lossy().into_owned()))
        })
        .collect();
    out.sort();
    out
}

/// Whether `pid`'s `fd` closes on exec: the O_CLOEXEC bit of `flags` in its fdinfo (octal).
fn cloexec(pid: u32, fd: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).is_ok_and(|info| {
        info.lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| u64::from_str_radix(f.trim(), 8).ok())
            .is_some_and(|f| f & libc::O_CLOEXEC as u64 != 0)
    })
}

/// Every process id in /proc.
pub fn all_pids() -> Vec<u32> {
    let mut pids: Vec<u32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort();
    pids
}

/// The processes of cgroup (v2) directory `dir` and of its descendants, from their
/// `cgroup.procs`.
pub fn cgroup_pids(dir: &Path) -> Result<Vec<u32>> {
    let path = dir.join("cgroup.procs");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let mut pids = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            l.trim()
                .parse()
                .with_context(|| format!("{}:{}: pid `{l}` is not a number", path.display(), i + 1))
        })
        .collect::<Result<Vec<u32>>>()?;
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let sub = entry
            .with_context(|| format!("listing {}", dir.display()))?
            .path();
        if sub.join("cgroup.procs").is_file() {
            pids.extend(cgroup_pids(&sub)?);
        }
    }
    Ok(pids)
}

/// How long [`remove_cgroup`] waits for a cgroup's processes to end after SIGKILL.
const KILL_TIMEOUT: Duration = Duration::from_secs(10);

/// Kills every process of cgroup `dir` (v1 or v2) until it is empty, then removes it; returns how many processes it
/// held at first. A cgroup already gone is done.
pub fn remove_cgroup(dir: &Path) -> Result<usize> {
    let deadline = Instant::now() + KILL_TIMEOUT;
    let mut held = None;
    loop {
        let pids = match cgroup_pids(dir) {
            Ok(p) => p,
            Err(_) if !dir.exists() => return Ok(held.unwrap_or(0)),
            Err(e) => return Err(e),
        };
        let n = *held.get_or_insert(pids.len());
        if pids.is_empty() {
            match std::fs::remove_dir(dir) {
                Ok(()) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(n),
                // A process that just exited can keep the directory busy for a moment.
                Err(e) if Instant::now() > deadline => {
                    return Err(e).with_context(|| format!("removing {}", dir.display()));
                }
                Err(_) => {}
            }
        } else if std::fs::write(dir.join("cgroup.kill"), "1").is_err() {
            // cgroup v1 has no cgroup.kill (v2's also takes the processes forked meanwhile).
            for pid in pids {
                // SAFETY: kill(2) with a pid read from the cgroup; a pid that exited meanwhile gives ESRCH.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
        }
        crate::error::ensure!(
            Instant::now() <= deadline,
            "{}: processes still running {} s after SIGKILL",
            dir.display(),
            KILL_TIMEOUT.as_secs()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The depth of cgroup v2 directory `dir` below the hierarchy's root: how many of its ancestors
/// on the same file system are cgroups.
pub fn cgroup_level(dir: &Path) -> Result<u32> {
    let about = |e: std::io::Error| Error::from(e).about(Target::Cgroup(dir.to_path_buf()));
    let dir = dir.canonicalize().map_err(about)?;
    let dev = std::fs::metadata(&dir).map_err(about)?.dev();
    let mut level = 0;
    for a in dir.ancestors().skip(1) {
        match std::fs::metadata(a) {
            Ok(m) if m.dev() == dev && a.join("cgroup.procs").is_file() => level += 1,
            _ => break,
        }
    }
    Ok(level)
}

/// A cgroup v2's id, which `bpf_get_current_cgroup_id` returns: its directory's inode.
pub fn cgroup_id(dir: &Path) -> Result<u64> {
    let about = |e: Error| e.about(Target::Cgroup(dir.to_path_buf()));
    let meta = std::fs::metadata(dir).map_err(|e| about(e.into()))?;
    if !dir.join("cgroup.procs").is_file() {
        return Err(about(Error::NotCgroup2));
    }
    Ok(meta.ino())
}

/// The working directory of `pid`, to resolve relative paths.
pub fn cwd(pid: u32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// What `pid`'s descriptor `fd` names, while both exist.
pub fn fd_path(pid: u32, fd: i32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok()
}

/// (tid, comm) of every thread of `pid`; none if it is gone.
pub fn thread_names(pid: u32) -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out: Vec<(u32, String)> = dir
        .flatten()
        .filter_map(|e| {
            let tid = e.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            Some((tid, comm.trim_end_matches('\n').to_owned()))
        })
        .collect();
    out.sort();
    out
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is `procs`: only `open` and `write`, so a
/// child may call it between fork and exec.
pub fn join_cgroup(procs: &std::ffi::CString) -> std::io::Result<()> {
    // SAFETY: `procs` is a valid C string and the buffer outlives the call.
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = libc::write(fd, b"0".as_ptr().cast(), 1);
        libc::close(fd);
        if n != 1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn lists_our_own_open_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("held-open");
        let f = std::fs::File::create(&path).unwrap();
        let fd = f.as_raw_fd();
        let entry = (fd, path.to_string_lossy().into_owned());
        assert!(open_files(std::process::id(), false).contains(&entry));
        // Rust opens files close-on-exec.
        assert!(!open_files(std::process::id(), true).contains(&entry));
    }

    #[test]
    fn cgroup_errors_name_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let err = cgroup_id(dir.path()).unwrap_err();
        let Error::Target { target, source } = &err else {
            panic!("not about the cgroup: {err:?}")
        };
        assert_eq!(target, &Target::Cgroup(dir.path().to_path_buf()));
        assert!(matches!(**source, Error::NotCgroup2), "{source:?}");
        assert_eq!(
            datasets::error::chain(&err),
            format!(
                "cgroup {}: not a cgroup v2 directory (no cgroup.procs)",
                dir.path().display()
            )
        );
    }
}
