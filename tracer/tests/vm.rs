//! The kernel test VM: boots Debian's 6.1 kernel (kprobes, fentry and BTF on) under QEMU with
//! software emulation, runs `dc-trace collect` there on the test workload on an ext4 disk with the
//! kernel-function layer on its default mechanism, forced to fentry and forced to kprobes, and
//! checks the traces and summaries it brings back, next to the same run on this host's kernel.
//! A larger run with the default kernel functions, filed under their layers by the shipped map,
//! becomes a feature matrix (`features`) whose `vfs` and `ext4` layers `models` ranks.
//! Needs qemu-system-x86, linux-image-amd64, busybox-static, cpio and e2fsprogs (scripts/setup.sh).
//! It fails, never skips, when any of them is missing or the VM does not boot.

#[path = "../vm/collected.rs"]
mod collected;
#[path = "../vm/harness/mod.rs"]
mod harness;
#[path = "vm/scale.rs"]
mod scale;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::LazyLock;
use std::time::Duration;

use collected::Collected;
use datasets::Event;
use harness::{Vm, VmRun};

const TIMEOUT: Duration = Duration::from_secs(300);
const DC_TRACE: &str = env!("CARGO_BIN_EXE_dc-trace");
const TESTLOAD: &str = env!("CARGO_BIN_EXE_dc-trace-testload");

/// The workload: BLOCKS blocks of BLOCK bytes, written and read back (raw.dat with write(2),
/// pread(2) and O_DIRECT pread(2); stdio.dat with unbuffered fwrite and fread).
const BLOCKS: usize = 4;
const BLOCK: i64 = 4096;
/// Kernel functions in vmlinux, and in the ext4 module (`CONFIG_EXT4_FS=m` in Debian's kernel).
const VFS_FUNCTIONS: [&str; 2] = ["vfs_read", "vfs_write"];
const EXT4_FUNCTIONS: [&str; 3] = [
    "ext4_file_read_iter",
    "ext4_file_write_iter",
    "ext4_sync_file",
];
/// The layers the shipped map files VFS_FUNCTIONS and EXT4_FUNCTIONS under: their events' `cat`.
const KERNEL_CATS: [&str; 2] = ["vfs", "ext4"];
/// The ranked run's blocks: enough rows for held-out rows and k-fold splits.
const RANK_BLOCKS: usize = 32;
/// Layers whose probes are tracepoints (regular or raw) on every kernel.
const TRACEPOINT_LAYERS: [&str; 6] = ["sys", "block", "page_cache", "fs", "writeback", "sched"];

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
fn kernel_functions() -> Vec<&'static str> {
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
    let vm = Vm::new(harness::SERIES_6_1, &scenario(), TIMEOUT)?
        .binary(Path::new(DC_TRACE), "dc-trace")
        .binary(Path::new(TESTLOAD), "dc-trace-testload");
    let run = vm.run(&work("initramfs"), &work("run"))?;
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

/// `target/tmp/dc-vm/<name>`.
fn work(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("dc-vm")
        .join(name)
}

fn vm() -> &'static Vm61 {
    VM.as_ref()
        .unwrap_or_else(|e| panic!("kernel test VM failed:\n{e}"))
}

/// The VM's run `name` of [`COLLECTS`].
fn collected(name: &str) -> &'static Collected {
    let i = COLLECTS
        .iter()
        .position(|c| c.name == name)
        .expect("a run of COLLECTS");
    vm().collected[i].as_ref().unwrap_or_else(|e| panic!("{e}"))
}

fn host() -> &'static Collected {
    HOST.as_ref().unwrap_or_else(|e| panic!("{e}"))
}

fn step(name: &str) -> harness::Step {
    vm().run.step(name).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn vm_runs_the_debian_6_1_kernel_with_kprobes_btf_and_an_ext4_disk() {
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

/// Which traced kernel functions run inside each I/O syscall of the workload, checked exactly:
/// each syscall on the workload's files has its VFS function and its ext4 function inside that,
/// on the same thread; and no kernel event is outside a syscall.
fn check_kernel_nesting(c: &Collected, run: &str) {
    let raw = format!("/data/{run}/raw.dat");
    let stdio = format!("/data/{run}/stdio.dat");
    let read: &[&str] = &["vfs_read", "ext4_file_read_iter"];
    let write: &[&str] = &["vfs_write", "ext4_file_write_iter"];
    let sync: &[&str] = &["ext4_sync_file"];
    let cases: [(&str, &str, usize, &[&str]); 6] = [
        (&raw, "write", BLOCKS, write),
        (&raw, "pread64", 2 * BLOCKS, read),
        (&raw, "fsync", 1, sync),
        (&stdio, "write", BLOCKS, write),
        (&stdio, "read", BLOCKS, read),
        (&stdio, "fsync", 1, sync),
    ];
    for (file, call, count, functions) in cases {
        let calls = c.calls("sys", call, file);
        assert_eq!(
            calls.len(),
            count,
            "{}: {call} events on {file} (with args.fhash naming the file)",
            c.place
        );
        for s in &calls {
            if call != "fsync" {
                assert_eq!(
                    (s.args.size, s.args.ret),
                    (Some(BLOCK), Some(BLOCK)),
                    "{s:?}"
                );
            }
            let inner = c.inside_any(s, &KERNEL_CATS);
            let names: Vec<&str> = inner.iter().map(|e| e.name.as_str()).collect();
            assert_eq!(
                names, functions,
                "{}: kernel functions inside {s:?}",
                c.place
            );
            if let [vfs, fs] = inner[..] {
                assert!(
                    contains(vfs, fs),
                    "{}: {fs:?} is not inside {vfs:?}",
                    c.place
                );
            }
        }
    }
    for k in c.of_layers(&KERNEL_CATS) {
        let layer = if k.name.starts_with("vfs_") {
            "vfs"
        } else {
            "ext4"
        };
        assert_eq!(
            k.cat, layer,
            "{}: {k:?} is not filed under {layer}",
            c.place
        );
    }
    let sys = c.of_layer("sys");
    for k in c.of_layers(&KERNEL_CATS) {
        assert!(
            sys.iter().any(|s| contains(s, k)),
            "{}: kernel event outside every syscall of its thread: {k:?}",
            c.place
        );
    }
}

fn contains(outer: &Event, inner: &Event) -> bool {
    outer.pid == inner.pid
        && outer.tid == inner.tid
        && outer.ts_ns <= inner.ts_ns
        && inner.end_ns() <= outer.end_ns()
}

/// Each (syscall, file name, traced `functions` inside it) on the workload's files, in time order.
fn nesting(c: &Collected, run: &str, functions: &[&str]) -> Vec<(String, String, Vec<String>)> {
    let prefix = format!("/data/{run}/");
    let mut sys = c.of_layer("sys");
    sys.sort_by_key(|e| e.ts_ns);
    sys.into_iter()
        .filter_map(|s| {
            let name = c.file(s)?.strip_prefix(&prefix)?;
            let inner = c
                .inside_any(s, &KERNEL_CATS)
                .into_iter()
                .map(|e| e.name.to_string())
                .filter(|f| functions.contains(&f.as_str()))
                .collect();
            Some((s.name.to_string(), name.to_owned(), inner))
        })
        .collect()
}

/// The refusals of the kernel layer, with what the VM's /proc/kallsyms says of one ext4 function:
/// the evidence a failure needs.
fn kernel_refusals(c: &Collected) -> String {
    let kallsyms = step("kallsyms_ext4").stdout;
    format!(
        "{}: kernel layer {} with {:?}, refused {:?}.\n\
         In this kernel ext4 is a module; /proc/kallsyms lists its functions with a module \
         column: {kallsyms:?}. kprobes attach to module functions by name; fentry binds them \
         through the module's BTF (/sys/kernel/btf/ext4) and its kernel BTF object \
         (attach_btf_obj_fd).\nSummary:\n{}",
        c.place,
        c.mechanism("kernel"),
        c.attached("kernel"),
        c.refused("kernel"),
        c.text
    )
}

#[test]
fn fentry_fexit_on_vfs_and_ext4_module_functions_nest_inside_their_syscalls() {
    let c = collected("fentry");
    assert_eq!(c.mechanism("kernel"), "fentry", "{}", kernel_refusals(c));
    assert_eq!(
        c.attached("kernel"),
        kernel_functions(),
        "{}",
        kernel_refusals(c)
    );
    assert_eq!(c.refused("kernel"), []);
    check_kernel_nesting(c, "fentry");
}

#[test]
fn kprobes_produce_the_same_events_as_fentry() {
    let k = collected("kprobe");
    assert_eq!(k.mechanism("kernel"), "kprobe", "{}", kernel_refusals(k));
    assert_eq!(
        nesting(k, "kprobe", &kernel_functions()),
        nesting(collected("fentry"), "fentry", &kernel_functions())
    );
}

#[test]
fn kprobes_on_ext4_module_functions_nest_under_vfs() {
    let k = collected("kprobe");
    assert_eq!(
        k.attached("kernel"),
        kernel_functions(),
        "{}",
        kernel_refusals(k)
    );
    check_kernel_nesting(k, "kprobe");
}

/// ext4 is a module in Debian's 6.1 kernel (CONFIG_EXT4_FS=m): auto mode binds fentry to its
/// functions through the module's BTF, as to vmlinux's.
#[test]
fn auto_mode_uses_fentry_for_vmlinux_and_ext4_module_functions() {
    let c = collected("auto");
    assert_eq!(c.mechanism("kernel"), "fentry", "{}", kernel_refusals(c));
    assert_eq!(
        c.attached("kernel"),
        kernel_functions(),
        "{}",
        kernel_refusals(c)
    );
    assert_eq!(c.refused("kernel"), []);
    check_kernel_nesting(c, "auto");
    assert_eq!(
        nesting(c, "auto", &kernel_functions()),
        nesting(collected("kprobe"), "kprobe", &kernel_functions())
    );
}

#[test]
fn libc_uprobes_and_tracepoint_layers_work_on_6_1() {
    let c = collected("auto");
    assert_eq!(c.mechanism("libc"), "uprobe", "{}", c.text);
    for layer in TRACEPOINT_LAYERS {
        let mechanism = c.mechanism(layer);
        assert!(
            mechanism
                .split('+')
                .all(|m| ["tracepoint", "raw_tracepoint"].contains(&m)),
            "{}: {layer} attached by {mechanism}",
            c.text
        );
        assert!(!c.attached(layer).is_empty(), "{}: {layer}", c.text);
    }
    for layer in ["sys", "libc", "block", "page_cache", "fs", "sched"] {
        assert!(
            c.events_in(layer) > 0,
            "{}: no {layer} events:\n{}",
            c.place,
            c.text
        );
    }
    assert_eq!(
        c.summary["drops"], 0,
        "{}: events lost:\n{}",
        c.place, c.text
    );
    let stdio = "/data/auto/stdio.dat";
    for (libc, sys) in [("fwrite", "write"), ("fread", "read")] {
        let calls: Vec<&Event> = c
            .of_layer("libc")
            .into_iter()
            .filter(|e| e.name == libc)
            .collect();
        assert_eq!(calls.len(), BLOCKS, "{}: {libc} calls", c.place);
        for call in calls {
            let inner: Vec<&Event> = c
                .inside(call, "sys")
                .into_iter()
                .filter(|s| s.name == sys)
                .collect();
            assert_eq!(inner.len(), 1, "{}: {sys} inside {call:?}", c.place);
            assert_eq!(c.file(inner[0]), Some(stdio), "{:?}", inner[0]);
        }
    }
    let raw = "/data/auto/raw.dat";
    let preads = c.calls("sys", "pread64", raw);
    assert_eq!(preads.len(), 2 * BLOCKS, "{}: pread64 on {raw}", c.place);
    for direct in &preads[BLOCKS..] {
        let block: Vec<&Event> = c
            .inside(direct, "block")
            .into_iter()
            .filter(|e| e.name.starts_with("block_device_"))
            .collect();
        assert_eq!(
            block.len(),
            1,
            "{}: block I/O inside O_DIRECT {direct:?}",
            c.place
        );
        assert_eq!(
            (block[0].name.as_str(), block[0].args.size),
            ("block_device_read", Some(BLOCK))
        );
    }
    for fsync in c.calls("sys", "fsync", raw) {
        let fs = c.names_inside(fsync, "fs");
        assert!(
            fs.iter().any(|n| n.starts_with("ext4_sync_file")),
            "{}: ext4 tracepoints inside {fsync:?}: {fs:?}",
            c.place
        );
    }
}

#[test]
fn attach_summary_names_each_layers_mechanism_in_the_vm_and_on_the_host() {
    let (vm, host) = (collected("auto"), host());
    for c in [vm, collected("fentry"), collected("kprobe"), host] {
        for layer in c.summary["layers"].as_array().into_iter().flatten() {
            let layer = layer["layer"].as_str().unwrap_or("");
            let line = c.text_line(layer);
            if c.attached(layer).is_empty() {
                assert!(line.contains("not attached"), "{}: {line}", c.place);
            } else {
                let probes = format!("{} {} probe", c.attached(layer).len(), c.mechanism(layer));
                assert!(line.contains(&probes), "{}: {line}", c.place);
            }
        }
    }
    for layer in TRACEPOINT_LAYERS {
        assert_eq!(vm.mechanism(layer), host.mechanism(layer), "{layer}");
    }
    // uprobe_multi links came in Linux 6.6: the VM's 6.1 attaches one uprobe per function.
    assert_eq!(vm.mechanism("libc"), "uprobe", "{}", vm.text);
    assert_eq!(host.mechanism("libc"), "uprobe_multi", "{}", host.text);
    assert_eq!(host.mechanism("kernel"), "none", "{}", host.text);
    assert_eq!(host.attached("kernel"), Vec::<&str>::new());
    let refused = host.refused("kernel");
    for f in kernel_functions() {
        for m in ["fentry", "kprobe"] {
            assert!(
                refused
                    .iter()
                    .any(|&(p, rm, why)| p == f && rm == m && !why.is_empty()),
                "host: no {m} refusal with a reason for {f}: {refused:?}"
            );
        }
    }
    let line = host.text_line("kernel");
    assert!(
        line.contains("fentry: ") && line.contains("kprobe: "),
        "host: {line}"
    );
}

/// The mission's question on our own trace: which VFS and which ext4 functions explain the
/// bandwidth of the workload's calls. vfs_read and vfs_write contain ext4's read and write.
#[test]
fn features_of_a_traced_workload_rank_the_vfs_and_ext4_layers() {
    let c = collected("rank");
    let write = c
        .of_layer("vfs")
        .into_iter()
        .find(|e| e.name == "vfs_write")
        .expect("a vfs_write event");
    assert!(
        c.of_layer("ext4")
            .iter()
            .any(|e| e.name == "ext4_file_write_iter" && contains(write, e)),
        "{}: no ext4_file_write_iter inside {write:?}",
        c.place
    );
    let matrix = features::from_events(&c.events, &features::BuildOptions::default())
        .expect("the VM's trace builds a feature matrix");
    let opts = models::RankOptions {
        layers: KERNEL_CATS.map(String::from).to_vec(),
        drop_constant: true,
        ..models::RankOptions::default()
    };
    let report = models::rank(&matrix, &opts).expect("vfs and ext4 rank");
    // A layer's ranking holds its own functions (inclusive `{layer}::`, exclusive `excl::{layer}`) and the
    // context columns every layer's model sees, marked as context.
    let ranked: Vec<(&str, Vec<&str>)> = report
        .layers
        .iter()
        .map(|l| {
            let features = l
                .ranking
                .iter()
                .filter(|f| !f.context)
                .map(|f| f.feature.as_str())
                .collect();
            (l.layer.as_str(), features)
        })
        .collect();
    for layer in KERNEL_CATS {
        let features = ranked
            .iter()
            .find(|(l, _)| *l == layer)
            .map(|(_, f)| f.clone())
            .unwrap_or_default();
        let own = |f: &&str| f.starts_with(&format!("{layer}::")) || *f == format!("excl::{layer}");
        assert!(
            features
                .iter()
                .any(|f| f.starts_with(&format!("{layer}::")))
                && features.iter().all(own),
            "{}: {layer} ranked {features:?}; all: {ranked:?}",
            c.place
        );
    }
}

#[test]
fn a_vm_that_cannot_boot_fails_with_qemus_words() {
    let mut vm = Vm::new(harness::SERIES_6_1, "", TIMEOUT).unwrap_or_else(|e| panic!("{e}"));
    vm.kernel.image = PathBuf::from("/nonexistent/vmlinuz");
    let Err(e) = vm.run(&work("initramfs-bare"), &work("noboot")) else {
        panic!("a VM without a kernel booted");
    };
    assert!(e.contains("QEMU exited with exit status: 1"), "{e}");
    assert!(e.contains("/nonexistent/vmlinuz"), "{e}");
}

#[test]
fn a_vm_that_does_not_power_off_is_killed_at_the_timeout_with_its_console() {
    let vm = Vm::new(
        harness::SERIES_6_1,
        "step hang sleep 600\n",
        Duration::from_secs(3),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let Err(e) = vm.run(&work("initramfs-bare"), &work("timeout")) else {
        panic!("a VM stuck in sleep 600 powered off within 3 s");
    };
    assert!(
        e.contains("the VM did not power off within 3 s and was killed"),
        "{e}"
    );
    assert!(e.contains("console lines"), "{e}");
}
