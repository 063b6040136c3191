//! `dc-pipeline serve SPEC`: what the tracer runs for a real application. It joins the run's cgroup, starts the
//! service (so the service's processes descend from the traced command and are traced with it), then becomes
//! the client by exec, whose exit ends the trace.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::OpenOptions;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use tracer::procfs::join_cgroup;

#[derive(Debug, Serialize, Deserialize)]
pub struct ServeSpec {
    pub cgroup: PathBuf,
    /// uid and gid the commands run as.
    pub ids: Option<(u32, u32)>,
    /// `{app_dir}`: the commands' working directory.
    pub dir: PathBuf,
    /// The client's standard output, where its metrics are read.
    pub output: PathBuf,
    /// The client's standard error (progress lines, warnings).
    pub errors: PathBuf,
    /// The start command's output.
    pub start_log: PathBuf,
    pub start: Option<Vec<String>>,
    pub command: Vec<String>,
    /// Set for the service and the command (the application's own tracer on or off).
    pub env: BTreeMap<String, String>,
}

/// Runs the spec; returns only on an error (on success the process is the client).
pub fn serve(spec: &str) -> Result<std::convert::Infallible> {
    let spec: ServeSpec = serde_json::from_str(spec).context("reading the serve spec")?;
    let procs = CString::new(spec.cgroup.join("cgroup.procs").as_os_str().as_bytes())?;
    join_cgroup(&procs).with_context(|| format!("joining the cgroup {}", spec.cgroup.display()))?;
    if let Some(start) = &spec.start {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&spec.start_log)
            .with_context(|| format!("opening {}", spec.start_log.display()))?;
        let mut cmd = Command::new(&start[0]);
        cmd.args(&start[1..])
            .envs(&spec.env)
            .current_dir(&spec.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        if let Some((uid, gid)) = spec.ids {
            cmd.uid(uid).gid(gid);
        }
        let status = cmd
            .status()
            .with_context(|| format!("starting `{}`", start.join(" ")))?;
        if !status.success() {
            bail!(
                "the service did not start: `{}` failed ({status}); its output is in {}",
                start.join(" "),
                spec.start_log.display()
            );
        }
    }
    let out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.output)
        .with_context(|| format!("opening {}", spec.output.display()))?;
    let err = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.errors)
        .with_context(|| format!("opening {}", spec.errors.display()))?;
    let mut cmd = Command::new(&spec.command[0]);
    cmd.args(&spec.command[1..])
        .envs(&spec.env)
        .current_dir(&spec.dir)
        .stdout(out)
        .stderr(err);
    if let Some((uid, gid)) = spec.ids {
        cmd.uid(uid).gid(gid);
    }
    let e = cmd.exec();
    Err(e).with_context(|| format!("running `{}`", spec.command.join(" ")))
}
