"""``privmap build`` on a directory or glob of CSV/Parquet files: which DATA goes to the
partitioned build, and the build run on a Dask cluster with its passes told on stderr."""
from __future__ import annotations

import glob
import os
import pathlib
import sys

import click

from .._errors import BuildError
from ..data import open_source
from . import recommender
from .quantized import build_partitioned, check_partitioned, dask_client

__all__ = ["wants_partitioned", "open_partitioned", "run_partitioned"]

_PARQUET = (".parquet", ".pq")


def wants_partitioned(data, workers: int | None, scheduler: str | None) -> bool:
    """Whether DATA goes to the partitioned build: a directory, a glob pattern, a Parquet file,
    or any DATA when ``--workers`` or ``--scheduler`` is given (a lone CSV file otherwise stays
    in memory)."""
    text = os.fspath(data)
    return (workers is not None or scheduler is not None or os.path.isdir(text)
            or pathlib.Path(text).suffix.lower() in _PARQUET
            or (not os.path.exists(text) and glob.has_magic(text)))


def open_partitioned(data, options, *, private: str, public, kmeans: str):
    """The partitioned rows of DATA (headers only read), checked by :func:`check_partitioned`
    (a recommender's mapping options, on its rating columns) before any cluster starts.

    Raises
    ------
    BuildError
        The ``scale`` extra (dask, distributed, pyarrow) is not installed; anything
        :func:`check_partitioned` refuses (DatasetError included).
    """
    try:
        import distributed  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise BuildError(f"a partitioned build needs the scale extra ({exc.name} is missing): "
                         f"pip install 'privmap[scale]'") from None
    src = open_source(data, private=private, public=public)
    check_partitioned(src, options.mapping if isinstance(options, recommender.RecommenderOptions) else options,
                      kmeans=kmeans)
    return src


def run_partitioned(src, options, *, workers: int | None, scheduler: str | None, kmeans: str, progress,
                    scratch=None):
    """Run :func:`build_partitioned` (for :class:`RecommenderOptions`, the recommender's, its
    temporary factor points in ``scratch``) on a local cluster of ``workers`` processes or on
    ``scheduler``; each pass is told to ``progress`` and named on stderr, beside Dask's progress
    bar of it.

    Raises
    ------
    BuildError
        The scheduler cannot be reached, a worker died, or anything :func:`build_partitioned` raises.
    """
    shown: list[str] = []

    def tell(stage: str, fraction: float) -> None:
        progress(stage, fraction)
        if not shown or shown[-1] != stage:
            shown.append(stage)
            click.echo(f"build: {stage} ({100 * fraction:.0f}%)", err=True)

    from distributed.scheduler import KilledWorker
    try:
        with dask_client(workers=workers, scheduler=scheduler) as client:
            if isinstance(options, recommender.RecommenderOptions):
                return recommender.build_partitioned(src, options, client, kmeans=kmeans, progress=tell,
                                                     dask_progress=sys.stderr.isatty(), scratch=scratch)
            return build_partitioned(src, options, client, kmeans=kmeans, progress=tell,
                                     dask_progress=sys.stderr.isatty())
    except KilledWorker as exc:
        raise BuildError(f"a Dask worker died while processing a partition (out of memory?): {exc}") from exc
    except (OSError, TimeoutError) as exc:
        if isinstance(exc, FileNotFoundError) and exc.filename:
            raise
        raise BuildError(f"Dask cluster{' at ' + scheduler if scheduler else ''}: {exc}") from exc
