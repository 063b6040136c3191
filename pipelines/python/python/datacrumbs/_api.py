"""The single-process API: thin wrappers that give the native functions their Python signatures."""

import json
import os
import tempfile
import warnings

import pyarrow as pa
import pyarrow.parquet as pq

from . import _native
from ._native import InputError

# The schema metadata key of a feature table's layer metadata (features' METADATA_KEY, as in its Parquet files).
METADATA_KEY = "datacrumbs.features"


def paths_of(paths):
    """The files that `paths` (a path, a glob, or a list of them) name, in order, globs sorted."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return [str(p) for p in _native.expand([os.fspath(p) for p in paths])]


class DamageWarning(UserWarning):
    """A damaged compressed trace was read with `salvage=True`: the message lists each unreadable byte range and the
    lines lost with it, as `dc-features --salvage` prints them."""


def _warn_skipped(skipped):
    count, examples, damage = skipped
    if count:
        warnings.warn(
            f"skipped {count} invalid line(s), for example:\n  " + "\n  ".join(examples),
            stacklevel=3,
        )
    if damage:
        warnings.warn("salvaged around damage:\n  " + "\n  ".join(damage), DamageWarning, stacklevel=3)


def read_trace(paths, time_unit=None, skip_invalid=False, threads=0, salvage=False):
    """Every event of the traces (`.pfw`, `.pfw.gz`, any dialect `dc-features convert` reads) as one typed table.

    Columns are `datasets`' event schema: times in integer nanoseconds (`ts_ns`, `dur_ns`), hashes as 16 big-endian
    bytes, `fname`/`hostname` resolved through the trace's metadata. `time_unit` ("us" or "ns") is the unit of files
    that do not state it. With `skip_invalid`, bad lines are skipped and reported in a warning. A truncated or corrupt
    gzip/BGZF file raises `InputError`; with `salvage`, every complete event before the damage is kept, reading goes
    on at the next intact BGZF block, and a `DamageWarning` names each damaged byte range and the ids of the lines
    lost.
    """
    table, skipped = _native.read_trace(paths_of(paths), time_unit, skip_invalid, threads, salvage)
    _warn_skipped(skipped)
    return table


def build_features(
    paths,
    ops=None,
    counts=False,
    file_regex=None,
    mode="exact",
    row_layers=None,
    time_unit=None,
    skip_invalid=False,
    threads=0,
    salvage=False,
):
    """The per-syscall feature matrix of the traces, as `dc-features build` writes it.

    One row per call of a layer in `row_layers` (default: the tool's, `sys` and DFTracer's `POSIX`) whose operation
    is in `ops` (default: the tool's data and open calls; `[]`: every operation), as `--rows LAYER:OPS` gives them;
    the base columns (`op, pid, tid, ts, dur, file, size, bandwidth` and the context columns) and one column per
    layer and event name. The layer of each feature column is in `schema.metadata[b"datacrumbs.features"]` (see
    `feature_metadata`). `skip_invalid` and `salvage` are `read_trace`'s.
    """
    table, skipped = _native.build_features(
        paths_of(paths),
        None if ops is None else list(ops),
        counts,
        file_regex,
        mode,
        None if row_layers is None else list(row_layers),
        time_unit,
        skip_invalid,
        threads,
        salvage,
    )
    _warn_skipped(skipped)
    return table


def feature_metadata(features):
    """The layer metadata of a feature table (or of a pandas frame that carries it in `attrs`), as a dict."""
    text = _metadata_text(features)
    if text is None:
        raise InputError(
            f"{METADATA_KEY}: missing layer metadata (not a table from build_features?)"
        )
    return json.loads(text)


def layers(features):
    """The layers of a feature table's feature columns, in column order."""
    out = []
    for f in feature_metadata(features)["features"]:
        if f["layer"] not in out:
            out.append(f["layer"])
    return out


def _metadata_text(features):
    attrs = getattr(features, "attrs", None)
    if isinstance(attrs, dict) and METADATA_KEY in attrs:
        return attrs[METADATA_KEY]
    schema = getattr(features, "schema", None)
    meta = getattr(schema, "metadata", None) or {}
    value = meta.get(METADATA_KEY.encode())
    return None if value is None else value.decode()


def _as_table(frame):
    """A pyarrow table of a pyarrow table, pandas frame or anything with `__arrow_c_stream__` (polars, DuckDB), its
    strings as `dc-features` writes them (polars gives string views or large strings)."""
    if isinstance(frame, pa.Table):
        table = frame
    elif hasattr(frame, "__arrow_c_stream__"):
        table = pa.table(frame)
    else:
        table = pa.Table.from_pandas(frame, preserve_index=False)
    other_strings = (pa.types.is_large_string, pa.types.is_string_view)
    fields = [
        f.with_type(pa.string()) if any(is_type(f.type) for is_type in other_strings) else f for f in table.schema
    ]
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))


def rank(
    features,
    layers=("vfs",),
    drop_constant=True,
    all_importances=False,
    metadata=None,
    **options,
):
    """`dc-model rank --json` of a feature matrix: per layer, the ranked features and each model's held-out quality.
    Like dc-model, only the ranking's importance and gain are computed unless `all_importances` (the others are None),
    and columns constant over the rows that have a target are left out (listed in the report) unless
    `drop_constant=False`, which fails their layer instead.

    `features` is a matrix file (`.parquet`, `.csv`, `.jsonl`), a table from `build_features`, or a pandas, polars
    or DuckDB frame of one; a frame that lost the schema metadata takes it from `metadata` (`feature_metadata` of
    the table it came from). `layers` is a list of layers, or ["all"]. Any other option of `models::RankOptions`
    (the pipeline's `[model]` table) goes by its name: `target`, `cumulative`, `importance`, `folds`, `seed`,
    `split`, `test_fraction`, `duplicate_threshold`, `gbm={"n_estimators": 100}`, ...
    """
    options = json.dumps(
        {
            "layers": [layers] if isinstance(layers, str) else list(layers),
            "drop_constant": drop_constant,
            "all_importances": all_importances,
            **options,
        }
    )
    if isinstance(features, (str, os.PathLike)):
        path = os.fspath(features)
        return json.loads(_native.rank(path, path, options))
    text = json.dumps(metadata) if metadata is not None else _metadata_text(features)
    if text is None:
        raise InputError(
            f"features table: {METADATA_KEY}: missing layer metadata (pass metadata=feature_metadata(table) "
            "of the table it came from)"
        )
    table = _as_table(features).replace_schema_metadata({METADATA_KEY: text})
    with tempfile.TemporaryDirectory(prefix="datacrumbs-") as tmp:
        path = os.path.join(tmp, "features.parquet")
        pq.write_table(table, path)
        return json.loads(_native.rank(path, "features table", options))
