"""``privmap build`` on a directory or glob of CSV/Parquet files: the partitioned build on Dask."""
from __future__ import annotations

import glob
import os
import pathlib
import sys

import click

from .._errors import BuildError

_PARQUET = (".parquet", ".pq")


def wants_partitioned(data, workers: int | None, scheduler: str | None) -> bool:
    """Whether DATA goes to the partitioned build: a directory, a glob pattern, a Parquet file,
    or any DATA when ``--workers`` or ``--scheduler`` is given (a lone CSV file otherwise stays
    in memory)."""
    text = os.fspath(data)
    return (workers is not None or scheduler is not None or os.path.isdir(text)
            or pathlib.Path(text).suffix.lower() in _PARQUET
            or (not os.path.exists(text) and glob.has_magic(text)))


def check_partitioned_options(data, options, *, auto: bool, kmeans: str):
    """Refuse what the partitioned build cannot do, before any cluster starts (headers only are read).

    Returns the checked source, to pass to :func:`run_partitioned`.

    Raises
    ------
    BuildError
        The ``scale`` extra (dask, distributed, pyarrow) is not installed; ``--clusters auto`` or
        ``--smoothing auto``; anything :func:`check_partitioned` refuses (DatasetError included).
    """
    try:
        import distributed  # noqa: F401
        import pyarrow  # noqa: F401

        from ..mechanisms.quantized._partitioned_build import check_partitioned
    except ImportError as exc:
        raise BuildError(f"a partitioned build needs the scale extra ({exc.name} is missing): "
                         f"pip install 'privmap[scale]'") from None
    if auto:
        raise BuildError("'auto' clusters or smoothing are chosen in memory; a partitioned build needs a number "
                         "(--clusters K, --smoothing S)")
    if options.prior != "counts":
        raise BuildError("--prior posteriors fits a classifier to the rows in memory; a partitioned build counts")
    return check_partitioned(data, options, kmeans=kmeans)


def run_partitioned(data, options, *, workers: int | None, scheduler: str | None, kmeans: str, progress,
                    checked=None):
    """Run :func:`build_partitioned` on a local cluster of ``workers`` processes or on ``scheduler``.

    ``checked`` is what :func:`check_partitioned_options` returned (it is called here otherwise,
    still before the cluster starts). Dask's progress bar of each pass goes to stderr beside the
    stage names.

    Raises
    ------
    BuildError
        As :func:`check_partitioned_options`; the scheduler cannot be reached, or anything
        :func:`build_partitioned` raises.
    """
    if checked is None:
        checked = check_partitioned_options(data, options, auto=False, kmeans=kmeans)
    from ..mechanisms.quantized._partitioned_build import build_partitioned, dask_client

    shown = []

    def tell(stage: str, fraction: float) -> None:
        progress(stage, fraction)
        if not shown or shown[-1] != stage:
            shown.append(stage)
            click.echo(f"build: {stage} ({100 * fraction:.0f}%)", err=True)

    from distributed.scheduler import KilledWorker
    try:
        with dask_client(workers=workers, scheduler=scheduler) as client:
            return build_partitioned(data, options, client, kmeans=kmeans, progress=tell,
                                     dask_progress=sys.stderr.isatty(), checked=checked)
    except KilledWorker as exc:
        raise BuildError(f"a Dask worker died while processing a partition (out of memory?): {exc}") from exc
    except (OSError, TimeoutError) as exc:
        if isinstance(exc, FileNotFoundError) and exc.filename:
            raise
        raise BuildError(f"Dask cluster{' at ' + scheduler if scheduler else ''}: {exc}") from exc
