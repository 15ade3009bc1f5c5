"""Outputs of negligible mass: merged into each row's main output before a table is returned.

A path-following solver leaves, at the end of its path, outputs that carry almost no mass
(1e-8 of the population on instances with few users per cluster). Such an output is useless to the
operator and harmful to the users who land on it: its posterior is often pure, so releasing
it reveals the private attribute of that rare user. The solver merges them away and then
re-certifies the merged table (its leakage and distortion are recomputed by the caller).
"""
from __future__ import annotations

import numpy as np

MASS_FLOOR = 1e-7     # an output released with probability below this is merged away


def merge_negligible_outputs(p_c, D, rows, cols, vals, delta=None, floor: float = MASS_FLOOR):
    """Move every entry on an output of mass below ``floor`` to its row's cheapest kept entry.

    The cheapest (least d(c, j)) kept entry keeps the added distortion small; when the merged
    table exceeds ``delta``, it is mixed with the table that sends every row to that same entry
    just enough to meet the budget again (no new output appears). The caller re-certifies the
    result: its gap has to be checked against the same lower bound.

    Parameters
    ----------
    p_c : ndarray, shape (K,)
        Input marginal p(c).
    D : ndarray, shape (K, K_out)
        The distortion d(c, j).
    rows, cols, vals : ndarray, shape (nnz,)
        The table's entries q(rows, cols) = vals, rows summing to 1.
    delta : float or None
        The budget on E d to restore; None: no budget.
    floor : float
        Least output mass sum_c p(c) q(c, j) kept.

    Returns
    -------
    (rows, cols, vals, merged) : the new entries (each row still sums to 1) and the number of
        outputs left with no mass; the entries as given and 0 when nothing was merged or the
        budget could not be restored. An entry whose row has no entry on a kept output stays
        (rows of zero mass, which release nothing).
    """
    mass = np.bincount(cols, weights=p_c[rows] * vals, minlength=D.shape[1])
    small = (mass > 0) & (mass < floor)
    moving = small[cols]
    if not moving.any():
        return rows, cols, vals, 0
    # each row's cheapest entry on a kept output: sort kept entries by (row, -d) and take the last
    kept = np.flatnonzero(~moving)
    d = D[rows, cols]
    order = kept[np.lexsort((-d[kept], rows[kept]))]
    target = np.full(p_c.size, -1)
    target[rows[order]] = order                        # later (cheaper) entries overwrite earlier ones
    src = np.flatnonzero(moving)
    dest = target[rows[src]]
    ok = dest >= 0
    new = vals.copy()
    np.add.at(new, dest[ok], new[src[ok]])
    new[src[ok]] = 0.0
    if delta is not None:
        weight = p_c[rows] * d
        excess = float(weight @ new) - delta
        if excess > 0:
            low = np.zeros_like(new)
            has = target >= 0
            low[target[has]] = 1.0
            low[src[~ok]] = new[src[~ok]]              # rows that could not move keep their entries
            saving = float(weight @ (new - low))
            if saving <= excess:
                return rows, cols, vals, 0
            t = excess / saving * (1 + 1e-9)
            new = (1 - t) * new + t * low
    keep = new > 0
    left = np.bincount(cols[keep], weights=p_c[rows[keep]] * new[keep], minlength=D.shape[1])
    merged = int(np.count_nonzero(small & (left == 0)))    # massless rows may still point there
    return rows[keep], cols[keep], new[keep], merged
