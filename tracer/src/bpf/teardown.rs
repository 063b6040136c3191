//! The end of a run: every program detached at once, instead of one RCU grace period after another.
//!
//! Two waits made the teardown slow, both once per tracepoint: detaching a program from its perf
//! event waits for a grace period (about 35 ms here), and closing the last perf event of a
//! tracepoint (`perf_trace_destroy`) waits for another under a kernel-wide mutex, so that those
//! never overlap. 45 tracepoints took 3 s. Here the programs detach from parallel threads, so the
//! first waits overlap; and before that each tracepoint gets a disabled perf event of our own, a
//! keeper, so that the links do not close the last one. The keepers go to a perf event array, whose
//! entries the kernel releases after a grace period from its workqueue: the serialized waits happen
//! there, after the run, with no program attached any more and no fd of this process.

use std::collections::{HashMap, HashSet};
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;

use crate::error::{Context, Result};
use aya::Ebpf;
use aya::programs::Program;
use aya_obj::generated::{
    bpf_attr, bpf_cmd, bpf_link_info, bpf_link_type, bpf_map_type, bpf_perf_event_type,
};

use super::rawbpf::{bpf, bpf_fd, obj_info, objects, tracepoint_event};
use super::tracefs::TRACEFS;

/// membarrier(2): waits until every CPU has passed through a full memory barrier, which the kernel
/// implements as an RCU grace period.
const MEMBARRIER_CMD_GLOBAL: libc::c_int = 1;

/// Detaches and unloads everything `collect` attached but the kernel layer's own links
/// ([`crate::layers::kernel::KernelLinks::detach`]): the links aya does not hold, `links` (the
/// uprobes', the tracepoint tables'), and the object. When it returns, no
/// program of the run runs or will run again, and this process holds none of their programs,
/// links or perf events.
pub fn detach_all(links: Vec<OwnedFd>, mut ebpf: Ebpf) {
    let keepers = keep_tracepoints(&ebpf).unwrap_or_else(|e| {
        log::warn!(
            "tracepoints will detach one at a time: {}",
            datasets::error::chain(&e)
        );
        Vec::new()
    });
    // A thread that cannot start drops its closure: the fd goes at once, the program with `ebpf`
    // below.
    std::thread::scope(|s| {
        for fd in links {
            let _ = std::thread::Builder::new().spawn_scoped(s, move || drop(fd));
        }
        for (_, program) in ebpf.programs_mut() {
            if program.fd().is_ok() {
                let _ = std::thread::Builder::new().spawn_scoped(s, move || unload(program));
            }
        }
    });
    // A program that started before its detach may still be running, until a grace period ends.
    grace_period();
    if let Err(e) = release_later(keepers) {
        log::warn!(
            "tracepoints released one at a time: {}",
            datasets::error::chain(&e)
        );
    }
    drop(ebpf);
}

/// Waits until every program that started before the call has finished (an RCU grace period).
pub fn grace_period() {
    // SAFETY: membarrier takes no pointers.
    if unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) } != 0 {
        log::warn!(
            "membarrier: {}; the last records may be missed",
            io::Error::last_os_error()
        );
    }
}

/// Detaches `program`'s links and unloads it.
fn unload(program: &mut Program) {
    // Errors are those of closing fds, which close anyway; aya ignores them on drop too.
    let _ = match program {
        Program::TracePoint(p) => p.unload(),
        Program::RawTracePoint(p) => p.unload(),
        Program::UProbe(p) => p.unload(),
        Program::KProbe(p) => p.unload(),
        Program::FEntry(p) => p.unload(),
        Program::FExit(p) => p.unload(),
        Program::BtfTracePoint(p) => p.unload(),
        Program::PerfEvent(p) => p.unload(),
        _ => Ok(()),
    };
}

/// A disabled perf event on each tracepoint a program of `ebpf` is attached to through a perf event.
fn keep_tracepoints(ebpf: &Ebpf) -> Result<Vec<OwnedFd>> {
    let ours: HashSet<u32> = ebpf
        .programs()
        .filter_map(|(_, p)| p.info().ok().map(|i| i.id()))
        .collect();
    let mut names = HashSet::new();
    for link in objects(
        bpf_cmd::BPF_LINK_GET_NEXT_ID,
        bpf_cmd::BPF_LINK_GET_FD_BY_ID,
    ) {
        let (id, link) = link?;
        if let Some(name) = tracepoint_of_link(id, &link, &ours)? {
            names.insert(name);
        }
    }
    let ids = event_ids(Path::new(TRACEFS), &names)?;
    let mut keepers = Vec::with_capacity(ids.len());
    for (name, id) in ids {
        keepers
            .push(tracepoint_event(id, true).with_context(|| format!("perf_event_open {name}"))?);
    }
    Ok(keepers)
}

/// The tracepoint's name when `link` (id `id`) attaches one of the programs `ours` through a perf
/// event; None for other links.
fn tracepoint_of_link(id: u32, link: &OwnedFd, ours: &HashSet<u32>) -> Result<Option<String>> {
    let info = link_info(link, None).with_context(|| format!("link {id}"))?;
    // SAFETY: the kernel filled the perf_event member when the type says so.
    let is_tracepoint = info.type_ == bpf_link_type::BPF_LINK_TYPE_PERF_EVENT as u32
        && unsafe { info.__bindgen_anon_1.perf_event.type_ }
            == bpf_perf_event_type::BPF_PERF_EVENT_TRACEPOINT as u32;
    if !is_tracepoint || !ours.contains(&info.prog_id) {
        return Ok(None);
    }
    let mut name = [0u8; 256];
    link_info(link, Some(&mut name)).with_context(|| format!("link {id}"))?;
    let name = CStr::from_bytes_until_nul(&name)
        .with_context(|| format!("the tracepoint name of link {id} is not terminated"))?;
    Ok(Some(name.to_string_lossy().into_owned()))
}

/// What the kernel says of `link`; with `tp_name`, which must be a perf event link's on a
/// tracepoint, also the tracepoint's name. The name's fields alias those of other link types.
fn link_info(link: &OwnedFd, tp_name: Option<&mut [u8]>) -> io::Result<bpf_link_info> {
    // SAFETY: an all-zero bpf_link_info is the kernel's "unset" for every field.
    let mut info: bpf_link_info = unsafe { std::mem::zeroed() };
    if let Some(buf) = tp_name {
        // SAFETY: the kernel reads this member for a perf event link on a tracepoint.
        let tp = unsafe { &mut info.__bindgen_anon_1.perf_event.__bindgen_anon_1.tracepoint };
        tp.tp_name = buf.as_mut_ptr() as u64;
        tp.name_len = buf.len() as u32;
    }
    obj_info(link.as_fd(), &mut info)?;
    Ok(info)
}

/// The ids of the tracepoints named `names`, found under `tracefs`/events in whichever category
/// holds them; a name in several categories is left out, as the link did not say which.
fn event_ids(tracefs: &Path, names: &HashSet<String>) -> Result<HashMap<String, u64>> {
    let mut found: HashMap<String, Vec<std::path::PathBuf>> = HashMap::new();
    let events = tracefs.join("events");
    for category in
        std::fs::read_dir(&events).with_context(|| format!("reading {}", events.display()))?
    {
        let category = category?.path();
        let Ok(entries) = std::fs::read_dir(&category) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if names.contains(&name) {
                found.entry(name).or_default().push(e.path().join("id"));
            }
        }
    }
    let mut ids = HashMap::new();
    for (name, paths) in found {
        let [path] = paths.as_slice() else {
            continue;
        };
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let id = text
            .trim()
            .parse()
            .with_context(|| format!("{}: `{}` is not an id", path.display(), text.trim()))?;
        ids.insert(name, id);
    }
    Ok(ids)
}

/// Hands `keepers` to a perf event array and closes it: the kernel drops its entries after a grace
/// period, from a workqueue. On an error, the keepers not in the array close here, one grace period
/// each.
fn release_later(keepers: Vec<OwnedFd>) -> Result<()> {
    if keepers.is_empty() {
        return Ok(());
    }
    // SAFETY: an all-zero bpf_attr is the kernel's "unset" for every field.
    let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
    // SAFETY: BPF_MAP_CREATE reads this member of the union.
    unsafe {
        let m = &mut attr.__bindgen_anon_1;
        m.map_type = bpf_map_type::BPF_MAP_TYPE_PERF_EVENT_ARRAY as u32;
        m.key_size = 4;
        m.value_size = 4;
        m.max_entries = keepers.len() as u32;
    }
    let array =
        bpf_fd(bpf_cmd::BPF_MAP_CREATE, &mut attr).context("creating a perf event array")?;
    for (i, keeper) in keepers.iter().enumerate() {
        let key = i as u32;
        let value = keeper.as_raw_fd() as u32;
        // SAFETY: an all-zero bpf_attr is the kernel's "unset" for every field.
        let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
        // SAFETY: BPF_MAP_UPDATE_ELEM reads this member of the union; key and value outlive the call.
        unsafe {
            let u = &mut attr.__bindgen_anon_2;
            u.map_fd = array.as_raw_fd() as u32;
            u.key = &key as *const u32 as u64;
            u.__bindgen_anon_1.value = &value as *const u32 as u64;
        }
        bpf(bpf_cmd::BPF_MAP_UPDATE_ELEM, &mut attr)
            .context("putting a tracepoint's perf event in the array")?;
    }
    // The array must hold the last reference, so that the release is the kernel's.
    drop(keepers);
    drop(array);
    Ok(())
}
