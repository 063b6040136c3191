//! Darshan logs (`.darshan`, log format 3.00 to 3.41), read natively.
//!
//! The layout is darshan's `include/darshan-log-format.h`: an uncompressed header (version
//! string, magic number, compression type, partial flags, and the offset and length of the job,
//! name and module regions), then each region compressed on its own (zlib or bzip2, possibly
//! several streams one after the other). Older logs are read as libdarshan-util reads them: the
//! 3.00 header and name records, the module index shifts of 3.20 and 3.41, and old record
//! versions up-converted counter by counter ([`counters::layout`]). Either byte order is read.

mod counters;
mod events;
mod header;
mod log;

use std::collections::BTreeMap;

use counters::{CounterModule, Layout};
pub use events::events;
use header::{Cursor, Header, header, region};
pub use log::{
    Compression, CounterRecord, DarshanError, DxtRecord, Job, Log, Module, Mount, Segment,
};
use log::{MAGIC, Result, fail};

/// libdarshan reads at most this much of the job region: the job record, exe and mount table.
const JOB_RECORD_SIZE: usize = 4096;
const METADATA_LEN: usize = 1024;
const DXT_POSIX: usize = 10;
const DXT_MPIIO: usize = 11;
/// Module names by index, as `DARSHAN_MODULE_IDS` lists them.
const MODULE_NAMES: [&str; 18] = [
    "NULL",
    "POSIX",
    "MPI-IO",
    "H5F",
    "H5D",
    "PNETCDF_FILE",
    "PNETCDF_VAR",
    "BG/Q",
    "LUSTRE",
    "STDIO",
    "DXT_POSIX",
    "DXT_MPIIO",
    "MDHIM",
    "APXC",
    "APMPI",
    "HEATMAP",
    "DFS",
    "DAOS",
];

fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

fn job(h: &Header, data: &[u8]) -> Result<(Job, String, Vec<Mount>)> {
    let buf = region(data, h.job, h.compression, "job")?;
    let buf = &buf[..buf.len().min(JOB_RECORD_SIZE)];
    let mut c = Cursor {
        data: buf,
        pos: 0,
        region: "job",
        file_offset: h.job.0,
        order: h.order,
    };
    // 3.41 added the nanoseconds of the start and end times.
    let nsec = h.minor >= 41;
    let uid = c.i64("uid")?;
    let start_time_sec = c.i64("start_time_sec")?;
    let start_time_nsec = if nsec { c.i64("start_time_nsec")? } else { 0 };
    let end_time_sec = c.i64("end_time_sec")?;
    let end_time_nsec = if nsec { c.i64("end_time_nsec")? } else { 0 };
    let nprocs = c.i64("nprocs")?;
    let jobid = c.i64("jobid")?;
    let meta: [u8; METADATA_LEN] = c.take("metadata")?;
    let mut metadata = Vec::new();
    let text = c_string(&meta);
    let mut lines: Vec<&str> = text.split('\n').collect();
    lines.pop();
    for line in lines {
        let Some((k, v)) = line.split_once('=') else {
            return c.err(
                "metadata",
                format!("line `{}` has no `=`", line.escape_default()),
            );
        };
        metadata.push((k.to_owned(), v.to_owned()));
    }
    let trailing = c_string(&buf[c.pos..]);
    let mut parts = trailing.split('\n');
    let exe = parts.next().unwrap_or_default().to_owned();
    let mut mounts = Vec::new();
    for line in parts {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some(t), Some(p)) => mounts.push(Mount {
                path: p.to_owned(),
                fs_type: t.to_owned(),
            }),
            _ => {
                return c.err(
                    "mounts",
                    format!(
                        "mount line `{}` is not `type<TAB>path`",
                        line.escape_default()
                    ),
                );
            }
        }
    }
    let job = Job {
        uid,
        start_time_sec,
        start_time_nsec,
        end_time_sec,
        end_time_nsec,
        nprocs,
        jobid,
        metadata,
    };
    Ok((job, exe, mounts))
}

fn names(h: &Header, data: &[u8]) -> Result<BTreeMap<u64, String>> {
    let mut out = BTreeMap::new();
    if h.names.1 == 0 {
        return Ok(out);
    }
    let buf = region(data, h.names, h.compression, "name")?;
    let mut c = Cursor {
        data: &buf,
        pos: 0,
        region: "name",
        file_offset: h.names.0,
        order: h.order,
    };
    while c.left() > 0 {
        let id = c.u64("name record id")?;
        let name = if h.minor == 0 {
            // 3.00: a 32-bit length, then the name without a terminator.
            let len = h.order.u32(c.take("name record length")?) as usize;
            if c.left() < len {
                return c.err(
                    "name record",
                    format!("name of {len} bytes, {} left", c.left()),
                );
            }
            c.pos += len;
            String::from_utf8_lossy(&buf[c.pos - len..c.pos]).into_owned()
        } else {
            let Some(len) = buf[c.pos..].iter().position(|&b| b == 0) else {
                return c.err("name record", "name without a terminating NUL".into());
            };
            c.pos += len + 1;
            String::from_utf8_lossy(&buf[c.pos - len - 1..c.pos - 1]).into_owned()
        };
        // libdarshan keeps the first name of an id, unless that one was empty.
        let slot = out.entry(id).or_insert_with(String::new);
        if slot.is_empty() {
            *slot = name;
        }
    }
    Ok(out)
}

fn counter_records(
    h: &Header,
    data: &[u8],
    m: &'static CounterModule,
    layout: &Layout,
    out: &mut Vec<CounterRecord>,
) -> Result<()> {
    let buf = region(data, h.mods[m.index], h.compression, m.name)?;
    let mut c = Cursor {
        data: &buf,
        pos: 0,
        region: m.name,
        file_offset: h.mods[m.index].0,
        order: h.order,
    };
    if buf.len() % layout.record_size() != 0 {
        c.pos = buf.len() - buf.len() % layout.record_size();
        return c.err(
            "record",
            format!(
                "{} bytes do not make whole {}-byte records",
                buf.len(),
                layout.record_size()
            ),
        );
    }
    while c.left() > 0 {
        let id = c.u64("id")?;
        let rank = c.i64("rank")?;
        let mut counters = vec![0; m.counters.len()];
        let mut fcounters = vec![0.0; m.fcounters.len()];
        let mut dropped = false;
        for (i, slot) in layout.ints.iter().enumerate() {
            let v = c.i64("counters")?;
            match slot {
                Some(j) => counters[*j] = v,
                None => dropped |= layout.drop_if_nonzero == Some(i) && v > 0,
            }
        }
        for &j in &layout.floats {
            fcounters[j] = c.f64("fcounters")?;
        }
        if dropped {
            continue;
        }
        for &(j, v) in &layout.int_defaults {
            counters[j] = v;
        }
        for &(j, v) in &layout.float_defaults {
            fcounters[j] = v;
        }
        for &j in &layout.zeroed {
            fcounters[j] = 0.0;
        }
        out.push(CounterRecord {
            module: m.name,
            id,
            rank,
            counters: m.counters.iter().copied().zip(counters).collect(),
            fcounters: m.fcounters.iter().copied().zip(fcounters).collect(),
        });
    }
    Ok(())
}

fn dxt_records(h: &Header, data: &[u8], index: usize, out: &mut Vec<DxtRecord>) -> Result<()> {
    let module = MODULE_NAMES[index];
    let version = h.mod_ver[index];
    // The pthread id joined the segment in DXT POSIX 2 and DXT MPI-IO 3.
    let threads = version >= if index == DXT_POSIX { 2 } else { 3 };
    let buf = region(data, h.mods[index], h.compression, module)?;
    let mut c = Cursor {
        data: &buf,
        pos: 0,
        region: module,
        file_offset: h.mods[index].0,
        order: h.order,
    };
    while c.left() > 0 {
        let id = c.u64("id")?;
        let rank = c.i64("rank")?;
        c.i64("shared_record")?;
        let hostname = c_string(&c.take::<64>("hostname")?);
        let writes = c.i64("write_count")?;
        let reads = c.i64("read_count")?;
        let seg_size = if threads { 40 } else { 32 };
        let n = u64::try_from(writes)
            .ok()
            .zip(u64::try_from(reads).ok())
            .and_then(|(w, r)| w.checked_add(r))
            .filter(|&n| n.saturating_mul(seg_size) <= c.left() as u64);
        let Some(n) = n else {
            return c.err(
                "write_count",
                format!(
                    "{writes} writes and {reads} reads do not fit in the {} bytes left",
                    c.left()
                ),
            );
        };
        let mut segs = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let mut offset = c.i64("offset")?;
            if index == DXT_MPIIO && version == 1 {
                offset = -1;
            }
            segs.push(Segment {
                offset,
                length: c.i64("length")?,
                start: c.f64("start_time")?,
                end: c.f64("end_time")?,
                thread: if threads {
                    Some(c.u64("pthread_id")?)
                } else {
                    None
                },
            });
        }
        let reads = segs.split_off(writes as usize);
        out.push(DxtRecord {
            module,
            id,
            rank,
            hostname,
            writes: segs,
            reads,
        });
    }
    Ok(())
}

/// Whether `head` (the first bytes of a file) is a Darshan 3 log header.
pub fn sniff(head: &[u8]) -> bool {
    head.len() >= 16
        && head.starts_with(b"3.")
        && matches!(i64::from_le_bytes(head[8..16].try_into().expect("8 bytes")), m if m == MAGIC || m.swap_bytes() == MAGIC)
}

/// Reads a whole log.
pub fn read(data: &[u8]) -> Result<Log> {
    let h = header(data)?;
    let (job, exe, mounts) = job(&h, data)?;
    let names = names(&h, data)?;
    let mut modules = Vec::new();
    let mut records = Vec::new();
    let mut dxt = Vec::new();
    for (index, &(_, len)) in h.mods.iter().enumerate() {
        if len == 0 {
            continue;
        }
        let version = h.mod_ver[index];
        let counter_module = [&counters::POSIX, &counters::MPIIO, &counters::STDIO]
            .into_iter()
            .find(|m| m.index == index);
        let read = if let Some(m) = counter_module {
            let Some(layout) = counters::layout(m, version) else {
                return fail(
                    0,
                    "mod_ver",
                    format!(
                        "{} record version {version} is not one libdarshan reads",
                        m.name
                    ),
                );
            };
            counter_records(&h, data, m, &layout, &mut records)?;
            true
        } else if index == DXT_POSIX || index == DXT_MPIIO {
            let newest = if index == DXT_POSIX { 2 } else { 3 };
            if version == 0 || version > newest {
                return fail(
                    0,
                    "mod_ver",
                    format!(
                        "{} version {version} is newer than {newest}",
                        MODULE_NAMES[index]
                    ),
                );
            }
            dxt_records(&h, data, index, &mut dxt)?;
            true
        } else {
            false
        };
        modules.push(Module {
            index,
            name: MODULE_NAMES.get(index).copied(),
            version,
            partial: h.partial & (1 << index) != 0,
            read,
        });
    }
    Ok(Log {
        version: h.version,
        compression: h.compression,
        job,
        exe,
        mounts,
        names,
        modules,
        records,
        dxt,
    })
}
