"""datacrumbs from Python: traces, per-syscall feature matrices and per-layer rankings as Arrow tables.

Every function calls the Rust crates (`datasets`, `features`, `models`) that the `dc-*` tools are built on, so a
table here holds what `dc-features convert`/`build` would write, and `rank` returns what `dc-model rank --json`
writes. Tables are `pyarrow.Table`s that crossed the Arrow C data interface: `polars.from_arrow`,
`table.to_pandas(types_mapper=pandas.ArrowDtype)` and DuckDB read them without copying. Bad input raises
`InputError` with the tools' `file:line: field: what` text. `datacrumbs.dask` builds across a Dask cluster,
`datacrumbs.polars` returns polars frames.
"""

from ._api import (
    METADATA_KEY,
    DamageWarning,
    InputError,
    build_features,
    feature_metadata,
    layers,
    rank,
    read_trace,
)

__all__ = [
    "METADATA_KEY",
    "DamageWarning",
    "InputError",
    "build_features",
    "feature_metadata",
    "layers",
    "rank",
    "read_trace",
]
