"""The instance the fast solver works on, and the state its parts share.

:class:`_Instance` holds program (19)'s data in the form every part of the solver reads (see
:mod:`._fast_solver` for the method): the joint prior restricted to private classes with mass
(``p``, shape ``(A, K)``), the *active rows* (inputs c with p(c) > 0, indices into the K rows of
D) and their posteriors ``alpha`` (``(A, R)``, p(a | c)), the distortion matrix ``D``
(``(K, K_out)``, the caller's unit, ``inf`` = forbidden) and the budget ``delta`` (same unit),
the gap to certify ``tol`` in nats, and the counters every part adds to (``stats``, ``timing``
in seconds). The parts are mixins over this state: :class:`._fast_pricing._Pricing`,
:class:`._fast_newton._NewtonCore`, :class:`._fast_certify._Certification`, assembled with the
path following in :class:`._fast_path._DualNewton`.

Attributes set later, by the path's start (:meth:`._fast_path._DualNewton.run`): ``jmin``
(``(R,)``, each active row's cheapest output), ``tight`` (the budget equals the least
distortion: every row stays on its cheapest outputs), ``tie`` (``(R,)``, the distortion up to
which an output counts as cheapest when tight), ``budget`` (``not tight``: the multiplier is a
variable), ``scale`` (the starting temperature, nats); and by the pricing's
:meth:`~._fast_pricing._Pricing._set_candidates`, the candidate lists.
"""
from __future__ import annotations

import math

import numpy as np

_LN2 = math.log(2.0)


class _Instance:
    """Program (19)'s data as the solver's parts read it (module docstring).

    ``p_ac`` (n_private, K) and ``D`` (K, K_out) as checked by
    :func:`._problem.check_instance`; ``delta`` in D's unit; ``tol_bits`` in bits (kept in nats
    as ``tol``); ``max_iter`` Newton steps in all; ``progress`` a callable(float) or None.
    Raises nothing: the instance is checked before.
    """

    def __init__(self, p_ac, D, delta, tol_bits, max_iter, progress):
        self.p_full = p_ac
        self.D = D
        self.delta = float(delta)
        self.tol = tol_bits * _LN2                       # nats
        self.max_iter = max_iter
        self.progress = progress
        self.K, self.K_out = D.shape
        p_a = p_ac.sum(axis=1)
        keep = p_a > 0
        self.p = p_ac[keep]                              # (A, K): classes with mass only
        self.p_a = p_a[keep]
        self.log_p_a = np.log(self.p_a)
        self.A = self.p.shape[0]
        self.p_c = p_ac.sum(axis=0)
        self.rows = np.flatnonzero(self.p_c > 0)         # active rows
        self.alpha = self.p[:, self.rows] / self.p_c[self.rows]   # (A, R) posteriors p(a|c)
        self.alpha_t = np.ascontiguousarray(self.alpha.T)
        self._zbuf = None                                # see _z_block
        self.has_inf = not bool(np.all(np.isfinite(D)))
        self.row_hits = np.zeros(self.rows.size, np.int64)   # pricing passes that found the row wanting
        self.stats = {"newton_steps": 0, "evaluations": 0, "pricing_passes": 0, "added_candidates": 0,
                      "stall_heats": 0}
        self.timing = {"start": 0.0, "newton": 0.0, "pricing": 0.0}


def _leakage_nats(P, log_p_a):
    """I(A; C_hat) in nats from P (A, K_out) = p(a, c_hat)."""
    S = P.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P > 0, P * (np.log(P) - np.log(S)[None, :] - log_p_a[:, None]), 0.0)
    return float(terms.sum())
