"""Theorem 1 and Proposition 1 of seed 000: how far an estimated prior can mislead.

With n samples over an alphabet of |A| x |C| cells, Sanov's theorem gives
P(||p - q||_1 > eps) <= (n + 1)^{|A||C|} 2^{-2 n eps^2}; setting the right side
to ``1 - confidence`` gives the eps below. Theorem 1 then bounds the change of
leakage by 3 eps log2(|A||C| / eps) bits (valid for eps <= |A||C| / e, where the
bound is increasing) and of distortion by d_max eps. The bounds are often
vacuous at realistic n (the (n + 1)^{|A||C|} factor is loose): that is reported,
not hidden.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class MismatchBound:
    """Prior-mismatch bounds at a confidence level.

    Attributes
    ----------
    eps : float
        Bound on ||p_true - p_estimated||_1 holding with probability >= confidence.
    leakage_bits : float
        Bound on |J(p_true, q) - J(p_estimated, q)|, bits.
    distortion : float
        Bound on the extra expected distortion, d_max * eps.
    vacuous : bool
        True when eps >= 2 (every pair of distributions is that close) or the
        leakage bound is at least H(A) (leakage can never exceed H(A)).
    """

    eps: float
    leakage_bits: float
    distortion: float
    vacuous: bool


def mismatch_bound(n: int, n_private: int, n_symbols: int, d_max: float, h_private_bits: float,
                   *, confidence: float = 0.95) -> MismatchBound:
    """Theorem 1 / Proposition 1 bounds for a prior estimated from ``n`` samples.

    Parameters
    ----------
    n : int
        Number of samples the prior was estimated from.
    n_private, n_symbols : int
        |A| and |C|.
    d_max : float
        Largest finite distortion between symbols.
    h_private_bits : float
        H(A) in bits (an upper bound on any leakage).
    confidence : float, keyword-only
        Probability in (0, 1) with which the bounds hold.
    """
    if not 0 < confidence < 1 or n < 1:
        raise ValueError("need n >= 1 and 0 < confidence < 1")
    cells = n_private * n_symbols
    eps = math.sqrt((cells * math.log2(n + 1) + math.log2(1 / (1 - confidence))) / (2 * n))
    leakage = 3 * eps * math.log2(cells / eps) if eps < cells / math.e else math.inf
    vacuous = eps >= 2 or leakage >= h_private_bits
    return MismatchBound(eps=eps, leakage_bits=leakage, distortion=d_max * eps, vacuous=vacuous)
