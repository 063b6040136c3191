"""Fixtures: the shared real traces, the `dc-*` tools as the oracle, per-process trace files and a Dask cluster."""

import json
import os
import subprocess
from pathlib import Path

import distributed
import pyarrow.compute as pc
import pytest

import datacrumbs

ROOT = Path(__file__).resolve().parents[3]
TRACES = ROOT / "datasets" / "fixtures"
CASE_READ_SIMPLE = TRACES / "datacrumbs" / "case-read-simple.trace.pfw.gz"
PER_PROCESS_FILES = 48


def tool(name):
    """A `dc-*` binary of this checkout's release build (scripts/test.sh builds them before pytest runs)."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    path = target / "release" / name
    if not path.is_file():
        raise FileNotFoundError(f"{path}: build it first (cargo build --release -p features -p models)")
    return str(path)


def run_tool(name, *args):
    """Runs a `dc-*` tool; returns (exit code, stderr)."""
    done = subprocess.run([tool(name), *map(str, args)], capture_output=True, text=True)
    return done.returncode, done.stderr


@pytest.fixture(scope="session")
def case_read_simple():
    return str(CASE_READ_SIMPLE)


def _dftracer_line(e, pid):
    """One event as DFTracer writes it: every field a JSON string, names inline in args."""
    args = {"hostname": e["hostname"]} if e["hostname"] else {}
    if e["fname"] is not None:
        args["fname"] = e["fname"]
    other = json.loads(e["args"]) if e["args"] else {}
    # DataCrumbs' `size_sum` is the call's size, which DFTracer writes as `size`.
    if e["size"] is None and "size_sum" in other:
        e["size"] = other.pop("size_sum")
    for key in ("size", "ret", "offset"):
        if e[key] is not None:
            args[key] = str(e[key])
    args.update((key, str(value)) for key, value in other.items())
    line = {
        "name": e["name"],
        # DFTracer files system calls under POSIX.
        "cat": "POSIX" if e["cat"] == "sys" else e["cat"],
        "pid": str(pid),
        "tid": str(pid),
        "ts": str(e["ts_ns"] // 1000),
        "dur": str(e["dur_ns"] // 1000),
        "ph": e["ph"],
        "args": args,
    }
    return json.dumps(line)


@pytest.fixture(scope="session")
def per_process_traces(tmp_path_factory):
    """The real DataCrumbs trace cut into 48 per-process DFTracer-style files (system calls as POSIX calls).

    The trace is one process; each file takes a run of its system calls (cut where no call is in progress), every
    event that starts in that run, and a pid of its own, as DFTracer writes one file per process.
    """
    events = datacrumbs.read_trace(str(CASE_READ_SIMPLE)).filter(pc.field("ph") == "X")
    events = events.sort_by([("ts_ns", "ascending")])
    sys_calls = events.filter(pc.field("cat") == "sys")
    starts = sys_calls["ts_ns"].to_pylist()
    ends = pc.add(sys_calls["ts_ns"], sys_calls["dur_ns"]).to_pylist()
    step = len(starts) // PER_PROCESS_FILES
    cuts = []
    for k in range(1, PER_PROCESS_FILES):
        i = k * step
        while max(ends[:i]) > starts[i]:
            i += 1
        cuts.append(starts[i])
    directory = tmp_path_factory.mktemp("per-process")
    files = [directory / f"trace-{k:02}.pfw" for k in range(PER_PROCESS_FILES)]
    outs = [open(f, "w") for f in files]
    for out in outs:
        out.write("[\n")
    k = 0
    for e in events.to_pylist():
        while k < len(cuts) and e["ts_ns"] >= cuts[k]:
            k += 1
        outs[k].write(_dftracer_line(e, 1000 + k) + "\n")
    for out in outs:
        out.close()
    return [str(f) for f in files]


@pytest.fixture(scope="session")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster:
        with distributed.Client(cluster) as c:
            yield c
