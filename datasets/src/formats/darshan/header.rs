//! The uncompressed header of a Darshan log and its compressed regions, read field by field in
//! the log's byte order.

use std::io::Read;

use super::log::{Compression, MAGIC, Result, fail};

/// Reads the `N` bytes of the header at `at`, or says where the file ends.
fn bytes<const N: usize>(data: &[u8], at: usize, field: &str) -> Result<[u8; N]> {
    match data.get(at..at + N) {
        Some(b) => Ok(b.try_into().expect("N bytes")),
        None => fail(
            data.len() as u64,
            field,
            format!("the file ends before this {N}-byte field at byte {at}"),
        ),
    }
}

/// Fixed-size fields in the log's byte order.
#[derive(Clone, Copy)]
pub(super) struct Order {
    pub(super) swap: bool,
}

impl Order {
    pub(super) fn u64(self, b: [u8; 8]) -> u64 {
        let v = u64::from_le_bytes(b);
        if self.swap { v.swap_bytes() } else { v }
    }
    fn i64(self, b: [u8; 8]) -> i64 {
        self.u64(b) as i64
    }
    fn f64(self, b: [u8; 8]) -> f64 {
        f64::from_bits(self.u64(b))
    }
    pub(super) fn u32(self, b: [u8; 4]) -> u32 {
        let v = u32::from_le_bytes(b);
        if self.swap { v.swap_bytes() } else { v }
    }
}

/// A region's decompressed bytes, read field by field; errors give the region's file offset
/// and the decompressed offset.
pub(super) struct Cursor<'a> {
    pub(super) data: &'a [u8],
    pub(super) pos: usize,
    pub(super) region: &'static str,
    pub(super) file_offset: u64,
    pub(super) order: Order,
}

impl Cursor<'_> {
    pub(super) fn err<T>(&self, field: &str, msg: String) -> Result<T> {
        fail(
            self.file_offset,
            field,
            format!(
                "{} (in the {} region, decompressed byte {})",
                msg, self.region, self.pos
            ),
        )
    }
    pub(super) fn take<const N: usize>(&mut self, field: &str) -> Result<[u8; N]> {
        match self.data.get(self.pos..self.pos + N) {
            Some(b) => {
                self.pos += N;
                Ok(b.try_into().expect("N bytes"))
            }
            None => self.err(
                field,
                format!("needs {N} bytes, {} left", self.data.len() - self.pos),
            ),
        }
    }
    pub(super) fn u64(&mut self, field: &str) -> Result<u64> {
        Ok(self.order.u64(self.take(field)?))
    }
    pub(super) fn i64(&mut self, field: &str) -> Result<i64> {
        Ok(self.order.i64(self.take(field)?))
    }
    pub(super) fn f64(&mut self, field: &str) -> Result<f64> {
        Ok(self.order.f64(self.take(field)?))
    }
    pub(super) fn left(&self) -> usize {
        self.data.len() - self.pos
    }
}

pub(super) struct Header {
    pub(super) version: String,
    pub(super) minor: u32,
    pub(super) order: Order,
    pub(super) compression: Compression,
    pub(super) partial: u64,
    /// (offset, length) of the job, name and 64 module regions.
    pub(super) job: (u64, u64),
    pub(super) names: (u64, u64),
    pub(super) mods: [(u64, u64); 64],
    pub(super) mod_ver: [u32; 64],
}

pub(super) fn header(data: &[u8]) -> Result<Header> {
    let v = bytes::<8>(data, 0, "version")?;
    let version: String = v
        .iter()
        .take_while(|&&b| b != 0)
        .map(|&b| b as char)
        .collect();
    let minor = match version.as_str() {
        "3.00" => 0,
        "3.10" => 10,
        "3.20" => 20,
        "3.21" => 21,
        "3.41" => 41,
        _ => {
            return fail(
                0,
                "version",
                format!(
                    "`{}` is not a Darshan 3 log format (3.00, 3.10, 3.20, 3.21, 3.41)",
                    version.escape_default()
                ),
            );
        }
    };
    let magic = bytes::<8>(data, 8, "magic_nr")?;
    let order = match i64::from_le_bytes(magic) {
        MAGIC => Order { swap: false },
        m if m.swap_bytes() == MAGIC => Order { swap: true },
        m => return fail(8, "magic_nr", format!("{m} is not Darshan's {MAGIC}")),
    };
    let compression = match bytes::<1>(data, 16, "comp_type")?[0] {
        0 => Compression::Zlib,
        1 => Compression::Bzip2,
        2 => Compression::None,
        c => return fail(16, "comp_type", format!("unknown compression {c}")),
    };
    // The 3.00 header has a 32-bit partial flag and room for 16 modules; 3.41 has 64.
    let (partial, maps_at, n_mods) = if minor >= 41 {
        (order.u64(bytes(data, 24, "partial_flag")?), 32, 64)
    } else {
        (
            u64::from(order.u32(bytes(data, 20, "partial_flag")?)),
            24,
            16,
        )
    };
    let map = |i: usize, field: &str| -> Result<(u64, u64)> {
        let at = maps_at + 16 * i;
        Ok((
            order.u64(bytes(data, at, field)?),
            order.u64(bytes(data, at + 8, field)?),
        ))
    };
    let names = map(0, "name_map")?;
    let mut mods = [(0, 0); 64];
    let mut mod_ver = [0; 64];
    let ver_at = maps_at + 16 * (n_mods + 1);
    for i in 0..n_mods {
        mods[i] = map(i + 1, "mod_map")?;
        mod_ver[i] = order.u32(bytes(data, ver_at + 4 * i, "mod_ver")?);
    }
    let header_len = (ver_at + 4 * n_mods) as u64;
    let mut partial = partial;
    // Modules added since moved the later indices up by one: H5D in 3.20, PNETCDF_VAR in 3.41.
    for (added_in, at) in [(20, 4), (41, 6)] {
        if minor < added_in {
            mods.copy_within(at..63, at + 1);
            mods[at] = (0, 0);
            mod_ver.copy_within(at..63, at + 1);
            mod_ver[at] = 0;
            partial = (partial & ((1 << at) - 1)) | (((partial << 1) >> (at + 1)) << (at + 1));
        }
    }
    let job_end = if names.0 != 0 {
        names.0
    } else {
        mods.iter()
            .find(|m| m.0 != 0)
            .map_or(data.len() as u64, |m| m.0)
    };
    if job_end < header_len {
        return fail(
            maps_at as u64,
            "name_map",
            format!(
                "the job region would end at byte {job_end}, inside the {header_len}-byte header"
            ),
        );
    }
    Ok(Header {
        version,
        minor,
        order,
        compression,
        partial,
        job: (header_len, job_end - header_len),
        names,
        mods,
        mod_ver,
    })
}

/// A region's bytes, decompressed.
pub(super) fn region(
    data: &[u8],
    (off, len): (u64, u64),
    how: Compression,
    name: &str,
) -> Result<Vec<u8>> {
    let end = off.checked_add(len).filter(|&e| e <= data.len() as u64);
    let Some(end) = end else {
        return fail(
            off.min(data.len() as u64),
            name,
            format!(
                "region of {len} bytes at byte {off} runs past the end of the {}-byte file",
                data.len()
            ),
        );
    };
    let raw = &data[off as usize..end as usize];
    let mut out = Vec::new();
    match how {
        Compression::None => out.extend_from_slice(raw),
        Compression::Bzip2 => {
            if let Err(e) = bzip2::read::MultiBzDecoder::new(raw).read_to_end(&mut out) {
                return fail(off, name, format!("bzip2 data does not decompress: {e}"));
            }
        }
        Compression::Zlib => {
            // The runtime may write a region as several zlib streams, one after the other.
            let mut rest = raw;
            while !rest.is_empty() {
                let at = off + (raw.len() - rest.len()) as u64;
                let mut z = flate2::bufread::ZlibDecoder::new(rest);
                if let Err(e) = z.read_to_end(&mut out) {
                    return fail(at, name, format!("zlib data does not inflate: {e}"));
                }
                let next = z.into_inner();
                if next.len() == rest.len() {
                    return fail(at, name, "zlib stream of no bytes");
                }
                rest = next;
            }
        }
    }
    Ok(out)
}
