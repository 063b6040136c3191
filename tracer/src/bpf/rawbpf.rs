//! Programs of the embedded object loaded and attached through bpf(2), for what aya 0.14 cannot do
//! (uprobe_multi links here, which need the program loaded with their attach type, and tracepoint
//! perf events for links with a cookie, [`super::Attacher::tracepoint_cookie`]; fentry by BTF
//! id in [`super::fentry`]; kprobe_multi in [`super::kprobe_multi`]). The object is parsed again and relocated against
//! the maps of the copy aya loaded, so both share them.

use std::collections::HashSet;
use std::ffi::{CString, c_long};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::error::{Context, Result};
use aya::{Ebpf, maps::Map};
use aya_obj::{
    Object,
    generated::{
        BPF_F_UPROBE_MULTI_RETURN, PERF_FLAG_FD_CLOEXEC, bpf_attach_type, bpf_attr, bpf_btf_info,
        bpf_cmd, bpf_link_info, bpf_prog_info, bpf_prog_type, perf_event_attr, perf_type_id,
    },
};

/// The embedded object's programs, relocated against loaded maps.
pub struct Relocated {
    object: Object,
}

impl Relocated {
    /// The programs of `bytes`, relocated against the maps of `loaded`, the same object loaded by aya.
    pub fn new(bytes: &[u8], loaded: &Ebpf) -> Result<Relocated> {
        let mut object = Object::parse(bytes).context("parsing the eBPF object")?;
        let maps = std::mem::take(&mut object.maps);
        let mut fds = Vec::with_capacity(maps.len());
        for (name, map) in &maps {
            let fd = loaded
                .map(name)
                .and_then(map_fd)
                .with_context(|| format!("map {name} is not loaded"))?;
            fds.push((name.as_str(), fd.as_raw_fd(), map));
        }
        let text: HashSet<usize> = object.functions.keys().map(|(s, _)| *s).collect();
        object
            .relocate_maps(fds.into_iter(), &text)
            .context("relocating map references")?;
        object
            .relocate_calls(&text)
            .context("relocating function calls")?;
        Ok(Relocated { object })
    }

    /// A BPF_PROG_LOAD attribute with `program`'s instructions, license and name set, for the
    /// caller to add the program and attach types. It points into `self`, which must outlive the load.
    pub fn prog_load_attr(&self, program: &str) -> Result<bpf_attr> {
        let prog = self
            .object
            .programs
            .get(program)
            .with_context(|| format!("program {program} is not in the eBPF object"))?;
        let insns = &self.object.functions[&prog.function_key()].instructions;
        let mut name = [0; 16];
        for (d, s) in name.iter_mut().zip(program.bytes().take(15)) {
            *d = s as std::ffi::c_char;
        }
        // SAFETY: an all-zero bpf_attr is the kernel's "unset" for every field.
        let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
        // SAFETY: BPF_PROG_LOAD reads this member of the union.
        let a = unsafe { &mut attr.__bindgen_anon_3 };
        a.insns = insns.as_ptr() as u64;
        a.insn_cnt = insns.len() as u32;
        a.license = self.object.license.as_ptr() as u64;
        a.prog_name = name;
        Ok(attr)
    }

    /// Loads `program` as a kprobe-type program for uprobe_multi links.
    pub fn load_uprobe_multi(&self, program: &str) -> Result<OwnedFd> {
        let mut attr = self.prog_load_attr(program)?;
        // SAFETY: BPF_PROG_LOAD reads this member of the union.
        let a = unsafe { &mut attr.__bindgen_anon_3 };
        a.prog_type = bpf_prog_type::BPF_PROG_TYPE_KPROBE as u32;
        a.expected_attach_type = bpf_attach_type::BPF_TRACE_UPROBE_MULTI as u32;
        bpf_fd(bpf_cmd::BPF_PROG_LOAD, &mut attr)
            .with_context(|| format!("loading {program} for uprobe_multi"))
    }
}

/// One link attaching `program` (from [`Relocated::load_uprobe_multi`]) at every file offset of
/// `binary` in `offsets`, each with its cookie, in every process; at function returns if `ret`.
pub fn uprobe_multi(
    program: BorrowedFd,
    binary: &Path,
    offsets: &[u64],
    cookies: &[u64],
    ret: bool,
) -> Result<OwnedFd> {
    let path = CString::new(binary.as_os_str().as_bytes())
        .with_context(|| format!("{}: a NUL in the path", binary.display()))?;
    // SAFETY: an all-zero bpf_attr is the kernel's "unset" for every field.
    let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
    // SAFETY: BPF_LINK_CREATE reads this member of the union, and its uprobe_multi member for
    // this attach type.
    unsafe {
        let l = &mut attr.link_create;
        l.__bindgen_anon_1.prog_fd = program.as_raw_fd() as u32;
        l.attach_type = bpf_attach_type::BPF_TRACE_UPROBE_MULTI as u32;
        let u = &mut l.__bindgen_anon_3.uprobe_multi;
        u.path = path.as_ptr() as u64;
        u.offsets = offsets.as_ptr() as u64;
        u.cookies = cookies.as_ptr() as u64;
        u.cnt = offsets.len() as u32;
        u.flags = if ret { BPF_F_UPROBE_MULTI_RETURN } else { 0 };
    }
    bpf_fd(bpf_cmd::BPF_LINK_CREATE, &mut attr).with_context(|| {
        format!(
            "uprobe_multi link of {} offsets in {}",
            offsets.len(),
            binary.display()
        )
    })
}

/// A perf event on tracepoint `id` (its tracefs `id`), in every process, on CPU 0 as aya opens
/// them; `disabled`, it counts nothing, and only keeps the tracepoint registered.
pub fn tracepoint_event(id: u64, disabled: bool) -> io::Result<OwnedFd> {
    // SAFETY: an all-zero perf_event_attr is the kernel's "unset" for every field.
    let mut attr: perf_event_attr = unsafe { std::mem::zeroed() };
    attr.type_ = perf_type_id::PERF_TYPE_TRACEPOINT as u32;
    attr.size = size_of::<perf_event_attr>() as u32;
    attr.config = id;
    attr.set_disabled(disabled as u64);
    // SAFETY: `attr` is a valid perf_event_attr of the size it gives, live for the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const perf_event_attr,
            -1,
            0,
            -1,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// bpf(2) with `attr`; its non-negative result.
pub fn bpf(cmd: bpf_cmd, attr: &mut bpf_attr) -> io::Result<c_long> {
    // SAFETY: `attr` is a valid bpf_attr of the size passed, live for the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd as libc::c_int,
            attr as *mut bpf_attr,
            size_of::<bpf_attr>() as libc::c_uint,
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// The `bpf_*_info` structs of BPF_OBJ_GET_INFO_BY_FD: plain C integers, valid whatever bytes the
/// kernel writes.
pub trait ObjInfo: Sized {}
impl ObjInfo for bpf_prog_info {}
impl ObjInfo for bpf_link_info {}
impl ObjInfo for bpf_btf_info {}

/// BPF_OBJ_GET_INFO_BY_FD: the kernel fills `info` for the object `fd`, following any buffer
/// pointers the caller set in it.
pub fn obj_info<T: ObjInfo>(fd: BorrowedFd<'_>, info: &mut T) -> io::Result<()> {
    // SAFETY: an all-zero bpf_attr is the kernel's "unset" for every field.
    let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
    attr.info.bpf_fd = fd.as_raw_fd() as u32;
    attr.info.info_len = size_of::<T>() as u32;
    attr.info.info = info as *mut T as u64;
    bpf(bpf_cmd::BPF_OBJ_GET_INFO_BY_FD, &mut attr).map(|_| ())
}

/// The kernel's BPF objects of one kind, each as its id and an fd, by walking the ids: `next` is
/// the kind's BPF_*_GET_NEXT_ID command and `by_id` its BPF_*_GET_FD_BY_ID. An object that went
/// away between the two calls is skipped; the walk ends after the first error.
pub fn objects(next: bpf_cmd, by_id: bpf_cmd) -> impl Iterator<Item = Result<(u32, OwnedFd)>> {
    let mut id = 0;
    let mut done = false;
    std::iter::from_fn(move || {
        while !done {
            // SAFETY: an all-zero bpf_attr is the kernel's "unset" for every field.
            let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
            attr.__bindgen_anon_6.__bindgen_anon_1.start_id = id;
            match bpf(next, &mut attr) {
                // SAFETY: the command wrote this member of the union.
                Ok(_) => id = unsafe { attr.__bindgen_anon_6.next_id },
                Err(e) => {
                    done = true;
                    if e.raw_os_error() == Some(libc::ENOENT) {
                        return None;
                    }
                    return Some(Err(e).context(format!("{next:?}")));
                }
            }
            // SAFETY: an all-zero bpf_attr is the kernel's "unset" for every field; the id member
            // is shared by every kind (prog_id, map_id, btf_id, link_id).
            let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
            attr.__bindgen_anon_6.__bindgen_anon_1.start_id = id;
            match bpf_fd(by_id, &mut attr) {
                Ok(fd) => return Some(Ok((id, fd))),
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                Err(e) => {
                    done = true;
                    return Some(Err(e).context(format!("{by_id:?} {id}")));
                }
            }
        }
        None
    })
}

/// A bpf(2) command that returns a new fd.
pub fn bpf_fd(cmd: bpf_cmd, attr: &mut bpf_attr) -> io::Result<OwnedFd> {
    let fd = bpf(cmd, attr)?;
    // SAFETY: the kernel returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn map_fd(map: &Map) -> Option<BorrowedFd<'_>> {
    let data = match map {
        Map::Array(m)
        | Map::HashMap(m)
        | Map::LruHashMap(m)
        | Map::PerCpuArray(m)
        | Map::PerCpuHashMap(m)
        | Map::PerCpuLruHashMap(m)
        | Map::RingBuf(m)
        | Map::PerfEventArray(m)
        | Map::ProgramArray(m)
        | Map::StackTraceMap(m)
        | Map::Queue(m)
        | Map::Stack(m)
        | Map::BloomFilter(m)
        | Map::LpmTrie(m) => m,
        _ => return None,
    };
    Some(data.fd().as_fd())
}

/// Empties the hash maps of `ebpf` that `clear_map` names: the keys are read first, then deleted, so
/// that the walk does not restart from the first bucket after each delete.
pub fn clear_hash_maps(ebpf: &Ebpf, clear_map: impl Fn(&str) -> bool) -> Result<()> {
    for (name, map) in ebpf.maps() {
        let (Map::HashMap(data) | Map::LruHashMap(data)) = map else {
            continue;
        };
        if !clear_map(name) {
            continue;
        }
        let info = data.info().with_context(|| format!("reading map {name}"))?;
        clear(
            data.fd().as_fd(),
            info.key_size() as usize,
            info.max_entries() as usize,
        )
        .with_context(|| format!("emptying map {name}"))?;
    }
    Ok(())
}

/// Deletes every key of the hash map `fd`, whose keys are `key_size` bytes. A key deleted by its
/// programs during the walk restarts it from the first key: it stops at `max_entries` keys.
fn clear(fd: BorrowedFd<'_>, key_size: usize, max_entries: usize) -> io::Result<()> {
    let mut keys: Vec<u8> = Vec::new();
    let mut next = vec![0u8; key_size];
    while keys.len() < key_size * max_entries {
        let prev = keys
            .len()
            .checked_sub(key_size)
            .map(|at| keys[at..].as_ptr());
        // SAFETY: an all-zero bpf_attr is the kernel's "unset" for every field.
        let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
        // SAFETY: BPF_MAP_GET_NEXT_KEY reads this member of the union; a null key asks for the
        // first; both buffers hold `key_size` bytes and outlive the call.
        unsafe {
            let u = &mut attr.__bindgen_anon_2;
            u.map_fd = fd.as_raw_fd() as u32;
            u.key = prev.map_or(0, |p| p as u64);
            u.__bindgen_anon_1.next_key = next.as_mut_ptr() as u64;
        }
        match bpf(bpf_cmd::BPF_MAP_GET_NEXT_KEY, &mut attr) {
            Ok(_) => keys.extend_from_slice(&next),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => break,
            Err(e) => return Err(e),
        }
    }
    for key in keys.chunks_exact(key_size) {
        // SAFETY: an all-zero bpf_attr is the kernel's "unset" for every field.
        let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
        // SAFETY: BPF_MAP_DELETE_ELEM reads this member of the union; the key outlives the call.
        unsafe {
            let u = &mut attr.__bindgen_anon_2;
            u.map_fd = fd.as_raw_fd() as u32;
            u.key = key.as_ptr() as u64;
        }
        match bpf(bpf_cmd::BPF_MAP_DELETE_ELEM, &mut attr) {
            // An LRU map may have evicted it meanwhile.
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
