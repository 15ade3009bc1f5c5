"""The funnel's options: what decides a funnel bundle's bytes besides the data and the key."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..._errors import BuildError
from .._header import HeaderOptions, check_header

__all__ = ["FunnelOptions"]


@dataclass(frozen=True, kw_only=True)
class FunnelOptions(HeaderOptions):
    """What decides a funnel bundle's bytes (with the data and the key).

    Exactly one of ``disclosure`` (R in bits) and ``disclosure_fraction`` (R / H(X), in [0, 1])
    is given. Raises :class:`BuildError` at construction for inconsistent options.
    """

    private: str
    public: tuple[str, ...] | None = None
    disclosure: float | None = None
    disclosure_fraction: float | None = None
    smoothing: float = 0.0
    seed: int = 0

    def __post_init__(self):
        if (self.disclosure is None) == (self.disclosure_fraction is None):
            raise BuildError("give exactly one of --disclosure and --disclosure-fraction")
        if self.disclosure is not None and not math.isfinite(self.disclosure):
            raise BuildError(f"disclosure must be finite, got {self.disclosure}")
        if self.disclosure_fraction is not None and not (0 <= self.disclosure_fraction <= 1):
            raise BuildError(f"disclosure fraction must be in [0, 1], got {self.disclosure_fraction}")
        if not (math.isfinite(self.smoothing) and self.smoothing >= 0):
            raise BuildError(f"smoothing must be >= 0, got {self.smoothing}")
        check_header(self)
