//! The kernel test VM, for the tracer's VM tests and dc-pipeline's: boots one of Debian's kernels under QEMU
//! (software emulation) with the binaries under test in an initramfs, runs shell steps there on an ext4 disk, and
//! brings their output back out; [`collected`] reads a `dc-trace collect` run's output, in the VM or on the host.
//!
//! A cache directory holds `<hash>.cpio`, reused while the inputs are unchanged. A run directory
//! holds `data.img` (ext4, `/dev/vda`), `out.img` (raw, `/dev/vdb`), `console.log`, and `out/`:
//! `<step>/{stdout,stderr,rc}` and whatever else the steps wrote to the guest's `/out`.

pub mod collected;
mod disk;
mod initramfs;
mod kernel;
mod qemu;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use kernel::{Kernel, SERIES_6_1, SERIES_6_12};

/// Modules the init script loads: the virtio disks and ext4 (all `=m` in Debian's config).
const MODULES: &[&str] = &["virtio_pci", "virtio_blk", "crc32c_generic", "ext4"];
const DATA_DISK_MIB: u64 = 128;
const OUT_DISK_MIB: u64 = 256;
/// `dc-vm/<name>` in `target_tmp`, the test crate's `CARGO_TARGET_TMPDIR`: initramfs caches and run
/// directories.
pub fn work(target_tmp: impl AsRef<Path>, name: &str) -> PathBuf {
    target_tmp.as_ref().join("dc-vm").join(name)
}

/// The guest's memory unless [`Vm::memory`] says otherwise.
const MEMORY_MIB: u64 = 1024;
const INIT: &str = include_str!("init");
/// The line the init script prints after `/out` is safely on the output disk.
const DONE: &str = "dc-vm: done";

pub struct Vm {
    pub kernel: Kernel,
    binaries: Vec<(PathBuf, String)>,
    scenario: String,
    timeout: Duration,
    memory_mib: u64,
    icount: bool,
}

impl Vm {
    /// Finds the kernel of `series` ([`kernel::SERIES_6_1`], ...). `scenario` is sourced by the init script inside `/data`; it calls
    /// `step NAME COMMAND...` for each thing to run and may write files to `/out`.
    pub fn new(series: &str, scenario: &str, timeout: Duration) -> Result<Vm, String> {
        Ok(Vm {
            kernel: Kernel::find(series)?,
            binaries: Vec::new(),
            scenario: scenario.to_owned(),
            timeout,
            memory_mib: MEMORY_MIB,
            icount: false,
        })
    }

    /// Puts a host executable in the guest's PATH as `/usr/local/bin/<name>`.
    pub fn binary(mut self, host: &Path, name: &str) -> Vm {
        self.binaries.push((host.to_owned(), name.to_owned()));
        self
    }

    /// Gives the guest `mib` MiB of memory: the initramfs is unpacked into it.
    pub fn memory(mut self, mib: u64) -> Vm {
        self.memory_mib = mib;
        self
    }

    /// Runs the guest's clock by the instructions it executes (`-icount`), not by the host's:
    /// while the busy host deschedules QEMU, guest time then stands still, so its timers (a
    /// sampler's ticks) and its clock (the probes' timestamps) keep one time.
    pub fn icount(mut self) -> Vm {
        self.icount = true;
        self
    }

    /// Builds (or reuses) the initramfs in `cache`, makes the disks in `dir` (emptied first),
    /// boots and collects the output.
    pub fn run(&self, cache: &Path, dir: &Path) -> Result<VmRun, String> {
        let (initramfs, cached) = self.initramfs(cache)?;
        let _ = std::fs::remove_dir_all(dir);
        let content = dir.join("data");
        std::fs::create_dir_all(&content).map_err(|e| format!("{}: {e}", content.display()))?;
        std::fs::write(content.join("scenario.sh"), &self.scenario)
            .map_err(|e| format!("writing scenario.sh: {e}"))?;
        let disks = [dir.join("data.img"), dir.join("out.img")];
        disk::ext4(&disks[0], DATA_DISK_MIB, &content)?;
        disk::raw(&disks[1], OUT_DISK_MIB)?;
        let console_path = dir.join("console.log");
        let (wall, console) = qemu::Boot {
            kernel: &self.kernel.image,
            initramfs: &initramfs,
            disks: &disks,
            console: &console_path,
            timeout: self.timeout,
            memory_mib: self.memory_mib,
            icount: self.icount,
        }
        .run()?;
        if !console.lines().any(|l| l.trim_end() == DONE) {
            return Err(format!(
                "the VM powered off without \"{DONE}\": init failed before shipping /out.\n{}",
                qemu::tail(&console_path)
            ));
        }
        let out = dir.join("out");
        disk::untar(&disks[1], &out)?;
        Ok(VmRun {
            kernel: self.kernel.clone(),
            initramfs,
            initramfs_cached: cached,
            out,
            console_path,
            wall,
        })
    }

    fn initramfs(&self, cache: &Path) -> Result<(PathBuf, bool), String> {
        let mut plan = initramfs::Plan::default();
        plan.text("/init", INIT.to_owned(), 0o755);
        plan.binary(Path::new("/bin/busybox"), "/bin/busybox")
            .map_err(|e| format!("{e} (package busybox-static, see scripts/setup.sh)"))?;
        let mut order = String::new();
        for ko in self.kernel.module_load_order(MODULES)? {
            let name = ko.file_name().expect("module file name").to_string_lossy();
            let dest = format!("/dc-vm/modules/{}", name.trim_end_matches(".xz"));
            plan.file(&ko, &dest)?;
            order.push_str(&dest);
            order.push('\n');
        }
        plan.text("/dc-vm/modules.order", order, 0o644);
        for (host, name) in &self.binaries {
            plan.binary(host, &format!("/usr/local/bin/{name}"))?;
        }
        plan.build(cache)
    }
}

/// What one boot brought back.
pub struct VmRun {
    pub kernel: Kernel,
    pub initramfs: PathBuf,
    /// The initramfs was reused from the cache, not rebuilt.
    pub initramfs_cached: bool,
    /// The guest's `/out`.
    pub out: PathBuf,
    pub console_path: PathBuf,
    pub wall: Duration,
}

/// One `step` of the scenario.
#[derive(Debug)]
pub struct Step {
    pub rc: i32,
    pub stdout: String,
    pub stderr: String,
}

impl VmRun {
    /// The step's result; an error quoting the console when the guest did not record it.
    pub fn step(&self, name: &str) -> Result<Step, String> {
        let dir = self.out.join(name);
        let read = |f: &str| {
            std::fs::read_to_string(dir.join(f)).map_err(|e| {
                format!(
                    "step {name}: no {f} in the VM's output ({e}).\n{}",
                    qemu::tail(&self.console_path)
                )
            })
        };
        let rc = read("rc")?;
        Ok(Step {
            rc: rc
                .trim()
                .parse()
                .map_err(|e| format!("step {name}: rc {rc:?}: {e}"))?,
            stdout: read("stdout")?,
            stderr: read("stderr")?,
        })
    }
}
