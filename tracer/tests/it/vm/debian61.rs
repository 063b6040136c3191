//! Debian's 6.1 kernel (kprobes, fentry and BTF on): `dc-trace collect` of the test workload on
//! an ext4 disk with the kernel-function layer on its default mechanism, forced to fentry and
//! forced to kprobes, and a larger run with the default kernel functions to rank; and the same
//! `auto` run on this host's kernel. One boot serves every test.

use std::path::Path;
use std::process::Command;
use std::sync::LazyLock;
use std::time::Duration;

use test_support::vm::collected::Collected;
use test_support::vm::{SERIES_6_1, Step, Vm, VmRun, work};

use super::{DC_TRACE, TMP};
use crate::TESTLOAD;

pub(super) const TIMEOUT: Duration = Duration::from_secs(300);

/// The workload: BLOCKS blocks of BLOCK bytes, written and read back (raw.dat with write(2),
/// pread(2) and O_DIRECT pread(2); stdio.dat with unbuffered fwrite and fread).
pub(super) const BLOCKS: usize = 4;
pub(super) const BLOCK: i64 = 4096;
/// Kernel functions in vmlinux, and in the ext4 module (`CONFIG_EXT4_FS=m` in Debian's kernel).
const VFS_FUNCTIONS: [&str; 2] = ["vfs_read", "vfs_write"];
const EXT4_FUNCTIONS: [&str; 3] = [
    "ext4_file_read_iter",
    "ext4_file_write_iter",
    "ext4_sync_file",
];
/// The layers the shipped map files VFS_FUNCTIONS and EXT4_FUNCTIONS under: their events' `cat`.
pub(super) const KERNEL_CATS: [&str; 2] = ["vfs", "ext4"];
/// The ranked run's blocks: enough rows for held-out rows and k-fold splits.
const RANK_BLOCKS: usize = 32;
/// Layers whose probes are tracepoints (regular or raw) on every kernel.
pub(super) const TRACEPOINT_LAYERS: [&str; 6] =
    ["sys", "block", "page_cache", "fs", "writeback", "sched"];

/// One `dc-trace collect` of the workload in the VM.
struct Collect {
    name: &'static str,
    kernel_probes: &'static str,
    /// `all`, or only what the kernel-function checks need (TCG is slow: every layer costs).
    layers: &'static str,
    blocks: usize,
    /// VFS_FUNCTIONS and EXT4_FUNCTIONS, or the default list.
    named_functions: bool,
}

/// `auto` traces every layer; `fentry` and `kprobe` force one mechanism. Each traces the VFS
/// functions and the ext4 module's. `rank` traces the default functions over more blocks.
const COLLECTS: [Collect; 4] = [
    Collect {
        name: "auto",
        kernel_probes: "auto",
        layers: "all",
        blocks: BLOCKS,
        named_functions: true,
    },
    Collect {
        name: "fentry",
        kernel_probes: "fentry",
        layers: "sys,kernel",
        blocks: BLOCKS,
        named_functions: true,
    },
    Collect {
        name: "kprobe",
        kernel_probes: "kprobe",
        layers: "sys,kernel",
        blocks: BLOCKS,
        named_functions: true,
    },
    Collect {
        name: "rank",
        kernel_probes: "auto",
        layers: "sys,kernel",
        blocks: RANK_BLOCKS,
        named_functions: false,
    },
];

/// VFS and ext4 functions, sorted as the summary lists them.
pub(super) fn kernel_functions() -> Vec<&'static str> {
    let mut f: Vec<&str> = VFS_FUNCTIONS.into_iter().chain(EXT4_FUNCTIONS).collect();
    f.sort();
    f
}

impl Collect {
    /// The command line, tracing the workload in `dir` and writing to `out`.
    fn args(&self, workload: &str, dir: &str, out: &str) -> Vec<String> {
        let name = self.name;
        let mut args: Vec<String> = [
            "collect",
            "--kernel-probes",
            self.kernel_probes,
            "--layers",
            self.layers,
            "-o",
            &format!("{out}/{name}.pfw.gz"),
            "--summary-json",
            &format!("{out}/{name}.json"),
        ]
        .map(String::from)
        .to_vec();
        if self.named_functions {
            for f in kernel_functions() {
                args.extend(["--kernel-function".to_owned(), f.to_owned()]);
            }
        }
        let (n, s) = (self.blocks.to_string(), BLOCK.to_string());
        args.extend(["--", workload, dir, &n, &s].map(String::from));
        args
    }
}

fn scenario() -> String {
    let mut s = String::from(
        "step uname uname -r\n\
         step kprobe_events cat /sys/kernel/tracing/kprobe_events\n\
         step btf ls /sys/kernel/btf\n\
         step mounts cat /proc/mounts\n\
         step kallsyms_ext4 grep -w ext4_file_read_iter /proc/kallsyms\n",
    );
    for c in &COLLECTS {
        let dir = format!("/data/{}", c.name);
        let args = c.args("dc-trace-testload", &dir, "/out");
        s.push_str(&format!(
            "mkdir -p {dir}\nstep {} dc-trace {}\n",
            c.name,
            args.join(" ")
        ));
    }
    s
}

struct Vm61 {
    run: VmRun,
    collected: Vec<Result<Collected, String>>,
}

/// One boot serves every test of this file.
static VM: LazyLock<Result<Vm61, String>> = LazyLock::new(|| {
    let vm = Vm::new(SERIES_6_1, &scenario(), TIMEOUT)?
        .binary(Path::new(DC_TRACE), "dc-trace")
        .binary(Path::new(TESTLOAD), "dc-trace-testload");
    let run = vm.run(&work(TMP, "initramfs"), &work(TMP, "run"))?;
    eprintln!(
        "vm: kernel {} booted, ran the scenario and powered off in {:.1} s (initramfs {}, {})",
        run.kernel.release,
        run.wall.as_secs_f64(),
        run.initramfs.display(),
        if run.initramfs_cached {
            "cached"
        } else {
            "built"
        }
    );
    let place = format!("VM {}", run.kernel.release);
    let load = |c: &Collect| {
        let step = run.step(c.name)?;
        if step.rc != 0 {
            return Err(format!(
                "{place}: dc-trace {} exited with {}:\n{}",
                c.args("dc-trace-testload", "DIR", "/out").join(" "),
                step.rc,
                step.stderr
            ));
        }
        Collected::load(
            &place,
            &run.out.join(format!("{}.pfw.gz", c.name)),
            &run.out.join(format!("{}.json", c.name)),
            &step.stderr,
        )
    };
    Ok(Vm61 {
        collected: COLLECTS.iter().map(load).collect(),
        run,
    })
});

/// The `auto` run on this host's kernel.
static HOST: LazyLock<Result<Collected, String>> = LazyLock::new(|| {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let d = dir.path().to_string_lossy().into_owned();
    let args = COLLECTS[0].args(TESTLOAD, &d, &d);
    let out = Command::new(DC_TRACE)
        .args(&args)
        .output()
        .map_err(|e| format!("running {DC_TRACE}: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(format!(
            "host: dc-trace {} failed ({}):\n{stderr}",
            args.join(" "),
            out.status
        ));
    }
    Collected::load(
        "host",
        &dir.path().join("auto.pfw.gz"),
        &dir.path().join("auto.json"),
        &stderr,
    )
});

fn vm() -> &'static Vm61 {
    VM.as_ref()
        .unwrap_or_else(|e| panic!("kernel test VM failed:\n{e}"))
}

/// The VM's run `name` of [`COLLECTS`].
pub(super) fn collected(name: &str) -> &'static Collected {
    let i = COLLECTS
        .iter()
        .position(|c| c.name == name)
        .expect("a run of COLLECTS");
    vm().collected[i].as_ref().unwrap_or_else(|e| panic!("{e}"))
}

pub(super) fn host() -> &'static Collected {
    HOST.as_ref().unwrap_or_else(|e| panic!("{e}"))
}

pub(super) fn step(name: &str) -> Step {
    vm().run.step(name).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn vm_runs_the_debian_6_1_kernel_with_kprobes_btf_and_an_ext4_disk() {
    let _machine = test_support::machine();
    let run = &vm().run;
    assert_eq!(step("uname").stdout.trim(), run.kernel.release);
    assert!(run.kernel.release.starts_with("6.1."));
    let kprobes = step("kprobe_events");
    assert_eq!(
        kprobes.rc, 0,
        "no kprobe_events in the VM: {}",
        kprobes.stderr
    );
    let btf = step("btf");
    let btf: Vec<&str> = btf.stdout.lines().collect();
    assert!(btf.contains(&"vmlinux"), "no vmlinux BTF: {btf:?}");
    assert!(btf.contains(&"ext4"), "no ext4 module BTF: {btf:?}");
    let mounts = step("mounts").stdout;
    assert!(
        mounts
            .lines()
            .any(|l| l.starts_with("/dev/vda /data ext4 ")),
        "{mounts}"
    );
}
