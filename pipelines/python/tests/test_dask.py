"""Builds across a Dask LocalCluster (2 worker processes) against `dc-features build` over the same files."""

import json
from collections import Counter

import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import PER_PROCESS_FILES, run_tool

import datacrumbs
import datacrumbs.dask

ROW_ORDER = ["ts", "pid", "tid"]


def _sorted(frame):
    return frame.sort_values(ROW_ORDER, kind="stable").reset_index(drop=True)


def _cli_matrix(files, out, *options):
    code, err = run_tool("dc-features", "build", *files, *options, "-o", out)
    assert code == 0, err
    table = pq.read_table(out)
    footer = pq.read_metadata(out).metadata
    return table.to_pandas(types_mapper=pd.ArrowDtype), footer[b"datacrumbs.features"].decode()


def test_48_per_process_files_build_as_dc_features(per_process_traces, case_read_simple, client, tmp_path):
    assert len(per_process_traces) == PER_PROCESS_FILES
    cats = Counter(json.loads(line)["cat"] for f in per_process_traces for line in open(f) if line.startswith("{"))
    assert cats["POSIX"] > 0 and cats["sys"] == 0, cats
    expected, meta = _cli_matrix(per_process_traces, tmp_path / "cli.parquet", "--counts")
    built = datacrumbs.dask.build_features(per_process_traces, client, counts=True)
    assert built.npartitions == PER_PROCESS_FILES
    frame = built.compute()
    assert len(expected) > PER_PROCESS_FILES
    assert list(frame.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(_sorted(frame), expected, check_exact=True)
    assert json.loads(frame.attrs[datacrumbs.METADATA_KEY]) == json.loads(meta)
    assert frame["pid"].nunique() == PER_PROCESS_FILES
    # The cut kept every system call of the original trace, with its size.
    original = datacrumbs.build_features(case_read_simple).to_pandas(types_mapper=pd.ArrowDtype)
    calls = ["op", "ts", "dur", "file", "size", "bandwidth"]
    pd.testing.assert_frame_equal(expected[calls], original[calls], check_exact=True)
    assert expected["bandwidth"].notna().sum() > len(expected) / 2


def test_read_trace_per_file_is_the_single_read(per_process_traces, client):
    files = per_process_traces[:6]
    events = datacrumbs.dask.read_trace(files, client)
    assert events.npartitions == len(files)
    single = datacrumbs.read_trace(files).to_pandas(types_mapper=pd.ArrowDtype)
    pd.testing.assert_frame_equal(events.compute().reset_index(drop=True), single, check_exact=True)


def _event(name, cat, ts, dur, pid=7, **args):
    return json.dumps(
        {"name": name, "cat": cat, "pid": pid, "tid": pid, "ts": ts, "dur": dur, "ph": "X", "args": args}
    )


def _write(path, *events):
    path.write_text("[\n" + "\n".join(events) + "\n")
    return str(path)


@pytest.fixture
def thread_in_two_files(tmp_path):
    """Thread 7 of process 7 in two files: a read in the first, and a VFS event 30 µs long inside it in the second."""
    return [
        _write(tmp_path / "a.pfw", _event("read", "sys", 100, 100, size=4096, fname="/data/x")),
        _write(tmp_path / "b.pfw", _event("vfs_read", "vfs", 120, 30)),
    ]


def test_a_thread_spanning_files_is_built_in_one_task(thread_in_two_files, client, tmp_path):
    expected, _ = _cli_matrix(thread_in_two_files, tmp_path / "cli.parquet")
    assert expected["vfs::vfs_read"].tolist() == [30_000.0]
    built = datacrumbs.dask.build_features(thread_in_two_files, client)
    assert built.npartitions == 1
    pd.testing.assert_frame_equal(_sorted(built.compute()), expected, check_exact=True)


def test_a_thread_spanning_files_can_be_refused(thread_in_two_files, client):
    first, second = thread_in_two_files
    with pytest.raises(datacrumbs.InputError, match=f"{first} and {second}: pid 7 tid 7 has events in both"):
        datacrumbs.dask.build_features(thread_in_two_files, client, on_overlap="raise")


def test_a_process_in_two_files_is_built_in_one_task(tmp_path, client):
    """The second read continues the first one's file on the same process, in another file and later: its
    `sequential` context needs the first file."""
    files = [
        _write(tmp_path / "a.pfw", _event("read", "sys", 100, 100, size=4096, offset=0, fname="/data/x")),
        _write(tmp_path / "b.pfw", _event("read", "sys", 300, 100, size=4096, offset=4096, fname="/data/x")),
    ]
    expected, _ = _cli_matrix(files, tmp_path / "cli.parquet")
    assert expected["sequential"].tolist()[1] is True
    built = datacrumbs.dask.build_features(files, client)
    assert built.npartitions == 1
    pd.testing.assert_frame_equal(_sorted(built.compute()), expected, check_exact=True)
    with pytest.raises(datacrumbs.InputError, match="pid 7 has calls in both"):
        datacrumbs.dask.build_features(files, client, on_overlap="raise")


def test_processes_in_two_files_are_built_apart(tmp_path, client):
    files = [
        _write(tmp_path / "a.pfw", _event("read", "sys", 100, 100, size=4096), _event("vfs_read", "vfs", 120, 30)),
        _write(tmp_path / "b.pfw", _event("write", "sys", 110, 50, 8, size=512), _event("vfs_write", "vfs", 120, 20, 8)),
    ]
    expected, _ = _cli_matrix(files, tmp_path / "cli.parquet")
    built = datacrumbs.dask.build_features(files, client)
    assert built.npartitions == 2
    frame = _sorted(built.compute())
    pd.testing.assert_frame_equal(frame, expected, check_exact=True)
    assert frame["vfs::vfs_read"].tolist() == [30_000.0, 0.0]
    assert frame["vfs::vfs_write"].tolist() == [0.0, 20_000.0]
