"""Errors of the offline builder: one base class, subclasses by what went wrong.

The CLI prints ``str(error)`` as one line and exits non-zero for any :class:`BuildError`.
"""
from __future__ import annotations


class BuildError(Exception):
    """Base class of every error the offline builder raises on purpose."""


class DatasetError(BuildError):
    """The input data is unusable: unknown column, bad cell, too few rows, empty class."""


class SolverError(BuildError):
    """A solver did not reach a certified optimum (status other than optimal)."""


class InfeasibleError(SolverError):
    """The distortion budget is below the least distortion any mapping can reach."""


class TargetNotMetError(BuildError):
    """No candidate of the ``auto`` search meets the privacy target (``--allow-unmet`` ships the nearest)."""
