//! `dc-pipeline serve SPEC`: what the tracer runs for a real application. It joins the run's cgroup, starts the
//! service (so the service's processes descend from the traced command and are traced with it), then becomes
//! the client by exec, whose exit ends the trace.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use super::error::{Error, Result, c_path, command, io_at};
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
    let spec: ServeSpec = serde_json::from_str(spec).map_err(Error::Spec)?;
    let procs = c_path(&spec.cgroup.join("cgroup.procs"))?;
    join_cgroup(&procs).map_err(io_at("joining the cgroup", &spec.cgroup))?;
    if let Some(start) = &spec.start {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&spec.start_log)
            .map_err(io_at("opening", &spec.start_log))?;
        let mut cmd = Command::new(&start[0]);
        cmd.args(&start[1..])
            .envs(&spec.env)
            .current_dir(&spec.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(io_at("opening", &spec.start_log))?)
            .stderr(log);
        if let Some((uid, gid)) = spec.ids {
            cmd.uid(uid).gid(gid);
        }
        let status = cmd.status().map_err(command("starting", start))?;
        if !status.success() {
            return Err(Error::NotStarted {
                command: start.join(" "),
                status,
                log: spec.start_log.clone(),
            });
        }
    }
    let out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.output)
        .map_err(io_at("opening", &spec.output))?;
    let err = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.errors)
        .map_err(io_at("opening", &spec.errors))?;
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
    Err(command("running", &spec.command)(e))
}
