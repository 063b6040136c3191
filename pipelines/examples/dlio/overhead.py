"""DLIO's own measure, training samples per second, untraced, under dc-trace, under DFTracer and under both.

    overhead.py [--rounds N] [--computation-time SECONDS] [--dc-trace PATH] [--layers LAYERS] [--keep DIR]

The workload is dlio-unet3d.toml's `train` (its scale overrides are read from that file); --computation-time
replaces its simulated compute per batch (0: the loader's I/O alone sets the pace). The dataset is generated
once; each round runs the four setups in turn, each after evicting the dataset from the page cache, so that every
run starts as the pipeline's does. Prints one Markdown table: per setup the median of DLIO's mean samples/s over the
rounds, its range, and the median run's cost against the untraced median. Needs root (dc-trace).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DLIO = HERE / "dlio.sh"
SETUPS = ["untraced", "dc-trace", "DFTracer", "dc-trace + DFTracer"]


def train_overrides(computation_time):
    """The `++` overrides of dlio-unet3d.toml's train workload: the scale this measures."""
    pipeline = tomllib.loads((HERE.parent / "dlio-unet3d.toml").read_text())
    train = next(w for w in pipeline["workload"] if w["name"] == "train")
    overrides = [a for a in train["command"] if a.startswith("++")]
    if computation_time is not None:
        key = "++workload.train.computation_time="
        overrides = [a for a in overrides if not a.startswith(key)] + [f"{key}{computation_time}"]
    return overrides


def run(argv, env=None):
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"overhead.py: `{' '.join(map(str, argv))}` failed ({done.returncode}):\n{done.stderr[-2000:]}")


def samples_per_second(setup, data, out, overrides, dc_trace, layers):
    env = dict(os.environ, DFTRACER_ENABLE="1" if "DFTracer" in setup else "0")
    train = [str(DLIO), "train", str(data), str(out), *overrides]
    if "dc-trace" in setup:
        train = [dc_trace, "collect", "--force", "-o", str(out / "trace.pfw.gz"), "--layers", layers, "--", *train]
    out.mkdir(parents=True, exist_ok=True)
    run([str(DLIO), "evict", str(data)])
    run(train, env)
    summary = json.loads((out / "summary.json").read_text())
    return summary["metric"]["train_throughput_mean_samples_per_second"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--computation-time", type=float, help="seconds of simulated compute per batch")
    parser.add_argument("--dc-trace", default=str(ROOT / "target" / "release" / "dc-trace"))
    parser.add_argument("--layers", default="sys,page_cache,block,sched", help="dc-trace's layers (the pipeline's)")
    parser.add_argument("--keep", help="keep the dataset and the runs' outputs in this folder")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("overhead.py: dc-trace needs root")
    overrides = train_overrides(args.computation_time)
    work = Path(args.keep or tempfile.mkdtemp(prefix="dlio-overhead."))
    try:
        measure(args, overrides, work)
    finally:
        if not args.keep:
            shutil.rmtree(work)


def measure(args, overrides, work):
    load_before = os.getloadavg()[0]
    data = work / "data"
    run([str(DLIO), "generate", str(data), str(work / "generate"), *overrides],
        dict(os.environ, DFTRACER_ENABLE="0"))
    results = {s: [] for s in SETUPS}
    for r in range(args.rounds):
        for i, setup in enumerate(SETUPS):
            out = work / f"round{r}-{i}"
            sps = samples_per_second(setup, data, out, overrides, args.dc_trace, args.layers)
            results[setup].append(sps)
            print(f"round {r + 1}/{args.rounds}: {setup}: {sps:.2f} samples/s", file=sys.stderr)
    base = statistics.median(results["untraced"])
    print(f"DLIO unet3d ({' '.join(overrides)}), {args.rounds} rounds, dc-trace layers {args.layers}, "
          f"load average {load_before:.2f} before and {os.getloadavg()[0]:.2f} after\n")
    print("| setup | samples/s (median) | min | max | cost vs untraced |")
    print("|---|---:|---:|---:|---:|")
    for setup in SETUPS:
        xs = results[setup]
        med = statistics.median(xs)
        cost = "" if setup == "untraced" else f"{(base / med - 1) * 100:+.1f}%"
        print(f"| {setup} | {med:.2f} | {min(xs):.2f} | {max(xs):.2f} | {cost} |")


if __name__ == "__main__":
    main()
