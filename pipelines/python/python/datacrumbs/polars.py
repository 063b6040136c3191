"""The same tables as polars DataFrames (`polars.from_arrow`, which takes Arrow buffers without copying).

The layer metadata of a feature matrix does not survive in a polars frame: pass
`metadata=datacrumbs.feature_metadata(table)` to `datacrumbs.rank`, or use `build_features_with_metadata`.
"""

import polars as pl

from . import _api


def read_trace(paths, **options):
    """`datacrumbs.read_trace` as a polars DataFrame."""
    return pl.from_arrow(_api.read_trace(paths, **options))


def build_features(paths, **options):
    """`datacrumbs.build_features` as a polars DataFrame."""
    return pl.from_arrow(_api.build_features(paths, **options))


def build_features_with_metadata(paths, **options):
    """`datacrumbs.build_features` as (polars DataFrame, layer metadata dict), the pair `datacrumbs.rank` takes."""
    table = _api.build_features(paths, **options)
    return pl.from_arrow(table), _api.feature_metadata(table)
