#!/usr/bin/env python3
"""Drishti (PyPI drishti-io) and dc-report's findings side by side on the Darshan logs.

For every log, runs Drishti's own Darshan handler in this process and records, for each insight that has a
counterpart among our reasons, whether Drishti fired it (the codes it reports) and the numbers its check received;
then runs `dc-report LOG --json` and records whether our Darshan counter rules (layer POSIX or STDIO) fired the
counterpart, with their evidence. Writes one row per log and insight:

    drishti_parity.py [--logs DIR] [--dc-report PATH] [-o CSV]

Drishti's handler runs in-process so that the numbers its checks used can be recorded; its module keeps the codes it
fired in a list that the CLI writes out with --csv, and that list is cleared before each log.
"""

import argparse
import contextlib
import csv
import inspect
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "datasets" / "fixtures" / "darshan"
FIXTURE = Path(__file__).resolve().parent / "tests" / "data" / "drishti_parity.csv"
COLUMNS = [
    "log",
    "insight",
    "drishti_code",
    "drishti_fired",
    "drishti_numbers",
    "ours_reason",
    "ours_fired",
    "ours_numbers",
    "definitions",
]

# Insight → (Drishti's code, Drishti's check, our reason, our scope's op, whether the definitions match).
# "differs" rows are the README's "Drishti side by side" differences.
INSIGHTS = {
    "small_reads": ("P05", "check_small_operation", "small_requests", "read", "same"),
    "small_writes": ("P06", "check_small_operation", "small_requests", "write", "same"),
    "random_reads": ("P11", "check_random_operation", "random_access", "read", "same"),
    "random_writes": ("P13", "check_random_operation", "random_access", "write", "same"),
    "misaligned_file": ("P08", "check_misaligned", "misaligned", None, "same"),
    "stdio": ("S01", "check_stdio", "stdio_instead_of_posix", None, "same"),
    "time_imbalance": ("P19", "check_shared_time_imbalance", "imbalance", None, "same"),
    "metadata": ("P17", "check_long_metadata", "metadata_heavy", None, "differs"),
    "redundant_reads": ("P09", "check_traffic", "reread", None, "differs"),
}
COUNTER_LAYERS = ("POSIX", "STDIO")


def number(v):
    return format(float(v), ".6g")


def numbers(pairs):
    return ";".join(f"{k}={number(v)}" for k, v in pairs)


def drishti_numbers(insight, a):
    """The numbers Drishti's check for `insight` received, named as our evidence names them."""
    if insight in ("small_reads", "small_writes"):
        d = "reads" if insight == "small_reads" else "writes"
        small, total = a[f"total_{d}_small"], a[f"total_{d}"]
        return [("small_requests", small), ("requests", total), ("share", small / total if total else 0)]
    if insight in ("random_reads", "random_writes"):
        d = "read" if insight == "random_reads" else "write"
        rnd, total = a[f"{d}_random"], a[f"total_{d}s"]
        return [("random_requests", rnd), ("requests", total), ("share", rnd / total if total else 0)]
    if insight == "misaligned_file":
        bad, ops = a["total_file_not_aligned"], a["total_operations"]
        return [("file_not_aligned", bad), ("operations", ops), ("share", bad / ops if ops else 0)]
    if insight == "stdio":
        s, total = a["total_size_stdio"], a["total_size"]
        return [("stdio_bytes", s), ("bytes", total), ("share_of_bytes", s / total if total else 0)]
    if insight == "time_imbalance":
        files = a["detected_files"]
        worst = files["time_imbalance"].max() / 100 if len(files) else 0
        return [("files", a["stragglers_count"]), ("imbalance", worst)]
    if insight == "metadata":
        return [("ranks_over_30s", a["count_long_metadata"])]
    if insight == "redundant_reads":
        return [("max_read_offset", a["max_read_offset"]), ("bytes_read", a["total_read_size"])]
    raise KeyError(insight)


def run_drishti(log):
    """(codes fired, {check name: its arguments by name}, error or "") for one log."""
    argv, sys.argv = sys.argv, ["drishti", str(log)]
    try:
        from drishti.includes import module, parser
        from drishti.handlers import handle_darshan
    finally:
        sys.argv = argv

    module.csv_report.clear()
    module.codes.clear()
    seen = {}

    def recording(name, check):
        sig = inspect.signature(check)

        def wrapper(*args, **kwargs):
            seen[name] = dict(sig.bind(*args, **kwargs).arguments)
            return check(*args, **kwargs)

        return wrapper

    originals = {name: getattr(handle_darshan, name) for name in {i[1] for i in INSIGHTS.values()}}
    error = ""
    with tempfile.TemporaryDirectory() as tmp:
        parser.args.log_path = str(log)
        # Drishti lists the codes it fired only for its CSV export, which then writes `<log>.csv` there.
        parser.args.export_csv = True
        parser.args.export_dir = tmp
        for name, check in originals.items():
            setattr(handle_darshan, name, recording(name, check))
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                handle_darshan.handler()
        except Exception as e:  # Drishti fails after its checks on some logs (its MPI-IO hints parsing).
            error = f"{type(e).__name__}: {e}"
        finally:
            for name, check in originals.items():
                setattr(handle_darshan, name, check)
    return set(module.csv_report), seen, error


def drishti_side(log):
    """Insight → (whether Drishti fired it, the numbers its check used)."""
    fired, seen, error = run_drishti(log)
    return {
        insight: (code in fired, numbers(drishti_numbers(insight, seen[check])) if check in seen else error)
        for insight, (code, check, _, _, _) in INSIGHTS.items()
    }


def run_ours(log, dc_report):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "diag.json"
        subprocess.run(
            [dc_report, str(log), "--json", str(out), "-o", str(Path(tmp) / "page.html")],
            check=True,
            capture_output=True,
        )
        return [f for f in json.loads(out.read_text())["findings"] if f["layer"] in COUNTER_LAYERS]


def ours_numbers(found):
    """One finding's evidence; for several (one per file), how many and the largest evidence values."""
    if len(found) == 1:
        return numbers(sorted(found[0]["evidence"].items()))
    keys = sorted(set().union(*(f["evidence"] for f in found)))
    return numbers([("files", len(found))] + [(k, max(f["evidence"].get(k, 0) for f in found)) for k in keys])


def ours_side(log, dc_report):
    """Insight → (whether our counter rules found its counterpart, their evidence)."""
    ours = run_ours(log, dc_report)
    out = {}
    for insight, (_, _, reason, op, _) in INSIGHTS.items():
        found = [f for f in ours if f["reason"] == reason and (op is None or f["scope"].get("op") == op)]
        out[insight] = (bool(found), ours_numbers(found) if found else "")
    return out


def rows(logs, dc_report):
    for log in logs:
        theirs, ours = drishti_side(log), ours_side(log, dc_report)
        for insight, (code, _, reason, _, definitions) in INSIGHTS.items():
            yield {
                "log": log.name,
                "insight": insight,
                "drishti_code": code,
                "drishti_fired": theirs[insight][0],
                "drishti_numbers": theirs[insight][1],
                "ours_reason": reason,
                "ours_fired": ours[insight][0],
                "ours_numbers": ours[insight][1],
                "definitions": definitions,
            }


def write(table, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(table)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--logs", type=Path, default=LOGS)
    p.add_argument("--dc-report", default=str(ROOT / "target" / "release" / "dc-report"))
    p.add_argument("-o", "--output", type=Path, default=FIXTURE)
    a = p.parse_args()
    table = list(rows(sorted(a.logs.glob("*.darshan")), a.dc_report))
    write(table, a.output)
    agree = sum(r["drishti_fired"] == r["ours_fired"] for r in table if r["definitions"] == "same")
    same = sum(r["definitions"] == "same" for r in table)
    print(f"{a.output}: {len(table)} rows; where the definitions match, {agree} of {same} agree")


if __name__ == "__main__":
    main()
