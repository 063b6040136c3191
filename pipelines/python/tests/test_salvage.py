"""Damaged traces: an error by default that says how to salvage, and with `salvage=True` every intact event, the
damage reported. Python's own zlib is the oracle for what is intact."""

import gzip
import re
import struct
import zlib

import pyarrow.parquet as pq
import pytest

import datacrumbs
from conftest import CASE_READ_SIMPLE, run_tool

CUT_AT = 300_000


def complete_lines(data):
    """The complete lines zlib inflates from the start of a gzip stream cut short."""
    text = zlib.decompressobj(wbits=31).decompress(data)
    return text[: text.rindex(b"\n")].split(b"\n")


def event_lines(lines):
    return [line for line in lines if line.strip() not in (b"", b"[", b"]")]


@pytest.fixture
def truncated(tmp_path):
    path = tmp_path / "cut.pfw.gz"
    path.write_bytes(CASE_READ_SIMPLE.read_bytes()[:CUT_AT])
    return path


def bgzf_member(text):
    """One BGZF member: a gzip member whose extra field `BC` holds its size less one."""
    body = zlib.compressobj(6, zlib.DEFLATED, -15)
    deflated = body.compress(text) + body.flush()
    size = 18 + len(deflated) + 8
    header = b"\x1f\x8b\x08\x04" + b"\x00" * 4 + b"\x00\xff" + struct.pack("<H2sHH", 6, b"BC", 2, size - 1)
    return header + deflated + struct.pack("<II", zlib.crc32(text), len(text))


@pytest.fixture
def bgzf_with_ids(tmp_path):
    """The fixture's events numbered by `id`, as BGZF members of 500 lines, then the lines of member 3."""
    lines = event_lines(gzip.decompress(CASE_READ_SIMPLE.read_bytes()).split(b"\n"))
    numbered = [b'{"id": %d, ' % i + line.strip().rstrip(b",")[1:] for i, line in enumerate(lines)]
    members = [b"\n".join(numbered[i : i + 500]) + b"\n" for i in range(0, len(numbered), 500)]
    blobs = [bgzf_member(m) for m in members]
    damaged = 3
    broken = bytearray(blobs[damaged])
    broken[100:140] = bytes(40)
    blobs[damaged] = bytes(broken)
    path = tmp_path / "ids.pfw.gz"
    path.write_bytes(b"".join(blobs) + bgzf_member(b""))
    start = sum(map(len, blobs[:damaged]))
    return path, len(numbered), range(damaged * 500, damaged * 500 + 500), (start, start + len(blobs[damaged]))


def test_damaged_file_is_an_error_that_says_how_to_salvage(truncated):
    with pytest.raises(datacrumbs.InputError) as error:
        datacrumbs.read_trace(truncated)
    message = str(error.value)
    assert message.startswith(f"{truncated}: damaged gzip data at compressed byte ")
    assert message.endswith("salvage=True reads every intact part and reports what is lost")


def test_salvage_keeps_every_complete_event_before_the_cut(truncated):
    intact = event_lines(complete_lines(truncated.read_bytes()))
    with pytest.warns(datacrumbs.DamageWarning) as warned:
        table = datacrumbs.read_trace(truncated, salvage=True)
    assert table.num_rows == len(intact)
    whole = datacrumbs.read_trace(CASE_READ_SIMPLE)
    # Every column but the file the event came from.
    assert table.drop_columns(["source"]).equals(whole.slice(0, len(intact)).drop_columns(["source"]))
    code, stderr = run_tool("dc-features", "convert", truncated, "-o", truncated.with_suffix(".parquet"), "--salvage")
    assert code == 0, stderr
    tool_lines = [line.removeprefix("dc-features: salvaged around damage: ") for line in stderr.splitlines()]
    damage = str(warned[0].message).splitlines()[1:]
    assert [d.strip() for d in damage] == [t for t in tool_lines if t.startswith(f"{truncated}: compressed bytes")]
    assert re.fullmatch(
        rf"{re.escape(str(truncated))}: compressed bytes \d+\.\.{CUT_AT} unreadable \(.*\): "
        r"the lines lost are not known \(no numbered line follows\)",
        damage[0].strip(),
    )


def test_salvage_skips_a_corrupt_block_and_names_the_lost_ids(bgzf_with_ids):
    path, events, lost, (start, end) = bgzf_with_ids
    with pytest.raises(datacrumbs.InputError, match=f"damaged gzip data at compressed byte {start}, "):
        datacrumbs.read_trace(path)
    with pytest.warns(datacrumbs.DamageWarning) as warned:
        table = datacrumbs.read_trace(path, salvage=True)
    assert table.column("id").to_pylist() == [i for i in range(events) if i not in lost]
    damage = [d.strip() for d in str(warned[0].message).splitlines()[1:]]
    assert len(damage) == 1
    assert re.fullmatch(
        rf"{re.escape(str(path))}: compressed bytes {start}\.\.{end} unreadable \(.*\): "
        rf"500 lines lost \(ids {lost.start}\.\.{lost.stop}\)",
        damage[0],
    )
    with pytest.warns(datacrumbs.DamageWarning):
        features = datacrumbs.build_features(path, salvage=True)
    out = path.with_suffix(".parquet")
    code, stderr = run_tool("dc-features", "build", path, "--salvage", "-o", out)
    assert code == 0, stderr
    assert features.equals(pq.read_table(out))
