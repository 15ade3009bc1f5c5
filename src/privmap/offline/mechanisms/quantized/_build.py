"""The quantized mechanism's build: rows in memory and :class:`._options.QuantizedOptions` in,
the shared :class:`~privmap.offline.mechanisms.Result` out (its ``detail`` a
:class:`._pipeline.Build`)."""
from __future__ import annotations

import dataclasses

from ..._errors import BuildError
from ...data import Dataset
from .._result import Result
from ._autotune import choose
from ._options import QuantizedOptions
from ._pipeline import Build, StageTimer, build_dataset, start
from ._program import Progress

__all__ = ["build", "build_points"]


def build(dataset: Dataset, options: QuantizedOptions, *, progress: Progress | None = None) -> Result:
    """Build a quantized bundle's payload from labelled rows in memory.

    Parameters
    ----------
    dataset : Dataset
        Numeric labelled rows (:meth:`~privmap.offline.data.Dataset.from_csv`, ``from_frame``);
        rows with every public cell missing are left out (``rows_all_missing_dropped``).
    options : QuantizedOptions
    progress : callable(stage: str, fraction: float) or StageTimer, optional
        Told about each stage (:class:`._pipeline.StageTimer`); a caller's own StageTimer times
        the build on it (and may have opened its ``load`` stage while it read the rows).

    Returns
    -------
    Result
        ``detail`` is the :class:`._pipeline.Build` (with the ``auto`` search's choice).

    Raises
    ------
    BuildError
        Categorical rows (the exact mechanism's), other options than :class:`QuantizedOptions`,
        bad data, an infeasible budget, a failing solver, or a payload the device would refuse.
    """
    if not isinstance(options, QuantizedOptions):
        raise BuildError(f"the quantized build takes QuantizedOptions, got {type(options).__name__}")
    if dataset.categorical:
        raise BuildError("the quantized mechanism reads numeric rows; categorical rows are the exact mechanism's")
    tell, rows, dropped = start(dataset, progress)
    built = build_points(rows, options, tell, dropped_rows=dropped)
    return Result(options.mechanism, built.payload, built)


def build_points(rows: Dataset, options: QuantizedOptions, tell: StageTimer, *, dropped_rows: int = 0) -> Build:
    """The quantized pipeline on points in memory (the rows, or a mechanism's own points: the
    recommender's factors), after the ``auto`` search when the options ask for one: it is timed
    as the stage ``auto-search`` with every fold's cost, and the build ships what it measured.
    Raises as :func:`build`."""
    if options.auto is None:
        return build_dataset(rows, options, tell, dropped_rows=dropped_rows)
    tell("auto-search", 0.0)
    choice = choose(rows, options)
    tell.close()
    tell.attach_search("auto-search", choice.fold_costs, candidates=list(choice.candidate_costs))
    built = build_dataset(rows, choice.chosen(options), tell, dropped_rows=dropped_rows, **choice.build_kwargs())
    return dataclasses.replace(built, choice=choice)
