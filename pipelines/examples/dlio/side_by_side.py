"""DLIO runs traced by DFTracer and by dc-trace at once: per file, the reads and writes each recorded.

    side_by_side.py --ours TRACE.pfw.gz... --dftracer TRACE.pfw... --data-dir DIR [--json]

Both traces are read by the datacrumbs package, the feature builder of `dc-features build` (one row per call:
dc-trace's `sys` rows, DFTracer's `POSIX` rows). DLIO starts DFTracer with its data and checkpoint folders as the
only ones to record, so every file under --data-dir must agree call for call and byte for byte; every other file is
one dc-trace sees and DFTracer is not asked to, listed by kind. Prints Markdown (or JSON with --json) and exits 1
when a file under --data-dir differs or DFTracer recorded a file dc-trace did not.
Run it with the venv scripts/setup.sh --test makes: /opt/datacrumbs-venv/bin/python.
"""

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import datacrumbs

# The data calls, by the names each tracer gives them: dc-trace names the system call, DFTracer the libc function.
OURS_OPS = ["read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev"]
DFTRACER_OPS = ["read", "write", "pread", "pwrite", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev"]

# Files outside the data folder, by kind: (kind, test on the path, why the calls happen).
OUTSIDE = [
    ("no path", lambda f: f is None or f.startswith(("pipe:", "socket:", "anon_inode:")),
     "pipes, sockets and eventfds: the DataLoader's queues between the processes, DLIO's output to a pipe"),
    ("/dev/shm", lambda f: f.startswith("/dev/shm/"),
     "shared memory and semaphores: PyTorch hands batches from the workers to the main process through them"),
    ("DFTracer's trace", lambda f: Path(f).name.endswith(".pfw") or Path(f).name == "dft.log",
     "DFTracer writing its own trace"),
    ("programs and libraries",
     lambda f: f.endswith((".py", ".pyc", ".pth", ".sh", "pyvenv.cfg")) or ".so" in Path(f).name
     or "/site-packages/" in f or "/dist-packages/" in f or "/bin/" in f,
     "the shell and the interpreter reading their scripts, Python importing modules, the loader reading libraries"),
    ("DLIO's outputs", lambda f: f.endswith((".log", ".json", ".yaml")),
     "DLIO's log, summary and per-epoch statistics, and Hydra's copy of the configuration"),
    ("system files", lambda f: f.startswith(("/etc/", "/proc/", "/sys/", "/dev/", "/usr/share/", "/usr/lib/ssl/")),
     "locale, time zone, certificates, OpenSSL's configuration, /proc and /dev/urandom read by Python's libraries"),
    ("temporary files", lambda f: str(Path(f).parent) == "/tmp",
     "a 4-byte file each reader process creates in /tmp with mkstemp's flags (O_EXCL, O_NOFOLLOW), from a thread"),
]


def normal_op(op):
    """DFTracer's `pread`/`pread64` and dc-trace's `pread64` are one call."""
    return op[:-2] if op.endswith("64") else op


def per_file(paths, rows, ops):
    """{(file, op): [calls, bytes, {pid}, ns]} of the traces' rows of `rows` layer."""
    columns = ["op", "pid", "file", "size", "dur"]
    table = datacrumbs.build_features(paths, ops=ops, row_layers=[rows]).select(columns)
    out = defaultdict(lambda: [0, 0, set(), 0])
    for r in table.to_pylist():
        cell = out[(r["file"], normal_op(r["op"]))]
        cell[0] += 1
        cell[1] += r["size"] or 0
        cell[2].add(r["pid"])
        cell[3] += r["dur"]
    return out


def kind_of(path):
    for kind, test, _ in OUTSIDE:
        if test(path):
            return kind
    return "other"


def compare(ours_traces, dftracer_traces, data_dir):
    """The side-by-side table: `files` (every file under data_dir, or recorded by DFTracer), `outside` (dc-trace's
    other files by kind) and `differences` (what disagrees and has no reason: empty when the two agree)."""
    data_dir = str(Path(data_dir).resolve()).rstrip("/") + "/"
    ours = per_file(ours_traces, "sys", OURS_OPS)
    theirs = per_file(dftracer_traces, "POSIX", DFTRACER_OPS)
    inside = {k for k in ours if k[0] and k[0].startswith(data_dir)} | set(theirs)
    files, differences = [], []
    for key in sorted(inside, key=lambda k: (k[0] or "", k[1])):
        o, t = ours.get(key, [0, 0, set(), 0]), theirs.get(key, [0, 0, set(), 0])
        row = {"file": key[0], "op": key[1], "ours_calls": o[0], "ours_bytes": o[1], "ours_pids": sorted(o[2]),
               "ours_ns": o[3], "dftracer_calls": t[0], "dftracer_bytes": t[1], "dftracer_ns": t[3],
               "equal": o[:2] == t[:2]}
        files.append(row)
        if not row["equal"]:
            differences.append(row)
    outside = defaultdict(lambda: {"files": set(), "calls": 0, "bytes": 0})
    for key, (calls, size, _, _) in ours.items():
        if key not in inside:
            group = outside[kind_of(key[0])]
            group["files"].add(key[0])
            group["calls"] += calls
            group["bytes"] += size
    reasons = {kind: why for kind, _, why in OUTSIDE}
    outside_rows = [{"kind": kind, "files": len(g["files"]), "calls": g["calls"], "bytes": g["bytes"],
                     "reason": reasons.get(kind, "not a kind this script knows")}
                    for kind, g in sorted(outside.items(), key=lambda kv: -kv[1]["calls"])]
    return {"files": files, "outside": outside_rows, "differences": differences}


def markdown(result, data_dir):
    ops = sorted({r["op"] for r in result["files"]}, key=lambda op: (op != "write", op))
    head = " | ".join(f"{op}s: dc-trace | {op}s: DFTracer" for op in ops)
    lines = [f"Files under `{data_dir}` (DLIO's data folder, which DFTracer records); each cell is calls / bytes, "
             "**bold** where the two differ; processes: how many processes dc-trace saw calling them", "",
             f"| file | {head} | processes |", "|---|" + "---:|" * (2 * len(ops) + 1)]
    by_file = defaultdict(dict)
    for r in result["files"]:
        by_file[r["file"]][r["op"]] = r
    for name, row in by_file.items():
        cells = []
        for op in ops:
            r = row.get(op, {"ours_calls": 0, "ours_bytes": 0, "dftracer_calls": 0, "dftracer_bytes": 0,
                             "equal": True})
            mark = "" if r["equal"] else "**"
            cells += [f"{mark}{r['ours_calls']} / {r['ours_bytes']}{mark}",
                      f"{mark}{r['dftracer_calls']} / {r['dftracer_bytes']}{mark}"]
        processes = len({pid for r in row.values() for pid in r.get("ours_pids", [])})
        lines.append(f"| {Path(name).name if name else '(no path)'} | {' | '.join(cells)} | {processes} |")
    lines += ["", "Calls only dc-trace has (outside the data folder, so DFTracer does not record them):", "",
              "| kind | files | calls | bytes | why they happen |", "|---|---:|---:|---:|---|"]
    for r in result["outside"]:
        lines.append(f"| {r['kind']} | {r['files']} | {r['calls']} | {r['bytes']} | {r['reason']} |")
    lines.append("")
    for op in ops:
        rows = [r for r in result["files"] if r["op"] == op]
        ours_ms, theirs_ms = (sum(r[k] for r in rows) / 1e6 for k in ("ours_ns", "dftracer_ns"))
        lines.append(f"Time in the data folder's {op}s: {ours_ms:.1f} ms by dc-trace (system call entry to exit), "
                     f"{theirs_ms:.1f} ms by DFTracer (around the libc call).")
    if result["differences"]:
        lines.append(f"{len(result['differences'])} file/call pair(s) under the data folder differ (in bold).")
    else:
        lines.append("Every file under the data folder agrees: same calls, same bytes.")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ours", nargs="+", required=True, help="dc-trace's traces (.pfw.gz)")
    parser.add_argument("--dftracer", nargs="+", required=True, help="DFTracer's traces (.pfw or .pfw.gz)")
    parser.add_argument("--data-dir", required=True, help="DLIO's data folder (dataset.data_folder)")
    parser.add_argument("--json", action="store_true", help="JSON instead of Markdown")
    args = parser.parse_args()
    result = compare(args.ours, args.dftracer, args.data_dir)
    print(json.dumps(result, indent=1) if args.json else markdown(result, args.data_dir))
    return 1 if result["differences"] else 0


if __name__ == "__main__":
    sys.exit(main())
