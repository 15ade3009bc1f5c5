"""The nullspace options: what decides a nullspace bundle's bytes besides the data and the key."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..._errors import BuildError
from .._header import HeaderOptions, check_header
from .._real_columns import check_target_groups

__all__ = ["NullspaceOptions"]


@dataclass(frozen=True, kw_only=True)
class NullspaceOptions(HeaderOptions):
    """The cleaning's target columns and budget (seed 001).

    Attributes
    ----------
    desired, confidential : tuple of str
        The targets of the desired and the confidential linear predictors, withheld from the
        release (neither empty, none in both); every other column of the CSV is released.
    epsilon : float >= 0
        The per-row budget ``||A_d^T (x - x~)||^2`` on the desired predictor's change.

    Raises
    ------
    BuildError
        At construction, for any of the above out of range.
    """

    desired: tuple[str, ...]
    confidential: tuple[str, ...]
    epsilon: float

    def __post_init__(self):
        check_target_groups(self.desired, self.confidential)
        if not (math.isfinite(self.epsilon) and self.epsilon >= 0):
            raise BuildError("epsilon must be a finite number >= 0")
        check_header(self)
