//! Events the kernel skipped. A program that fires while another BPF program runs on its CPU
//! (regular tracepoints and kprobes share one per-CPU guard) is not run at all: no drop counter
//! sees the lost event, only the kernel's per-program `recursion_misses`. Each loaded program is
//! watched through a duplicate of its fd, so that it can be read after every link is gone.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::error::{Context, Result};
use aya::Ebpf;
use aya_obj::generated::bpf_prog_info;
use datasets::limits::TracerCost;
use datasets::vocab::layer::SCOPE;

use crate::bpf::rawbpf::obj_info;
use crate::layers::Layer;

/// Loaded programs, each with the layer (or `scope`) its misses count towards.
#[derive(Default)]
pub struct Watch {
    programs: Vec<(String, String, OwnedFd)>,
    /// Each program's info at the last [`Watch::mark`]: its misses, which [`Watch::read`] counts from, and its run
    /// time and runs, which [`Watch::cost`] counts from.
    marked: Vec<bpf_prog_info>,
}

impl Watch {
    /// Watches every loaded program of `ebpf`; `uprobe_layer` names the layer(s) the shared
    /// uprobe programs serve.
    pub fn add(&mut self, ebpf: &Ebpf, uprobe_layer: &str) -> Result<()> {
        for (name, program) in ebpf.programs() {
            let Ok(fd) = program.fd() else { continue };
            let label = match name {
                "sys_enter" | "sys_exit" => Layer::Sys.name().to_owned(),
                "uprobe_enter" | "uprobe_exit" => uprobe_layer.to_owned(),
                "scope_fork" | "scope_exit" | "scope_exec" | "scope_rename" => SCOPE.to_owned(),
                "sched_switch" | "sched_waking" => Layer::Sched.name().to_owned(),
                n if n.starts_with("block_") => Layer::Block.name().to_owned(),
                n if n.starts_with("tp_") => n[3..]
                    .parse::<Layer>()
                    .map_or_else(|_| name.to_owned(), |l| l.name().to_owned()),
                n if n.starts_with("kfunc_") => Layer::Kernel.name().to_owned(),
                "oncpu_sample" => Layer::Oncpu.name().to_owned(),
                n => n.to_owned(),
            };
            self.add_fd(name, &label, fd.as_fd())?;
        }
        Ok(())
    }

    /// Watches the program `fd`, loaded apart from aya.
    pub fn add_fd(&mut self, name: &str, label: &str, fd: BorrowedFd<'_>) -> Result<()> {
        let fd = fd
            .try_clone_to_owned()
            .with_context(|| format!("duplicating the fd of program {name}"))?;
        self.programs.push((name.to_owned(), label.to_owned(), fd));
        Ok(())
    }

    /// From now on, [`Watch::read`] counts the runs skipped since this call: the start of a
    /// session's next run.
    pub fn mark(&mut self) -> Result<()> {
        self.marked = self.infos()?;
        Ok(())
    }

    /// The programs' run time and runs since the last [`Watch::mark`], summed; counted only while the kernel's BPF
    /// statistics are on.
    pub fn cost(&self) -> Result<TracerCost> {
        let mut cost = TracerCost::default();
        for (i, info) in self.infos()?.iter().enumerate() {
            let (ns, runs) = self
                .marked
                .get(i)
                .map_or((0, 0), |m| (m.run_time_ns, m.run_cnt));
            cost.bpf_run_ns += info.run_time_ns.saturating_sub(ns);
            cost.bpf_runs += info.run_cnt.saturating_sub(runs);
        }
        Ok(cost)
    }

    fn infos(&self) -> Result<Vec<bpf_prog_info>> {
        self.programs
            .iter()
            .map(|(name, _, fd)| {
                prog_info(fd.as_fd()).with_context(|| format!("reading the info of program {name}"))
            })
            .collect()
    }

    /// Skipped runs (since the last [`Watch::mark`], if any) per label, only the labels that have
    /// some; and per program.
    pub fn read(&self) -> Result<(BTreeMap<String, u64>, BTreeMap<String, u64>)> {
        let mut per_label = BTreeMap::new();
        let mut per_program = BTreeMap::new();
        for (i, ((name, label, _), info)) in self.programs.iter().zip(self.infos()?).enumerate() {
            let n = info
                .recursion_misses
                .saturating_sub(self.marked.get(i).map_or(0, |m| m.recursion_misses));
            if n > 0 {
                *per_label.entry(label.clone()).or_default() += n;
                *per_program.entry(name.clone()).or_default() += n;
            }
        }
        Ok((per_label, per_program))
    }
}

/// The kernel's `bpf_prog_info` of the program `fd`: its skipped runs (`recursion_misses`), run time and runs.
fn prog_info(fd: BorrowedFd<'_>) -> io::Result<bpf_prog_info> {
    // SAFETY: a plain C struct of integers, for which zero is valid.
    let mut info: bpf_prog_info = unsafe { std::mem::zeroed() };
    obj_info(fd, &mut info)?;
    Ok(info)
}
