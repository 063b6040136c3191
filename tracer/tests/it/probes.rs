//! `dc-trace probes`: what attaches on this kernel, checked against `bpftrace -l` listing the
//! same tracepoints, and that nothing stays attached. Needs root and BPF; it fails (never skips)
//! where they are missing.

use std::collections::BTreeSet;
use std::process::Command;

use test_support::oracle::bpf_fds;
use tracer::layers::tracepoints;
use tracer::options::TracerOptions;
use tracer::{KernelProbeMode, Layer, LayerReport, LayerSelection};

/// `category/name` of every tracepoint `bpftrace -l` lists in `category`.
fn bpftrace_list(category: &str) -> BTreeSet<String> {
    let out = Command::new("bpftrace")
        .args(["-l", &format!("tracepoint:{category}:*")])
        .output()
        .expect("bpftrace (setup.sh installs it)");
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let rest = l
                .strip_prefix("tracepoint:")
                .expect("tracepoint:category:name");
            rest.replacen(':', "/", 1)
        })
        .collect()
}

fn report<'a>(reports: &'a [LayerReport], layer: &str) -> &'a LayerReport {
    reports.iter().find(|r| r.layer == layer).unwrap()
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn probes_attach_what_bpftrace_lists_and_leave_nothing_attached() {
    let _machine = test_support::machine();
    let sel = TracerOptions {
        layers: LayerSelection::only(&[
            Layer::Sys,
            Layer::Block,
            Layer::PageCache,
            Layer::Fs,
            Layer::Writeback,
            Layer::Sched,
            Layer::Irq,
            Layer::Lock,
            Layer::Mm,
            Layer::Iomap,
            Layer::Jbd2,
        ]),
        kernel_probes: KernelProbeMode::Off,
        ..TracerOptions::default()
    };
    let before = bpf_fds();
    let reports = tracer::collect::probe_reports(&sel).expect("BPF must work on this machine");
    assert_eq!(bpf_fds(), before, "BPF objects left open after probes");

    for layer in [
        Layer::PageCache,
        Layer::Fs,
        Layer::Writeback,
        Layer::Irq,
        Layer::Lock,
        Layer::Mm,
        Layer::Iomap,
        Layer::Jbd2,
    ] {
        let mut wanted = BTreeSet::new();
        let mut listed = BTreeSet::new();
        for (category, names) in tracepoints::sources(layer) {
            wanted.extend(names.iter().map(|n| format!("{category}/{n}")));
            listed.extend(bpftrace_list(category));
        }
        let r = report(&reports, layer.name());
        let attached: BTreeSet<String> = r.attached.iter().cloned().collect();
        assert_eq!(
            attached,
            wanted.intersection(&listed).cloned().collect(),
            "{layer}"
        );
        let missing: BTreeSet<String> = r
            .refused
            .iter()
            .map(|f| {
                assert_eq!(
                    (f.mechanism.as_str(), f.reason.as_str()),
                    ("tracepoint", "not on this kernel")
                );
                f.probe.clone()
            })
            .collect();
        assert_eq!(
            missing,
            wanted.difference(&listed).cloned().collect(),
            "{layer}"
        );
    }
    let exact = [
        (
            "scope",
            vec![
                "sched/sched_process_fork",
                "sched/sched_process_exit",
                "sched/sched_process_exec",
                "task/task_rename",
            ],
        ),
        (
            "sys",
            vec![
                "raw_syscalls/sys_enter",
                "raw_syscalls/sys_exit",
                "io_uring/io_uring_submit_req",
                "io_uring/io_uring_file_get",
                "io_uring/io_uring_complete",
            ],
        ),
        (
            "block",
            vec![
                "block/block_bio_queue",
                "block/block_split",
                "block/block_rq_issue (raw)",
                "block/block_rq_complete (raw)",
            ],
        ),
        (
            "sched",
            vec![
                "sched/sched_switch",
                "sched/sched_waking",
                "workqueue/workqueue_execute_start",
            ],
        ),
    ];
    for (layer, attached) in exact {
        let r = report(&reports, layer);
        assert_eq!(
            (r.attached.clone(), r.refused.len()),
            (attached.iter().map(|s| s.to_string()).collect(), 0)
        );
        for a in attached {
            let tp = a.trim_end_matches(" (raw)");
            let category = tp.split('/').next().unwrap();
            assert!(
                bpftrace_list(category).contains(tp),
                "bpftrace lists no {tp}"
            );
        }
    }
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn probes_command_prints_one_line_per_layer() {
    let _machine = test_support::machine();
    let out = Command::new(env!("CARGO_BIN_EXE_dc-trace"))
        .args(["probes", "--layers", "sys,block,sched"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "scope      4 tracepoint probe(s)\n\
         sys        5 tp_btf+raw_tracepoint+tracepoint probe(s)\n\
         block      4 tracepoint probe(s)\n\
         sched      3 tracepoint probe(s) with kernel stacks\n"
    );
}
