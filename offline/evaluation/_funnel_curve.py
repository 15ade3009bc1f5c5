"""``privmap curve --mechanism funnel``: I(S;Y) against I(X;Y) for the greedy funnel.

Three curves on the same empirical prior p(s, x) of categorical tuples:

- ``greedy`` (seed 003, Algorithm 1): least I(S;Y) per merge, one run per disclosure floor R;
- ``negligent`` (Algorithm 2): largest I(S;Y) per merge, for the upper curve;
- ``mi-optimal`` (seed 000): min I(S;Y) s.t. E d(X,Y) <= Delta with the Hamming distance
  between tuples, one solve per Delta from 0 to the perfect-privacy distortion, plotted at its
  own I(X;Y) (the distortion is the one defined here; the funnel has none).
"""
from __future__ import annotations

import csv
import pathlib

import numpy as np

from .._information import leakage_bits, mutual_information_bits
from ..data._distortion import pairwise
from ..mechanisms._funnel import entropy_bits, greedy_funnel
from ..solvers._perfect import perfect_privacy_table
from ..solvers._solve import solve

__all__ = ["funnel_sweep", "write_funnel_csv", "plot_funnel"]

FIELDS = ("curve", "parameter", "disclosure_bits", "leakage_bits", "groups")


def funnel_sweep(p_sx, cells, *, points: int = 25, mi_optimal: bool = True, progress=None) -> list[dict]:
    """Points of the three curves.

    Parameters
    ----------
    p_sx : ndarray, shape (|S|, K)
        Joint prior of private class and public tuple.
    cells : list of K lists of d category indexes
        The tuples (for the Hamming distance of the MI-optimal curve).
    points : int
        Disclosure floors R evenly spaced on [0, H(X)] (and as many budgets Delta).
    progress : callable(int), optional
        Told 1 per point done.

    Returns
    -------
    list of dict
        ``curve`` ("greedy", "negligent", "mi-optimal"), ``parameter`` (R in bits, or Delta in
        changed cells), ``disclosure_bits`` I(X;Y), ``leakage_bits`` I(S;Y), ``groups``
        (distinct outputs used).
    """
    tell = progress or (lambda n: None)
    h_x = entropy_bits(p_sx.sum(axis=0))
    out = []
    for r in np.linspace(0.0, h_x, points):
        for curve, maximise in (("greedy", False), ("negligent", True)):
            res = greedy_funnel(p_sx, float(r), maximise=maximise)
            out.append({"curve": curve, "parameter": float(r), "disclosure_bits": res.disclosure_bits,
                        "leakage_bits": res.leakage_bits, "groups": len(res.groups)})
        tell(1)
    if mi_optimal:
        x = np.array(cells, dtype=float)
        d = pairwise(x, x, "hamming")
        p_x = p_sx.sum(axis=0)
        _, d_perfect = perfect_privacy_table(p_sx, d)
        for delta in np.linspace(0.0, d_perfect, points):
            q = solve(p_sx, d, float(delta)).table if delta > 0 else np.eye(len(cells))
            q = np.asarray(q.toarray() if hasattr(q, "toarray") else q, dtype=float)
            out.append({"curve": "mi-optimal", "parameter": float(delta),
                        "disclosure_bits": mutual_information_bits(p_x[:, None] * q),
                        "leakage_bits": leakage_bits(p_sx, q), "groups": int(np.sum(q.sum(axis=0) > 0))})
            tell(1)
    return out


def write_funnel_csv(points, path) -> None:
    """One row per point, columns ``FIELDS``."""
    with pathlib.Path(path).open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        for p in points:
            writer.writerow({k: (f"{p[k]:.6f}" if isinstance(p[k], float) else p[k]) for k in FIELDS})


def plot_funnel(points, path, *, title: str, h_x: float, i_sx: float) -> str:
    """I(S;Y) against I(X;Y), one line per curve; returns the PNG path."""
    from ._plots import _pyplot
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    styles = {"greedy": ("C0", "o", "greedy merging (Algorithm 1)"),
              "negligent": ("C3", "s", "negligent merging (Algorithm 2)"),
              "mi-optimal": ("C2", "^", "MI-optimal mapping, Hamming budget (seed 000)")}
    for curve, (color, marker, label) in styles.items():
        pts = sorted((p["disclosure_bits"], p["leakage_bits"]) for p in points if p["curve"] == curve)
        if pts:
            xs, ys = zip(*pts)
            ax.plot(xs, ys, marker=marker, color=color, label=label, markersize=3, linewidth=1)
    ax.plot([h_x], [i_sx], "k*", markersize=9, label=f"Y = X: ({h_x:.3f}, {i_sx:.3f})")
    ax.set_xlabel("disclosure I(X;Y) [bits]")
    ax.set_ylabel("leakage I(S;Y) [bits]")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)
