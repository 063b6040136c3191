"""Names and processes belong to the file that defined them: a cm1-style set of DFTracer files, several processes each,
whose `FH` values collide on purpose across files and processes, and Darshan logs, whose ranks are pids from 0 in every
log, built by Dask as by `dc-features build`."""

import json

import pandas as pd
import pyarrow.parquet as pq
from conftest import TRACES, run_tool

import datacrumbs
import datacrumbs.dask

FILES = 4
PIDS_PER_FILE = 3
# DFTracer's FH values are small integers; every process of every file uses these two for its own files.
SHARED_FH = (19179, 7)
ROW_ORDER = ["ts", "pid", "tid"]


def _names(f, p):
    return {19179: f"/dev/shm/ucx_shm_posix_{f}_{p}", 7: f"cm1out_{f:06}_{p:06}_w.dat"}


def _cm1_like(directory):
    """Writes the set; returns the files and, per pid, the names its FH values stand for."""
    files, names_of_pid = [], {}
    for f in range(FILES):
        lines = ["["]
        for p in range(PIDS_PER_FILE):
            pid = 3537781 + 10 * f + p
            names = _names(f, p)
            names_of_pid[pid] = names
            ts = 1_000_000 + 1_000 * p
            for value, name in names.items():
                meta = {"name": "FH", "cat": "dftracer", "pid": str(pid), "tid": str(pid), "ph": "M"}
                lines.append(json.dumps({**meta, "args": {"name": name, "value": str(value)}}))
            for k, (op, fh) in enumerate([("open64", 19179), ("write", 7), ("read", 19179), ("write", 7)]):
                args = {"fhash": str(fh), "size": "4096", "offset": str(4096 * k)}
                if op == "open64":
                    args = {"fhash": str(fh), "flags": "66"}
                event = {"id": str(k), "name": op, "cat": "POSIX", "pid": str(pid), "tid": str(pid)}
                lines.append(json.dumps({**event, "ts": str(ts + 100 * k), "dur": "40", "ph": "X", "args": args}))
        path = directory / f"cm1-{f}.pfw"
        path.write_text("\n".join(lines) + "\n")
        files.append(str(path))
    return files, names_of_pid


def test_dask_build_of_colliding_file_hashes_is_the_cli_build(client, tmp_path):
    files, names_of_pid = _cm1_like(tmp_path)
    out = tmp_path / "cli.parquet"
    code, err = run_tool("dc-features", "build", *files, "-o", out)
    assert code == 0, err
    expected = pq.read_table(out).to_pandas(types_mapper=pd.ArrowDtype)
    assert len(expected) == FILES * PIDS_PER_FILE * 4
    # Every row names the file its own process's FH event gave its hash.
    ops = [("open64", 19179), ("write", 7), ("read", 19179), ("write", 7)]
    for row in expected.itertuples():
        k = (row.ts // 1000 - 1_000_000 - 1_000 * ((row.pid - 3537781) % 10)) // 100
        assert row.op == ops[k][0]
        assert row.file == names_of_pid[row.pid][ops[k][1]], row
    built = datacrumbs.dask.build_features(files, client)
    frame = built.compute().sort_values(ROW_ORDER, kind="stable").reset_index(drop=True)
    assert list(frame.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(frame, expected, check_exact=True)


def test_dask_builds_each_darshan_log_apart_as_the_cli_builds_them_together(client, tmp_path):
    logs = sorted(str(p) for p in (TRACES / "darshan").glob("*.darshan"))
    # Every log has a rank 0, yet no log shares a process with another.
    assert datacrumbs.dask.process_groups(logs, client, on_overlap="raise") == [[log] for log in logs]
    out = tmp_path / "cli.parquet"
    code, err = run_tool("dc-features", "build", *logs, "-o", out)
    assert code == 0, err
    expected = pq.read_table(out).to_pandas(types_mapper=pd.ArrowDtype)
    assert len(expected) > 0
    key = ROW_ORDER + ["op", "dur"]
    assert not expected.duplicated(key).any()
    built = datacrumbs.dask.build_features(logs, client)
    frame = built.compute().sort_values(key, kind="stable").reset_index(drop=True)
    assert list(frame.columns) == list(expected.columns)
    expected = expected.sort_values(key, kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(frame, expected, check_exact=True)
