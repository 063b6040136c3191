//! The floors under dc-trace's cost per call, for `dc-trace-bench dd`: the programs of tracer-ebpf
//! that only return (`floor_enter`, `floor_return`), attached to the sys layer's two hooks as the
//! sys layer attaches its own, and bpftrace's emptiest program on the same hooks. bpftrace 0.17 has
//! no raw tracepoints, so it takes raw_syscalls' perf tracepoints; its filter, the workload's pid,
//! is the cheapest it has. The dd that these floors trace is started by pid, held until the tracer
//! is ready, and its CPU time read from this process's waited-for children.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use aya::{Ebpf, EbpfLoader};
use tracer::bpf::{Attacher, object};

use crate::bpftrace::Bpftrace;
use crate::cpu::cpu_seconds;

/// The sys layer's hooks with programs that only return, and how sys_enter was attached. They stay
/// attached while the value lives.
pub struct Returns {
    _ebpf: Ebpf,
    pub mechanism: &'static str,
}

/// Attaches `floor_enter` to sys_enter as a BTF tracepoint (`floor_return` as a raw one where the
/// kernel refuses that, as the sys layer falls back) and `floor_return` to sys_exit.
pub fn attach_returns() -> Result<Returns> {
    let mut ebpf = EbpfLoader::new()
        .map_max_entries("PROFILE", 1)
        .load(object::OBJECT)
        .context("loading the tracer-ebpf object into the kernel")?;
    let mut at = Attacher::new(&mut ebpf);
    let mechanism = match at.btf_tracepoint("floor_enter", "sys_enter") {
        Ok(()) => "tp_btf sys_enter, raw_tp sys_exit",
        Err(e) => {
            eprintln!("floor_enter as a BTF tracepoint: {e:#}; attaching a raw tracepoint");
            at.raw_tracepoint("floor_return", "sys_enter")?;
            "raw_tp sys_enter and sys_exit"
        }
    };
    at.raw_tracepoint("floor_return", "sys_exit")?;
    Ok(Returns {
        _ebpf: ebpf,
        mechanism,
    })
}

/// bpftrace's emptiest program on raw_syscalls' two hooks, filtered to process `pid`.
pub fn bpftrace_script(pid: u32) -> String {
    format!(
        "BEGIN {{ printf(\"ready\\n\"); }}\n\
         tracepoint:raw_syscalls:sys_enter /pid == {pid}/ {{ }}\n\
         tracepoint:raw_syscalls:sys_exit /pid == {pid}/ {{ }}\n"
    )
}

/// dd's command line, run by a shell that waits for a line on its stdin and then becomes dd, so
/// that dd's pid is known before it starts.
fn held_dd(file: &Path, bs: u64) -> String {
    format!("read _; exec dd if={} of=/dev/null bs={bs}", file.display())
}

/// Runs dd over `file` (its report into `report`), started once `ready` returns with the pid it
/// is given; returns dd's CPU seconds (user and system) and what `ready` returned.
pub fn run_held<T>(
    file: &Path,
    bs: u64,
    report: &Path,
    ready: impl FnOnce(u32) -> Result<T>,
) -> Result<(f64, T)> {
    let mut child = Command::new("sh")
        .args(["-c", &held_dd(file, bs)])
        .stdin(Stdio::piped())
        .stderr(std::fs::File::create(report)?)
        .spawn()
        .context("starting dd's shell")?;
    let mut go = child.stdin.take().context("dd's stdin")?;
    let held = ready(child.id());
    if held.is_err() {
        let _ = child.kill();
        child.wait()?;
    }
    let held = held?;
    let before = cpu_seconds(libc::RUSAGE_CHILDREN);
    go.write_all(b"\n")?;
    drop(go);
    let status = child.wait()?;
    let cpu = cpu_seconds(libc::RUSAGE_CHILDREN) - before;
    anyhow::ensure!(status.success(), "dd failed ({status})");
    Ok((cpu, held))
}

/// Starts bpftrace's emptiest program on process `pid`, its stderr in `dir`.
pub fn start_bpftrace(pid: u32, dir: &Path) -> Result<Bpftrace> {
    Bpftrace::start(&bpftrace_script(pid), &[], dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aya_obj::ProgramSection;

    #[test]
    fn the_object_has_the_programs_that_only_return_for_the_sys_hooks() {
        let object = aya_obj::Object::parse(object::OBJECT).unwrap();
        let section = |name: &str| {
            &(object.programs.get(name))
                .unwrap_or_else(|| panic!("no {name} in the eBPF object"))
                .section
        };
        assert!(
            matches!(section("floor_enter"), ProgramSection::BtfTracePoint),
            "{:?}",
            section("floor_enter")
        );
        assert!(
            matches!(section("floor_return"), ProgramSection::RawTracePoint),
            "{:?}",
            section("floor_return")
        );
        // The sys layer's own programs, on the same hooks by the same mechanisms.
        assert!(matches!(
            section("sys_enter_btf"),
            ProgramSection::BtfTracePoint
        ));
        assert!(matches!(section("sys_exit"), ProgramSection::RawTracePoint));
    }

    #[test]
    fn bpftrace_filters_both_hooks_to_the_pid_and_does_nothing_else() {
        assert_eq!(
            bpftrace_script(4242),
            "BEGIN { printf(\"ready\\n\"); }\n\
             tracepoint:raw_syscalls:sys_enter /pid == 4242/ { }\n\
             tracepoint:raw_syscalls:sys_exit /pid == 4242/ { }\n"
        );
    }
}
