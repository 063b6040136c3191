"""Events and feature matrices built across a Dask cluster: one task per trace file, each returning an Arrow table.

A feature row takes the events of its own pid and tid, and its context columns (`direct`, `sequential`) the earlier
calls of its own pid, so files can be built apart as long as no process has calls in two of them; DataCrumbs and
DFTracer write one file per process, where that holds, and a Darshan log's processes are its own (its pids are MPI
ranks, from 0 in every log). Where it does not, the files that share a process are built
together in one task (`on_overlap="group"`), or the build refuses, naming the pair (`on_overlap="raise"`). The
result holds the rows and values of the single-process `datacrumbs.build_features` (and `dc-features build`) over
the same files, one partition per task in file order, instead of one global (ts, pid, tid) order. A file's names
resolve through its own metadata (`FH`, or inline names), as each per-process file carries them.

Partitions are pandas frames with pyarrow dtypes (`pandas.ArrowDtype`), so they keep the Arrow types exactly; the
layer metadata rides in each frame's `attrs`, which `datacrumbs.rank` reads.

`rank` fits dc-model's ranking on every row of a matrix across the cluster, with LightGBM's Dask estimator.
"""

import glob
import json
import os
import sys

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from dask import delayed

from . import _api, _native
from ._api import METADATA_KEY, InputError

def _persist(client, objs):
    return list(client.persist(objs)) if client is not None else list(dask.persist(*objs))


def _compute(client, objs):
    return list(client.compute(objs, sync=True)) if client is not None else list(dask.compute(*objs))


def process_groups(files, client=None, time_unit=None, skip_invalid=False, on_overlap="group"):
    """`files` in groups that can be built apart, in file order: files where one pid has events are one group. With
    `on_overlap="raise"`, such a pair raises `InputError`, naming the pid and, where one of its threads is in both
    at overlapping times, that thread."""
    if on_overlap not in ("group", "raise"):
        raise InputError(f"on_overlap: `{on_overlap}` is neither `group` nor `raise`")
    task = delayed(_native.thread_spans, pure=True)
    spans = _compute(client, [task(f, time_unit, skip_invalid) for f in files])
    parent = list(range(len(files)))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    threads = {}
    first_file_of_pid = {}
    for i, file_spans in enumerate(spans):
        for pid in {pid for pid, _, _, _ in file_spans}:
            j = first_file_of_pid.setdefault(pid, i)
            if j == i:
                continue
            if on_overlap == "raise":
                raise InputError(f"{files[j]} and {files[i]}: {_shared(pid, threads, file_spans, j)}")
            parent[root(i)] = root(j)
        for pid, tid, first, last in file_spans:
            threads.setdefault((pid, tid), []).append((i, first, last))
    groups = {}
    for i, f in enumerate(files):
        groups.setdefault(root(i), []).append(f)
    return list(groups.values())


def _shared(pid, threads, file_spans, j):
    for p, tid, first, last in file_spans:
        for k, other_first, other_last in threads.get((p, tid), ()):
            if p == pid and k == j and first <= other_last and other_first <= last:
                return f"pid {pid} tid {tid} has events in both at overlapping times"
    return f"pid {pid} has calls in both, and a call's context columns depend on the earlier calls of its process"


def _build_group(files, options):
    return _native.build_features(files, *options)


def _read_file(file, time_unit, skip_invalid):
    return _native.read_trace([file], time_unit, skip_invalid, 1)


def _summary(built):
    table, skipped = built
    return _api._metadata_text(table), table.schema, skipped


def _skipped(built):
    return built[1]


def _warn_skipped(skipped):
    for count_examples in skipped:
        _api._warn_skipped(count_examples)


def _union(metadatas):
    """The layer metadata of the matrix of every part: each part's feature columns, once, in the matrix's order
    (kind by kind, in the order the parts give the kinds, then by layer and name)."""
    kinds = []
    for meta in metadatas:
        previous = -1
        for f in meta["features"]:
            if f["kind"] not in kinds:
                kinds.insert(previous + 1, f["kind"])
            previous = kinds.index(f["kind"])
    columns = {}
    for meta in metadatas:
        for f in meta["features"]:
            columns.setdefault(f["column"], f)
    union = dict(metadatas[0])
    union["features"] = sorted(columns.values(), key=lambda f: (kinds.index(f["kind"]), f["layer"], f["name"]))
    return union


def _feature_frame(built, union_text):
    """One part as a frame of the whole matrix's columns: a feature no event of the part has is 0 ns there, as in
    the single-process build."""
    table, _ = built
    union = json.loads(union_text)
    own = {f["column"] for f in json.loads(_api._metadata_text(table))["features"]}
    names = [n for n in table.column_names if n not in own]
    arrays = [table[n] for n in names]
    zeros = None
    for f in union["features"]:
        names.append(f["column"])
        if f["column"] in table.column_names:
            arrays.append(table[f["column"]])
        else:
            zeros = zeros if zeros is not None else pa.array(np.zeros(table.num_rows))
            arrays.append(zeros)
    frame = pa.Table.from_arrays(arrays, names=names).to_pandas(types_mapper=pd.ArrowDtype)
    frame.attrs[METADATA_KEY] = union_text
    return frame


def build_features(
    paths,
    client=None,
    ops=None,
    counts=False,
    file_regex=None,
    row_layers=None,
    time_unit=None,
    skip_invalid=False,
    on_overlap="group",
):
    """`datacrumbs.build_features` over a Dask cluster (`client`, or Dask's current scheduler): a dask DataFrame.

    The per-file tables are built and kept on the workers first (their columns make the frame's columns); the
    frame's partitions are those tables with the columns of the whole matrix.
    """
    files = _api.paths_of(paths)
    groups = process_groups(files, client, time_unit, skip_invalid, on_overlap)
    options = (ops, counts, file_regex, "exact", row_layers, time_unit, skip_invalid, 1)
    built = _persist(client, [delayed(_build_group)(g, options) for g in groups])
    summaries = _compute(client, [delayed(_summary)(b) for b in built])
    _warn_skipped(s for _, _, s in summaries)
    union_text = json.dumps(_union([json.loads(m) for m, _, _ in summaries]))
    meta = _feature_frame((summaries[0][1].empty_table(), None), union_text)
    parts = [delayed(_feature_frame)(b, union_text) for b in built]
    return dd.from_delayed(parts, meta=meta, verify_meta=False)


def _event_frame(built):
    table, _ = built
    return table.to_pandas(types_mapper=pd.ArrowDtype)


def read_trace(paths, client=None, time_unit=None, skip_invalid=False):
    """`datacrumbs.read_trace` over a Dask cluster: a dask DataFrame with one partition per file, in file order.

    An event row depends on no other file, so no file needs another's task.
    """
    files = _api.paths_of(paths)
    built = _persist(client, [delayed(_read_file)(f, time_unit, skip_invalid) for f in files])
    _warn_skipped(_compute(client, [delayed(_skipped)(b) for b in built]))
    meta = _native.event_table_schema().empty_table().to_pandas(types_mapper=pd.ArrowDtype)
    return dd.from_delayed([delayed(_event_frame)(b) for b in built], meta=meta, verify_meta=False)


# --- Ranking on a Dask cluster -------------------------------------------------------------------------------------
#
# `rank` fits LightGBM's own Dask estimator (`lightgbm.DaskLGBMRegressor`, which trains across the workers through
# LightGBM's socket-based data-parallel learner) with dc-model's trees, and reads each feature's importance as
# dc-model does: mean |SHAP| (LightGBM's `pred_contrib`) on the held-out rows, shares of their sum, a layer's share the
# sum of its columns' in one model over the call's context and every layer (`stack`), and each layer's ranking its
# features in decreasing share until `cumulative` (the 95% cut). The held-out rows are a seeded hash of each row's
# (ts, pid, tid), so no partition needs another's.

# What LightGBM's Dask training holds per matrix cell, in bytes: the float64 partitions, their float32 copy and the
# binned dataset; a fit that needs more than the workers' memory is refused before it starts.
_BYTES_PER_CELL = 24


def _splitmix(x):
    """splitmix64 of a uint64 array: outputs that pass as independent uniforms."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _held_out(frame, seed, test_fraction):
    """Whether each row is held out: its (ts, pid, tid) hashed with the seed below `test_fraction`."""
    with np.errstate(over="ignore"):
        key = (
            frame["ts"].to_numpy(dtype=np.uint64)
            ^ _splitmix(frame["pid"].to_numpy(dtype=np.uint64) ^ np.uint64(seed))
            ^ _splitmix(frame["tid"].to_numpy(dtype=np.uint64) + np.uint64(0xA5A5))
        )
    return pd.Series(_splitmix(key) < np.uint64(int(test_fraction * 2**64)), index=frame.index)


def _context(frame, ops):
    """dc-model's context columns of a partition: one indicator per operation, the size (0 without one), and `direct`
    and `sequential` as 1 or 0 (½ unknown)."""
    out = {f"op={op}": (frame["op"] == op).astype("float64").fillna(0.0) for op in ops}
    out["size"] = frame["size"].astype("float64").fillna(0.0)
    for flag in ("direct", "sequential"):
        out[flag] = frame[flag].astype("float64").fillna(0.5)
    return pd.DataFrame(out, index=frame.index)


def _design(frame, ops, columns, exclusive, target, seed, test_fraction):
    """A partition's rows with a target: the context and feature columns as float64, the target, `held_out`, and
    for the stack model's kinds of call the call's kind (`op` and buffered, direct or unknown), its duration and
    its exclusive time per layer (`exclusive`: layer → column)."""
    frame = frame[frame[target].notna()]
    x = pd.concat([_context(frame, ops), frame[columns].astype("float64")], axis=1)
    x["__y"] = frame[target].astype("float64")
    x["__held_out"] = _held_out(frame, seed, test_fraction)
    mode = np.where(frame["direct"].isna(), "unknown", np.where(frame["direct"].fillna(False), "direct", "buffered"))
    x["__group"] = (frame["op"].astype("string") + " " + mode).astype(object)
    x["__dur"] = frame["dur"].astype("float64")
    for layer, column in exclusive.items():
        x[f"__excl {layer}"] = frame[column].astype("float64")
    return x.reset_index(drop=True)


def _metadata_of(features):
    """The layer metadata of a Parquet path (its footer) or a frame from `build_features` (its attrs)."""
    if isinstance(features, (str, os.PathLike)):
        # The file's key-value metadata: dc-features writes the layers there when it closes the file, after the
        # Arrow schema (which pyarrow's `read_schema` gives alone) was written.
        first = sorted(glob.glob(os.fspath(features)))[:1] or [features]
        meta = pq.ParquetFile(first[0]).metadata.metadata or {}
        text = meta.get(METADATA_KEY.encode())
        if text is None:
            raise InputError(f"{features}: {METADATA_KEY}: missing layer metadata")
        return json.loads(text)
    text = _api._metadata_text(features)
    if text is None:
        raise InputError(f"features frame: {METADATA_KEY}: missing layer metadata")
    return json.loads(text)


def _shares(values):
    total = float(np.sum(np.maximum(values, 0.0)))
    if not total > 0.0:
        return np.zeros(len(values))
    return np.maximum(values, 0.0) / total


def _kept(share, cumulative):
    """dc-model's cut: features by decreasing share (then by position) until their running sum reaches `cumulative`."""
    order = sorted(range(len(share)), key=lambda j: (-share[j], j))
    acc, n = 0.0, 0
    for j in order:
        if acc >= cumulative - 1e-12 or share[j] <= 0.0:
            break
        acc += share[j]
        n += 1
    return order, n


def _r2(y, pred):
    y = np.asarray(y)
    ss = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - float(np.sum((y - np.asarray(pred)) ** 2)) / ss if ss > 0 else float("nan")


class _Progress:
    def __init__(self, total, show):
        self.done, self.total, self.show = 0, total, show

    def step(self, what):
        self.done += 1
        if self.show:
            print(f"datacrumbs.dask.rank: {self.done}/{self.total} {what}", file=sys.stderr, flush=True)


def _mape(y, pred):
    """dc-model's mean absolute percentage error, over the rows whose measured value is not 0; None without one."""
    y, pred = np.asarray(y), np.asarray(pred)
    nonzero = y != 0
    return float(np.mean(np.abs((y[nonzero] - pred[nonzero]) / y[nonzero]))) if nonzero.any() else None


def _quality(yh, pred):
    """dc-model's `quality`: held-out R² and MAPE; no cross-validation here."""
    return {"test_r2": _r2(yh, pred), "test_mape": _mape(yh, pred), "cv_r2_mean": None, "cv_r2_sd": None}


def _by_group(frame, booster, names):
    """Per kind of call in a partition of held-out rows: the sum of |SHAP| per column and the row count."""
    if len(frame) == 0:
        return pd.DataFrame(columns=["__group", "__n", *names])
    contrib = np.abs(booster.predict(frame[names].to_numpy(dtype="float64"), pred_contrib=True)[:, : len(names)])
    sums = pd.DataFrame(contrib, columns=names)
    sums["__group"] = frame["__group"].to_numpy()
    sums["__n"] = 1
    return sums.groupby("__group", as_index=False).sum()[["__group", "__n", *names]]


def _fit(client, design, names, params, progress, what, groups=False):
    """A DaskLGBMRegressor on the training rows of `names`; mean |SHAP| on the held-out rows; their `quality`;
    with `groups`, the |SHAP| sums and rows of each kind of call among the held-out rows."""
    import lightgbm

    train = design[~design["__held_out"]]
    test = design[design["__held_out"]]
    model = lightgbm.DaskLGBMRegressor(client=client, **params)
    model.fit(train[names].to_dask_array(lengths=True), train["__y"].to_dask_array(lengths=True))
    xh = test[names].to_dask_array(lengths=True)
    contrib = model.predict(xh, pred_contrib=True)
    pred = model.predict(xh)
    shap, pred, yh = _compute(client, [abs(contrib[:, : len(names)]).mean(axis=0), pred, test["__y"]])
    per_group = None
    if groups:
        booster = model.to_local().booster_
        meta = pd.DataFrame(
            {
                "__group": pd.Series(dtype=object),
                "__n": pd.Series(dtype="int64"),
                **{n: pd.Series(dtype="float64") for n in names},
            }
        )
        parts = test[["__group", *names]].map_partitions(_by_group, booster, names, meta=meta)
        per_group = _compute(client, [parts])[0].groupby("__group").sum()
    progress.step(what)
    return model, np.asarray(shap), _quality(yh, pred), int(len(train)), int(len(test)), per_group


def _size(n):
    """Bytes as GB, or MB below a GB."""
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


def _check_memory(client, rows, columns, memory):
    """Refuses, before any fit, a design whose fit needs more than `memory` bytes (the workers' memory limits where
    None), naming the rows, columns, memory needed and available, and the way out."""
    info = client.scheduler_info() if client is not None else None
    workers = (info or {}).get("workers", {})
    available = memory if memory is not None else sum(w.get("memory_limit") or 0 for w in workers.values())
    need = rows * columns * _BYTES_PER_CELL
    if available and need > available:
        raise InputError(
            f"{rows} rows × {columns} columns: the fit needs about {_size(need)} of memory, and "
            f"{_size(available)} is available on {len(workers)} workers; add workers, or rank a stratified "
            "sample on one machine (dc-model rank --sample)"
        )


def _groups(per_group, layer_of, chosen, design_groups):
    """dc-model's `stack.groups`: per kind of call among the held-out rows, each layer's share of its |SHAP| and of
    its calls' time."""
    rows, dur, exclusive = design_groups
    out = []
    for name in sorted(per_group.index):
        sums = per_group.loc[name]
        total = float(sum(sums[c] for c in layer_of))
        if not total > 0.0:
            continue
        share = {layer: float(sum(sums[c] for c, l in layer_of.items() if l == layer)) / total for layer in chosen}
        layers = [
            {
                "layer": layer,
                "share": share[layer],
                "time_share": (
                    float(exclusive[layer].get(name, 0.0)) / dur[name]
                    if layer in exclusive and dur.get(name, 0.0) > 0
                    else None
                ),
            }
            for layer in chosen
        ]
        layers.sort(key=lambda l: (-l["share"], l["layer"]))
        out.append(
            {
                "group": name,
                "rows": int(rows[name]),
                "test_rows": int(sums["__n"]),
                "context_share": float(sum(sums[c] for c, l in layer_of.items() if l == "context")) / total,
                "layers": layers,
            }
        )
    return out


def rank(
    features,
    client=None,
    layers=("all",),
    target="bandwidth",
    cumulative=0.95,
    test_fraction=0.2,
    seed=0,
    n_estimators=200,
    max_depth=3,
    learning_rate=0.1,
    min_samples_leaf=1,
    json_path=None,
    progress=True,
    memory=None,
):
    """`dc-model rank --json` of a feature matrix fitted on a Dask cluster (`client`, or Dask's current one): every
    row of `features` (a Parquet path or glob, or a dask DataFrame from `build_features`) trains LightGBM's Dask
    estimator with dc-model's trees (`max_depth`, 2^max_depth leaves, `learning_rate`, `min_samples_leaf` rows a
    leaf; `n_estimators` trees, no early stopping). Returns the report as a dict and writes it to `json_path` where
    given, with every key of dc-model's JSON: `stack` (each layer's share of one model over the context and every
    layer, and per kind of call), and per layer its ranking to the `cumulative` cut, its importances, the columns
    left out as constant, and its model's held-out quality beside the context's alone. What dc-model computes and
    this does not (correlations, PCA, Lasso, cross-validation, fold stability, permutation importances, the
    auto-regression, per-row predictions) is null. A fit that needs more than `memory` bytes (default: the sum of
    the workers' memory limits) is refused before it starts."""
    import lightgbm

    if target != "bandwidth":
        raise InputError(f"target `{target}`: datacrumbs.dask.rank ranks bandwidth only")
    meta = _metadata_of(features)
    frame = dd.read_parquet(features) if isinstance(features, (str, os.PathLike)) else features
    columns_of = {}
    exclusive = {}
    for f in meta["features"]:
        columns_of.setdefault(f["layer"], []).append(f["column"])
        if f["kind"] == "exclusive_ns":
            exclusive[f["layer"]] = f["column"]
    present = list(columns_of)
    asked = [layers] if isinstance(layers, str) else list(layers)
    every = not asked or "all" in asked
    chosen = present if every else asked
    for layer in chosen:
        if layer not in columns_of:
            raise InputError(f"layer {layer} has no feature columns (layers present: {', '.join(present)})")
    feature_columns = [c for layer in chosen for c in columns_of[layer]]
    exclusive = {layer: column for layer, column in exclusive.items() if layer in chosen}
    ops = sorted(_compute(client, [frame["op"].dropna().unique()])[0].tolist())
    args = (ops, feature_columns, exclusive, target, seed, test_fraction)
    design = frame.map_partitions(_design, *args, meta=_design(frame._meta, *args))
    rows_total = int(_compute(client, [frame.shape[0]])[0])
    context = [c for c in _context(frame._meta, ops).columns]
    # The rows with a target, counted without holding them, so that the refusal comes before anything is held.
    rows = int(_compute(client, [frame[target].count()])[0])
    _check_memory(client, rows, len(context) + len(feature_columns), memory)
    design = _persist(client, [design])[0]
    numeric = context + feature_columns
    lo, hi, group_rows, group_dur, group_excl = _compute(
        client,
        [
            design[numeric].min(),
            design[numeric].max(),
            design.groupby("__group").size(),
            design.groupby("__group")["__dur"].sum(),
            design[["__group", *[f"__excl {layer}" for layer in exclusive]]].groupby("__group").sum(),
        ],
    )
    # dc-model's `--drop-constant` (its default): a column constant over the rows with a target is left out.
    context = [c for c in context if lo[c] != hi[c]]
    dropped = {layer: [c for c in columns_of[layer] if lo[c] == hi[c]] for layer in chosen}
    kept_of = {layer: [c for c in columns_of[layer] if lo[c] != hi[c]] for layer in chosen}
    params = dict(
        n_estimators=n_estimators,
        max_depth=max_depth,
        num_leaves=2**max_depth,
        learning_rate=learning_rate,
        min_child_samples=min_samples_leaf,
        random_state=seed,
        verbose=-1,
    )
    steps = _Progress(len(chosen) + int(every) + int(bool(context)), progress)
    context_r2 = None
    if context:
        context_r2 = _fit(client, design, context, params, steps, "context alone")[2]["test_r2"]
    reports = []
    for layer in chosen:
        names = context + kept_of[layer]
        model, shap, quality, n_train, n_test, _ = _fit(client, design, names, params, steps, f"layer {layer}")
        share = _shares(shap)
        order, n_kept = _kept(share, cumulative)
        gain = model.booster_.feature_importance(importance_type="gain")
        gain_share = _shares(gain)
        acc = 0.0
        ranking = []
        for i, j in enumerate(order[:n_kept]):
            acc += share[j]
            ranking.append(
                {
                    "rank": i + 1,
                    "feature": names[j],
                    "context": j < len(context),
                    "importance": float(shap[j]),
                    "share": float(share[j]),
                    "cumulative_share": min(acc, 1.0),
                    "lasso_sign": None,
                    "fold_stability": None,
                    "duplicates": [],
                }
            )
        reports.append(
            {
                "layer": layer,
                "rows": rows,
                "train_rows": n_train,
                "test_rows": n_test,
                "model_features": names,
                "dropped_constant": dropped[layer],
                "context_r2": context_r2,
                "delta_r2": quality["test_r2"] - (context_r2 or 0.0),
                "ranking": ranking,
                "importances": [
                    {
                        "feature": names[j],
                        "gain": float(gain[j]),
                        "gain_share": float(gain_share[j]),
                        "permutation": None,
                        "permutation_share": None,
                        "shap": float(shap[j]),
                        "shap_share": float(share[j]),
                    }
                    for j in order
                ],
                "correlation": None,
                "pca": None,
                "lasso": None,
                "gbm": {
                    "n_trees": n_estimators,
                    "max_trees": n_estimators,
                    "max_depth": max_depth,
                    "learning_rate": learning_rate,
                    "quality": quality,
                },
                "test_predictions": None,
            }
        )
    stack = None
    if every:
        names = context + [c for layer in chosen for c in kept_of[layer]]
        _, shap, quality, _, _, per_group = _fit(client, design, names, params, steps, "stack", groups=True)
        share = _shares(shap)
        layer_of = {c: "context" for c in context} | {c: layer for layer in chosen for c in kept_of[layer]}
        per_layer = {layer: float(sum(s for s, c in zip(share, names) if layer_of[c] == layer)) for layer in chosen}
        delta = {r["layer"]: r["delta_r2"] for r in reports}
        excl_sums = {layer: group_excl[f"__excl {layer}"].to_dict() for layer in exclusive}
        stack = {
            "quality": quality,
            "context_r2": context_r2,
            "context_share": float(sum(s for s, c in zip(share, names) if layer_of[c] == "context")),
            "layers": [
                {"layer": layer, "share": per_layer[layer], "delta_r2": delta[layer]}
                for layer in sorted(chosen, key=lambda layer: (-per_layer[layer], layer))
            ],
            "groups": _groups(per_group, layer_of, chosen, (group_rows.to_dict(), group_dur.to_dict(), excl_sums)),
        }
    report = {
        "target": target,
        "importance": "shap",
        "computed_importances": ["shap", "gain"],
        "cumulative": cumulative,
        "folds": None,
        "seed": seed,
        "split": "random",
        "test_fraction": test_fraction,
        "rows_total": rows_total,
        "autoregression": None,
        "engine": {"dask": dask.__version__, "lightgbm": lightgbm.__version__},
        "stack": stack,
        "layers": reports,
        "skipped_layers": [],
    }
    if json_path is not None:
        with open(json_path, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
    return report
