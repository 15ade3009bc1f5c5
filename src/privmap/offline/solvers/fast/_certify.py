"""The fast solver's certification: the proven lower bound, the returned table and its gap.

**The bound.** For every codebook R and multiplier mu >= 0 (nats per unit distortion),

    LB(R, mu) = sum_c p(c) min_{j : D(c,j) < inf} z(c, j) - mu delta     (nats)

is at most the optimum of program (19) over *all* tables (module docstring of
:mod:`._solver`), whatever the candidate lists. The pricing's pass over every pair
(:func:`._pricing.pricing_pass`) gives its two sums; :func:`lower_bound`
subtracts a margin for the floating-point rounding of those sums, so the bound stays proven in
floating point.

**The answer.** The table is the soft table on the candidates, mixed with the
cheapest-output table just enough to meet the budget. Its leakage and
distortion are recomputed from it; ``gap_bits`` is leakage minus the full LB
(with a floating-point safety margin), and the solver stops once that is at
most ``tol_bits``.

Trivial instances are answered here too, each proven optimal without a path: one private class
(leakage 0), or one output within budget for every row (leakage 0).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..._errors import SolverError
from ..._information import expected_distortion, leakage_bits
from .._negligible import merge_negligible_outputs
from .._result import SolveResult
from ._state import LN2, leakage_nats

_EPS = np.finfo(float).eps
_Q_DROP = 1e-300                 # entries of the returned table below this are dropped


def lower_bound(state, total, absolute, mu):
    """The proven lower bound on the optimum, nats: ``total`` - mu delta minus a rounding margin.

    ``total`` and ``absolute`` are sum_c p(c) min_j z and sum_c p(c) |min_j z| from a pass over all
    pairs (:func:`._pricing.pricing_pass`), ``mu`` the multiplier (nats per unit distortion).
    """
    # rounding in the sums: |fl(s) - s| <= ~(K + A + 2) eps sum |terms|; a generous margin
    margin = 8.0 * (state.K + state.A + 8) * _EPS * (absolute + mu * state.delta) + 1e-300
    return total - mu * state.delta - margin


def mixed_leakage(state, ev, P, J, Ed, least):
    """Leakage of the soft table mixed with the cheapest-output table to meet the budget."""
    target = state.delta * (1.0 - 1e-13)            # rounding must not carry E d above delta
    if state.tight or Ed <= target:
        return J, 0.0
    mix = min(1.0, (Ed - target) / max(Ed - least, 1e-300))
    w_low = state.c_pc * state.c_low.astype(float)
    P_low = np.empty_like(P)
    for a in range(state.A):
        P_low[a] = np.bincount(state.cj, weights=w_low * state.c_alpha[a], minlength=state.K_out)
    return leakage_nats((1 - mix) * P + mix * P_low, state.log_p_a), mix


def single_output(state, j):
    """Every row on output j, which is allowed for all and within budget: leakage 0, optimal."""
    table = np.zeros((state.K, state.K_out))
    table[state.rows, j] = 1.0
    rows, cols = inactive_entries(state)
    table[rows, cols] = 1.0
    return solve_result(state, table, 0.0, 0.0, "one output within budget for every row: leakage 0 "
                        "(proven optimal)", {"lower_bound_bits": 0.0})


def inactive_entries(state):
    """(rows, cols): each row without mass on its cheapest output."""
    inactive = np.setdiff1d(np.arange(state.K), state.rows)
    return inactive, np.argmin(state.D[inactive], axis=1).astype(np.int64)


def finish(state, ev, mix, lb, mu):
    """The certified answer: the soft table of ``ev`` mixed with the cheapest-output table by ``mix``.

    ``mix`` in [0, 1], bound ``lb`` and multiplier ``mu`` in nats. Raises SolverError if its gap
    (bits) is above ``tol_bits``.
    """
    q = ev["q"] * (1 - mix) + mix * state.c_low
    keep = q > _Q_DROP                                # weights at the cut are not entries
    in_rows, in_cols = inactive_entries(state)
    rows = np.concatenate([state.rows[state.cr[keep]], in_rows])
    cols = np.concatenate([state.cj[keep], in_cols])
    vals = np.concatenate([q[keep], np.ones(in_rows.size)])
    lb_bits = max(lb / LN2, 0.0)
    sq, gap, merged = certified(state, rows, cols, vals, lb_bits)
    if gap > state.tol / LN2:
        raise SolverError(f"fast solver: gap {gap:.3g} bits of the returned table is above "
                          f"tol_bits = {state.tol / LN2:.3g}")
    nnz = int(np.count_nonzero(q > 1e-12))
    info = dict(state.stats)
    info.update({
        "lower_bound_bits": lb_bits,
        "candidates": int(state.cr.size),
        "nonzeros_per_row": nnz / max(1, state.rows.size),
        "merged_outputs": merged,
        "timing_s": {k: float(v) for k, v in state.timing.items()},
    })
    return solve_result(state, sq.toarray(), mu / LN2, gap,
                        f"certified within {gap:.2g} bits of optimal (lower bound {lb_bits:.9g} "
                        f"bits) after {state.stats['newton_steps']} Newton steps", info, sq=sq)


def certified(state, rows, cols, vals, lb_bits):
    """The table from these entries with negligible outputs merged away, if that re-certifies.

    Returns (sparse table, gap in bits, outputs merged). The merged table is kept when it
    meets the budget and its gap is within ``tol_bits``; otherwise the table as given.
    """
    m_rows, m_cols, m_vals, merged = merge_negligible_outputs(
        state.p_c, state.D, rows, cols, vals, None if state.tight else state.delta * (1.0 - 1e-13))
    if merged:
        sq = sp.csr_matrix((m_vals, (m_rows, m_cols)), shape=(state.K, state.K_out))
        gap = max(leakage_bits(state.p_full, sq) - lb_bits, 0.0)
        if gap <= state.tol / LN2 and (
                state.tight or expected_distortion(state.p_c, sq, state.D) <= state.delta):
            return sq, gap, merged
    sq = sp.csr_matrix((vals, (rows, cols)), shape=(state.K, state.K_out))
    if not state.tight and expected_distortion(state.p_c, sq, state.D) > state.delta:
        raise SolverError("internal: the returned table would exceed the budget")
    return sq, max(leakage_bits(state.p_full, sq) - lb_bits, 0.0), 0


def solve_result(state, table, multiplier, gap, message, info, sq=None):
    """A :class:`SolveResult` for ``table`` (K, K_out), whose leakage and distortion are recomputed from it.

    ``sq`` is its sparse form if at hand; leakage in bits; ``multiplier`` in bits per unit
    distortion, ``gap`` in bits. Reports progress 1.
    """
    src = table if sq is None else sq
    if state.progress is not None:
        state.progress(1.0)
    return SolveResult(
        table=table,
        leakage_bits=leakage_bits(state.p_full, src),
        distortion=expected_distortion(state.p_c, src, state.D),
        multiplier=multiplier,
        gap_bits=gap,
        status="optimal",
        solver="fast",
        message=message,
        info=info,
    )


def trivial(state, why):
    """Every input on its cheapest output, proven optimal because ``why`` (leakage 0)."""
    jmin = np.argmin(state.D, axis=1)
    table = np.zeros((state.K, state.K_out))
    table[np.arange(state.K), jmin] = 1.0
    return solve_result(state, table, 0.0, 0.0, f"{why}; every input on its cheapest output (proven optimal)",
                        {"lower_bound_bits": 0.0})
