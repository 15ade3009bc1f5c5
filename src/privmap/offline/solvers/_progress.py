"""Progress of a solver whose gap narrows geometrically, as one fraction for a progress bar."""
from __future__ import annotations

import math


def log_fraction(first: float, now: float, goal: float) -> float:
    """How far a gap has come from ``first`` toward ``goal`` on a log scale, in [0, 1].

    Interior points and column generation narrow their gap by a roughly constant factor a step,
    so the share of the decades covered tracks the share of the work done; a linear scale would
    sit at 100 % for most of the path. All three are gaps in one unit; ``now`` at or below
    ``goal`` (or ``first`` already there) gives 1. A goal of 0, which no log scale reaches, and a
    gap not yet measured (``inf`` or NaN) give 0. Raises nothing.
    """
    if first <= goal or now <= goal:
        return 1.0
    if not (goal > 0.0 and math.isfinite(first) and math.isfinite(now)):
        return 0.0
    return min(1.0, max(0.0, math.log(first / now) / math.log(first / goal)))
