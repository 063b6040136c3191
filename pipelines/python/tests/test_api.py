"""The single-process API against the `dc-*` tools over the same real trace, and its frames in pandas, polars and
DuckDB."""

import gzip
import json
from collections import Counter

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import run_tool

import datacrumbs
import datacrumbs.polars

OPS = ["read", "write", "openat"]


@pytest.fixture(scope="module")
def features(case_read_simple):
    return datacrumbs.build_features(case_read_simple, ops=OPS, counts=True)


@pytest.fixture(scope="module")
def cli_features(case_read_simple, tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "features.parquet"
    code, err = run_tool("dc-features", "build", case_read_simple, "--ops", ",".join(OPS), "--counts", "-o", out)
    assert code == 0, err
    return out


def test_read_trace_is_convert_and_counts_every_event_line(case_read_simple, tmp_path):
    events = datacrumbs.read_trace(case_read_simple)
    out = tmp_path / "events.parquet"
    code, err = run_tool("dc-features", "convert", case_read_simple, "-o", out)
    assert code == 0, err
    assert events.equals(pq.read_table(out))
    # Independent of the Rust reader: Python's json module over the same lines.
    by_cat = Counter()
    with gzip.open(case_read_simple, "rt") as f:
        for line in f:
            line = line.strip().rstrip(",")
            if line not in ("", "[", "]"):
                by_cat[json.loads(line)["cat"]] += 1
    assert dict(Counter(events["cat"].to_pylist())) == dict(by_cat)
    assert events.schema.field("ts_ns").type == pa.uint64()
    sys_files = events.filter(pc.field("cat") == "sys")["fname"]
    assert sys_files.null_count < len(sys_files)


def test_build_features_is_dc_features_build(features, cli_features):
    cli = pq.read_table(cli_features)
    assert features.equals(cli)
    # dc-features keeps the layer metadata in the Parquet footer's key-value metadata.
    footer = pq.read_metadata(cli_features).metadata
    assert features.schema.metadata[b"datacrumbs.features"] == footer[b"datacrumbs.features"]
    meta = datacrumbs.feature_metadata(features)
    columns = [f["column"] for f in meta["features"]]
    assert columns == features.column_names[-len(columns) :]
    assert "vfs" in datacrumbs.layers(features)


def test_rank_is_dc_model_rank_json(features, cli_features, tmp_path):
    report = tmp_path / "rank.json"
    code, err = run_tool(
        "dc-model", "rank", cli_features, "--layer", "vfs", "--layer", "os_cache", "--json", report
    )
    assert code == 0, err
    expected = json.loads(report.read_text())
    # Both leave out constant columns by default, and say which.
    assert any(layer["dropped_constant"] for layer in expected["layers"])
    assert datacrumbs.rank(features, layers=["vfs", "os_cache"]) == expected
    assert datacrumbs.rank(str(cli_features), layers=["vfs", "os_cache"], drop_constant=True) == expected
    code, err = run_tool(
        "dc-model", "rank", cli_features, "--layer", "vfs", "--drop-constant", "--split", "random", "--seed", "3",
        "--importance", "gain", "--json", report, "--force"
    )
    assert code == 0, err
    expected = json.loads(report.read_text())
    options = {"split": "random", "seed": 3, "importance": "gain"}
    assert datacrumbs.rank(features, layers=["vfs"], drop_constant=True, **options) == expected


def test_pandas_round_trip(features):
    frame = features.to_pandas(types_mapper=pd.ArrowDtype)
    assert frame["pid"].dtype == pd.ArrowDtype(pa.uint64())
    back = pa.Table.from_pandas(frame, preserve_index=False)
    assert back.column_names == features.column_names
    assert all(back[name].equals(features[name]) for name in features.column_names)
    frame.attrs[datacrumbs.METADATA_KEY] = features.schema.metadata[b"datacrumbs.features"].decode()
    assert datacrumbs.rank(frame, layers=["vfs"], drop_constant=True) == datacrumbs.rank(
        features, layers=["vfs"], drop_constant=True
    )


def test_polars_round_trip(case_read_simple, features):
    frame, meta = datacrumbs.polars.build_features_with_metadata(case_read_simple, ops=OPS, counts=True)
    assert isinstance(frame, pl.DataFrame)
    assert frame.shape == (features.num_rows, features.num_columns)
    assert frame.schema["pid"] == pl.UInt64
    back = frame.to_arrow().cast(features.schema)
    assert back.equals(features)
    assert datacrumbs.rank(frame, layers=["vfs"], drop_constant=True, metadata=meta) == datacrumbs.rank(
        features, layers=["vfs"], drop_constant=True
    )
    events = datacrumbs.polars.read_trace(case_read_simple)
    assert events.height == datacrumbs.read_trace(case_read_simple).num_rows


def test_duckdb_reads_the_table(features):
    ops = duckdb.sql("select op, count(*) as n, sum(size) as bytes from features group by op order by op").fetchall()
    expected = features.group_by("op").aggregate([("op", "count"), ("size", "sum")]).sort_by("op")
    assert ops == list(zip(expected["op"].to_pylist(), expected["op_count"].to_pylist(), expected["size_sum"].to_pylist()))


def _broken_trace(tmp_path):
    path = tmp_path / "broken.pfw"
    path.write_text(
        "[\n"
        '{"id":1,"name":"read","cat":"sys","pid":1,"tid":1,"ts":10,"dur":5,"ph":"X","args":{"size":4}}\n'
        '{"id":2,"name":"read","cat":"sys","pid":1,"tid":1,"ts":"soon","dur":5,"ph":"X"}\n'
    )
    return path


def _cli_error(*args):
    code, err = run_tool(*args)
    assert code != 0
    return err.strip().removeprefix(f"{args[0]}: ")


def test_errors_cross_with_the_tools_text(tmp_path):
    broken = _broken_trace(tmp_path)
    expected = _cli_error("dc-features", "build", broken, "-o", tmp_path / "x.parquet")
    assert f"{broken}:3: field `ts`" in expected
    with pytest.raises(datacrumbs.InputError) as e:
        datacrumbs.build_features(str(broken))
    assert str(e.value) == expected
    with pytest.raises(datacrumbs.InputError) as e:
        datacrumbs.read_trace(str(broken))
    assert str(e.value) == _cli_error("dc-features", "convert", broken, "-o", tmp_path / "y.parquet").removeprefix(
        f"converting to {tmp_path / 'y.parquet'}: "
    )
    missing = tmp_path / "missing.pfw"
    with pytest.raises(datacrumbs.InputError) as e:
        datacrumbs.build_features(str(missing))
    assert str(e.value) == _cli_error("dc-features", "build", missing, "-o", tmp_path / "x.parquet")
    assert isinstance(e.value, ValueError)


def test_skipped_lines_are_reported(tmp_path):
    broken = _broken_trace(tmp_path)
    with pytest.warns(UserWarning, match=r"skipped 1 invalid line\(s\)") as w:
        events = datacrumbs.read_trace(str(broken), skip_invalid=True)
    assert events.num_rows == 1
    assert f"{broken}:3: field `ts`" in str(w[0].message)


def test_option_errors_name_the_option(features, tmp_path):
    with pytest.raises(datacrumbs.InputError, match="time_unit: `s` is neither `ns` nor `us`"):
        datacrumbs.read_trace(str(_broken_trace(tmp_path)), time_unit="s")
    with pytest.raises(datacrumbs.InputError, match="features table: .*layer"):
        datacrumbs.rank(features, layers=["no-such-layer"])
    with pytest.raises(datacrumbs.InputError, match="features table: datacrumbs.features: missing layer metadata"):
        datacrumbs.rank(features.replace_schema_metadata(None), layers=["vfs"])
    with pytest.raises(datacrumbs.InputError, match="rank options: unknown field `depth`, expected one of"):
        datacrumbs.rank(features, layers=["vfs"], depth=3)
    with pytest.raises(datacrumbs.InputError, match=r"rank options: 1.5 is not in \(0, 1\]"):
        datacrumbs.rank(features, layers=["vfs"], cumulative=1.5)


@pytest.mark.parametrize(
    "options, bound",
    [
        ({"gbm": {"n_estimators": 1_000_000_000}}, r"1000000000 is not in \[1, 100000\]: every tree is kept in memory"),
        ({"gbm": {"max_depth": 17}}, r"17 is not in \[1, 16\]"),
        ({"gbm": {"learning_rate": -1}}, r"-1 is not in \(0, 1\]"),
        ({"gbm": {"min_samples_leaf": 0}}, r"0 is not in \[1, inf\)"),
        ({"folds": 1844674407370955162}, r"1844674407370955162 is not in \[2, 100\]: cross-validation needs two folds"),
        ({"folds": 2**64 - 1}, r"18446744073709551615 is not in \[2, 100\]"),
    ],
)
def test_a_model_option_beyond_its_limit_is_refused_as_the_tools_refuse_it(features, options, bound):
    with pytest.raises(datacrumbs.InputError, match=f"rank options: {bound}"):
        datacrumbs.rank(features, layers=["vfs"], **options)
