//! Maps every layer shares, and the helpers that write records or profile counters.

use aya_ebpf::{
    helpers::{bpf_get_current_ancestor_cgroup_id, bpf_get_current_pid_tgid, bpf_ktime_get_ns},
    macros::map,
    maps::{Array, HashMap, LruHashMap, PerCpuArray, PerCpuHashMap, RingBuf},
};
use tracer_ebpf::{
    Config, EventHeader, FdKey, ProfileKey, ProfileValue, TracedPid, layer, mode, scope,
};

/// The ring buffer's default size; userspace may resize it before load.
const EVENTS_BYTES: u32 = 32 << 20;
/// Only userspace's poll wakes the reader: a wakeup per record would cost more than the record.
pub const NO_WAKEUP: u64 = 1;

#[map]
pub static CONFIG: Array<Config> = Array::with_max_entries(1, 0);

/// Followed thread groups → parent thread group (0 for roots).
#[map]
pub static TRACED: HashMap<TracedPid, u32> = HashMap::with_max_entries(32768, 0);

/// (tgid, fd) → file id.
#[map]
pub static FDS: LruHashMap<FdKey, u64> = LruHashMap::with_max_entries(65536, 0);

#[map]
pub static EVENTS: RingBuf = RingBuf::with_byte_size(EVENTS_BYTES, 0);

/// Records lost, per layer, because the ring buffer or a table was full.
#[map]
pub static DROPS: PerCpuArray<u64> = PerCpuArray::with_max_entries(layer::COUNT, 0);

#[map]
pub static PROFILE: PerCpuHashMap<ProfileKey, ProfileValue> =
    PerCpuHashMap::with_max_entries(65536, 0);

#[inline(always)]
pub fn config() -> Option<&'static Config> {
    CONFIG.get(0)
}

#[inline(always)]
pub fn now() -> u64 {
    unsafe { bpf_ktime_get_ns() }
}

/// (tgid, tid) of the current task.
#[inline(always)]
pub fn current() -> (u32, u32) {
    let id = bpf_get_current_pid_tgid();
    ((id >> 32) as u32, id as u32)
}

#[inline(always)]
pub fn in_scope(cfg: &Config, tgid: u32) -> bool {
    match cfg.scope {
        scope::ALL => tgid != cfg.self_tgid,
        scope::CGROUP => {
            tgid != cfg.self_tgid
                && unsafe { bpf_get_current_ancestor_cgroup_id(cfg.cgroup_level as i32) }
                    == cfg.cgroup_id
        }
        _ => unsafe { TRACED.get(TracedPid { tgid }) }.is_some(),
    }
}

#[inline(always)]
pub fn drop_one(layer: u8) {
    if let Some(n) = DROPS.get_ptr_mut(layer as u32) {
        unsafe { *n += 1 };
    }
}

#[inline(always)]
pub fn header(kind: u8, layer: u8, tgid: u32, tid: u32, ts: u64, dur: u64) -> EventHeader {
    EventHeader {
        kind,
        layer,
        _pad: 0,
        tgid,
        tid,
        _pad2: 0,
        ts,
        dur,
    }
}

#[inline(always)]
pub fn profiling(cfg: &Config) -> bool {
    cfg.mode == mode::PROFILE
}

/// Adds one call to its interval's counter (profile mode).
#[inline(always)]
pub fn profile_add(cfg: &Config, hdr: &EventHeader, probe: u32, file: u64, bytes: i64) {
    let interval = if cfg.interval_ns == 0 {
        1
    } else {
        cfg.interval_ns
    };
    let key = ProfileKey {
        bucket: hdr.ts / interval,
        tgid: hdr.tgid,
        tid: hdr.tid,
        layer: hdr.layer as u32,
        probe,
        file,
    };
    let bytes = if bytes > 0 { bytes as u64 } else { 0 };
    match PROFILE.get_ptr_mut(key) {
        Some(v) => unsafe {
            (*v).count += 1;
            (*v).time_ns += hdr.dur;
            (*v).bytes += bytes;
        },
        None => {
            let v = ProfileValue {
                count: 1,
                time_ns: hdr.dur,
                bytes,
            };
            if PROFILE.insert(key, v, 0).is_err() {
                drop_one(hdr.layer);
            }
        }
    }
}

/// The file id of (tgid, fd), looking through up to three ancestors for inherited fds.
#[inline(always)]
pub fn file_of(tgid: u32, fd: i32) -> u64 {
    let mut t = tgid;
    for _ in 0..4 {
        if let Some(id) = unsafe { FDS.get(FdKey { tgid: t, fd }) } {
            return *id;
        }
        match unsafe { TRACED.get(TracedPid { tgid: t }) } {
            Some(&parent) if parent != 0 => t = parent,
            _ => break,
        }
    }
    0
}

/// Argument `i` of `args`, or `None` past its end. One branch per index, each a constant offset:
/// the verifier refuses stack reads at a variable offset, and Linux 6.1 a loop here.
#[inline(always)]
pub fn pick<const N: usize>(args: &[u64; N], i: u8) -> Option<u64> {
    let mut v = None;
    if i == 0 {
        v = args.first().copied();
    }
    if i == 1 {
        v = args.get(1).copied();
    }
    if i == 2 {
        v = args.get(2).copied();
    }
    if i == 3 {
        v = args.get(3).copied();
    }
    if i == 4 {
        v = args.get(4).copied();
    }
    if i == 5 {
        v = args.get(5).copied();
    }
    v
}
