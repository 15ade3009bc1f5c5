"""``--clusters auto`` and ``--smoothing auto``: choose K and the prior's smoothing for new users.

A larger alphabet fits the training prior more closely: in-sample it lowers the
distortion at a given leakage, but the table then leaks more on users who were not
in the data. Each candidate (K, smoothing) is therefore judged out of sample, by
the cross-fitting of :mod:`._holdout` (the build's own steps on k - 1 folds, the
leakage and distortion measured on the held-out fold):

- with a target leakage and/or a target attacker AUC (logistic regression on
  simulated releases of the held-out rows, cross-validated), the candidate of least
  held-out distortion among those meeting every target wins (ties: smaller K, then
  less smoothing); if none meets them, the one of least cross-fitted leakage;
- without a target, the candidate of least cross-fitted leakage wins (ties: least
  held-out distortion).

The budget (``delta`` or ``delta_fraction``) is the build's own for every
candidate. The search is deterministic given the options' seed.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .._errors import BuildError
from ..data._dataset import Dataset
from ._holdout import cross_fitted_leakage

#: Alphabet sizes tried by ``--clusters auto`` (those above the number of distinct rows are skipped).
CANDIDATE_CLUSTERS = (4, 8, 16, 32, 64, 128)
#: Pseudo-counts tried by ``--smoothing auto``.
CANDIDATE_SMOOTHING = (0.0, 0.5, 2.0)
#: Folds of the search's cross-fitting.
SEARCH_FOLDS = 3


@dataclass(frozen=True)
class Choice:
    """The chosen (K, smoothing) and every candidate's figures.

    ``candidates`` holds one dict per candidate: ``clusters``, ``smoothing``,
    ``holdout_leakage_bits``, ``holdout_leakage_high_bits``, ``holdout_distortion``,
    ``holdout_attacker_auc`` (with an AUC target), ``meets_target`` (absent without a
    target), ``chosen`` (bool), or ``error`` when that candidate could not be built.
    """

    clusters: int
    smoothing: float
    target_leakage_bits: float | None
    candidates: list
    target_auc: float | None = None


def choose(dataset: Dataset, options, *, clusters: Sequence[int] | None = None,
           smoothing: Sequence[float] | None = None, target_leakage_bits: float | None = None,
           target_auc: float | None = None, folds: int = SEARCH_FOLDS,
           progress: Callable[[int], None] | None = None) -> Choice:
    """Pick the alphabet size and smoothing that serve new users best (module docstring).

    Parameters
    ----------
    dataset : Dataset
    options : BuildOptions
        The build's options; ``clusters`` and ``smoothing`` are replaced by each candidate's.
    clusters : sequence of int, optional
        Candidate K (default :data:`CANDIDATE_CLUSTERS`).
    smoothing : sequence of float, optional
        Candidate pseudo-counts (default: the options' own smoothing only).
    target_leakage_bits : float, optional
        Out-of-sample leakage to stay under (bits).
    target_auc : float, optional
        Out-of-sample attacker ROC AUC to stay under.
    folds : int
        Folds of the cross-fitting.
    progress : callable(int), optional
        Called with 1 after each candidate.

    Raises
    ------
    BuildError
        No candidate could be built.
    """
    distinct = np.unique(dataset.public, axis=0).shape[0]
    ks = sorted({int(k) for k in (clusters or CANDIDATE_CLUSTERS) if 1 <= k <= distinct}) or [distinct]
    ss = sorted({float(s) for s in (smoothing if smoothing is not None else (options.smoothing,))})
    rows = []
    for k in ks:
        for s in ss:
            row = {"clusters": k, "smoothing": s}
            try:
                est = cross_fitted_leakage(dataset, dataclasses.replace(options, clusters=k, smoothing=s),
                                           folds=folds, attacker=target_auc is not None)
                row.update(holdout_leakage_bits=est.leakage_bits, holdout_leakage_high_bits=est.high_bits,
                           holdout_distortion=est.distortion)
                if target_auc is not None:
                    row["holdout_attacker_auc"] = est.attacker_auc
            except BuildError as exc:
                row["error"] = str(exc)
            rows.append(row)
            if progress:
                progress(1)
    ok = [r for r in rows if "error" not in r]
    if not ok:
        raise BuildError("--clusters auto: no candidate could be built: " + rows[0]["error"])
    if target_leakage_bits is not None or target_auc is not None:
        for r in ok:
            r["meets_target"] = bool(
                (target_leakage_bits is None or r["holdout_leakage_bits"] <= target_leakage_bits)
                and (target_auc is None or r["holdout_attacker_auc"] <= target_auc))
        meeting = [r for r in ok if r["meets_target"]]
    else:
        meeting = []
    if meeting:
        best = min(meeting, key=lambda r: (r["holdout_distortion"], r["clusters"], r["smoothing"]))
    else:
        best = min(ok, key=lambda r: (r["holdout_leakage_bits"], r["holdout_distortion"], r["clusters"],
                                      r["smoothing"]))
    for r in rows:
        r["chosen"] = r is best
    return Choice(clusters=best["clusters"], smoothing=best["smoothing"], target_leakage_bits=target_leakage_bits,
                  candidates=rows, target_auc=target_auc)


def format_candidates(choice: Choice) -> str:
    """The candidates as a human-readable table, the chosen one marked with ``*``."""
    auc = choice.target_auc is not None
    lines = [f"{'':2}{'K':>5} {'smoothing':>9} {'holdout leak bits':>17} {'(upper)':>9} {'holdout dist':>12}"
             + (f" {'holdout AUC':>11}" if auc else "")]
    for r in choice.candidates:
        mark = "*" if r["chosen"] else " "
        if "error" in r:
            lines.append(f"{mark:2}{r['clusters']:>5} {r['smoothing']:>9.3g}  failed: {r['error']}")
            continue
        lines.append(f"{mark:2}{r['clusters']:>5} {r['smoothing']:>9.3g} {r['holdout_leakage_bits']:>17.5f} "
                     f"{r['holdout_leakage_high_bits']:>9.5f} {r['holdout_distortion']:>12.4f}"
                     + (f" {r['holdout_attacker_auc']:>11.4f}" if auc else "")
                     + ("" if r.get("meets_target", True) else "  above target"))
    return "\n".join(lines)
