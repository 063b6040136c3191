"""A feature matrix edited in polars and written back reads in dc-model as the one dc-features wrote.

polars writes strings as large_string or string_view, compresses with zstd and keeps no Parquet key-value
metadata (the matrix's layer metadata); dc-model takes the file all the same, with the same ranking.
"""

import json
import subprocess

import polars as pl
import pyarrow.parquet as pq

from conftest import run_tool, tool


def rank(matrix, json_path):
    done = subprocess.run(
        [tool("dc-model"), "rank", str(matrix), "--layer", "vfs", "--drop-constant", "--json", str(json_path)],
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stderr) == (0, "")
    return done.stdout, json.loads(json_path.read_text())


def test_a_matrix_rewritten_by_polars_ranks_as_the_original(case_read_simple, tmp_path):
    p, q = tmp_path / "p.parquet", tmp_path / "q.parquet"
    assert run_tool("dc-features", "build", case_read_simple, "-o", p)[0] == 0
    pl.read_parquet(p).write_parquet(q)
    rewritten = pq.read_metadata(q)
    assert rewritten.metadata.keys() == {b"ARROW:schema"}
    assert str(pq.read_schema(q).field("op").type) in ("large_string", "string_view")
    assert rewritten.row_group(0).column(0).compression == "ZSTD"

    table_p, report_p = rank(p, tmp_path / "p.json")
    table_q, report_q = rank(q, tmp_path / "q.json")
    assert table_q == table_p
    assert report_q == report_p
    ranking = [f["feature"] for f in report_q["layers"][0]["ranking"]]
    assert ranking == ["vfs::vfs_read", "size"]
