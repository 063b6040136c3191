//! Tracing without root: `collect` needs CAP_BPF and CAP_PERFMON, and CAP_DAC_READ_SEARCH where
//! tracefs is readable by root alone (the default). Without CAP_SYS_ADMIN it traces only the
//! caller's own processes: a command it starts, the caller's pids or the caller's cgroup, never
//! `--all`. Nothing needs CAP_SYS_RESOURCE: BPF memory is charged to the memory cgroup.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::{Context, Error, Result, Target};

use crate::bpf::tracefs::TRACEFS;
use crate::options::CollectOptions;

/// A capability: its bit in the kernel's sets and its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cap(u32, &'static str);

pub const DAC_READ_SEARCH: Cap = Cap(2, "CAP_DAC_READ_SEARCH");
pub const SYS_ADMIN: Cap = Cap(21, "CAP_SYS_ADMIN");
pub const PERFMON: Cap = Cap(38, "CAP_PERFMON");
pub const BPF: Cap = Cap(39, "CAP_BPF");

/// The grant the README's setup step makes.
pub const SETCAP: &str =
    "sudo setcap cap_bpf,cap_perfmon,cap_dac_read_search+ep $(command -v dc-trace)";

/// A set of capabilities, as `/proc/PID/status` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps(u64);

impl Caps {
    /// This process's effective set.
    pub fn effective() -> Result<Caps> {
        let status = std::fs::read_to_string("/proc/self/status").context("/proc/self/status")?;
        Caps::from_status(&status).context("/proc/self/status: field `CapEff`: missing")
    }

    /// The `CapEff` line of a `/proc/PID/status` text.
    pub fn from_status(status: &str) -> Option<Caps> {
        let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
        u64::from_str_radix(hex.trim(), 16).ok().map(Caps)
    }

    pub fn has(self, cap: Cap) -> bool {
        self.0 >> cap.0 & 1 == 1
    }
}

/// Refuses, naming what is missing, a collection these capabilities do not allow.
pub fn check(opts: &CollectOptions, caps: Caps, uid: u32) -> Result<()> {
    let mut needed = vec![BPF, PERFMON];
    if !readable_by_user(&Path::new(TRACEFS).join("events")) {
        needed.push(DAC_READ_SEARCH);
    }
    let missing: Vec<&str> = needed
        .iter()
        .filter(|c| !caps.has(**c))
        .map(|c| c.1)
        .collect();
    if !missing.is_empty() {
        return Err(Error::MissingCaps {
            needed: needed.iter().map(|c| c.1).collect(),
            missing,
            setcap: SETCAP,
        });
    }
    if caps.has(SYS_ADMIN) {
        return Ok(());
    }
    if opts.all {
        return Err(Error::OnlyOwn.about(Target::All));
    }
    for &pid in &opts.pids {
        let owner = owner(Path::new(&format!("/proc/{pid}")))
            .map_err(|e| e.context("no such process").about(Target::Pid(pid)))?;
        if owner != uid {
            return Err(Error::NotYours { owner, uid }.about(Target::Pid(pid)));
        }
    }
    if let Some(dir) = &opts.cgroup {
        let owner = owner(dir).map_err(|e| e.about(Target::Cgroup(dir.clone())))?;
        if owner != uid {
            return Err(Error::NotYours { owner, uid }.about(Target::Cgroup(dir.clone())));
        }
    }
    Ok(())
}

/// Checks this process's capabilities and real uid.
pub fn check_self(opts: &CollectOptions) -> Result<()> {
    // SAFETY: getuid has no preconditions.
    check(opts, Caps::effective()?, unsafe { libc::getuid() })
}

fn owner(path: &Path) -> Result<u32> {
    Ok(std::fs::metadata(path)?.uid())
}

/// Whether the real user may list `dir` without any capability (access(2) checks the real uid).
fn readable_by_user(dir: &Path) -> bool {
    CString::new(dir.as_os_str().as_bytes()).is_ok_and(|c| {
        // SAFETY: a NUL-terminated path that lives across the call.
        unsafe { libc::access(c.as_ptr(), libc::R_OK | libc::X_OK) == 0 }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(caps: &[Cap]) -> Caps {
        Caps(caps.iter().fold(0, |s, c| s | 1 << c.0))
    }

    #[test]
    fn reads_the_effective_set_from_proc_status() {
        let status = "Name:\tdc-trace\nCapInh:\t0000000000000000\nCapEff:\t000001fffeffffff\n";
        let caps = Caps::from_status(status).unwrap();
        assert!(caps.has(BPF) && caps.has(PERFMON) && caps.has(SYS_ADMIN));
        assert!(!caps.has(Cap(24, "CAP_SYS_RESOURCE")));
    }

    #[test]
    fn a_missing_capability_is_named_with_the_way_to_grant_it() {
        let opts = CollectOptions::command("t.pfw.gz", vec!["true".into()]);
        let err = check(&opts, with(&[BPF, DAC_READ_SEARCH]), 1000).unwrap_err();
        assert!(
            matches!(&err, Error::MissingCaps { missing, .. } if missing == &["CAP_PERFMON"]),
            "{err:?}"
        );
        let err = err.to_string();
        assert!(err.contains("(missing: CAP_PERFMON)"), "{err}");
        assert!(err.ends_with(SETCAP), "{err}");
        assert!(check(&opts, with(&[BPF, PERFMON, DAC_READ_SEARCH]), 1000).is_ok());
    }

    #[test]
    fn without_sys_admin_only_your_own_processes() {
        let caps = with(&[BPF, PERFMON, DAC_READ_SEARCH]);
        let mut opts = CollectOptions::command("t.pfw.gz", Vec::new());
        opts.all = true;
        let err = check(&opts, caps, 1000).unwrap_err();
        assert!(
            matches!(&err, Error::Target { target: Target::All, source } if matches!(**source, Error::OnlyOwn)),
            "{err:?}"
        );
        assert_eq!(err.remedy(), Some(crate::error::Remedy::TraceOwn));
        let text = datasets::error::chain(&err);
        assert!(
            text.starts_with("every process: without CAP_SYS_ADMIN"),
            "{text}"
        );
        assert!(
            check(
                &opts,
                with(&[BPF, PERFMON, DAC_READ_SEARCH, SYS_ADMIN]),
                1000
            )
            .is_ok()
        );
        opts.all = false;
        opts.pids = vec![1];
        let err = check(&opts, caps, 1000).unwrap_err();
        assert!(
            matches!(&err, Error::Target { target: Target::Pid(1), source }
                if matches!(**source, Error::NotYours { owner: 0, uid: 1000 })),
            "{err:?}"
        );
        let text = datasets::error::chain(&err);
        assert!(
            text.starts_with("process 1: it belongs to uid 0, not to you (uid 1000)"),
            "{text}"
        );
        assert!(check(&opts, caps, 0).is_ok());
    }
}
