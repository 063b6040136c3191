//! One run of a real application: its programs checked, its private directory and cgroup made, its setup run
//! untraced, and afterwards its service stopped and everything it left in the cgroup killed.
//!
//! Cleanup is in `Drop`, so an error anywhere after [`Service::prepare`] began, or a Ctrl-C (the tracer's
//! signal flag, which the setup steps check), still stops the service and removes its directory.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::{self, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::chown;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::App;
use super::error::{Error, Result, c_path, command, io_at};
use super::roles::Sampler;
use super::serve::ServeSpec;
use tracer::procfs::join_cgroup;

/// How long `stop` may take before what is left is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

pub struct Service {
    workload: String,
    app: App,
    command: Vec<String>,
    app_dir: PathBuf,
    cgroup: PathBuf,
    ids: Option<(u32, u32)>,
    run_dir: PathBuf,
    signal: Arc<AtomicUsize>,
    env: BTreeMap<String, String>,
    done: bool,
}

impl Service {
    /// Checks the programs and the user, makes `{app_dir}` and the cgroup, and runs `setup`; its output goes to
    /// `run_dir/setup.log`.
    pub fn prepare(workload: &str, command: &[String], app: &App, run_dir: &Path) -> Result<Self> {
        let signal = tracer::signals::install()?;
        for c in std::iter::once(command).chain(app.commands().map(Vec::as_slice)) {
            check_program(workload, &c[0], app)?;
        }
        let ids = match &app.user {
            Some(user) if unsafe { libc::geteuid() } == 0 => Some(user_ids(workload, user)?),
            _ => None,
        };
        let app_dir = make_private_dir(ids)?;
        let cgroup = match make_cgroup(run_dir) {
            Ok(c) => c,
            Err(e) => {
                let _ = fs::remove_dir_all(&app_dir);
                return Err(e);
            }
        };
        let dir = app_dir.display().to_string();
        let fill = |c: &Vec<String>| -> Vec<String> {
            c.iter().map(|a| a.replace("{app_dir}", &dir)).collect()
        };
        let app = App {
            setup: app.setup.iter().map(fill).collect(),
            start: app.start.as_ref().map(fill),
            stop: app.stop.as_ref().map(fill),
            ..app.clone()
        };
        let command = fill(&command.to_vec());
        let s = Service {
            workload: workload.to_string(),
            app,
            command,
            app_dir,
            cgroup,
            ids,
            run_dir: run_dir.to_path_buf(),
            signal,
            env: BTreeMap::new(),
            done: false,
        };
        let log = s.run_dir.join("setup.log");
        for c in &s.app.setup {
            s.interrupted()?;
            let status = s.run(c, &log, None)?;
            s.interrupted()?;
            if !status.success() {
                return Err(Error::Failed {
                    workload: s.workload.clone(),
                    step: "setup",
                    command: c.join(" "),
                    status,
                    log,
                });
            }
        }
        s.interrupted()?;
        Ok(s)
    }

    fn interrupted(&self) -> Result<()> {
        match self.signal.load(Ordering::SeqCst) {
            0 => Ok(()),
            signal => Err(Error::Interrupted {
                workload: self.workload.clone(),
                signal,
            }),
        }
    }

    /// Environment for the service and the command (not for `setup` and `stop`).
    pub fn set_env(&mut self, env: BTreeMap<String, String>) {
        self.env = env;
    }

    /// `dc-pipeline serve` with this run's spec: what the tracer runs.
    pub fn runner_argv(&self, exe: &Path) -> Result<Vec<String>> {
        let spec = ServeSpec {
            cgroup: self.cgroup.clone(),
            ids: self.ids,
            dir: self.app_dir.clone(),
            output: self.run_dir.join("app.out"),
            errors: self.run_dir.join("app.err"),
            start_log: self.run_dir.join("start.log"),
            start: self.app.start.clone(),
            command: self.command.clone(),
            env: self.env.clone(),
        };
        Ok(vec![
            exe.display().to_string(),
            "serve".into(),
            serde_json::to_string(&spec).map_err(Error::EncodeSpec)?,
        ])
    }

    /// Starts sampling the command lines of the cgroup's processes.
    pub fn sample_processes(&self) -> Sampler {
        Sampler::start(self.cgroup.clone())
    }

    /// Stops the service and cleans up; an error says `stop` failed (the cleanup happens regardless).
    pub fn finish(mut self) -> Result<()> {
        self.done = true;
        let stopped = self.stop();
        self.cleanup()?;
        stopped
    }

    fn stop(&self) -> Result<()> {
        let Some(stop) = &self.app.stop else {
            return Ok(());
        };
        let log = self.run_dir.join("stop.log");
        let status = self.run(stop, &log, Some(STOP_TIMEOUT))?;
        if !status.success() {
            return Err(Error::Failed {
                workload: self.workload.clone(),
                step: "stop",
                command: stop.join(" "),
                status,
                log,
            });
        }
        Ok(())
    }

    /// Kills what is left in the cgroup, waits for it to empty, removes it and `{app_dir}`.
    fn cleanup(&self) -> Result<()> {
        let left = tracer::procfs::remove_cgroup(&self.cgroup)?;
        fs::remove_dir_all(&self.app_dir).map_err(io_at("removing", &self.app_dir))?;
        if left > 0 {
            eprintln!(
                "dc-pipeline: workload `{}`: killed {left} process(es) its stop left running",
                self.workload
            );
        }
        Ok(())
    }

    /// Runs one command in the cgroup, as the workload's user, in `{app_dir}`, its output appended to `log`.
    fn run(
        &self,
        c: &[String],
        log: &Path,
        timeout: Option<Duration>,
    ) -> Result<std::process::ExitStatus> {
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(io_at("opening", log))?;
        let mut cmd = Command::new(&c[0]);
        cmd.args(&c[1..])
            .current_dir(&self.app_dir)
            .stdin(Stdio::null())
            .stdout(out.try_clone().map_err(io_at("opening", log))?)
            .stderr(out);
        in_cgroup(&mut cmd, &self.cgroup, self.ids)?;
        let in_workload = |source: Error| Error::Workload {
            workload: self.workload.clone(),
            source: Box::new(source),
        };
        let mut child = cmd
            .spawn()
            .map_err(|e| in_workload(command("starting", c)(e)))?;
        let start = Instant::now();
        loop {
            let waited = |e| in_workload(command("waiting for", c)(e));
            if let Some(status) = child.try_wait().map_err(waited)? {
                return Ok(status);
            }
            if timeout.is_some_and(|t| start.elapsed() > t) {
                let _ = child.kill();
                let status = child.wait().map_err(waited)?;
                return Err(Error::Timeout {
                    workload: self.workload.clone(),
                    command: c.join(" "),
                    seconds: timeout.unwrap_or_default().as_secs(),
                    status,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Err(e) = self.stop() {
            eprintln!("dc-pipeline: {}", datasets::error::chain(&e));
        }
        if let Err(e) = self.cleanup() {
            eprintln!(
                "dc-pipeline: workload `{}`: {}",
                self.workload,
                datasets::error::chain(&e)
            );
        }
    }
}

/// Puts the child into `cgroup` before it execs, and runs it as `ids` (uid, gid) when given: in that order,
/// since only root may move a process into the cgroup.
pub fn in_cgroup(cmd: &mut Command, cgroup: &Path, ids: Option<(u32, u32)>) -> Result<()> {
    let procs = c_path(&cgroup.join("cgroup.procs"))?;
    // SAFETY: between fork and exec the closure calls only open, write, close, setgroups, setgid and setuid,
    // which are async-signal-safe, on a path made before the fork.
    unsafe {
        cmd.pre_exec(move || {
            join_cgroup(&procs)?;
            if let Some((uid, gid)) = ids {
                become_user(uid, gid)?;
            }
            Ok(())
        });
    }
    Ok(())
}

/// Drops root for `uid` and `gid`, with no supplementary groups.
pub fn become_user(uid: u32, gid: u32) -> std::io::Result<()> {
    // SAFETY: plain system calls on integers and a null, empty group list.
    unsafe {
        if libc::setgroups(0, std::ptr::null()) != 0
            || libc::setgid(gid) != 0
            || libc::setuid(uid) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn check_program(workload: &str, program: &str, app: &App) -> Result<()> {
    if tracer::scope::find(program).is_some() {
        return Ok(());
    }
    let name = program.rsplit('/').next().unwrap_or(program);
    Err(Error::NotInstalled {
        workload: workload.to_string(),
        program: program.to_string(),
        package: app
            .packages
            .get(program)
            .or_else(|| app.packages.get(name))
            .cloned(),
    })
}

fn user_ids(workload: &str, user: &str) -> Result<(u32, u32)> {
    let c = CString::new(user).map_err(|source| Error::Nul {
        text: user.to_string(),
        source,
    })?;
    // SAFETY: getpwnam returns a pointer to static storage or null; it is read at once, on this thread.
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        return Err(Error::NoUser {
            workload: workload.to_string(),
            user: user.to_string(),
        });
    }
    // SAFETY: non-null, as checked.
    Ok(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

/// A new directory under the temporary folder (reachable by any user, unlike a report directory made
/// private), owned by the workload's user.
fn make_private_dir(ids: Option<(u32, u32)>) -> Result<PathBuf> {
    let template = std::env::temp_dir().join("dc-app-XXXXXX");
    let mut buf = c_path(&template)?.into_bytes_with_nul();
    // SAFETY: a writable NUL-terminated template, which mkdtemp fills in place.
    if unsafe { libc::mkdtemp(buf.as_mut_ptr().cast()) }.is_null() {
        return Err(io_at("creating", &template)(std::io::Error::last_os_error()).into());
    }
    buf.pop();
    let dir = PathBuf::from(std::ffi::OsStr::from_bytes(&buf));
    if let Some((uid, gid)) = ids {
        chown(&dir, Some(uid), Some(gid)).map_err(|source| Error::Chown {
            path: dir.clone(),
            uid,
            source,
        })?;
    }
    Ok(dir)
}

/// Where cgroup v2 is mounted (`/sys/fs/cgroup/unified` on a hybrid machine).
fn cgroup2_root() -> Result<PathBuf> {
    let mounts = fs::read_to_string("/proc/self/mounts")
        .map_err(io_at("reading", Path::new("/proc/self/mounts")))?;
    mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&"cgroup2")).then(|| PathBuf::from(f[1]))
        })
        .next()
        .ok_or(Error::NoCgroup2)
}

fn make_cgroup(run_dir: &Path) -> Result<PathBuf> {
    let run = run_dir.file_name().unwrap_or_default().to_string_lossy();
    let dir = cgroup2_root()?.join(format!("dc-pipeline-{}-{run}", std::process::id()));
    fs::create_dir(&dir).map_err(io_at("creating the cgroup", &dir))?;
    Ok(dir)
}
