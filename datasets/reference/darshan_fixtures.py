#!/usr/bin/env python3
"""Dumps what PyDarshan (libdarshan-util) reads from each Darshan sample log into a JSON fixture.

The Rust reader (datasets::formats::darshan) is compared against these files exactly: job, exe,
mounts, name records, module versions and partial flags, every POSIX, MPI-IO and STDIO counter,
and every DXT POSIX and MPI-IO segment with its thread id.

It also writes bzip2.darshan: the 3.4.1 sample with its regions recompressed as bzip2, as Darshan's
bzip2 writer does (the samples are all zlib). PyDarshan's wheel is built without bzip2, so the test
holds the Rust reader's view of this copy to the 3.4.1 sample's fixture.

Usage: /opt/datacrumbs-venv/bin/python datasets/reference/darshan_fixtures.py \
           datasets/fixtures/darshan datasets/tests/data/darshan
"""

import bz2
import glob
import gzip
import json
import os
import struct
import sys
import zlib

from darshan.backend import cffi_backend as b

COUNTER_MODULES = ["POSIX", "MPI-IO", "STDIO"]
DXT_MODULES = ["DXT_POSIX", "DXT_MPIIO"]


def dxt_records(log, mod, ver):
    """PyDarshan's log_get_dxt_record, plus each segment's pthread id where the format has one."""
    has_thread = (mod == "DXT_POSIX" and ver >= 2) or (mod == "DXT_MPIIO" and ver >= 3)
    idx = b.log_get_modules(log)[mod]["idx"]
    out = []
    while True:
        buf = b.ffi.new("void **")
        if b.libdutil.darshan_log_get_record(log["handle"], idx, buf) < 1:
            return out
        rec = b.ffi.cast("struct dxt_file_record **", buf)[0]
        segs = b.ffi.cast("struct segment_info *", buf[0] + b.ffi.sizeof("struct dxt_file_record"))

        def seg(i):
            s = segs[i]
            return [s.offset, s.length, s.start_time, s.end_time, s.pthread_id if has_thread else None]

        w, r = rec.write_count, rec.read_count
        out.append({
            "id": rec.base_rec.id,
            "rank": rec.base_rec.rank,
            "hostname": b.ffi.string(rec.hostname).decode("utf-8", "replace"),
            "write_segments": [seg(i) for i in range(w)],
            "read_segments": [seg(w + i) for i in range(r)],
        })
        b.libdutil.darshan_free(buf[0])


def dump(path):
    log = b.log_open(path)
    mods = b.log_get_modules(log)
    job = b.log_get_job(log)
    del job["run_time"]
    out = {
        "log_ver": job.pop("log_ver"),
        "job": job,
        "exe": b.log_get_exe(log),
        "mounts": sorted([list(m) for m in b.log_get_mounts(log)]),
        "modules": {k: {"ver": v["ver"], "partial": v["partial_flag"]} for k, v in mods.items()},
        "names": {str(k): v for k, v in sorted(b.log_get_name_records(log).items())},
        "records": {},
        "dxt": {},
    }
    for mod in COUNTER_MODULES:
        if mod not in mods:
            continue
        recs = []
        while (r := b.log_get_generic_record(log, mod, dtype="dict")) is not None:
            recs.append({
                "id": r["id"],
                "rank": r["rank"],
                "counters": {k: int(v) for k, v in r["counters"].items()},
                "fcounters": {k: float(v) for k, v in r["fcounters"].items()},
            })
        out["records"][mod] = recs
    for mod in DXT_MODULES:
        if mod in mods:
            out["dxt"][mod] = dxt_records(log, mod, mods[mod]["ver"])
    b.log_close(log)
    return out


def recompress_bzip2(src, dst):
    """Rewrites a 3.41 log's job, name and module regions as bzip2 streams (comp_type 1)."""
    data = bytearray(open(src, "rb").read())
    assert data[:4] == b"3.41" and data[16] == 0
    maps = [struct.unpack_from("<QQ", data, 32 + 16 * i) for i in range(65)]
    header_len = 1328
    job_end = min(off for off, n in maps if n) if any(n for _, n in maps) else len(data)
    regions = [(header_len, job_end - header_len)] + list(maps)
    out = bytearray(data[:header_len])
    out[16] = 1
    new_maps = []
    for i, (off, n) in enumerate(regions):
        if n == 0:
            new_maps.append((0, 0))
            continue
        text = b""
        rest = bytes(data[off:off + n])
        while rest:
            d = zlib.decompressobj()
            text += d.decompress(rest)
            rest = d.unused_data
        new_maps.append((len(out), 0))
        packed = bz2.compress(text, 9)
        out += packed
        new_maps[-1] = (new_maps[-1][0], len(packed))
    for i, (off, n) in enumerate(new_maps[1:]):
        struct.pack_into("<QQ", out, 32 + 16 * i, off, n)
    open(dst, "wb").write(out)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    samples = sorted(glob.glob(os.path.join(src, "*.darshan")))
    for path in samples:
        name = os.path.basename(path)
        with gzip.GzipFile(os.path.join(dst, name + ".json.gz"), "wb", mtime=0) as f:
            f.write(json.dumps(dump(path), sort_keys=True).encode())
        print(name)
    bz = os.path.join(dst, "bzip2.darshan")
    original = os.path.join(src, "mpi-io-test-x86_64-3.4.1.darshan")
    recompress_bzip2(original, bz)
    print("bzip2.darshan")


if __name__ == "__main__":
    main()
