"""The committed Drishti parity table is what drishti-io prints today: its Drishti columns are rebuilt from Drishti on
every log, and the in-process run the script uses fires the same codes as the `drishti` command's CSV."""

import csv
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "drishti_parity.py"
spec = importlib.util.spec_from_file_location("drishti_parity", SCRIPT)
parity = importlib.util.module_from_spec(spec)
spec.loader.exec_module(parity)


def fixture():
    with open(parity.FIXTURE, newline="") as f:
        return list(csv.DictReader(f))


def test_the_fixture_covers_every_log_and_insight():
    logs = sorted(p.name for p in parity.LOGS.glob("*.darshan"))
    assert len(logs) == 31
    assert [(r["log"], r["insight"]) for r in fixture()] == [(log, i) for log in logs for i in parity.INSIGHTS]


def test_drishti_still_prints_the_fixture():
    by_log = {}
    for r in fixture():
        by_log.setdefault(r["log"], {})[r["insight"]] = (r["drishti_fired"] == "True", r["drishti_numbers"])
    for log, expected in by_log.items():
        assert parity.drishti_side(parity.LOGS / log) == expected, log


# Between them, Drishti fires the small, random, misaligned and straggler insights on these logs.
CLI_LOGS = [
    "nonmpi_dxt_anonymized.darshan",
    "snyder_python3_id3116902-2110483_12-19-66980-15861026832475351160_1.darshan",
    "mpi-io-test-x86_64-3.4.0.darshan",
]


@pytest.mark.parametrize("log", CLI_LOGS)
def test_the_drishti_command_fires_the_same_codes(log, tmp_path):
    # The venv's own command, beside the interpreter running pytest.
    drishti = Path(sys.executable).with_name("drishti")
    subprocess.run([str(drishti), "--csv", "--export_dir", str(tmp_path), str(parity.LOGS / log)],
                   check=True, capture_output=True)
    with open(tmp_path / log.replace(".darshan", ".csv"), newline="") as f:
        printed = next(csv.DictReader(f))
    for r in fixture():
        if r["log"] == log:
            assert printed[r["drishti_code"]] == r["drishti_fired"], (log, r["insight"])
