"""How a table build command runs its build, once its options are made.

DATA is opened (partitioned rows checked before any cluster starts), the operator's key loaded,
and the build run, in memory with its progress drawn on stderr, or out of core on a Dask cluster
(:mod:`._out_of_core`).

It names no mechanism: the command hands in its builds, in memory and out of core.
"""
from __future__ import annotations

import contextlib
import pathlib
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import click

from ... import _routed
from ..._errors import BuildError
from ...commandline import load_key
from ...data import Dataset, Source
from .._result import Result
from ._out_of_core import OutOfCore, mapping_of, open_partitioned, run_partitioned, wants_partitioned
from ._partitioned import IN_CORE_BYTES
from ._pipeline import StageTimer

__all__ = ["Placement", "Ran", "run", "SEARCH_SHARE"]


@dataclass(frozen=True)
class Placement:
    """Where a build runs: DATA in memory, or partitioned on a Dask cluster.

    DATA is partitioned when it is a directory, a glob, Parquet, or any DATA with ``workers`` or
    ``scheduler``: on a local Dask cluster of ``workers`` processes or the one at ``scheduler``,
    with the out-of-core ``kmeans``; the points are mapped in memory while they take at most
    ``in_core_limit`` MiB.
    """

    workers: int | None = None
    scheduler: str | None = None
    kmeans: str = "minibatch"
    in_core_limit: int = IN_CORE_BYTES >> 20


@dataclass(frozen=True)
class Ran:
    """A build run and not yet signed.

    Its ``result``, the ``timer`` that timed its stages, the operator's ``private_key`` that signs
    it and when the build ``started`` (:func:`time.perf_counter`).
    """

    result: Result
    timer: StageTimer
    private_key: object
    started: float


def run(data: str | pathlib.Path, options: Any, build: Callable[..., Result], out_of_core: OutOfCore | None, *,
        private: str | Sequence[str], public: Sequence[str] | None, key: pathlib.Path,
        passphrase_file: str | pathlib.Path | None, placement: Placement = Placement()) -> Ran:
    """Build ``options`` from DATA, in memory or out of core.

    In memory with ``build(dataset, options, progress=)``, or, for DATA the partitioned build takes
    (:func:`wants_partitioned`), with ``out_of_core``. The partitioned rows are opened and checked,
    and the key (``key``, ``passphrase_file``) loaded, before any row is read.

    Raises
    ------
    BuildError
        Partitioned DATA with options it cannot build (or no ``out_of_core``); an unreadable key;
        anything the reading and the build raise.
    """
    source = _partitioned(data, options, out_of_core, private=private, public=public, placement=placement)
    private_key = load_key(key, passphrase_file)
    started = time.perf_counter()
    _routed.clear()
    if source is not None:
        timer = StageTimer()
        result = run_partitioned(*source, workers=placement.workers, scheduler=placement.scheduler,
                                 kmeans=placement.kmeans, progress=timer, in_core_bytes=placement.in_core_limit << 20)
    else:
        result, timer = _in_memory(data, options, build, private=private, public=public)
    return Ran(result, timer, private_key, started)


def _partitioned(data: str | pathlib.Path, options: Any, out_of_core: OutOfCore | None, *,
                 private: str | Sequence[str], public: Sequence[str] | None,
                 placement: Placement) -> tuple[Source, object, OutOfCore] | None:
    """DATA's partitioned rows, ``options`` and the build that runs them; None for DATA in memory.

    With an in-core limit of 0, what only the mapping in memory takes is refused here
    (``out_of_core.check``), before any cluster starts.
    """
    if not wants_partitioned(data, placement.workers, placement.scheduler):
        return None
    src = open_partitioned(data, options, private=private, public=public, kmeans=placement.kmeans)
    if out_of_core is None:
        raise BuildError(f"the {options.mechanism} mechanism has no partitioned build")
    if placement.in_core_limit <= 0:
        out_of_core.check(mapping_of(options), " (--in-core-limit 0)", joint=bool(src.private_columns))
    return src, options, out_of_core


def _in_memory(data: str | pathlib.Path, options: Any, build: Callable[..., Result], *,
               private: str | Sequence[str], public: Sequence[str] | None) -> tuple[Result, StageTimer]:
    """The result of ``build`` on DATA's rows in memory, and the :class:`StageTimer` that timed it.

    The rows are read as the stage ``load``; the build's progress is drawn on stderr. Raises as
    the reading and the build.
    """
    mapping = mapping_of(options)
    declared = getattr(mapping, "declared", None)
    with _stage_bar("build") as progress:
        timer = StageTimer(progress)
        timer("load", 0.0)
        dataset = Dataset.from_csv(data, private=private, public=public, categorical=not mapping.quantizes,
                                   missing_tokens=declared.missing_tokens() if declared else None)
        return build(dataset, options, progress=timer), timer


#: The share of the bar an ``auto`` search fills (it takes most of such a build's time); the
#: chosen candidate's build fills the rest.
SEARCH_SHARE = 0.9


@contextlib.contextmanager
def _stage_bar(label: str) -> Iterator[Callable[..., None]]:
    """A progress bar on stderr, driven as a build's ``progress(stage, fraction[, detail])``.

    The ``auto-search`` stage tells its own fraction and where it is (``detail``): it fills
    :data:`SEARCH_SHARE` of the bar, and the build's stages after it the rest. The detail is drawn
    on a terminal only: elsewhere click writes a line each time the label changes, and a log gets
    one line per stage, not one per task.
    """
    searched, terminal = False, sys.stderr.isatty()
    with click.progressbar(length=1000, label=label, file=sys.stderr, show_eta=False, width=20) as bar:
        def progress(stage: str, fraction: float, detail: str | None = None) -> None:
            nonlocal searched
            if stage == "auto-search":
                searched, fraction = True, SEARCH_SHARE * fraction
            elif searched:
                fraction = SEARCH_SHARE + (1 - SEARCH_SHARE) * fraction
            bar.label = f"{label}: {stage:<15}" + (f" {detail}" if detail and terminal else "")
            bar.update(max(0, int(fraction * 1000) - bar.pos))
        yield progress

