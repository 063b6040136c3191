"""DLIO's unet3d, small, traced by dc-trace and DFTracer at once: the readers' reads cover the generated files, and
the two tracers agree per file (pipelines/examples/dlio/side_by_side.py). Needs root and DLIO (scripts/setup.sh
--test); fails, never skips, without them."""

import importlib.util
import json
import os
import subprocess
from collections import defaultdict
from pathlib import Path

import datacrumbs

from conftest import ROOT, tool

EXAMPLE = ROOT / "pipelines" / "examples" / "dlio"
DLIO_VENV = Path(os.environ.get("DLIO_VENV", "/opt/datacrumbs-dlio"))
FILES, EPOCHS, READERS = 8, 2, 2
SCALE = [
    f"++workload.dataset.num_files_train={FILES}", "++workload.dataset.record_length=1048576",
    "++workload.dataset.record_length_stdev=262144", f"++workload.train.epochs={EPOCHS}",
    "++workload.train.computation_time=0.01", "++workload.reader.batch_size=2",
    f"++workload.reader.read_threads={READERS}",
]
# What dc-trace sees outside the data folder, which DLIO does not ask DFTracer to record: every kind the script
# explains (a call it cannot place is `other`, and fails the test).
EXPLAINED = {"no path", "/dev/shm", "DFTracer's trace", "programs and libraries", "DLIO's outputs", "system files",
             "temporary files"}


def side_by_side():
    spec = importlib.util.spec_from_file_location("side_by_side", EXAMPLE / "side_by_side.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def traced(phase, data, out):
    """dlio.sh PHASE under dc-trace (sys layer), DFTracer on; returns dc-trace's trace."""
    trace = out.parent / f"{phase}.pfw.gz"
    argv = [tool("dc-trace"), "collect", "-o", trace, "--layers", "sys", "--",
            EXAMPLE / "dlio.sh", phase, data, out, *SCALE]
    done = subprocess.run(list(map(str, argv)), capture_output=True, text=True)
    assert done.returncode == 0, f"{phase} failed ({done.returncode}):\n{done.stderr[-3000:]}"
    return trace


def read_coverage(events, data_dir):
    """{file: [(pid, bytes covered, highest byte covered + 1) for each open]} of the data files, the file position
    followed through openat, lseek and read as the kernel keeps it (dc-trace records no offset for read)."""
    fds, out = {}, defaultdict(list)
    for e in sorted(events, key=lambda e: (e["pid"], e["tid"], e["ts_ns"])):
        if e["cat"] != "sys":
            continue
        fd = json.loads(e["args"] or "{}").get("fd")
        key = (e["pid"], fd)
        if e["name"] == "openat" and (e["fname"] or "").startswith(data_dir) and e["fname"].endswith(".npz"):
            fds[(e["pid"], e["ret"])] = [e["fname"], 0, []]
        elif key in fds and e["name"] == "lseek":
            fds[key][1] = e["ret"]
        elif key in fds and e["name"] == "read" and e["ret"] > 0:
            fds[key][2].append((fds[key][1], fds[key][1] + e["ret"]))
            fds[key][1] += e["ret"]
        elif key in fds and e["name"] == "close":
            name, _, spans = fds.pop(key)
            out[name].append((e["pid"], union(spans), max((b for _, b in spans), default=0)))
    assert not fds, f"data files opened and never closed: {fds}"
    return out


def union(spans):
    covered, end = 0, 0
    for a, b in sorted(spans):
        covered += max(0, b - max(a, end))
        end = max(end, b)
    return covered


def test_dlio_readers_cover_the_dataset_and_dftracer_agrees_per_file(tmp_path):
    assert os.geteuid() == 0, "test_dlio needs root: dc-trace loads eBPF programs"
    assert (DLIO_VENV / "bin" / "dlio_benchmark").is_file(), (
        f"DLIO is not installed in {DLIO_VENV}: run scripts/setup.sh --test")
    data = tmp_path / "data"
    generated = traced("generate", data, tmp_path / "generate")
    sizes = {str(p): p.stat().st_size for p in (data / "train").iterdir()}
    assert len(sizes) == FILES
    train = traced("train", data, tmp_path / "train")

    compare = side_by_side().compare
    for trace, out, op in [(generated, "generate", "write"), (train, "train", "read")]:
        result = compare([trace], [tmp_path / out / "trace-0-of-1.pfw"], data)
        assert result["differences"] == []
        assert {(r["file"], r["op"]) for r in result["files"]} == {(f, op) for f in sizes}
        assert all(r["ours_calls"] > 0 for r in result["files"])
        kinds = {r["kind"] for r in result["outside"]}
        assert kinds <= EXPLAINED, f"calls of no known kind: {kinds - EXPLAINED}"

    events = datacrumbs.read_trace(train).to_pylist()
    # The main process writes DLIO's log; the DataLoader's workers, and only they, read the dataset.
    main = {e["pid"] for e in events if e["name"] == "write" and (e["fname"] or "").endswith("/dlio.log")}
    assert len(main) == 1
    coverage = read_coverage(events, str(data.resolve()))
    assert set(coverage) == set(sizes)
    readers = {pid for opens in coverage.values() for pid, _, _ in opens}
    assert len(readers) == READERS and not readers & main
    for name, opens in coverage.items():
        # One load per epoch, each reading every byte of the file and none past it.
        assert [(covered, end) for _, covered, end in opens] == [(sizes[name], sizes[name])] * EPOCHS, name
