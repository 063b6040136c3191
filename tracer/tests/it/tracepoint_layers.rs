//! The tracepoint layers that account for a call's time where kprobes are refused (irq, lock, mm,
//! iomap, jbd2, and sched split by state, a wait ending at its waking when another task held the
//! CPU, which it names), against bpftrace for the same process in the same run: the test workload writes, fsyncs,
//! reads back with and without O_DIRECT, on a fresh journalled ext4 (loop-mounted; the root file
//! system has no journal), and sends itself a datagram over loopback with write(2). bpftrace pairs
//! the same tracepoints the same way (per thread, the last enter with the next exit), filters the
//! irq and lock layers to the traced system calls as the kernel side does, and starts counting when
//! the workload's exec returns; so do we. Counts are exact; each name's summed durations agree
//! within TOLERANCE_NS per interval, the time between bpftrace's program and ours on the same
//! firing. Needs root and BPF; it fails (never skips) where they are missing.

use std::collections::BTreeMap;

use datasets::read::{ReadOptions, read_all};
use datasets::vocab::Mechanism;
use datasets::{ArgValue, Event, Phase};
use test_support::ext4::JournalledExt4;
use test_support::oracle::{Maps, Oracle, bpf_fds};
use test_support::workload::COMM;
use tracer::bpf::tracefs;
use tracer::layers::sys::SYSCALLS;
use tracer::layers::tracepoints::{self, Planned};
use tracer::{Layer, LayerReport, LayerSelection, collect};
use tracer_ebpf::{role, sysflag, tpflag};

use crate::trace_testload;

const BLOCKS: i64 = 16;
const BLOCK: i64 = 16384;
/// Per interval: both programs read the clock on the same firing, one after the other.
const TOLERANCE_NS: i64 = 20_000;
/// The workload's file system: a fresh journalled ext4, so that its writes start jbd2 handles.
const EXT4_MIB: u64 = 64;
const JOURNAL_MIB: u64 = 4;
const TABLES: [Layer; 5] = [
    Layer::Irq,
    Layer::Lock,
    Layer::Mm,
    Layer::Iomap,
    Layer::Jbd2,
];

/// The tracepoints dc-trace attaches for TABLES, as it plans them (with the sys layer on, the irq
/// and lock layers only count inside traced system calls).
fn planned() -> Vec<Planned> {
    tracefs::ensure_mounted().expect("tracefs");
    let mut next = 0;
    let mut out = Vec::new();
    for layer in TABLES {
        let mut report = LayerReport::new(layer, Mechanism::Tracepoint);
        let mut p = tracepoints::plan(layer, &mut next, &mut report);
        if layer.probes().table().unwrap().in_call {
            for t in &mut p {
                t.info.flags |= tpflag::IN_CALL;
            }
        }
        out.extend(p);
    }
    out
}

/// bpftrace doing what the kernel side does, for the workload once its exec returned.
fn script(planned: &[Planned]) -> String {
    // A call that never returns (exit) is no interval, so nothing is inside it.
    let nrs: Vec<String> = SYSCALLS
        .iter()
        .filter(|s| s.spec.flags & sysflag::NO_RETURN == 0)
        .map(|s| format!("@nr[{}] = 1;", s.nr))
        .collect();
    // collect() runs in this process: a CPU it held kept no traced thread waiting (see sched.rs).
    let tracer = std::process::id();
    let mut s = format!(
        r#"BEGIN {{ {} printf("ready\n"); }}
tracepoint:syscalls:sys_exit_execve /comm == "{COMM}"/ {{ @go[pid] = nsecs; }}
tracepoint:raw_syscalls:sys_enter /@go[pid] && @nr[args->id]/ {{ @in[tid] = 1; }}
tracepoint:raw_syscalls:sys_exit /@in[tid]/ {{ delete(@in[tid]); }}
tracepoint:sched:sched_waking /@off[args->pid] && !@woken[args->pid]/ {{ @woken[args->pid] = nsecs; }}
tracepoint:irq:irq_handler_entry {{ @hard[cpu] = @hard[cpu] + 1; }}
tracepoint:irq:irq_handler_exit /@hard[cpu] > 0/ {{ @hard[cpu] = @hard[cpu] - 1; }}
tracepoint:irq_vectors:local_timer_entry {{ @hard[cpu] = @hard[cpu] + 1; @timer[cpu] = @timer[cpu] + 1; }}
tracepoint:irq_vectors:local_timer_exit /@hard[cpu] > 0/ {{
    @hard[cpu] = @hard[cpu] - 1; if (@timer[cpu] > 0) {{ @timer[cpu] = @timer[cpu] - 1; }}
}}
tracepoint:irq:softirq_entry {{ @soft[cpu] = args->vec + 1; }}
tracepoint:irq:softirq_exit {{ @soft[cpu] = 0; }}
tracepoint:sched:sched_waking /@off[args->pid]/ {{
    @waked[args->pid] = 1;
    @ctx[args->pid] = @timer[cpu] > 0 ? 3 : (@hard[cpu] > 0 ? 1 : (@soft[cpu] > 0 ? 2 + (@soft[cpu] - 1) * 256 : 0));
}}
tracepoint:sched:sched_switch {{
    if (@go[pid]) {{
        @off[args->prev_pid] = nsecs; @state[args->prev_pid] = args->prev_state & 0xff;
        delete(@woken[args->prev_pid]);
        delete(@waked[args->prev_pid]);
    }}
    if (@off[args->next_pid]) {{
        $t = args->next_pid;
        if (@state[$t] != 0) {{
            @wctx[@state[$t] * {CTX_STATE} + (@waked[$t] ? @ctx[$t] : {CTX_NONE})] = count();
        }}
        delete(@waked[$t]);
        $w = @woken[$t];
        $held = args->prev_pid != 0 && pid != {tracer};
        if ($w > @off[$t] && $held && @state[$t] != 0) {{
            @n[{SCHED_KEY} + @state[$t]] = count();
            @d[{SCHED_KEY} + @state[$t]] = sum($w - @off[$t]);
            @n[{SCHED_KEY}] = count();
            @d[{SCHED_KEY}] = sum(nsecs - $w);
            @held[args->prev_pid] = count();
        }} else {{
            @n[{SCHED_KEY} + @state[$t]] = count();
            @d[{SCHED_KEY} + @state[$t]] = sum(nsecs - @off[$t]);
            if (@state[$t] == 0 && $held) {{ @held[args->prev_pid] = count(); }}
        }}
        delete(@off[$t]);
        delete(@woken[$t]);
    }}
}}
"#,
        nrs.join(" ")
    );
    for p in planned {
        let filter = if p.info.flags & tpflag::IN_CALL != 0 {
            "@in[tid]"
        } else {
            "@go[pid]"
        };
        let tp = format!("tracepoint:{}:{}", p.category, p.name);
        let pair = p.info.pair;
        let key = key(p);
        let body = match p.info.role {
            role::ENTER => format!("@s[tid, {pair}] = nsecs;"),
            role::EXIT => {
                let at = if IRQS.contains(&p.event.as_str()) {
                    format!(
                        "@at[@s[tid, {pair}]] = {key}; @atd[@s[tid, {pair}]] = nsecs - @s[tid, {pair}]; "
                    )
                } else {
                    String::new()
                };
                s.push_str(&format!(
                    "{tp} /{filter} && @s[tid, {pair}]/ {{ {at}@n[{key}] = count(); @d[{key}] = sum(nsecs - @s[tid, {pair}]); delete(@s[tid, {pair}]); }}\n"
                ));
                continue;
            }
            role::SPAN_MS => format!(
                "@n[{key}] = count(); if (args->pause > 0) {{ @d[{key}] = sum(args->pause * 1000000); }}"
            ),
            _ => format!("@n[{key}] = count();"),
        };
        s.push_str(&format!("{tp} /{filter}/ {{ {body} }}\n"));
    }
    s
}

/// bpftrace's map key of the events of `p` (bpftrace 0.17 misaligns string keys in tuples).
fn key(p: &Planned) -> u32 {
    match p.info.role {
        role::ENTER | role::EXIT => p.info.pair,
        _ => p.info.probe,
    }
}

/// The irq layer's intervals, which interrupt whatever runs: one may span a call's edge.
const IRQS: [&str; 2] = ["hardirq", "softirq"];

/// An interval: its start and duration, in nanoseconds.
type Span = (u64, u64);

/// The intervals of two lists sorted by start that have no partner starting within TOLERANCE_NS
/// in the other.
fn unmatched(a: &[Span], b: &[Span]) -> (Vec<Span>, Vec<Span>) {
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].0.abs_diff(b[j].0) <= TOLERANCE_NS as u64 {
            i += 1;
            j += 1;
        } else if a[i] < b[j] {
            only_a.push(a[i]);
            i += 1;
        } else {
            only_b.push(b[j]);
            j += 1;
        }
    }
    only_a.extend(&a[i..]);
    only_b.extend(&b[j..]);
    (only_a, only_b)
}

/// Keys from here on are off-CPU intervals by state.
const SCHED_KEY: u64 = 1000;
/// `@wctx`'s keys: a wait's state times this, plus the context of its last waking ([`tracer_ebpf::woken_in`]), or
/// [`CTX_NONE`] when none was seen.
const CTX_STATE: u64 = 100_000;
const CTX_NONE: u64 = 99_999;

/// Waits (not preemptions) by event name and the context their last waking fired in, as `woken_in` says it, "task"
/// for a task's and "none" when no waking was seen: as bpftrace saw them, keeping each CPU's interrupt context from
/// the same tracepoints as the irq layer's program does.
fn wakings_by_bpftrace(maps: &Maps) -> BTreeMap<(String, String), i64> {
    let mut out = BTreeMap::new();
    for (k, n) in maps.get("@wctx").into_iter().flatten() {
        let k: u64 = k.parse().expect("a numeric key");
        let (state, ctx) = (k / CTX_STATE, k % CTX_STATE);
        let context = match ctx {
            CTX_NONE => "none".to_owned(),
            _ => tracer::layers::sched::woken_in(ctx as u32).unwrap_or_else(|| "task".into()),
        };
        *out.entry((tracer::layers::sched::event_name(state).to_owned(), context))
            .or_default() += n;
    }
    out
}

/// The same from the trace: a wait with `woken_in` was woken in an interrupt, one with only a waker by a task.
fn wakings_traced<'a>(events: impl Iterator<Item = &'a Event>) -> BTreeMap<(String, String), i64> {
    let mut out = BTreeMap::new();
    for e in events.filter(|e| e.cat == "sched" && e.name != "offcpu_R") {
        let context = match (e.args.get("woken_in"), e.args.get("waker_tid")) {
            (Some(ArgValue::Str(c)), _) => c.to_string(),
            (Some(other), _) => panic!("woken_in is not a string: {other:?}"),
            (None, Some(_)) => "task".into(),
            (None, None) => "none".into(),
        };
        *out.entry((e.name.to_string(), context)).or_default() += 1;
    }
    out
}

/// Count and summed duration per event name (sched: per state), as bpftrace saw them.
fn oracle(maps: &Maps, planned: &[Planned]) -> BTreeMap<String, (i64, i64)> {
    let mut out = BTreeMap::new();
    let get = |map: &str, key: &str| maps.get(map).and_then(|m| m.get(key)).copied().unwrap_or(0);
    for (k, n) in maps.get("@n").into_iter().flatten() {
        let id: u64 = k.parse().expect("a numeric key");
        let name = match id.checked_sub(SCHED_KEY) {
            Some(state) => tracer::layers::sched::event_name(state).to_owned(),
            None => planned
                .iter()
                .find(|p| key(p) as u64 == id)
                .expect("a planned tracepoint's key")
                .event
                .clone(),
        };
        let e: &mut (i64, i64) = out.entry(name).or_default();
        e.0 += n;
        e.1 += get("@d", k);
    }
    for p in planned {
        out.entry(p.event.clone()).or_default();
    }
    out
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn irq_lock_mm_iomap_jbd2_and_sched_match_bpftrace() {
    let _machine = test_support::machine();
    let planned = planned();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("trace.pfw.gz");
    let ext4 = JournalledExt4::new(EXT4_MIB, JOURNAL_MIB);
    let mut opts = trace_testload(
        &output,
        &ext4.mount_point(),
        [BLOCKS.to_string(), BLOCK.to_string(), "--loopback".into()],
    );
    let mut layers = vec![Layer::Sys, Layer::Sched, Layer::Block];
    layers.extend(TABLES);
    opts.layers = LayerSelection::only(&layers);
    let oracle_run = Oracle::start(&script(&planned));
    let fds_before = bpf_fds();
    let summary = collect(&opts).expect("BPF must work on this machine");
    assert_eq!(bpf_fds(), fds_before, "BPF objects left open after collect");
    let oracle_skipped = oracle_run.skipped_runs();
    let maps = oracle_run.stop();
    eprintln!("{summary}");
    eprintln!("bpftrace: {oracle_skipped} runs skipped by the kernel");
    assert_eq!(summary.exit_status, Some(0));
    assert_eq!(summary.drops, 0);
    for layer in TABLES {
        let r = summary
            .layers
            .iter()
            .find(|r| r.layer == layer.name())
            .unwrap();
        assert!(r.refused.is_empty(), "{r:?}");
    }

    let trace = read_all(&[output], ReadOptions::default()).unwrap();
    let (pid, go) = maps["@go"]
        .iter()
        .map(|(pid, ts)| (pid.parse::<u64>().unwrap(), *ts as u64))
        .next()
        .expect("the workload's exec");
    let ours_of = |e: &&Event| {
        e.pid == pid
            && e.ts_ns >= go
            && (TABLES.iter().any(|l| l.name() == e.cat) || e.cat == "sched")
    };
    let mut ours: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for e in trace.events.iter().filter(ours_of) {
        let c = ours.entry(e.name.to_string()).or_default();
        c.0 += 1;
        c.1 += e.dur_ns as i64;
    }
    let oracle = oracle(&maps, &planned);
    for p in &planned {
        ours.entry(p.event.clone()).or_default();
    }
    let counts = |m: &BTreeMap<String, (i64, i64)>| -> BTreeMap<String, i64> {
        m.iter().map(|(k, v)| (k.clone(), v.0)).collect()
    };
    // An interrupt handler whose entry or exit program the kernel skipped (a BPF program already running on that
    // CPU) is missing from that tracer's count: ours may fall short by the irq layer's skipped runs, bpftrace's by its
    // own. An interrupt that lands between the two tracers' programs on a call's entry or exit is inside the call
    // for one of them only; each such one spans, or is within TOLERANCE_NS of, the edge of one of the workload's calls
    // as we traced them.
    let irq_skipped = summary
        .kernel_skipped_per_layer
        .get("irq")
        .copied()
        .unwrap_or(0);
    let edges: Vec<u64> = trace
        .events
        .iter()
        .filter(|e| e.pid == pid && e.ts_ns >= go && e.cat == "sys")
        .flat_map(|e| [e.ts_ns, e.ts_ns + e.dur_ns])
        .collect();
    let at_an_edge = |&(ts, dur): &Span| {
        let tol = TOLERANCE_NS as u64;
        edges
            .iter()
            .any(|&edge| edge + tol >= ts && edge <= ts + dur + tol)
    };
    let (mut got, mut want) = (counts(&ours), counts(&oracle));
    for name in IRQS {
        got.remove(name);
        want.remove(name);
        let mut traced: Vec<Span> = trace
            .events
            .iter()
            .filter(ours_of)
            .filter(|e| e.name == name)
            .map(|e| (e.ts_ns, e.dur_ns))
            .collect();
        let mut seen: Vec<Span> = maps
            .get("@at")
            .into_iter()
            .flatten()
            .filter(|(_, k)| {
                planned
                    .iter()
                    .any(|p| p.event == name && key(p) as i64 == **k)
            })
            .map(|(ts, _)| (ts.parse().expect("a numeric key"), maps["@atd"][ts] as u64))
            .collect();
        traced.sort_unstable();
        seen.sort_unstable();
        let (only_ours, only_theirs) = unmatched(&traced, &seen);
        let (ours_edge, ours_inside): (Vec<_>, Vec<_>) =
            only_ours.into_iter().partition(at_an_edge);
        let (theirs_edge, theirs_inside): (Vec<_>, Vec<_>) =
            only_theirs.into_iter().partition(at_an_edge);
        eprintln!(
            "{name}: {} traced, {} by bpftrace; at a call's edge for one of them only: ours {ours_edge:?}, bpftrace's {theirs_edge:?}",
            traced.len(),
            seen.len()
        );
        assert!(
            theirs_inside.len() as u64 <= irq_skipped && ours_inside.len() as u64 <= oracle_skipped,
            "{name}: ours alone at {ours_inside:?}, bpftrace's alone at {theirs_inside:?}, none at a call's edge; \
             {irq_skipped} irq runs skipped, {oracle_skipped} of bpftrace's"
        );
    }
    assert_eq!(got, want);
    // Durations are compared where both saw the same intervals (an irq count short by skipped runs is not).
    for (name, (n, dur)) in ours.iter().filter(|(k, v)| v.0 == oracle[*k].0) {
        let want = oracle[name].1;
        assert!(
            (dur - want).abs() <= n * TOLERANCE_NS,
            "{name}: {n} intervals, {dur} ns traced, {want} ns by bpftrace"
        );
    }

    // What the workload must have shown, so that no layer compares zero with zero: its O_DIRECT
    // reads through iomap, page faults, waits for I/O, the mmap_lock its mmap calls take, the
    // journal handles of its writes, and the softirq that delivers its loopback datagram inside
    // the write that sent it.
    for name in [
        "iomap_dio",
        "page_fault_user",
        "offcpu_D",
        "mmap_lock_wait",
        "jbd2_handle",
        "softirq",
    ] {
        assert!(ours[name].0 > 0, "no {name} event: {ours:?}");
    }
    for layer in TABLES {
        assert!(
            trace
                .events
                .iter()
                .filter(ours_of)
                .any(|e| e.cat == layer.name()),
            "no {layer} event: {ours:?}"
        );
    }
    assert_eq!(ours["iomap_dio"].0, BLOCKS);
    // Point events are instants; the rest intervals.
    for e in trace.events.iter().filter(ours_of) {
        let point = e.name.starts_with("page_fault") || e.name == "jbd2_lock_buffer_stall";
        assert_eq!(e.ph == Phase::Instant, point, "{e:?}");
    }
    // A wait for a CPU names the task that held it last, the one that left the CPU to it.
    let mut held: BTreeMap<String, i64> = BTreeMap::new();
    for e in trace.events.iter().filter(ours_of) {
        if let Some(ArgValue::Int(t)) = e.args.get("held_by_tid") {
            assert_eq!(e.name, "offcpu_R", "{e:?}");
            *held.entry(t.to_string()).or_default() += 1;
        }
    }
    // (Whether any is here depends on the machine's load: offcpu::a_wait_for_a_cpu_names_the_task_that_held_it
    // makes them.)
    assert_eq!(held, maps.get("@held").cloned().unwrap_or_default());

    // Each wait says in which context it was woken, as bpftrace saw it; the O_DIRECT reads' waits end in the
    // device's completion, an interrupt.
    let wakings = wakings_traced(trace.events.iter().filter(ours_of));
    eprintln!("wakings: {wakings:?}");
    // Each traced wait is a waking bpftrace saw too: the same number of them, give or take those a skipped run of
    // either tracer's programs lost (the kernel skips a BPF program while another runs on that CPU). Which context each was woken in
    // is compared only in total: both tracers follow a CPU's interrupt context from softirq and irq entry and exit,
    // and a skipped entry or exit leaves either one's view stale (a run here had bpftrace put all 23 in `timer`,
    // with none of ours skipped), so the split by context is no oracle.
    let oracle = wakings_by_bpftrace(&maps);
    let skipped = summary
        .kernel_skipped_per_layer
        .get("sched")
        .copied()
        .unwrap_or(0);
    let (ours_n, theirs_n): (i64, i64) = (wakings.values().sum(), oracle.values().sum());
    assert!(
        theirs_n - ours_n <= skipped as i64 && ours_n - theirs_n <= oracle_skipped as i64,
        "{ours_n} wakings against bpftrace's {theirs_n}, {skipped} sched runs skipped, {oracle_skipped} of bpftrace's: ours {wakings:?}, bpftrace's {oracle:?}"
    );
    assert!(
        wakings
            .keys()
            .any(|(name, c)| name == "offcpu_D" && (c == "hardirq" || c.starts_with("softirq:"))),
        "no wait for I/O ended in an interrupt: {wakings:?}"
    );

    // Waits for I/O say who ended them.
    assert!(
        trace
            .events
            .iter()
            .filter(ours_of)
            .filter(|e| e.name == "offcpu_D")
            .any(|e| matches!(e.args.get("waker_comm"), Some(ArgValue::Str(_)))),
        "no offcpu_D has a waker"
    );

    // A block request is its queue time then its device time, back to back.
    let block: Vec<&Event> = trace
        .events
        .iter()
        .filter(|e| e.cat == "block" && e.pid == pid)
        .collect();
    let devices: Vec<&&Event> = block
        .iter()
        .filter(|e| e.name.starts_with("block_device_"))
        .collect();
    assert!(!devices.is_empty());
    for q in block.iter().filter(|e| e.name.starts_with("block_queue_")) {
        let op = &q.name["block_queue_".len()..];
        assert!(
            devices
                .iter()
                .any(|d| d.name == format!("block_device_{op}")
                    && d.args.offset == q.args.offset
                    && d.ts_ns == q.end_ns()),
            "{q:?} has no device interval after it"
        );
    }
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn openat_records_its_flags() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("trace.pfw.gz");
    let mut opts = trace_testload(&output, dir.path(), ["2".into(), "4096".into()]);
    opts.layers = LayerSelection::only(&[Layer::Sys]);
    collect(&opts).expect("BPF must work on this machine");
    let trace = read_all(&[output], ReadOptions::default()).unwrap();
    let raw = dir.path().join("raw.dat");
    let fh = trace
        .events
        .iter()
        .find(|e| e.name == "FH" && e.args.name.as_deref() == raw.to_str())
        .and_then(|e| e.args.value)
        .expect("raw.dat is named");
    let flags: Vec<i64> = trace
        .events
        .iter()
        .filter(|e| e.cat == "sys" && e.name == "openat" && e.args.fhash == Some(fh))
        .map(|e| match e.args.get("flags") {
            Some(ArgValue::Int(f)) => *f,
            other => panic!("openat without flags: {other:?}"),
        })
        .collect();
    // Written, read back, then read with O_DIRECT.
    let direct = flags
        .iter()
        .filter(|&&f| f & libc::O_DIRECT as i64 != 0)
        .count();
    assert_eq!((flags.len(), direct), (3, 1), "{flags:?}");
}
