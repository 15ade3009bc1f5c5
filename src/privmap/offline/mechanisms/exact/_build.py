"""The exact mechanism's build, from categorical rows in memory.

:class:`._options.ExactOptions` in, the shared :class:`~privmap.offline.mechanisms.Result` out.
The pipeline is seed 000's (:mod:`privmap.offline.mechanisms.table`); only the alphabet differs.
"""
from __future__ import annotations

from ..._errors import BuildError
from ...data import Dataset
from .._result import Result
from ..table import InMemoryRows, build_rows, start
from ._options import ExactOptions

__all__ = ["build"]


def build(dataset: Dataset, options: ExactOptions, *, progress=None) -> Result:
    """Build an exact bundle's payload from categorical labelled rows in memory.

    Parameters
    ----------
    dataset : Dataset
        Categorical labelled rows (``Dataset.from_csv(..., categorical=True)``).
    options : ExactOptions
    progress : callable(stage: str, fraction: float) or StageTimer, optional
        As :func:`privmap.offline.mechanisms.quantized.build`.

    Returns
    -------
    Result
        ``detail`` is the :class:`privmap.offline.mechanisms.table.Build`.

    Raises
    ------
    BuildError
        Numeric rows, other options than :class:`ExactOptions`, bad data, an infeasible budget,
        a failing solver, or a payload the device would refuse.
    """
    if not isinstance(options, ExactOptions):
        raise BuildError(f"the exact build takes ExactOptions, got {type(options).__name__}")
    if not dataset.categorical:
        raise BuildError("the exact mechanism reads categorical rows (Dataset.from_csv(..., categorical=True))")
    tell, rows, dropped = start(dataset, progress)
    built = build_rows(InMemoryRows(rows, dropped), options, tell)
    return Result(options.mechanism, built.payload, built)
