"""Events and feature matrices built across a Dask cluster: one task per trace file, each returning an Arrow table.

A feature row takes the events of its own pid and tid, and its context columns (`direct`, `sequential`) the earlier
calls of its own pid, so files can be built apart as long as no process has calls in two of them; DataCrumbs and
DFTracer write one file per process, where that holds, and a Darshan log's processes are its own (its pids are MPI
ranks, from 0 in every log). Where it does not, the files that share a process are built
together in one task (`on_overlap="group"`), or the build refuses, naming the pair (`on_overlap="raise"`). The
result holds the rows and values of the single-process `datacrumbs.build_features` (and `dc-features build`) over
the same files, one partition per task in file order, instead of one global (ts, pid, tid) order. A file's names
resolve through its own metadata (`FH`, or inline names), as each per-process file carries them.

Partitions are pandas frames with pyarrow dtypes (`pandas.ArrowDtype`), so they keep the Arrow types exactly; the
layer metadata rides in each frame's `attrs`, which `datacrumbs.rank` reads.
"""

import json

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
from dask import delayed

from . import _api, _native
from ._api import METADATA_KEY, InputError

def _persist(client, objs):
    return list(client.persist(objs)) if client is not None else list(dask.persist(*objs))


def _compute(client, objs):
    return list(client.compute(objs, sync=True)) if client is not None else list(dask.compute(*objs))


def process_groups(files, client=None, time_unit=None, skip_invalid=False, on_overlap="group"):
    """`files` in groups that can be built apart, in file order: files where one pid has events are one group. With
    `on_overlap="raise"`, such a pair raises `InputError`, naming the pid and, where one of its threads is in both
    at overlapping times, that thread."""
    if on_overlap not in ("group", "raise"):
        raise InputError(f"on_overlap: `{on_overlap}` is neither `group` nor `raise`")
    task = delayed(_native.thread_spans, pure=True)
    spans = _compute(client, [task(f, time_unit, skip_invalid) for f in files])
    parent = list(range(len(files)))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    threads = {}
    first_file_of_pid = {}
    for i, file_spans in enumerate(spans):
        for pid in {pid for pid, _, _, _ in file_spans}:
            j = first_file_of_pid.setdefault(pid, i)
            if j == i:
                continue
            if on_overlap == "raise":
                raise InputError(f"{files[j]} and {files[i]}: {_shared(pid, threads, file_spans, j)}")
            parent[root(i)] = root(j)
        for pid, tid, first, last in file_spans:
            threads.setdefault((pid, tid), []).append((i, first, last))
    groups = {}
    for i, f in enumerate(files):
        groups.setdefault(root(i), []).append(f)
    return list(groups.values())


def _shared(pid, threads, file_spans, j):
    for p, tid, first, last in file_spans:
        for k, other_first, other_last in threads.get((p, tid), ()):
            if p == pid and k == j and first <= other_last and other_first <= last:
                return f"pid {pid} tid {tid} has events in both at overlapping times"
    return f"pid {pid} has calls in both, and a call's context columns depend on the earlier calls of its process"


def _build_group(files, options):
    return _native.build_features(files, *options)


def _read_file(file, time_unit, skip_invalid):
    return _native.read_trace([file], time_unit, skip_invalid, 1)


def _summary(built):
    table, skipped = built
    return _api._metadata_text(table), table.schema, skipped


def _skipped(built):
    return built[1]


def _warn_skipped(skipped):
    for count_examples in skipped:
        _api._warn_skipped(count_examples)


def _union(metadatas):
    """The layer metadata of the matrix of every part: each part's feature columns, once, in the matrix's order
    (kind by kind, in the order the parts give the kinds, then by layer and name)."""
    kinds = []
    for meta in metadatas:
        previous = -1
        for f in meta["features"]:
            if f["kind"] not in kinds:
                kinds.insert(previous + 1, f["kind"])
            previous = kinds.index(f["kind"])
    columns = {}
    for meta in metadatas:
        for f in meta["features"]:
            columns.setdefault(f["column"], f)
    union = dict(metadatas[0])
    union["features"] = sorted(columns.values(), key=lambda f: (kinds.index(f["kind"]), f["layer"], f["name"]))
    return union


def _feature_frame(built, union_text):
    """One part as a frame of the whole matrix's columns: a feature no event of the part has is 0 ns there, as in
    the single-process build."""
    table, _ = built
    union = json.loads(union_text)
    own = {f["column"] for f in json.loads(_api._metadata_text(table))["features"]}
    names = [n for n in table.column_names if n not in own]
    arrays = [table[n] for n in names]
    zeros = None
    for f in union["features"]:
        names.append(f["column"])
        if f["column"] in table.column_names:
            arrays.append(table[f["column"]])
        else:
            zeros = zeros if zeros is not None else pa.array(np.zeros(table.num_rows))
            arrays.append(zeros)
    frame = pa.Table.from_arrays(arrays, names=names).to_pandas(types_mapper=pd.ArrowDtype)
    frame.attrs[METADATA_KEY] = union_text
    return frame


def build_features(
    paths,
    client=None,
    ops=None,
    counts=False,
    file_regex=None,
    row_layers=None,
    time_unit=None,
    skip_invalid=False,
    on_overlap="group",
):
    """`datacrumbs.build_features` over a Dask cluster (`client`, or Dask's current scheduler): a dask DataFrame.

    The per-file tables are built and kept on the workers first (their columns make the frame's columns); the
    frame's partitions are those tables with the columns of the whole matrix.
    """
    files = _api.paths_of(paths)
    groups = process_groups(files, client, time_unit, skip_invalid, on_overlap)
    options = (ops, counts, file_regex, "exact", row_layers, time_unit, skip_invalid, 1)
    built = _persist(client, [delayed(_build_group)(g, options) for g in groups])
    summaries = _compute(client, [delayed(_summary)(b) for b in built])
    _warn_skipped(s for _, _, s in summaries)
    union_text = json.dumps(_union([json.loads(m) for m, _, _ in summaries]))
    meta = _feature_frame((summaries[0][1].empty_table(), None), union_text)
    parts = [delayed(_feature_frame)(b, union_text) for b in built]
    return dd.from_delayed(parts, meta=meta, verify_meta=False)


def _event_frame(built):
    table, _ = built
    return table.to_pandas(types_mapper=pd.ArrowDtype)


def read_trace(paths, client=None, time_unit=None, skip_invalid=False):
    """`datacrumbs.read_trace` over a Dask cluster: a dask DataFrame with one partition per file, in file order.

    An event row depends on no other file, so no file needs another's task.
    """
    files = _api.paths_of(paths)
    built = _persist(client, [delayed(_read_file)(f, time_unit, skip_invalid) for f in files])
    _warn_skipped(_compute(client, [delayed(_skipped)(b) for b in built]))
    meta = _native.event_table_schema().empty_table().to_pandas(types_mapper=pd.ArrowDtype)
    return dd.from_delayed([delayed(_event_frame)(b) for b in built], meta=meta, verify_meta=False)
