//! `dc-trace-bench functions` inside the 6.12 VM, the one kernel here with every mechanism: what a
//! traced kernel function adds to each of its calls through dc-trace's kprobe_multi and fentry,
//! against bpftrace's kprobe and fentry (kfunc) probes on the same functions, in one run. bpftrace
//! goes into the initramfs with its libraries (LLVM and clang among them: about 210 MB, so the guest
//! gets 2 GiB). The test asserts on what each tracer recorded, never on the times, which it prints.

use std::path::Path;
use std::time::Duration;

use test_support::vm::{SERIES_6_12, Vm, work};

use super::TMP;
use crate::TESTLOAD;

const BENCH: &str = env!("CARGO_BIN_EXE_dc-trace-bench");
const TIMEOUT: Duration = Duration::from_secs(900);
const CALLS: u64 = 20_000;
const RUNS: u64 = 3;
/// Functions each pread64 of the bench calls once (`FUNCTIONS` in tracer/src/bin/bench/functions.rs).
const FUNCTIONS: u64 = 5;
const CASES: [&str; 4] = [
    "dc-trace kprobe_multi",
    "bpftrace kprobe",
    "dc-trace fentry",
    "bpftrace fentry",
];

/// A case's row of the bench's table: CPU s, added ns/pread, recorded, lost, added ns/function.
fn row<'a>(table: &'a str, case: &str) -> Vec<&'a str> {
    let line = (table.lines())
        .find(|l| l.starts_with(case) && l[case.len()..].starts_with(' '))
        .unwrap_or_else(|| panic!("no row {case:?} in:\n{table}"));
    line[case.len()..].split_whitespace().collect()
}

#[test]
fn a_traced_kernel_functions_cost_against_bpftraces_kprobe_and_fentry_on_6_12() {
    let _machine = test_support::machine();
    let scenario = format!("step bench env TMPDIR=/data dc-trace-bench functions {CALLS} {RUNS}\n");
    let vm = Vm::new(SERIES_6_12, &scenario, TIMEOUT)
        .and_then(|vm| {
            Ok(vm
                .memory(2048)
                .binary(Path::new(BENCH), "dc-trace-bench")
                .binary(Path::new(TESTLOAD), "dc-trace-testload")
                .binary(&bpftrace()?, "bpftrace"))
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let run = (vm.run(&work(TMP, "initramfs-bench"), &work(TMP, "bench-6.12")))
        .unwrap_or_else(|e| panic!("kernel test VM failed:\n{e}"));
    let step = run.step("bench").unwrap();
    assert_eq!(step.rc, 0, "{}\n{}", step.stdout, step.stderr);
    let table = &step.stdout;
    eprintln!(
        "VM {}: dc-trace-bench functions {CALLS} {RUNS}:\n{table}",
        run.kernel.release
    );
    for case in CASES {
        let r = row(table, case);
        assert_eq!(r.len(), 5, "{case}: refused or malformed:\n{table}");
        let calls: u64 = r[2].parse().unwrap();
        assert!(
            (FUNCTIONS * CALLS..FUNCTIONS * CALLS + 100).contains(&calls),
            "{case}: {calls} function calls recorded for {CALLS} preads:\n{table}"
        );
        assert_eq!(r[3], "0", "{case} lost events:\n{table}");
    }
    for mechanism in ["kprobe_multi against kprobe", "fentry against kfunc"] {
        assert!(
            table.contains(&format!("dc-trace vs bpftrace, {mechanism}: ")),
            "{table}"
        );
    }
}

fn bpftrace() -> Result<std::path::PathBuf, String> {
    tracer::scope::find("bpftrace")
        .ok_or_else(|| "bpftrace is not in PATH (package bpftrace, see scripts/setup.sh)".into())
}
