"""The recommender's options, and the payload's ``mechanism`` its bundles name.

They are the quantized mechanism's options that map the factor points, and how the ratings are
modelled: the latent rank, the fold-in penalty, the released ratings' decimals.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..._errors import BuildError
from ..quantized import QuantizedOptions
from ._factors import DEFAULT_RANK, MAX_RANK

__all__ = ["MECHANISM", "REFUSED_MAPPING", "RecommenderOptions"]

#: The payload's ``mechanism``.
MECHANISM = "recommender"
#: Why the recommender refuses another mapping than the quantized one.
REFUSED_MAPPING = ("--utility recommender maps latent taste with the quantized mechanism, the l2 metric "
                   "(stars) and blank cells as unrated (--missing mask)")


@dataclass(frozen=True, kw_only=True)
class RecommenderOptions:
    """The recommender's options: the mapping of the factor points, and the ratings' model.

    ``mapping`` is the quantized mechanism's options that map the factor points (its ``declared``
    domains are the ratings'; ``seed`` also seeds the fit); the ratings are modelled with the
    latent ``rank``, the ridge penalty ``reg`` (None: chosen by validation among
    :data:`._factors.CANDIDATE_REGS`), and the ``decimals`` released ratings are rounded to.

    Raises
    ------
    BuildError
        At construction, for a value out of range, or a mapping that is not the l2 metric with
        blank cells as unrated (the distortion is in stars over the factor space).
    """

    mapping: QuantizedOptions
    rank: int = DEFAULT_RANK
    reg: float | None = None
    decimals: int = 2

    def __post_init__(self):
        if self.mapping.metric != "l2" or self.mapping.missing != "mask":
            raise BuildError(REFUSED_MAPPING)
        if not 1 <= self.rank <= MAX_RANK:
            raise BuildError(f"--factors must be in 1..{MAX_RANK}, got {self.rank}")
        if self.reg is not None and not (math.isfinite(self.reg) and self.reg > 0):
            raise BuildError(f"--factor-reg must be a finite number > 0, got {self.reg}")
        if not 0 <= self.decimals <= 6:
            raise BuildError(f"decimals must be in 0..6, got {self.decimals}")
