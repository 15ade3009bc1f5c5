"""A table build on a directory or glob of CSV/Parquet files, out of core on Dask.

Which DATA goes to the partitioned build, and the build run on a Dask cluster with its passes
told on stderr.

It names no mechanism: the command hands in its build out of core, an :class:`OutOfCore`.
"""
from __future__ import annotations

import glob
import os
import pathlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click

from ..._errors import BuildError
from ...data import open_source
from ._partitioned import IN_CORE_BYTES, check_partitioned, dask_client

__all__ = ["OutOfCore", "wants_partitioned", "open_partitioned", "mapping_of", "run_partitioned"]

_PARQUET = (".parquet", ".pq")
#: Least seconds between two progress lines of one stage (a log gets a line a stage, and a long
#: search one this often).
PROGRESS_SECONDS = 10.0


@dataclass(frozen=True)
class OutOfCore:
    """A table mechanism's build out of core, as its command hands it in.

    Parameters
    ----------
    build : callable
        ``build(src, options, client, *, kmeans, progress, dask_progress, in_core_bytes) -> Result``:
        the build of ``options`` on partitioned rows ``src`` on the Dask ``client``.
    check : callable
        ``check(mapping, why, *, joint)``: refuses (BuildError) what only a mapping of the points
        in memory does, before any cluster starts; ``why`` ends its message, ``joint`` says
        whether the private attribute is several columns' joint.
    """

    build: Callable
    check: Callable


def wants_partitioned(data: str | os.PathLike[str], workers: int | None, scheduler: str | None) -> bool:
    """Whether DATA goes to the partitioned build.

    It does for a directory, a glob pattern, a Parquet file, or any DATA when ``--workers`` or
    ``--scheduler`` is given (a lone CSV file otherwise stays in memory).
    """
    text = os.fspath(data)
    return (workers is not None or scheduler is not None or os.path.isdir(text)
            or pathlib.Path(text).suffix.lower() in _PARQUET
            or (not os.path.exists(text) and glob.has_magic(text)))


def open_partitioned(data: str | os.PathLike[str], options: Any, *, private: str | Sequence[str],
                     public: Sequence[str] | None, kmeans: str) -> Any:
    """The partitioned rows of DATA, their headers only read, checked before any cluster starts.

    :func:`check_partitioned` checks them with ``options`` (a model mode's mapping options, on
    its rating columns).

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
    check_partitioned(src, mapping_of(options), kmeans=kmeans)
    return src


def mapping_of(options: Any) -> Any:
    """The options that map the points: a model mode's ``mapping``, or ``options`` themselves."""
    return getattr(options, "mapping", options)


def run_partitioned(src: Any, options: Any, out_of_core: OutOfCore, *, workers: int | None, scheduler: str | None,
                    kmeans: str, progress: Callable[..., None],
                    in_core_bytes: int = IN_CORE_BYTES) -> Any:
    """Run the partitioned build of ``options`` (``out_of_core.build``) on a Dask cluster.

    The cluster is a local one of ``workers`` processes or the one at ``scheduler``. Each pass is
    told to ``progress`` and named on stderr as it starts, beside Dask's progress bar of it, and
    a stage that says where it is (the ``auto`` search's tasks done and candidate) once every
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
            return out_of_core.build(src, options, client, kmeans=kmeans, progress=tell, dask_progress=shown_bar,
                                     in_core_bytes=in_core_bytes)
    except KilledWorker as exc:
        raise BuildError(f"a Dask worker died while processing a partition (out of memory?): {exc}") from exc
    except (OSError, TimeoutError) as exc:
        if isinstance(exc, FileNotFoundError) and exc.filename:
            raise
        raise BuildError(f"Dask cluster{' at ' + scheduler if scheduler else ''}: {exc}") from exc
