//! The `libc` and `app` layers: one uprobe/uretprobe pair of programs, attached to every chosen
//! function with the probe id as the attach cookie.

use aya_ebpf::{
    EbpfContext,
    helpers::bpf_get_attach_cookie,
    macros::{map, uprobe, uretprobe},
    maps::{HashMap, LruHashMap},
    programs::{ProbeContext, RetProbeContext},
};
use tracer_ebpf::{ARG_RET, PairKey, ProbeEvent, StreamKey, UprobeSpec, kind, size_rule};

use crate::{
    common::{
        EVENTS, NO_WAKEUP, config, current, drop_one, file_of, header, in_scope, now, pick,
        profile_add, profiling,
    },
    sys::LAST_OPEN,
};

#[repr(C)]
#[derive(Clone, Copy)]
struct UEnter {
    ts: u64,
    args: [u64; 4],
}

#[map]
pub static UPROBES: HashMap<u32, UprobeSpec> = HashMap::with_max_entries(4096, 0);

/// (tid, probe) → the call it is in.
#[map]
static UENTER: LruHashMap<PairKey, UEnter> = LruHashMap::with_max_entries(65536, 0);

/// (tgid, FILE *) → file id.
#[map]
static STREAMS: LruHashMap<StreamKey, u64> = LruHashMap::with_max_entries(16384, 0);

#[uprobe]
pub fn uprobe_enter(ctx: ProbeContext) -> u32 {
    let Some(cfg) = config() else { return 0 };
    let (tgid, tid) = current();
    if !in_scope(cfg, tgid) {
        return 0;
    }
    let probe = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) } as u32;
    let mut args = [0u64; 4];
    for (i, a) in args.iter_mut().enumerate() {
        *a = ctx.arg(i).unwrap_or(0);
    }
    let enter = UEnter { ts: now(), args };
    let _ = UENTER.insert(PairKey { tid, pair: probe }, enter, 0);
    0
}

#[uretprobe]
pub fn uprobe_exit(ctx: RetProbeContext) -> u32 {
    let (tgid, tid) = current();
    let probe = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) } as u32;
    let key = PairKey { tid, pair: probe };
    let Some(enter) = (unsafe { UENTER.get(key) }).copied() else {
        return 0;
    };
    let _ = UENTER.remove(key);
    let (Some(cfg), Some(spec)) = (config(), unsafe { UPROBES.get(probe) }) else {
        return 0;
    };
    let ret: i64 = ctx.ret();
    let mut ev = ProbeEvent {
        hdr: header(
            kind::PROBE,
            spec.layer,
            tgid,
            tid,
            enter.ts,
            now() - enter.ts,
        ),
        probe,
        ret,
        args: enter.args,
        ..ProbeEvent::default()
    };
    if spec.fd_arg == ARG_RET {
        ev.file = file_of(tgid, ret as i32);
    } else if let Some(fd) = pick(&enter.args, spec.fd_arg) {
        ev.file = file_of(tgid, fd as i32);
    }
    if spec.stream_arg == ARG_RET {
        if ret != 0
            && let Some(&id) = unsafe { LAST_OPEN.get(tid) }
        {
            ev.file = id;
            let _ = STREAMS.insert(stream(tgid, ret as u64), id, 0);
        }
    } else if let Some(ptr) = pick(&enter.args, spec.stream_arg)
        && let Some(&id) = unsafe { STREAMS.get(stream(tgid, ptr)) }
    {
        ev.file = id;
    }
    ev.size = match spec.size_rule {
        size_rule::RET if ret > 0 => ret,
        size_rule::RET_TIMES_ARG1 if ret > 0 => ret * enter.args[1] as i64,
        size_rule::ARG2 => enter.args[2] as i64,
        _ => 0,
    };
    if profiling(cfg) {
        profile_add(cfg, &ev.hdr, probe, ev.file, ev.size);
        return 0;
    }
    match EVENTS.reserve::<ProbeEvent>(0) {
        Some(mut slot) => {
            slot.write(ev);
            slot.submit(NO_WAKEUP);
        }
        None => drop_one(spec.layer),
    }
    0
}

#[inline(always)]
fn stream(tgid: u32, ptr: u64) -> StreamKey {
    StreamKey { tgid, _pad: 0, ptr }
}
