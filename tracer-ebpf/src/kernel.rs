//! Kernel functions: kprobe_multi links where the kernel has them, fentry/fexit where it allows
//! them, else kprobe/kretprobe. Each entry is keyed by (thread, function address), which
//! `bpf_get_func_ip` gives both ends of fentry/fexit and the kprobe's entry, and the link's cookie
//! both ends of kprobe_multi; a kretprobe finds its entry on a per-thread stack.

use aya_ebpf::{
    EbpfContext,
    helpers::{bpf_get_attach_cookie, bpf_get_func_ip},
    macros::{fentry, fexit, kprobe, kretprobe, map},
    maps::LruHashMap,
    programs::{FEntryContext, FExitContext, ProbeContext, RetProbeContext},
};
use tracer_ebpf::{ProbeEvent, kind, layer};

use crate::common::{
    EVENTS, NO_WAKEUP, config, current, drop_one, header, in_scope, now, profile_add, profiling,
};

#[repr(C)]
#[derive(Clone, Copy)]
struct KEnter {
    ts: u64,
    ip: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct KKey {
    tid: u32,
    depth: u32,
    ip: u64,
}

const MAX_DEPTH: u32 = 16;

#[map]
static KENTER: LruHashMap<KKey, KEnter> = LruHashMap::with_max_entries(65536, 0);

/// tid → how many kprobed functions it is inside.
#[map]
static KDEPTH: LruHashMap<u32, u32> = LruHashMap::with_max_entries(16384, 0);

#[fentry]
pub fn kfunc_fentry(ctx: FEntryContext) -> u32 {
    let ip = unsafe { bpf_get_func_ip(ctx.as_ptr()) };
    enter(0, ip);
    0
}

#[fexit]
pub fn kfunc_fexit(ctx: FExitContext) -> u32 {
    let ip = unsafe { bpf_get_func_ip(ctx.as_ptr()) };
    let (_, tid) = current();
    exit(KKey { tid, depth: 0, ip }, 0);
    0
}

/// Entry of a kprobe_multi link; its cookie is the function's address in /proc/kallsyms.
#[kprobe]
pub fn kfunc_kmulti(ctx: ProbeContext) -> u32 {
    let ip = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) };
    enter(0, ip);
    0
}

/// Return of a kprobe_multi link (the same cookies).
#[kretprobe]
pub fn kfunc_kmulti_ret(ctx: RetProbeContext) -> u32 {
    let ip = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) };
    let (_, tid) = current();
    exit(KKey { tid, depth: 0, ip }, ctx.ret());
    0
}

#[kprobe]
pub fn kfunc_kprobe(ctx: ProbeContext) -> u32 {
    let Some(cfg) = config() else { return 0 };
    let (tgid, tid) = current();
    if !in_scope(cfg, tgid) {
        return 0;
    }
    let depth = unsafe { KDEPTH.get(tid) }.copied().unwrap_or(0);
    if depth >= MAX_DEPTH {
        return 0;
    }
    let ip = unsafe { bpf_get_func_ip(ctx.as_ptr()) };
    let _ = KDEPTH.insert(tid, depth + 1, 0);
    enter(depth + 1, ip);
    0
}

#[kretprobe]
pub fn kfunc_kretprobe(ctx: RetProbeContext) -> u32 {
    let (_, tid) = current();
    let Some(&depth) = (unsafe { KDEPTH.get(tid) }) else {
        return 0;
    };
    if depth == 0 {
        return 0;
    }
    let _ = KDEPTH.insert(tid, depth - 1, 0);
    let ret: i64 = ctx.ret();
    exit(KKey { tid, depth, ip: 0 }, ret);
    0
}

#[inline(always)]
fn enter(depth: u32, ip: u64) {
    let Some(cfg) = config() else { return };
    let (tgid, tid) = current();
    if !in_scope(cfg, tgid) {
        return;
    }
    // kprobes key the stack by depth alone: their return side cannot name the function.
    let key = KKey {
        tid,
        depth,
        ip: if depth == 0 { ip } else { 0 },
    };
    if KENTER.insert(key, KEnter { ts: now(), ip }, 0).is_err() {
        drop_one(layer::KFUNC);
    }
}

#[inline(always)]
fn exit(key: KKey, ret: i64) {
    let Some(enter) = (unsafe { KENTER.get(key) }).copied() else {
        return;
    };
    let _ = KENTER.remove(key);
    let Some(cfg) = config() else { return };
    let (tgid, tid) = current();
    let hdr = header(
        kind::PROBE,
        layer::KFUNC,
        tgid,
        tid,
        enter.ts,
        now() - enter.ts,
    );
    if profiling(cfg) {
        profile_add(cfg, &hdr, 0, enter.ip, 0);
        return;
    }
    let ev = ProbeEvent {
        hdr,
        ret,
        args: [enter.ip, 0, 0, 0],
        ..ProbeEvent::default()
    };
    match EVENTS.reserve::<ProbeEvent>(0) {
        Some(mut slot) => {
            slot.write(ev);
            slot.submit(NO_WAKEUP);
        }
        None => drop_one(layer::KFUNC),
    }
}
