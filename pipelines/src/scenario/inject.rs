//! The one bottleneck a scenario injects, and the cgroups its workload runs in.
//!
//! Both runs of a scenario run in the same cgroups (a `pids` group that tracks every process the workload starts,
//! and the controller's group the injection needs), so the injection alone tells the candidate from the baseline.
//! Every change is recorded in the [`Journal`] before it is made.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use report::size::ByteSize;
use serde::Deserialize;

use crate::scenario::error::{Error, Result, io_at};
use crate::scenario::restore::{Journal, Undo};

const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// How many more times a memory limit the kernel refused as busy is asked for, after emptying the group again.
const MEMORY_LIMIT_TRIES: u32 = 10;

/// A block queue setting (`/sys/block/DISK/queue/NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueKnob {
    ReadAheadKb,
    NrRequests,
    Scheduler,
}

impl QueueKnob {
    fn file(self) -> &'static str {
        match self {
            QueueKnob::ReadAheadKb => "read_ahead_kb",
            QueueKnob::NrRequests => "nr_requests",
            QueueKnob::Scheduler => "scheduler",
        }
    }
}

/// The injection: one mechanism.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Inject {
    /// blkio (cgroup v1) throttles on the scratch directory's disk, for the workload's cgroup.
    Blkio {
        read_iops: Option<u64>,
        write_iops: Option<u64>,
        read_bps: Option<ByteSize>,
        write_bps: Option<ByteSize>,
    },
    /// Busy loops pinned, with the workload, to one CPU (a cpuset of the machine's last CPU).
    Cpu {
        #[serde(default = "one")]
        spinners: u32,
    },
    /// A CPU quota for the workload: `cpus` CPUs' worth of time in each CFS period (0.25 is 25 ms of every 100 ms).
    CpuQuota { cpus: f64 },
    /// A memory cgroup limit for the workload.
    Memory { limit: ByteSize },
    /// `vm.dirty_bytes` for the whole machine.
    DirtyBytes { bytes: ByteSize },
    /// A block queue setting of the scratch directory's disk.
    Queue { knob: QueueKnob, value: String },
    /// A competing process, started before the candidate's workload and killed after it (`{dir}` is the scratch
    /// directory).
    Neighbour { command: String },
    /// The candidate runs this command instead of the workload: the bottleneck is the workload's own pattern.
    Workload { command: String },
    /// Nothing: the candidate is the baseline run again, a healthy run in which no cause exists.
    None,
}

fn one() -> u32 {
    1
}

impl Inject {
    pub fn kind(&self) -> &'static str {
        match self {
            Inject::Blkio { .. } => "blkio",
            Inject::Cpu { .. } => "cpu",
            Inject::CpuQuota { .. } => "cpu_quota",
            Inject::Memory { .. } => "memory",
            Inject::DirtyBytes { .. } => "dirty_bytes",
            Inject::Queue { .. } => "queue",
            Inject::Neighbour { .. } => "neighbour",
            Inject::Workload { .. } => "workload",
            Inject::None => "none",
        }
    }

    /// The cgroup v1 controller whose group the workload runs in, besides `pids`.
    fn controller(&self) -> Option<&'static str> {
        match self {
            Inject::Blkio { .. } => Some("blkio"),
            Inject::Cpu { .. } => Some("cpuset"),
            Inject::CpuQuota { .. } => Some("cpu"),
            Inject::Memory { .. } => Some("memory"),
            _ => None,
        }
    }

    /// The file this kernel must offer for the injection; its absence is the reason it cannot be injected.
    pub fn needs(&self, disk: &Disk) -> PathBuf {
        let root = Path::new(CGROUP_ROOT);
        match self {
            Inject::Blkio { .. } => root.join("blkio/blkio.throttle.read_iops_device"),
            Inject::Cpu { .. } => root.join("cpuset/cpuset.cpus"),
            Inject::CpuQuota { .. } => root.join("cpu/cpu.cfs_quota_us"),
            Inject::Memory { .. } => root.join("memory/memory.limit_in_bytes"),
            Inject::DirtyBytes { .. } => PathBuf::from(DIRTY_BYTES),
            Inject::Queue { knob, .. } => disk.queue(*knob),
            Inject::Neighbour { .. } | Inject::Workload { .. } | Inject::None => {
                root.join("pids/cgroup.procs")
            }
        }
    }
}

/// The CFS period a quota is set in, the kernel's default.
const CFS_PERIOD_US: u64 = 100_000;
/// The smallest quota the kernel accepts (`cpu.cfs_quota_us`, 1 ms), in CPUs.
pub const CPUS_MIN: f64 = 0.01;

/// Whether `cpus` is a quota the kernel takes.
pub fn quota_fits(cpus: f64) -> bool {
    cpus.is_finite() && cpus >= CPUS_MIN
}

const DIRTY_BYTES: &str = "/proc/sys/vm/dirty_bytes";
const DIRTY_RATIO: &str = "/proc/sys/vm/dirty_ratio";

/// The whole disk a directory is on.
#[derive(Clone, Debug)]
pub struct Disk {
    /// `vda`.
    pub name: String,
    /// `254:0`.
    pub devno: String,
}

impl Disk {
    pub fn of(dir: &Path) -> Result<Disk> {
        let dev = fs::metadata(dir).map_err(io_at("stat", dir))?.dev();
        let sys = PathBuf::from(format!(
            "/sys/dev/block/{}:{}",
            libc::major(dev),
            libc::minor(dev)
        ));
        let mut node = sys.canonicalize().map_err(|source| Error::NotBlockDevice {
            dir: dir.to_path_buf(),
            sys: sys.clone(),
            source,
        })?;
        // A partition's queue and throttles are its disk's.
        if node.join("partition").exists() {
            node.pop();
        }
        let name = node
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let devno = fs::read_to_string(node.join("dev"))
            .map_err(io_at("reading", &node.join("dev")))?
            .trim()
            .to_owned();
        Ok(Disk { name, devno })
    }

    fn queue(&self, knob: QueueKnob) -> PathBuf {
        PathBuf::from(format!("/sys/block/{}/queue/{}", self.name, knob.file()))
    }
}

/// The current value of a sysfs setting, in the form it is written back: the scheduler file lists every
/// scheduler with the active one in brackets.
fn current(path: &Path) -> Result<String> {
    let text = fs::read_to_string(path).map_err(io_at("reading", path))?;
    Ok(match (text.find('['), text.find(']')) {
        (Some(a), Some(b)) if a < b => text[a + 1..b].to_owned(),
        _ => text.trim().to_owned(),
    })
}

fn write(path: &Path, value: &str) -> Result<()> {
    fs::write(path, value).map_err(|source| Error::Set {
        path: path.to_path_buf(),
        value: value.to_string(),
        source,
    })
}

/// Makes `dir` a fresh journalled ext4 file system of 256 MiB in `image` on a loop device, unmounted when the
/// journal is undone: a file system whose journal the scenario controls, whatever the machine's root has.
pub fn mount_ext4(journal: &mut Journal, image: &Path, dir: &Path) -> Result<()> {
    fs::File::create(image)
        .and_then(|f| f.set_len(256 << 20))
        .map_err(io_at("creating", image))?;
    let run = |cmd: &mut Command| -> Result<()> {
        let command = format!("{cmd:?}");
        let out = cmd.output().map_err(|source| Error::Command {
            action: "running",
            command: command.clone(),
            source,
        })?;
        if !out.status.success() {
            return Err(Error::CommandFailed {
                command,
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(())
    };
    run(Command::new("mkfs.ext4")
        .args(["-q", "-F", "-O", "has_journal"])
        .arg(image))?;
    journal.record(Undo::Unmount {
        path: dir.to_owned(),
    })?;
    run(Command::new("mount")
        .args(["-o", "loop"])
        .arg(image)
        .arg(dir))
}

/// The cgroups of one scenario and what it injected.
pub struct Injector {
    pub journal: Journal,
    pub disk: Disk,
    /// The workload's groups: the tracking `pids` group, then the controller's.
    pub groups: Vec<PathBuf>,
    /// Helpers (spinners, neighbours), killed when the journal is undone.
    helpers: PathBuf,
    /// Their shells, reaped once killed.
    children: Vec<Child>,
}

fn make_group(journal: &mut Journal, dir: PathBuf) -> Result<PathBuf> {
    journal.record(Undo::Cgroup { path: dir.clone() })?;
    fs::create_dir(&dir).map_err(io_at("creating the cgroup", &dir))?;
    Ok(dir)
}

impl Injector {
    /// Makes the groups both runs share.
    pub fn new(journal: Journal, disk: Disk, inject: &Inject) -> Result<Injector> {
        let mut journal = journal;
        let name = format!("datacrumbs-scenario-{}", std::process::id());
        let pids = Path::new(CGROUP_ROOT).join("pids");
        let mut groups = vec![make_group(&mut journal, pids.join(&name))?];
        let helpers = make_group(&mut journal, pids.join(format!("{name}-helpers")))?;
        if let Some(c) = inject.controller() {
            let g = make_group(&mut journal, Path::new(CGROUP_ROOT).join(c).join(&name))?;
            if c == "cpuset" {
                let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
                write(&g.join("cpuset.cpus"), &(cpus - 1).to_string())?;
                let mems_file = Path::new(CGROUP_ROOT).join("cpuset/cpuset.mems");
                let mems = fs::read_to_string(&mems_file).map_err(io_at("reading", &mems_file))?;
                write(&g.join("cpuset.mems"), mems.trim())?;
            }
            groups.push(g);
        }
        Ok(Injector {
            journal,
            disk,
            groups,
            helpers,
            children: Vec::new(),
        })
    }

    /// A shell script that moves itself into `groups`, then runs `command` (a helper's; the traced workload is
    /// started in them by the tracer).
    fn wrap(groups: &[PathBuf], command: &str) -> String {
        let dirs: Vec<String> = groups
            .iter()
            .map(|g| format!("'{}'", g.display()))
            .collect();
        format!(
            "for g in {}; do echo $$ > \"$g/cgroup.procs\" || exit 97; done; {command}",
            dirs.join(" ")
        )
    }

    fn spawn_helper(&mut self, command: &str, with_workload: bool) -> Result<()> {
        let mut groups = vec![self.helpers.clone()];
        if with_workload {
            groups.extend(self.groups.iter().skip(1).cloned());
        }
        let child = Command::new("sh")
            .arg("-c")
            .arg(Self::wrap(&groups, command))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|source| Error::Command {
                action: "starting",
                command: command.to_string(),
                source,
            })?;
        self.children.push(child);
        Ok(())
    }

    /// Undoes every change (killing the helpers with their group) and reaps the helpers.
    pub fn finish(mut self) -> Result<()> {
        let r = self.journal.undo();
        for c in &mut self.children {
            let _ = c.wait();
        }
        r
    }

    /// Makes the change; `dir` fills a neighbour's `{dir}`.
    pub fn apply(&mut self, inject: &Inject, dir: &Path) -> Result<()> {
        match inject {
            Inject::Blkio {
                read_iops,
                write_iops,
                read_bps,
                write_bps,
            } => {
                let g = &self.groups[1];
                let limits = [
                    ("read_iops", *read_iops),
                    ("write_iops", *write_iops),
                    ("read_bps", read_bps.map(|b| b.0)),
                    ("write_bps", write_bps.map(|b| b.0)),
                ];
                if limits.iter().all(|(_, v)| v.is_none()) {
                    return Err(Error::NoBlkioLimit);
                }
                for (name, v) in limits {
                    if let Some(v) = v {
                        let f = g.join(format!("blkio.throttle.{name}_device"));
                        write(&f, &format!("{} {v}", self.disk.devno))?;
                    }
                }
            }
            Inject::Memory { limit } => {
                // The baseline's pages and slab stay charged to the group after its processes exit, and the kernel
                // refuses a limit it cannot reclaim under (EBUSY: find's inodes and dentries). No task is in the
                // group between the runs, so it is emptied first; one emptying has left 10 MB of find's slab
                // charged, and the next took it down to 0.3 MB, so it is emptied again while the kernel refuses.
                let g = &self.groups[1];
                let mut tries = 0;
                loop {
                    write(&g.join("memory.force_empty"), "0")?;
                    match write(&g.join("memory.limit_in_bytes"), &limit.0.to_string()) {
                        Err(Error::Set { source, .. })
                            if source.kind() == io::ErrorKind::ResourceBusy
                                && tries < MEMORY_LIMIT_TRIES =>
                        {
                            tries += 1;
                            thread::sleep(Duration::from_millis(100));
                        }
                        r => break r?,
                    }
                }
            }
            Inject::CpuQuota { cpus } => {
                let quota = (cpus * CFS_PERIOD_US as f64).round() as u64;
                let g = &self.groups[1];
                write(&g.join("cpu.cfs_period_us"), &CFS_PERIOD_US.to_string())?;
                write(&g.join("cpu.cfs_quota_us"), &quota.to_string())?;
            }
            Inject::Cpu { spinners } => {
                for _ in 0..*spinners {
                    self.spawn_helper("while :; do :; done", true)?;
                }
            }
            Inject::DirtyBytes { bytes } => {
                // Writing dirty_bytes zeroes dirty_ratio; the one that was set is what goes back.
                let old = current(Path::new(DIRTY_BYTES))?;
                let undo = if old == "0" {
                    Undo::Write {
                        path: DIRTY_RATIO.into(),
                        value: current(Path::new(DIRTY_RATIO))?,
                    }
                } else {
                    Undo::Write {
                        path: DIRTY_BYTES.into(),
                        value: old,
                    }
                };
                self.journal.record(undo)?;
                write(Path::new(DIRTY_BYTES), &bytes.0.to_string())?;
            }
            Inject::Queue { knob, value } => {
                let path = self.disk.queue(*knob);
                self.journal.record(Undo::Write {
                    path: path.clone(),
                    value: current(&path)?,
                })?;
                write(&path, value)?;
            }
            Inject::Neighbour { command } => {
                let command = command.replace("{dir}", &dir.display().to_string());
                self.spawn_helper(&command, false)?;
            }
            Inject::Workload { .. } | Inject::None => {}
        }
        Ok(())
    }
}
