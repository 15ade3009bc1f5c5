"""Drift check: whether new labelled data still lie in a bundle's confidence set.

And what the bundle leaks on them.

New rows are assigned to the bundle's inputs (the device's nearest-centre lookup), which gives
the new data's counts per class and cluster. Two verdicts per cluster, at the set's confidence:

- ``outside``: the new data's plug-in posterior p_new(.|c) lies outside the cluster's ball (the
  literal question "is this data's prior in the set"); with few new users per cluster this
  happens by sampling noise alone;
- ``drifted``: the distance exceeds the ball's radius plus the new sample's own Weissman radius
  (same confidence, union bound over the clusters seen), so the balls around the two estimates
  do not meet: evidence, at that confidence, that the new population's posterior is not covered.

The cluster frequencies p(c), which the set holds fixed (docs/guarantees.md), are compared the
same way: L1 distance against the sum of the two samples' radii on K letters.

The leakage on the new data is the plug-in I(A; C^) of the bundle's table on the new prior,
corrected by its permutation bias (as ``evaluate``), with a bootstrap percentile interval (rows
resampled; the resamples' distribution re-centred on the corrected estimate, since each
resample's plug-in adds its own bias), clipped at 0.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._information import leakage_bits
from ..data import joint_prior
from ..solvers import DEFAULT_CONFIDENCE, certified_leakage_bits, confidence_set, counts_from_prior, l1_radius

__all__ = ["drift_check", "format_drift"]


def drift_check(prior, n_train: int, q, symbols, private, *, confidence: float | None = None,
                leakage_bias_bits: float = 0.0, declared_robust_bits: float | None = None,
                bootstrap: int = 200, seed: int = 0, interval: float = 0.95) -> dict:
    """The drift report of new rows against a bundle's training prior.

    Parameters
    ----------
    prior : array_like, shape (|A|, K)
        The bundle's training prior p(a, c).
    n_train : int
        Training users behind it (the bundle's ``n``).
    q : ndarray, shape (K, K_out)
        The bundle's table as probabilities.
    symbols : ndarray of int, shape (n,)
        Input index of each new row (rows that match no input left out by the caller).
    private : ndarray of int, shape (n,)
        Class code of each new row.
    confidence : float, optional, keyword-only
        The set's confidence (the bundle's ``robust_confidence``; default 0.95).
    leakage_bias_bits : float, keyword-only
        The plug-in bias to subtract (permutation estimate).
    declared_robust_bits : float, optional, keyword-only
        The bundle's declared robust bound, to compare the corrected leakage with.
    bootstrap, seed, interval : keyword-only
        Bootstrap resamples, their seed and the interval's coverage.

    Returns
    -------
    dict with ``set_available`` (False when the training prior is not plain counts (smoothed, or
    classifier posteriors), so its counts and hence the set cannot be recovered: then only the leakage is
    reported), ``confidence``,
    ``clusters_seen``, ``outside`` / ``drifted`` (lists of {cluster, users, distance, radius,
    new_radius}), ``cluster_frequency`` ({distance, radius, drifted}), ``leakage_bits``,
    ``leakage_corrected_bits``, ``leakage_interval_bits``, ``robust_leakage_bits`` (declared, or
    computed at the confidence) and ``within_robust_bound``.
    """
    prior = np.asarray(prior, dtype=float)
    n_classes, k = prior.shape
    symbols, private = np.asarray(symbols), np.asarray(private)
    confidence = DEFAULT_CONFIDENCE if confidence is None else float(confidence)
    new_counts = np.zeros((n_classes, k))
    np.add.at(new_counts, (private, symbols), 1.0)
    p_new = new_counts / new_counts.sum()
    leak = leakage_bits(p_new, q)
    rng = np.random.default_rng(seed)
    n = len(symbols)
    corrected = max(leak - leakage_bias_bits, 0.0)
    boot = np.array([leakage_bits(joint_prior(private[idx], symbols[idx], n_classes, k), q)
                     for idx in (rng.integers(0, n, n) for _ in range(bootstrap))])
    boot = boot - boot.mean() + corrected    # the resamples' spread around the corrected estimate (a
    tail = (1 - interval) / 2                # resample's plug-in carries the bias once more)
    report: dict[str, Any] = {"confidence": confidence, "rows": int(n), "leakage_bits": leak,
              "leakage_corrected_bits": corrected,
              "leakage_interval_bits": [max(float(np.quantile(boot, tail)), 0.0),
                                        max(float(np.quantile(boot, 1 - tail)), 0.0)]}
    counts = counts_from_prior(prior, n_train)
    report["set_available"] = counts is not None
    robust = declared_robust_bits
    if counts is not None:
        cs = confidence_set(counts, confidence, centre_prior=prior)
        if robust is None:
            robust = certified_leakage_bits(cs, q)
        seen_new = new_counts.sum(axis=0)
        n_seen = int((seen_new > 0).sum())
        failure = (1 - confidence) / max(n_seen, 1)
        post_new = np.where(seen_new > 0, new_counts / np.maximum(seen_new, 1), cs.posterior)
        dist = cs.distances(post_new)
        rows = []
        for c in np.flatnonzero((seen_new > 0) & (dist > cs.radius * (1 + 1e-12))):
            new_radius = l1_radius(int(seen_new[c]), n_classes, failure)
            rows.append({"cluster": int(c), "users": int(seen_new[c]), "distance": float(dist[c]),
                         "radius": float(cs.radius[c]), "new_radius": new_radius,
                         "drifted": bool(dist[c] > cs.radius[c] + new_radius)})
        rows.sort(key=lambda r: r["distance"] - r["radius"], reverse=True)
        report.update(clusters_seen=n_seen, outside=rows, drifted=[r for r in rows if r["drifted"]])
        if k >= 2:
            freq_dist = float(np.abs(seen_new / n - cs.p_c).sum())
            freq_radius = min(2.0, l1_radius(n_train, k, 1 - confidence) + l1_radius(n, k, 1 - confidence))
            report["cluster_frequency"] = {"distance": freq_dist, "radius": freq_radius,
                                           "drifted": freq_dist > freq_radius}
    report["robust_leakage_bits"] = robust
    report["within_robust_bound"] = None if robust is None else bool(report["leakage_corrected_bits"] <= robust)
    return report


def format_drift(r: dict) -> str:
    """Human lines for :func:`drift_check`'s report."""
    low, high = r["leakage_interval_bits"]
    lines = [f"drift check ({100 * r['confidence']:g}% confidence set of priors):",
             f"  leakage on this data: {r['leakage_corrected_bits']:.6f} bits bias-corrected "
             f"[{low:.6f}, {high:.6f}] (plug-in {r['leakage_bits']:.6f})"]
    if r["robust_leakage_bits"] is not None:
        lines.append(f"  certified bound {r['robust_leakage_bits']:.6f} bits: "
                     + ("holds on this data" if r["within_robust_bound"] else "EXCEEDED on this data: rebuild"))
    if not r["set_available"]:
        lines.append("  confidence set unavailable: the bundle's prior is not plain counts (smoothed, or classifier posteriors)")
        return "\n".join(lines)
    lines.append(f"  clusters outside their ball: {len(r['outside'])} of {r['clusters_seen']} seen; "
                 f"beyond the new sample's own noise (drifted): {len(r['drifted'])}")
    for row in r["outside"][:5]:
        lines.append(f"    cluster {row['cluster']}: {row['users']} users, L1 distance {row['distance']:.3f} > "
                     f"radius {row['radius']:.3f}" + (" (drifted)" if row["drifted"] else ""))
    if "cluster_frequency" in r:
        f = r["cluster_frequency"]
        lines.append(f"  cluster frequencies (held fixed by the set): L1 distance {f['distance']:.3f}, "
                     f"noise radius {f['radius']:.3f}" + (": DRIFTED, the guarantee does not cover this data"
                                                          if f["drifted"] else ""))
    if r["drifted"]:
        lines.append("  the data drifted from the build's population: rebuild the bundle")
    return "\n".join(lines)
