"""The ranking mode's options, and the payload's ``mechanism`` its bundles name.

They are the quantized mechanism's options that map the score-space points, and the space's: its
rank, EASE's penalty, the released scores' decimals.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from privmap.device.constants import MAX_RANK

from ..._errors import BuildError
from ..quantized import QuantizedOptions
from ._model import DEFAULT_PENALTY, DEFAULT_RANK

__all__ = ["MECHANISM", "REFUSED_MAPPING", "RankingOptions"]

#: The payload's ``mechanism``.
MECHANISM = "ranking"
#: Why the ranking mode refuses another mapping than the quantized one.
REFUSED_MAPPING = ("--utility ranking maps score directions with the quantized mechanism, the l2 metric and blank "
                   "cells as unrated (--missing mask)")


@dataclass(frozen=True, kw_only=True)
class RankingOptions:
    """The ranking mechanism's options: the mapping of the score-space points, and the space's.

    ``mapping`` is the quantized mechanism's options that map the score-space points (its
    ``declared`` domains are the ratings'; ``seed`` also seeds the space's decomposition); the
    space has its ``rank`` k and EASE's ``penalty`` lambda, and ``decimals`` is what released
    scores are rounded to.

    Raises
    ------
    BuildError
        At construction, for a value out of range, or a mapping that is not the l2 metric with
        blank cells as unrated.
    """

    mapping: QuantizedOptions
    rank: int = DEFAULT_RANK
    penalty: float = DEFAULT_PENALTY
    decimals: int = 3

    def __post_init__(self):
        if self.mapping.metric != "l2" or self.mapping.missing != "mask":
            raise BuildError(REFUSED_MAPPING)
        if not 2 <= self.rank <= MAX_RANK:
            raise BuildError(f"--factors (the score space's rank) must be in 2..{MAX_RANK}, got {self.rank}")
        if not (math.isfinite(self.penalty) and self.penalty > 0):
            raise BuildError(f"the EASE penalty must be a finite number > 0, got {self.penalty}")
        if not 0 <= self.decimals <= 6:
            raise BuildError(f"decimals must be in 0..6, got {self.decimals}")
