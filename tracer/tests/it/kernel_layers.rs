//! The tracepoint layers below the system calls (page_cache, fs, writeback) and block, in trace
//! and in profile mode: a workload writes a file, fsyncs it, drops it from the page cache and
//! reads it back, while bpftrace counts the same tracepoints for the same process. Needs root and
//! BPF; it fails (never skips) where they are missing.

use std::collections::BTreeMap;
use std::time::Duration;

use datasets::read::{ReadOptions, read_all};
use datasets::vocab::Mechanism;
use datasets::{ArgValue, Event, Phase};
use test_support::oracle::{Maps, Oracle, bpf_fds};
use test_support::workload::COMM;
use tracer::layers::tracepoints::{self, Planned};
use tracer::{Layer, LayerReport, LayerSelection, Mode, Summary, collect};
use tracer_ebpf::role;

use crate::trace_testload;

const BLOCKS: i64 = 16;
const BLOCK: i64 = 16384;
const PAGE: i64 = 4096;
const LAYERS: [Layer; 3] = [Layer::PageCache, Layer::Fs, Layer::Writeback];

/// The tracepoints dc-trace attaches for LAYERS on this kernel, as it plans them.
fn planned() -> Vec<Planned> {
    tracer::bpf::tracefs::ensure_mounted().expect("tracefs");
    let mut next = 0;
    let mut out = Vec::new();
    for layer in LAYERS {
        let mut report = LayerReport::new(layer, Mechanism::Tracepoint);
        out.extend(tracepoints::plan(layer, &mut next, &mut report));
    }
    out
}

/// The page cache tracepoints whose folios' pages the oracle also sums, per process and inode (the
/// workload may also page in its binary or libraries).
const FILEMAP: [(&str, &str); 2] = [
    ("mm_filemap_add_to_page_cache", "@added"),
    ("mm_filemap_delete_from_page_cache", "@deleted"),
];

/// bpftrace counting every planned tracepoint per process and probe, the pages the page cache
/// gained and lost, and the bytes of block I/O queued, for the workload: the children of this
/// process (before its exec, it has this test's name; the exec itself may update the binary's
/// atime, dirtying an inode) and processes named COMM. (bpftrace 0.17 cannot load two programs
/// on one tracepoint, so the filemap ones do both in one.)
fn script(planned: &[Planned]) -> String {
    let ours = format!(
        "/comm == \"{COMM}\" || curtask->real_parent->tgid == {}/",
        std::process::id()
    );
    let probes: Vec<String> = planned
        .iter()
        .filter(|p| !FILEMAP.iter().any(|(n, _)| *n == p.name))
        .map(|p| format!("tracepoint:{}:{}", p.category, p.name))
        .collect();
    let mut s = format!(
        r#"BEGIN {{ printf("ready\n"); }}
{} {ours} {{ @n[pid, probe] = count(); }}
tracepoint:block:block_bio_queue {ours} {{ @queued[pid] = sum(args->nr_sector * 512); }}
"#,
        probes.join(",\n")
    );
    for (name, map) in FILEMAP {
        s.push_str(&format!(
            "tracepoint:filemap:{name} {ours} {{ @n[pid, probe] = count(); {map}[pid, args->i_ino] = sum(1 << args->order); }}\n"
        ));
    }
    s
}

/// The workload's events per name, as bpftrace saw them: a point event per firing, an interval
/// per enter/exit pair (whose two sides fired equally often).
fn expected(planned: &[Planned], maps: &Maps, pid: u64) -> BTreeMap<String, i64> {
    let count = |p: &Planned| {
        let key = format!("{pid},tracepoint:{}:{}", p.category, p.name);
        maps.get("@n")
            .and_then(|m| m.get(&key))
            .copied()
            .unwrap_or(0)
    };
    let names = tracepoints::names(planned);
    let mut out = BTreeMap::new();
    for p in planned {
        let id = match p.info.role {
            role::POINT => p.info.probe,
            _ => p.info.pair,
        };
        let name = names[&id].name.clone();
        match p.info.role {
            role::EXIT => assert_eq!(out.get(&name), Some(&count(p)), "{name}: enters ≠ exits"),
            _ => {
                out.insert(name, count(p));
            }
        }
    }
    out.retain(|_, n| *n > 0);
    out
}

fn per_pid(maps: &Maps, map: &str, pid: u64) -> i64 {
    maps[map][&pid.to_string()]
}

/// A collection's summary, events, oracle maps, planned tracepoints, and cache.dat's inode.
type Run = (Summary, Vec<Event>, Maps, Vec<Planned>, u64);

fn run(mode: Mode, layers: &[Layer]) -> Run {
    let planned = planned();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("trace.pfw.gz");
    let mut opts = trace_testload(
        &output,
        dir.path(),
        ["--cache".into(), BLOCKS.to_string(), BLOCK.to_string()],
    );
    opts.layers = LayerSelection::only(layers);
    opts.mode = mode;
    let oracle = Oracle::start(&script(&planned));
    let fds_before = bpf_fds();
    let summary = collect(&opts).expect("BPF must work on this machine");
    assert_eq!(bpf_fds(), fds_before, "BPF objects left open after collect");
    let maps = oracle.stop();
    eprintln!("{summary}");
    assert_eq!(summary.exit_status, Some(0));
    assert_eq!(summary.drops, 0);
    let trace = read_all(&[output], ReadOptions::default()).unwrap();
    let inode = std::os::unix::fs::MetadataExt::ino(
        &std::fs::metadata(dir.path().join("cache.dat")).expect("the workload's cache.dat"),
    );
    (summary, trace.events, maps, planned, inode)
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn page_cache_fs_and_writeback_match_bpftrace_and_nest_in_their_syscalls() {
    let _machine = test_support::machine();
    let layers = [
        Layer::Sys,
        Layer::PageCache,
        Layer::Fs,
        Layer::Writeback,
        Layer::Block,
    ];
    let (summary, ev, maps, planned, inode) = run(Mode::Trace, &layers);
    let pid = ev
        .iter()
        .find(|e| e.cat == "sys" && e.name == "fsync")
        .expect("the workload's fsync")
        .pid;

    // The page cache gained the file's pages twice (written, then read back after they were
    // dropped) and lost them once: exact, as bpftrace sums the folios' pages.
    let pages = BLOCKS * BLOCK / PAGE;
    let file_pages = |map: &str| maps[map][&format!("{pid},{inode}")];
    assert_eq!(file_pages("@added"), 2 * pages);
    assert_eq!(file_pages("@deleted"), pages);
    // Ours as well: each event is a folio of `1 << order` pages.
    let our_pages = |name: &str| -> i64 {
        ev.iter()
            .filter(|e| e.pid == pid && e.name == name)
            .filter(|e| e.args.get("i_ino") == Some(&ArgValue::Int(inode as i64)))
            .map(|e| match e.args.get("order") {
                Some(ArgValue::Int(order)) => 1 << order,
                _ => panic!("{e:?} has no order"),
            })
            .sum()
    };
    assert_eq!(our_pages(FILEMAP[0].0), 2 * pages);
    assert_eq!(our_pages(FILEMAP[1].0), pages);

    // Every event of the three layers, per name, as often as bpftrace saw its tracepoint.
    let mut ours: BTreeMap<String, i64> = BTreeMap::new();
    for e in ev
        .iter()
        .filter(|e| e.pid == pid && ["page_cache", "fs", "writeback"].contains(&e.cat.as_str()))
    {
        *ours.entry(e.name.to_string()).or_default() += 1;
    }
    assert_eq!(ours, expected(&planned, &maps, pid));
    for name in [
        "mm_filemap_add_to_page_cache",
        "mm_filemap_delete_from_page_cache",
        "ext4_sync_file",
        "writeback_dirty_folio",
    ] {
        assert!(ours.contains_key(name), "no {name} event");
    }

    // Pairs are intervals inside the system call of the same thread that caused them.
    let sys: Vec<&Event> = ev
        .iter()
        .filter(|e| e.cat == "sys" && e.pid == pid)
        .collect();
    for e in ev
        .iter()
        .filter(|e| e.cat == "fs" && e.ph == Phase::Complete && e.pid == pid)
    {
        assert!(
            sys.iter()
                .any(|s| s.tid == e.tid && s.ts_ns <= e.ts_ns && e.end_ns() <= s.end_ns()),
            "{} at {} ns is inside no system call",
            e.name,
            e.ts_ns
        );
    }
    let fsync = sys.iter().find(|s| s.name == "fsync").unwrap();
    let syncs: Vec<&Event> = ev.iter().filter(|e| e.name == "ext4_sync_file").collect();
    assert_eq!(syncs.len(), 1);
    assert!(fsync.ts_ns <= syncs[0].ts_ns && syncs[0].end_ns() <= fsync.end_ns());

    // Block I/O: merged requests complete with every byte their bios queued.
    let block_bytes: i64 = ev
        .iter()
        .filter(|e| e.cat == "block" && e.name.starts_with("block_device_") && e.pid == pid)
        .map(|e| e.args.size.unwrap())
        .sum();
    assert_eq!(block_bytes, per_pid(&maps, "@queued", pid));
    assert_eq!(summary.kernel_skipped_per_layer.get("block"), None);
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn profile_counters_of_kernel_layers_match_bpftrace() {
    let _machine = test_support::machine();
    let (_, ev, maps, planned, _) = run(
        Mode::Profile {
            interval: Duration::from_millis(5),
        },
        &[Layer::Sys, Layer::PageCache, Layer::Fs, Layer::Writeback],
    );
    assert!(ev.iter().all(|e| e.ph != Phase::Complete));
    let pid = ev
        .iter()
        .find(|e| e.ph == Phase::Counter && e.cat == "sys" && e.name == "fsync")
        .expect("the workload's fsync counter")
        .pid;
    let mut ours: BTreeMap<String, i64> = BTreeMap::new();
    for e in ev.iter().filter(|e| {
        e.ph == Phase::Counter
            && e.pid == pid
            && ["page_cache", "fs", "writeback"].contains(&e.cat.as_str())
    }) {
        let Some(ArgValue::Int(n)) = e.args.get("freq") else {
            panic!("{e:?} has no freq")
        };
        *ours.entry(e.name.to_string()).or_default() += n;
    }
    assert_eq!(ours, expected(&planned, &maps, pid));
}
