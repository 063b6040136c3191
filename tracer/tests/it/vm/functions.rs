//! Kernel functions on 6.1 through fentry, kprobes and auto mode: which run inside each I/O
//! syscall of the workload, filed under their layers.

use test_support::vm::collected::Collected;

use super::contains;
use super::debian61::{BLOCK, BLOCKS, KERNEL_CATS, collected, kernel_functions, step};

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

/// Every kernel function of the run attached through fentry, none refused.
fn assert_fentry_on_every_function(c: &Collected) {
    assert_eq!(c.mechanism("kernel"), "fentry", "{}", kernel_refusals(c));
    assert_eq!(
        c.attached("kernel"),
        kernel_functions(),
        "{}",
        kernel_refusals(c)
    );
    assert_eq!(c.refused("kernel"), []);
}

#[test]
fn fentry_fexit_on_vfs_and_ext4_module_functions_nest_inside_their_syscalls() {
    let _machine = test_support::machine();
    let c = collected("fentry");
    assert_fentry_on_every_function(c);
    check_kernel_nesting(c, "fentry");
}

#[test]
fn kprobes_produce_the_same_events_as_fentry() {
    let _machine = test_support::machine();
    let k = collected("kprobe");
    assert_eq!(k.mechanism("kernel"), "kprobe", "{}", kernel_refusals(k));
    assert_eq!(
        nesting(k, "kprobe", &kernel_functions()),
        nesting(collected("fentry"), "fentry", &kernel_functions())
    );
}

#[test]
fn kprobes_on_ext4_module_functions_nest_under_vfs() {
    let _machine = test_support::machine();
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
    let _machine = test_support::machine();
    let c = collected("auto");
    assert_fentry_on_every_function(c);
    check_kernel_nesting(c, "auto");
    assert_eq!(
        nesting(c, "auto", &kernel_functions()),
        nesting(collected("kprobe"), "kprobe", &kernel_functions())
    );
}
