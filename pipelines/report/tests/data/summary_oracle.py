#!/usr/bin/env python3
"""Independent oracle for dc-report's summary of a trace: events per layer, and per file of the call layers
(sys, POSIX, STDIO) the calls, reads, writes, bytes and time, computed with Python's json module. An event with an
id that repeats an earlier event of the file in every field is that event written twice, and counts once.

Usage: summary_oracle.py TRACE.pfw.gz > FIXTURE.json   (ts/dur in microseconds, as DFTracer and DataCrumbs write)
"""
import gzip
import json
import sys
from collections import Counter, defaultdict

READ = {"read", "pread64", "pread", "readv", "preadv", "preadv2", "fread"}
WRITE = {"write", "pwrite64", "pwrite", "writev", "pwritev", "pwritev2", "fwrite"}
CALL_LAYERS = {"sys", "POSIX", "STDIO"}


def num(v):
    return None if v is None else int(v)


def main(path):
    events = Counter()
    files = defaultdict(lambda: dict(ops=0, reads=0, writes=0, bytes_read=0, bytes_written=0, time_ns=0))
    names = {}
    seen = set()
    with gzip.open(path, "rt") as f:
        for line in f:
            line = line.strip().rstrip(",")
            if not line.startswith("{"):
                continue
            e = json.loads(line)
            if "id" in e and e.get("ph") != "M":
                again = json.dumps(e, sort_keys=True)
                if again in seen:
                    continue
                seen.add(again)
            args = e.get("args", {})
            if e.get("ph") == "M":
                if e["name"] == "FH":
                    names[int(args["value"])] = args["name"]
                continue
            cat = e["cat"]
            events[cat] += 1
            if cat not in CALL_LAYERS:
                continue
            fname = args.get("fname") or names.get(num(args.get("fhash")))
            if fname is None:
                continue
            s = files[cat + "\t" + fname]
            s["ops"] += 1
            s["time_ns"] += round(float(e.get("dur", 0)) * 1000)
            op = e["name"]
            ret = num(args.get("ret"))
            size = num(args.get("size", args.get("size_sum")))
            moved = ret if ret is not None and ret >= 0 else (size if size is not None and size >= 0 else 0)
            if op in READ:
                s["reads"] += 1
                s["bytes_read"] += moved
            elif op in WRITE:
                s["writes"] += 1
                s["bytes_written"] += moved
    json.dump({"events": dict(sorted(events.items())), "files": dict(sorted(files.items()))}, sys.stdout, indent=1)
    print()


main(sys.argv[1])
