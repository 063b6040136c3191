"""`datacrumbs.dask.rank` on a LocalCluster (2 worker processes) against `dc-model rank` on the same matrix: each
layer's share of the stack model within 0.02, the same features at the top of each layer's ranking, and the report's
keys as dc-model writes them."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from conftest import run_tool

import datacrumbs
import datacrumbs.dask

LAYERS = ["vfs", "ext4", "block", "sched"]
PER_LAYER = 5


def _matrix(path, n=20_000):
    """Four layers of five columns; bandwidth depends on vfs f0..f2 (the most), ext4 f3 and block f4, and on the
    size; sched not at all."""
    rng = np.random.default_rng(11)
    u = rng.uniform(size=(n, len(LAYERS) * PER_LAYER)).round(4)
    size = rng.choice([4096, 65536, 1 << 20], size=n)
    y = (
        200
        + 100 * np.sin(np.pi * u[:, 0] * u[:, 1])
        + 80 * (u[:, 2] - 0.5) ** 2
        + 60 * u[:, PER_LAYER + 3]
        + 40 * u[:, 2 * PER_LAYER + 4]
        + np.log2(size)
        + rng.uniform(-10, 10, size=n)
    )
    names = [f"{layer}::f{j}" for layer in LAYERS for j in range(PER_LAYER)]
    rows = np.arange(n, dtype=np.uint64)
    base = {
        "op": pa.array(np.where(rng.uniform(size=n) < 0.6, "read", "write")),
        "pid": pa.array(100 + rows % 4),
        "tid": pa.array(100 + rows % 4),
        "ts": pa.array(rows * 1000),
        "dur": pa.array(np.full(n, 1000, dtype=np.uint64)),
        "file": pa.array([f"/data/f{i % 8}" for i in range(n)]),
        "size": pa.array(size.astype(np.int64)),
        "bandwidth": pa.array(y),
        "direct": pa.array(rng.uniform(size=n) < 0.3),
        "sequential": pa.array([None] * n, type=pa.bool_()),
        "run": pa.array([None] * n, type=pa.string()),
        "thread": pa.array([None] * n, type=pa.string()),
        "process": pa.array([None] * n, type=pa.string()),
        "self_ns": pa.array(np.full(n, 1000, dtype=np.uint64)),
    }
    for j, name in enumerate(names):
        base[name] = pa.array(u[:, j])
    meta = {
        "version": 2,
        "units": {"ts": "ns", "dur": "ns", "size": "bytes", "bandwidth": "MiB/s", "self_ns": "ns",
                  "time_features": "ns"},
        "context": ["op", "size", "direct", "sequential"],
        "features": [
            {"column": name, "layer": name.split("::")[0], "name": name.split("::")[1], "kind": "time_ns"}
            for name in names
        ],
    }
    table = pa.table(base).replace_schema_metadata({datacrumbs.METADATA_KEY: json.dumps(meta)})
    pq.write_table(table, path, row_group_size=4096)


def _stack_shares(report):
    return {layer["layer"]: layer["share"] for layer in report["stack"]["layers"]}


def _same_keys(ours, theirs):
    """Every key of dc-model's JSON is in Dask's, at each level (Dask adds `engine`); values may be null there."""
    assert set(theirs) - set(ours) == {"engine"}, set(theirs) ^ set(ours)
    assert set(ours) <= set(theirs), set(ours) - set(theirs)
    assert set(theirs["stack"]) == set(ours["stack"])
    for key in ("layers", "groups"):
        assert {k for item in theirs["stack"][key] for k in item} == {k for item in ours["stack"][key] for k in item}
    assert {k for g in theirs["stack"]["groups"] for l in g["layers"] for k in l} == {
        k for g in ours["stack"]["groups"] for l in g["layers"] for k in l
    }
    mine = {layer["layer"]: layer for layer in ours["layers"]}
    for layer in theirs["layers"]:
        assert set(layer) == set(mine[layer["layer"]]), set(layer) ^ set(mine[layer["layer"]])
        for key in ("ranking", "importances"):
            assert {k for r in layer[key] for k in r} == {k for r in mine[layer["layer"]][key] for k in r}, key
        assert set(layer["gbm"]["quality"]) == set(mine[layer["layer"]]["gbm"]["quality"])


def test_dask_rank_gives_dc_models_layer_shares(client, tmp_path):
    path = tmp_path / "m.parquet"
    _matrix(path)
    code, err = run_tool("dc-model", "rank", path, "--layer", "all", "--json", tmp_path / "dc.json")
    assert code == 0, err
    ours = json.loads((tmp_path / "dc.json").read_text())
    theirs = datacrumbs.dask.rank(str(path), client, json_path=tmp_path / "dask.json", progress=False)
    assert json.loads((tmp_path / "dask.json").read_text()) == json.loads(json.dumps(theirs))

    expected, got = _stack_shares(ours), _stack_shares(theirs)
    assert set(got) == set(expected) == set(LAYERS)
    for layer in LAYERS:
        assert abs(got[layer] - expected[layer]) <= 0.02, (layer, got, expected)
    assert abs(theirs["stack"]["context_share"] - ours["stack"]["context_share"]) <= 0.02
    # The shares put the layers in the generator's order: vfs, ext4, block, then sched, which explains nothing.
    assert [layer["layer"] for layer in theirs["stack"]["layers"]] == LAYERS
    assert got["sched"] < 0.02

    by_layer = {layer["layer"]: layer for layer in ours["layers"]}
    for layer in theirs["layers"]:
        mine = [r["feature"] for r in by_layer[layer["layer"]]["ranking"]]
        dask_ranked = [r["feature"] for r in layer["ranking"]]
        # The first feature of each layer's ranking is the same, and the vfs columns y depends on lead its ranking.
        assert dask_ranked[0] == mine[0], (layer["layer"], dask_ranked, mine)
        assert layer["ranking"][-1]["cumulative_share"] >= 0.95 - 1e-9
        for key in ("layer", "rows", "train_rows", "test_rows", "model_features", "ranking", "importances", "gbm"):
            assert key in by_layer[layer["layer"]] and key in layer
    _same_keys(ours, theirs)
    assert [g["group"] for g in theirs["stack"]["groups"]] == [g["group"] for g in ours["stack"]["groups"]]
    for group in theirs["stack"]["groups"]:
        assert abs(sum(layer["share"] for layer in group["layers"]) + group["context_share"] - 1.0) < 1e-9
    vfs = [r["feature"] for r in next(lay for lay in theirs["layers"] if lay["layer"] == "vfs")["ranking"]]
    assert set(vfs[:3]) == {"vfs::f0", "vfs::f1", "vfs::f2"}, vfs
    assert theirs["rows_total"] == ours["rows_total"] == 20_000


def test_dask_rank_refuses_a_fit_larger_than_the_memory_given_naming_the_numbers(client, tmp_path):
    path = tmp_path / "m.parquet"
    _matrix(path, n=2_000)
    # 5 context columns (two operations, size, direct, sequential) and 20 feature columns, each cell the bytes
    # the module says LightGBM's Dask training holds; half of that is available.
    need = 2_000 * 25 * datacrumbs.dask._BYTES_PER_CELL
    try:
        datacrumbs.dask.rank(str(path), client, progress=False, memory=need // 2)
    except datacrumbs.InputError as e:
        text = str(e)
    else:
        raise AssertionError("a fit larger than the memory given was not refused")
    assert text == (
        f"2000 rows × 25 columns: the fit needs about {need / 1e6:.1f} MB of memory, and {need // 2 / 1e6:.1f} MB "
        "is available on 2 workers; add workers, or rank a stratified sample on one machine (dc-model rank --sample)"
    ), text
    # The same matrix with the memory it needs is ranked.
    report = datacrumbs.dask.rank(str(path), client, progress=False, memory=need, layers=["vfs"])
    assert report["layers"][0]["rows"] == 2_000
