#!/usr/bin/env python3
"""Writes small KernMLOps tables with the schemas KernMLOps declares
(github.com/utcs-scea/KernMLOps, python/kernmlops/data_schema/: block_io.py BlockIOLatencyTable,
file_data.py FileDataTable, schema.py SystemInfoTable), as its collectors write them: one Parquet
file per table, Int64 columns and String ids. The values are made up; the test counts them.

Usage: /opt/datacrumbs-venv/bin/python datasets/reference/kernmlops_fixtures.py datasets/tests/data/kernmlops
"""

import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq

COLLECTION = "a1b2c3d4-0000-4000-8000-000000000001"


def block_io_latency():
    # Reads and writes (flags & 0xff: 0 read, 1 write; 0x800 is REQ_SYNC) on two devices.
    rows = []
    for i in range(40):
        write = i % 4 == 3
        rows.append({
            "cpu": i % 2,
            "device": 8388608 + (i % 2),
            "sector": 2048 + 8 * i,
            "segments": 1 + i % 3,
            "block_io_bytes": 4096 * (1 + i % 3),
            "ts_uptime_us": 5_000_000 + 250 * i,
            "block_latency_us": 120 + i,
            "block_io_latency_us": 100 + i,
            "block_io_flags": (1 | 0x800) if write else 0,
            "collection_id": COLLECTION,
        })
    schema = pa.schema([(k, pa.string() if k == "collection_id" else pa.int64()) for k in rows[0]])
    return pa.Table.from_pylist(rows, schema=schema)


def file_data():
    names = ["/data/train/img_0001.npy", "/data/train/lbl_0001.npy", "/tmp/log.json"]
    rows = []
    for i in range(12):
        rows.append({
            "cpu": i % 2,
            "pid": 4100 + i % 3,
            "tgid": 4100,
            "ts_uptime_us": 4_900_000 + 1000 * i,
            "file_inode": 131072 + i % 3,
            "file_size_bytes": [33554432, 8388608, 0][i % 3],
            "file_name": names[i % 3],
            "collection_id": COLLECTION,
        })
    types = {"file_name": pa.string(), "collection_id": pa.string()}
    schema = pa.schema([(k, types.get(k, pa.int64())) for k in rows[0]])
    return pa.Table.from_pylist(rows, schema=schema)


def system_info():
    row = {
        "collection_id": COLLECTION,
        "collection_pid": 4099,
        "benchmark_name": "redis",
        "uptime_sec": 4,
        "collection_time_sec": 30,
        "cores": 2,
    }
    types = {"collection_id": pa.string(), "benchmark_name": pa.string()}
    schema = pa.schema([(k, types.get(k, pa.int64())) for k in row])
    return pa.Table.from_pylist([row], schema=schema)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, table in [("block_io_latency", block_io_latency()), ("file_data", file_data()),
                        ("system_info", system_info())]:
        pq.write_table(table, os.path.join(out, f"{COLLECTION}.{name}.parquet"))
        print(name, table.num_rows)


if __name__ == "__main__":
    main()
