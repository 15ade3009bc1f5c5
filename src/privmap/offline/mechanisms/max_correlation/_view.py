"""The max-correlation evaluation view (``privmap evaluate``): the bundle against seed 000's mapping on labels.

The max-correlation channel (seed 002) is designed from P_X alone. Where labelled rows exist,
this measures what it leaks about a private column and sets it beside seed 000's MI-optimal
mapping built from those labels at the same expected Hamming distortion (the one the
max-correlation table achieves on the data): leakage I(S;Y), the MAP attacker's accuracy (who
knows the mapping and the data's prior), and the seed-002 guarantee I(S;Y) <= S*_upper I(S;X).
"""
from __future__ import annotations

import numpy as np

from ..._errors import BuildError
from ..._information import (
    expected_distortion,
    joint_output,
    leakage_bits,
    mutual_information_bits,
)
from ...bundle import payload_table
from ...data import joint_prior, pairwise
from ...solvers import solve

__all__ = ["compare_max_correlation"]


def _map_accuracy(p_sy: np.ndarray) -> float:
    """Accuracy of the MAP guess of S from Y: sum_y max_s p(s, y)."""
    return float(p_sy.max(axis=0).sum())


def compare_max_correlation(payload: dict, public, private, n_classes: int) -> dict:
    """Side-by-side figures of a max-correlation payload and seed 000's mapping on labelled rows.

    Parameters
    ----------
    payload : dict
        A decoded, schema-checked max-correlation payload.
    public : ndarray of str, shape (n, d)
        The rows' public cells, columns in the payload's feature order.
    private : ndarray of int, shape (n,)
        Private class codes in 0..n_classes-1.

    Raises
    ------
    BuildError
        A row whose tuple is not among the bundle's inputs.
    """
    features = payload["features"]
    lookup = {tuple(f["values"][c] for f, c in zip(features, cells)): k for k, cells in enumerate(payload["inputs"])}
    try:
        labels = np.array([lookup[tuple(row)] for row in public], dtype=np.int64)
    except KeyError as exc:
        raise BuildError(f"row tuple {exc.args[0]!r} is not among the bundle's inputs") from None
    k = len(payload["inputs"])
    w = payload_table(payload).toarray()
    p_sx = joint_prior(private, labels, n_classes, k)
    cells = np.array(payload["inputs"], dtype=float)
    d = pairwise(cells, np.array(payload["outputs"], dtype=float), "hamming")
    p_x = p_sx.sum(axis=0)
    budget = expected_distortion(p_x, w, d)
    seed000 = np.asarray(solve(p_sx, d, budget).table if budget > 0 else np.eye(k), dtype=float)
    i_sx = mutual_information_bits(p_sx)
    upper = payload["metrics"]["s_star_upper_bound"]
    rows = {}
    for name, q in (("max_correlation", w), ("seed000_mi_optimal", seed000)):
        rows[name] = {"leakage_bits": leakage_bits(p_sx, q), "distortion": expected_distortion(p_x, q, d),
                      "map_accuracy": _map_accuracy(joint_output(p_sx, q)),
                      "disclosure_bits": mutual_information_bits(p_x[:, None] * q)}
    return {
        "rows": int(labels.size), "leakage_before_bits": i_sx, "map_accuracy_before": _map_accuracy(p_sx),
        "map_accuracy_prior_only": float(p_sx.sum(axis=1).max()), "rho_m_squared": payload["metrics"]["rho_m_squared"],
        "s_star_upper_bound": upper, "guarantee_bits": upper * i_sx,
        "guarantee_holds": bool(rows["max_correlation"]["leakage_bits"] <= upper * i_sx + 1e-12),
        **rows,
    }
