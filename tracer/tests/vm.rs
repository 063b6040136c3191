//! The kernel test VM: boots Debian's 6.1 kernel (kprobes, fentry and BTF on) under QEMU with
//! software emulation, runs dc-trace there on an ext4 disk and checks what it brought back.
//! Needs qemu-system-x86, linux-image-amd64, busybox-static, cpio and e2fsprogs (scripts/setup.sh).
//! It fails, never skips, when any of them is missing or the VM does not boot.

#[path = "../vm/harness/mod.rs"]
mod harness;

use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

use harness::{Vm, VmRun};

const TIMEOUT: Duration = Duration::from_secs(300);
const DC_TRACE: &str = env!("CARGO_BIN_EXE_dc-trace");

const SCENARIO: &str = r#"
step uname uname -r
step kprobe_events cat /sys/kernel/tracing/kprobe_events
step btf ls /sys/kernel/btf
step mounts cat /proc/mounts
step ext4_write dd if=/dev/zero of=/data/blocks bs=4096 count=16 conv=fsync
step ext4_size wc -c /data/blocks
step dc_trace_help dc-trace --help
"#;

/// One boot serves every test of this file.
static RUN: LazyLock<Result<VmRun, String>> = LazyLock::new(|| {
    let vm = Vm::new(SCENARIO, TIMEOUT)?.binary(Path::new(DC_TRACE), "dc-trace");
    let run = vm.run(Path::new(concat!(env!("CARGO_TARGET_TMPDIR"), "/dc-vm")))?;
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
    Ok(run)
});

fn run() -> &'static VmRun {
    match &*RUN {
        Ok(run) => run,
        Err(e) => panic!("kernel test VM failed:\n{e}"),
    }
}

fn step(name: &str) -> harness::Step {
    run().step(name).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn vm_runs_the_debian_6_1_kernel_with_kprobes_and_btf() {
    let run = run();
    assert_eq!(step("uname").stdout.trim(), run.kernel.release);
    assert!(run.kernel.release.starts_with("6.1."));
    let kprobes = step("kprobe_events");
    assert_eq!(
        kprobes.rc, 0,
        "kprobe_events missing in the VM: {}",
        kprobes.stderr
    );
    let btf = step("btf");
    let btf: Vec<&str> = btf.stdout.lines().collect();
    assert!(btf.contains(&"vmlinux"), "no vmlinux BTF: {btf:?}");
    assert!(btf.contains(&"ext4"), "no ext4 module BTF: {btf:?}");
}

#[test]
fn workload_disk_is_ext4_and_keeps_writes() {
    let mounts = step("mounts").stdout;
    assert!(
        mounts
            .lines()
            .any(|l| l.starts_with("/dev/vda /data ext4 ")),
        "{mounts}"
    );
    assert_eq!(step("ext4_write").rc, 0);
    assert_eq!(step("ext4_size").stdout.trim(), "65536 /data/blocks");
}

#[test]
fn dc_trace_runs_in_the_vm_as_on_the_host() {
    let guest = step("dc_trace_help");
    let host = std::process::Command::new(DC_TRACE)
        .arg("--help")
        .output()
        .expect("running dc-trace on the host");
    assert_eq!(guest.rc, host.status.code().expect("exit code"));
    assert_eq!(guest.stdout.as_bytes(), host.stdout);
    assert_eq!(guest.stderr.as_bytes(), host.stderr);
}
