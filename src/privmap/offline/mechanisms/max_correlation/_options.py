"""The max-correlation options: what decides its bundle's bytes besides the data and the key."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..._errors import BuildError
from .._header import HeaderOptions, check_header

__all__ = ["MaxCorrelationOptions", "MAXCORR_BITS"]

#: Default table bits: rho_m^2 moves by ~1e-2 when a rarely released output's mass is rounded
#: to 2^-16 (measured on census.csv, 48 tuples, D = 0.3: 0.7206 solved, 0.7321 at B = 16,
#: 0.7208 at B = 24), so this mechanism rounds finer.
MAXCORR_BITS = 24


@dataclass(frozen=True, kw_only=True)
class MaxCorrelationOptions(HeaderOptions):
    """What decides a max-correlation bundle's bytes (with the data and the key).

    ``delta`` is the Hamming budget D (expected number of changed cells under P_X);
    ``information_budget`` is the assumed Delta >= I(S;X) in bits for the declared bound
    (optional; the per-bit factor is declared either way). ``private``, if given, is a column
    to leave out (never read as labels).
    """

    delta: float
    public: tuple[str, ...] | None = None
    private: str | None = None
    metric: str = "hamming"
    information_budget: float | None = None
    starts: int = 6
    bits: int = MAXCORR_BITS
    seed: int = 0

    def __post_init__(self):
        if self.metric != "hamming":
            raise BuildError(f"metric {self.metric!r} does not fit the max-correlation mechanism; expected hamming")
        if not (math.isfinite(self.delta) and self.delta >= 0):
            raise BuildError(f"delta must be a finite number >= 0, got {self.delta}")
        if self.information_budget is not None and not (math.isfinite(self.information_budget)
                                                        and self.information_budget >= 0):
            raise BuildError(f"information budget must be finite and >= 0, got {self.information_budget}")
        if self.starts < 1:
            raise BuildError(f"starts must be >= 1, got {self.starts}")
        if not 1 <= self.bits <= 32:
            raise BuildError(f"bits must be in 1..32, got {self.bits}")
        check_header(self)
