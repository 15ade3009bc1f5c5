"""``privmap build`` on a directory or glob of CSV/Parquet files.

Which DATA goes to the partitioned build, and the build run on a Dask cluster with its passes
told on stderr.
"""
from __future__ import annotations

import glob
import os
import pathlib
import sys
import time

import click

from .._errors import BuildError
from ..data import open_source
from . import ranking, recommender
from .quantized import build_partitioned, check_out_of_core
from .table import IN_CORE_BYTES, check_partitioned, dask_client

__all__ = ["wants_partitioned", "open_partitioned", "run_partitioned"]

_PARQUET = (".parquet", ".pq")
#: Least seconds between two progress lines of one stage (a log gets a line a stage, and a long
#: search one this often).
PROGRESS_SECONDS = 10.0


def wants_partitioned(data, workers: int | None, scheduler: str | None) -> bool:
    """Whether DATA goes to the partitioned build.

    A directory, a glob pattern, a Parquet file, or any DATA when ``--workers`` or ``--scheduler``
    is given (a lone CSV file otherwise stays in memory).
    """
    text = os.fspath(data)
    return (workers is not None or scheduler is not None or os.path.isdir(text)
            or pathlib.Path(text).suffix.lower() in _PARQUET
            or (not os.path.exists(text) and glob.has_magic(text)))


def open_partitioned(data, options, *, private, public, kmeans: str, in_core_bytes: int = IN_CORE_BYTES):
    """The partitioned rows of DATA (headers only read), checked before any cluster starts.

    Checked by :func:`check_partitioned` (a model mode's mapping options, on its rating columns);
    with an in-core limit of 0, what only the mapping in memory takes is refused here too.

    Raises
    ------
    BuildError
        The ``scale`` extra (dask, distributed, pyarrow) is not installed; anything
        :func:`check_partitioned` refuses (DatasetError included), or
        :func:`check_out_of_core` with ``in_core_bytes`` 0.
    """
    try:
        import distributed  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise BuildError(f"a partitioned build needs the scale extra ({exc.name} is missing): "
                         f"pip install 'privmap[scale]'") from None
    src = open_source(data, private=private, public=public)
    mapping = _mapping(options)
    check_partitioned(src, mapping, kmeans=kmeans)
    if in_core_bytes <= 0:
        check_out_of_core(mapping, " (--in-core-limit 0)", joint=bool(src.private_columns))
    return src


def _mapping(options):
    """The quantized options that map the points: a model mode's ``mapping``, or ``options``."""
    return options.mapping if isinstance(options, (recommender.RecommenderOptions, ranking.RankingOptions)) \
        else options


def run_partitioned(src, options, *, workers: int | None, scheduler: str | None, kmeans: str, progress,
                    scratch=None, in_core_bytes: int = IN_CORE_BYTES):
    """Run the partitioned build of ``options``' mode on a local cluster or on ``scheduler``.

    The build is :func:`build_partitioned`, or a model mode's, its temporary points in
    ``scratch``; the local cluster has ``workers`` processes. Each pass is told to ``progress``
    and named on stderr as it starts, beside Dask's progress bar of it, and a stage that says
    where it is (the ``auto`` search's tasks done and candidate) once every
    :data:`PROGRESS_SECONDS` besides; points up to ``in_core_bytes`` are mapped in memory.

    Raises
    ------
    BuildError
        The scheduler cannot be reached, a worker died, or anything the build raises.
    """
    shown: list[str] = []
    last = [0.0]

    def tell(stage: str, fraction: float, detail: str | None = None) -> None:
        progress(stage, fraction, detail)
        now = time.monotonic()
        if not shown or shown[-1] != stage or (detail and now - last[0] >= PROGRESS_SECONDS):
            shown.append(stage)
            last[0] = now
            click.echo(f"build: {stage} ({100 * fraction:.0f}%)" + (f" {detail}" if detail else ""), err=True)

    from distributed.scheduler import KilledWorker
    shown_bar = sys.stderr.isatty()
    try:
        with dask_client(workers=workers, scheduler=scheduler) as client:
            if isinstance(options, ranking.RankingOptions):
                return ranking.build_partitioned(src, options, client, kmeans=kmeans, progress=tell,
                                                 dask_progress=shown_bar, scratch=scratch, in_core_bytes=in_core_bytes)
            if isinstance(options, recommender.RecommenderOptions):
                return recommender.build_partitioned(src, options, client, kmeans=kmeans, progress=tell,
                                                     dask_progress=shown_bar, scratch=scratch,
                                                     in_core_bytes=in_core_bytes)
            return build_partitioned(src, options, client, kmeans=kmeans, progress=tell, dask_progress=shown_bar,
                                     in_core_bytes=in_core_bytes)
    except KilledWorker as exc:
        raise BuildError(f"a Dask worker died while processing a partition (out of memory?): {exc}") from exc
    except (OSError, TimeoutError) as exc:
        if isinstance(exc, FileNotFoundError) and exc.filename:
            raise
        raise BuildError(f"Dask cluster{' at ' + scheduler if scheduler else ''}: {exc}") from exc
