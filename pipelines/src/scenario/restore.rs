//! What an injection changed, put back even if dc-pipeline is killed.
//!
//! Every change is first appended to a journal (`/run/datacrumbs/scenarios/<pid>.jsonl`, one undo action a line),
//! then made. A guardian process, started before the first change, holds the read end of a pipe from dc-pipeline
//! and replays the journal when the pipe closes: dc-pipeline's own undo closes it after emptying the journal, and a
//! SIGKILL closes it with the journal still full. The guardian ignores the terminal's signals in a process group of
//! its own; if it is killed too, the next `dc-pipeline scenario` replays any journal whose writer is gone.

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::scenario::error::{Error, Result, io_at};

/// Where journals live: tmpfs, so a reboot (which undoes every change anyway) leaves none.
pub const JOURNAL_DIR: &str = "/run/datacrumbs/scenarios";

/// One way to put something back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "undo", rename_all = "snake_case")]
pub enum Undo {
    /// Write `value` back to a sysfs or procfs file.
    Write { path: PathBuf, value: String },
    /// Kill every process in a cgroup (v1) directory, then remove it.
    Cgroup { path: PathBuf },
    /// Unmount a file system (its loop device goes with it).
    Unmount { path: PathBuf },
}

impl Undo {
    fn apply(&self) -> Result<()> {
        match self {
            Undo::Write { path, value } => {
                fs::write(path, value).map_err(|source| Error::Restore {
                    path: path.clone(),
                    value: value.clone(),
                    source,
                })
            }
            Undo::Cgroup { path } => tracer::procfs::remove_cgroup(path)
                .map(drop)
                .map_err(Error::Tracer),
            Undo::Unmount { path } => unmount(path),
        }
    }
}

fn unmount(dir: &Path) -> Result<()> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|source| {
        Error::Nul {
            path: dir.to_path_buf(),
            source,
        }
    })?;
    // SAFETY: umount2(2) with a NUL-terminated path that outlives the call.
    if unsafe { libc::umount2(c.as_ptr(), 0) } == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        // Not mounted (any more), or gone.
        Some(libc::EINVAL | libc::ENOENT) => Ok(()),
        _ => Err(io_at("unmounting", dir)(e).into()),
    }
}

/// Undoes a journal's actions, last first, then removes it. Every action is tried; the first error is returned.
pub fn replay(journal: &Path) -> Result<()> {
    let text = match fs::read_to_string(journal) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_at("reading", journal)(e).into()),
    };
    let mut first_error = None;
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate().rev() {
        // A line cut short by a kill mid-write was never acted on: its change comes after it.
        let Ok(undo) = serde_json::from_str::<Undo>(line) else {
            continue;
        };
        if let Err(e) = undo.apply() {
            first_error.get_or_insert(Error::Undo {
                journal: journal.to_path_buf(),
                line: i + 1,
                source: Box::new(e),
            });
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(fs::remove_file(journal).map_err(io_at("removing", journal))?),
    }
}

/// Replays the journals of dc-pipeline processes that are gone (and whose guardian did not finish).
pub fn replay_stale() -> Result<()> {
    let Ok(entries) = fs::read_dir(JOURNAL_DIR) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let path = e.path();
        let pid = path
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse::<u32>().ok());
        if let Some(pid) = pid
            && pid != std::process::id()
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            replay(&path).map_err(|e| Error::Replay {
                journal: path.clone(),
                source: Box::new(e),
            })?;
        }
    }
    Ok(())
}

/// The journal of this process, with its guardian.
pub struct Journal {
    path: PathBuf,
    undos: Vec<Undo>,
    guardian: Option<(Child, ChildStdin)>,
}

impl Journal {
    /// Starts the guardian (`EXE restore JOURNAL`) before any change is made.
    pub fn start(exe: &Path) -> Result<Journal> {
        fs::create_dir_all(JOURNAL_DIR).map_err(io_at("creating", Path::new(JOURNAL_DIR)))?;
        let path = Path::new(JOURNAL_DIR).join(format!("{}.jsonl", std::process::id()));
        fs::write(&path, "").map_err(io_at("creating", &path))?;
        let mut child = {
            use std::os::unix::process::CommandExt;
            Command::new(exe)
                .arg("restore")
                .arg(&path)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .process_group(0)
                .spawn()
                .map_err(|source| Error::Guardian {
                    exe: exe.to_path_buf(),
                    source,
                })?
        };
        let stdin = child.stdin.take().expect("stdin was piped");
        Ok(Journal {
            path,
            undos: Vec::new(),
            guardian: Some((child, stdin)),
        })
    }

    /// Records how to undo a change; call it before making the change.
    pub fn record(&mut self, undo: Undo) -> Result<()> {
        let mut f = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(io_at("opening", &self.path))?;
        let mut line = serde_json::to_string(&undo).map_err(|source| Error::Encode {
            what: "an undo action",
            source,
        })?;
        line.push('\n');
        f.write_all(line.as_bytes())
            .map_err(io_at("writing", &self.path))?;
        self.undos.push(undo);
        Ok(())
    }

    /// Undoes every change, last first, and lets the guardian go.
    pub fn undo(mut self) -> Result<()> {
        let r = replay(&self.path);
        self.undos.clear();
        self.release();
        r
    }

    fn release(&mut self) {
        if let Some((mut child, stdin)) = self.guardian.take() {
            drop(stdin);
            let _ = child.wait();
        }
    }
}

impl Drop for Journal {
    /// On an error path the changes are undone too.
    fn drop(&mut self) {
        if !self.undos.is_empty() {
            let _ = replay(&self.path);
        }
        self.release();
    }
}

/// The guardian: waits for its parent's pipe to close, then replays the journal.
pub fn guard(journal: &Path) -> Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
        // SAFETY: setting a signal's disposition to ignore installs no handler code.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
    let mut buf = [0u8; 64];
    let mut stdin = std::io::stdin();
    while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
    replay(journal)
}
