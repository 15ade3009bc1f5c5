"""The funnel's evaluation view. ``privmap curve --mechanism funnel``: I(S;Y) against I(X;Y).

Three curves on the same empirical prior p(s, x) of categorical tuples:

- ``greedy`` (seed 003, Algorithm 1): least I(S;Y) per merge, one run per disclosure floor R;
- ``negligent`` (Algorithm 2): largest I(S;Y) per merge, for the upper curve;
- ``mi-optimal`` (seed 000): min I(S;Y) s.t. E d(X,Y) <= Delta with the Hamming distance
  between tuples, one solve per Delta from 0 to the perfect-privacy distortion, plotted at its
  own I(X;Y) (the distortion is the one defined here; the funnel has none).

:func:`evaluate_funnel` measures a built funnel bundle on labelled rows (``privmap evaluate``).
"""
from __future__ import annotations

import csv
import pathlib

import numpy as np

from ..._errors import BuildError
from ..._information import leakage_bits, mutual_information_bits
from ...data import joint_prior, pairwise
from ...measures import logistic_attack, map_accuracy, map_accuracy_after, permutation_bias, pyplot, split_rows
from ...solvers import perfect_privacy_table, solve
from ..table import lookup as lookup_tuples
from ._model import entropy_bits, greedy_funnel

__all__ = ["funnel_sweep", "write_funnel_csv", "plot_funnel", "evaluate_funnel", "format_funnel_evaluation"]

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
            # SolveResult.table is dense for every solver
            q = np.asarray(solve(p_sx, d, float(delta)).table, dtype=float) if delta > 0 else np.eye(len(cells))
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
    plt = pyplot()
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


def evaluate_funnel(payload: dict, public, private, *, seed: int = 0, test_fraction: float = 0.3,
                    permutations: int = 20, attacker: bool = True) -> dict:
    """Measure a funnel bundle (seed 003) on labelled rows: ``privmap evaluate``'s figures.

    The funnel's table is a deterministic partition of the public tuples X into groups Y, so every
    figure is exact on the data's empirical prior p(s, x) (no sampling), in seed 003's terms:

    - ``leakage_bits`` I(S;Y) and ``leakage_before_bits`` I(S;X), bits, each with its plug-in
      bias (mean after permuting the private column);
    - ``disclosure_bits`` I(X;Y) = H(Y), bits (the utility; the bundle promised I(X;Y) >= R);
    - ``distortion`` the log-loss distortion H(X|Y) = H(X) - I(X;Y), bits; the bundle's budget
      ``delta`` is H(X) - R on the training prior;
    - the MAP attacker's accuracy before and after, and (``attacker``) a logistic-regression
      attacker trained on released training rows, tested on released held-out rows.

    Parameters
    ----------
    payload : dict
        A decoded funnel payload (its ``mechanism`` "funnel").
    public : array-like of str, shape (n, d)
        Raw public tuples, columns in the payload's feature order.
    private : array-like of int, shape (n,)
        Private class codes, indexes into the payload's classes.

    Raises
    ------
    BuildError
        No row of the data is one of the bundle's tuples, or too few rows to split for the attacker.
    """
    features = payload["features"]
    inputs = [tuple(f["values"][v] for v, f in zip(row, features)) for row in payload["inputs"]]
    outputs = np.array([[f["values"][v] for v, f in zip(row, features)] for row in payload["outputs"]], dtype=object)
    group = np.array([row[0] for row in payload["table"]["index"]], dtype=np.int64)
    n_classes, K, n_groups = len(payload["private"]["classes"]), len(inputs), len(payload["outputs"])
    public = np.asarray(public, dtype=object)
    private = np.asarray(private, dtype=np.int64)
    symbols = lookup_tuples(inputs, public)
    matched = symbols >= 0
    if not matched.any():
        raise BuildError("no row of the data is one of the funnel bundle's public tuples")
    public, private, symbols = public[matched], private[matched], symbols[matched]
    q = np.zeros((K, n_groups))
    q[np.arange(K), group] = 1.0
    p_sx = joint_prior(private, symbols, n_classes, K)
    p_x = p_sx.sum(axis=0)
    h_x = entropy_bits(p_x)
    disclosure = mutual_information_bits(p_x[:, None] * q)
    metrics = payload["metrics"]
    summary = {
        "mechanism": "funnel", "metric": payload["metric"], "private": payload["private"]["name"],
        "classes": list(payload["private"]["classes"]), "rows": int(matched.sum()),
        "unmatched_rows": int((~matched).sum()), "inputs": K, "groups": n_groups,
        "leakage_bits": leakage_bits(p_sx, q),
        "leakage_bias_bits": permutation_bias(private, symbols, n_classes, K, q, permutations=permutations,
                                              seed=seed)[0],
        "leakage_before_bits": mutual_information_bits(p_sx),
        "leakage_before_bias_bits": permutation_bias(private, symbols, n_classes, K, permutations=permutations,
                                                     seed=seed)[0],
        "entropy_x_bits": h_x, "disclosure_bits": disclosure, "distortion": max(h_x - disclosure, 0.0),
        "map_accuracy_before": map_accuracy(p_sx), "map_accuracy_after": map_accuracy_after(p_sx, q),
        "declared": {key: metrics.get(key) for key in ("leakage_bits", "disclosure_bits", "disclosure_floor_bits",
                                                        "distortion", "delta", "entropy_x_bits")},
    }
    if attacker:
        n = len(private)
        if n < 10:
            raise BuildError(f"cannot split {n} rows with test fraction {test_fraction}")
        train, test = split_rows(n, private, test_fraction, seed)
        before = logistic_attack(public[train], private[train], public[test], private[test], n_classes,
                                 categorical=True, seed=seed)
        released = outputs[group[symbols]]
        after = logistic_attack(released[train], private[train], released[test], private[test], n_classes,
                                categorical=True, seed=seed)
        summary["attacker"] = {"model": "logistic-regression", "train_rows": int(len(train)),
                               "test_rows": int(len(test)), "before": before.as_dict(), "after": after.as_dict()}
    return summary


def format_funnel_evaluation(s: dict) -> str:
    """The human-readable lines of :func:`evaluate_funnel`'s summary, each figure with its unit."""
    d = s["declared"]
    lines = [
        f"mechanism funnel (log-loss), private {s['private']!r} {s['classes']}",
        f"rows {s['rows']} (unmatched {s['unmatched_rows']}: tuples not in the bundle, refused by devices), "
        f"{s['inputs']} public tuples in {s['groups']} groups",
        "",
        f"{'':42}{'before':>10}{'after':>10}",
        f"{'leakage I(S;X) / I(S;Y), bits':42}{s['leakage_before_bits']:>10.4f}{s['leakage_bits']:>10.4f}",
        f"{'  plug-in bias (permutation), bits':42}{s['leakage_before_bias_bits']:>10.4f}"
        f"{s['leakage_bias_bits']:>10.4f}",
        f"{'MAP attacker accuracy':42}{s['map_accuracy_before']:>10.4f}{s['map_accuracy_after']:>10.4f}",
    ]
    if "attacker" in s:
        b, a = s["attacker"]["before"], s["attacker"]["after"]
        def f(x):
            return "-" if x is None else f"{x:.4f}"
        lines += [f"{'logistic regression accuracy':42}{f(b['accuracy']):>10}{f(a['accuracy']):>10}",
                  f"{'  ROC AUC':42}{f(b['roc_auc']):>10}{f(a['roc_auc']):>10}"]
    lines += [
        "",
        f"disclosure I(X;Y) on this data {s['disclosure_bits']:.4f} bits of H(X) = {s['entropy_x_bits']:.4f} bits "
        f"(the bundle promised >= R = {d['disclosure_floor_bits']:.4f} bits on its training prior)",
        f"log-loss distortion H(X|Y) on this data {s['distortion']:.4f} bits "
        f"(budget H(X) - R = {d['delta']:.4f} bits on the training prior)",
        f"declared by the bundle: leakage I(S;Y) {d['leakage_bits']:.6f} bits, disclosure I(X;Y) "
        f"{d['disclosure_bits']:.6f} bits (training prior)",
    ]
    return "\n".join(lines)
