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

/// The most an entry's saved instruction pointer lies past the function's address: ftrace saves
/// the address after its call at the function's start (`endbr64`, 4 bytes, then `call`, 5).
const ENTRY_IP_SPAN: u64 = 9;

/// Both ends of a kprobe session link (Linux 6.10+): one link, so one ftrace unregistration at
/// detach instead of an entry's and a return's. The end is told by the saved instruction pointer,
/// the function's start at entry and the caller's return address at return, since aya-ebpf 0.2
/// cannot call the `bpf_session_is_return` kfunc. An entry out of scope returns 1, so that the
/// kernel does not hook that call's return at all.
#[kprobe]
pub fn kfunc_ksession(ctx: ProbeContext) -> u32 {
    let ip = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) };
    // SAFETY: a kprobe program's context is the probed task's saved registers.
    let regs = unsafe { &*ctx.regs };
    if regs.rip.wrapping_sub(ip) <= ENTRY_IP_SPAN {
        return if enter(0, ip) { 0 } else { 1 };
    }
    let (_, tid) = current();
    exit(KKey { tid, depth: 0, ip }, regs.rax as i64);
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

/// Records the entry; false when the call is out of scope or its entry could not be kept.
#[inline(always)]
fn enter(depth: u32, ip: u64) -> bool {
    let Some(cfg) = config() else { return false };
    let (tgid, tid) = current();
    if !in_scope(cfg, tgid) {
        return false;
    }
    // kprobes key the stack by depth alone: their return side cannot name the function.
    let key = KKey {
        tid,
        depth,
        ip: if depth == 0 { ip } else { 0 },
    };
    if KENTER.insert(key, KEnter { ts: now(), ip }, 0).is_err() {
        drop_one(layer::KFUNC);
        return false;
    }
    true
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
