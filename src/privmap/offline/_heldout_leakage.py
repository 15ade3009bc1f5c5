"""I(A; C^) of a fixed table for the population, bracketed from rows it was not fitted on.

A table q fitted without some rows is fixed when those rows are drawn, so their (class a_i, input
x_i) pairs are a sample of the population p(a, x), and the population's leakage I(A; C^) of q lies
between the expectations of two estimates, whatever the number of outputs and of rows per output.
Both score each row by its whole release distribution q(. | x_i) rather than one draw, and both are
means of one term per row (:func:`bracket_terms`):

* **lower: the held-out cross-entropy.** Row i is scored by the posterior of the *other* rows,
  p~_i(a | c^) = (N(a, c^) - [a = a_i] q(c^|x_i) + beta m_i(a)) / (N(c^) - q(c^|x_i) + beta), with
  N(a, c^) = sum_j [a_j = a] q(c^|x_j) the rows' expected release counts, shrunk towards the
  others' class frequencies m_i with ``beta`` pseudo-rows per output:
  ``t_i = sum_c^ q(c^|x_i) log2 p~_i(a_i|c^) + H^(A)`` (H^: plug-in entropy of the rows' classes).
  p~_i does not depend on row i, so E sum q log2 p~_i <= -H(A | C^) (Gibbs' inequality), and
  E H^ <= H(A): E[lower] <= I(A; C^).
* **upper: the plug-in.** ``s_i = sum_c^ q(c^|x_i) log2 p^(a_i|c^) - log2 m_i(a_i)`` with p^ =
  N(a, c^) / N(c^), the posterior that maximises the rows' expected log-likelihood (so its mean is
  at least the true posterior's, -H(A | C^), in expectation), and m_i(a) = (n_a - [a = a_i] + 1/2) /
  (n - 1 + |A|/2) (Krichevsky-Trofimov), a distribution free of row i, whose cross-entropy is at
  least H(A) in expectation: E[upper] >= I(A; C^).

Both converge to I(A; C^) as rows per output grow; their gap is the bias bound, wide where outputs
have few rows each (large alphabets, small samples), where a point estimate corrected by a
permutation bias can land far on either side. Their sampling noise is each mean's standard error
(the terms' standard deviation over sqrt(n)). The shrinkage ``beta`` of each sample is chosen among
:data:`BETAS` on *other* samples (:func:`pooled_bracket`: cross-fitting's other folds), so the lower
side stays free of the rows it scores.

The interval (:func:`pooled_bracket`) is ``[lower - z se_lower, upper + z se_upper]`` (z the normal
quantile of the two-sided confidence), the estimate its bracket's midpoint ``(lower + upper) / 2``,
and the interval never narrower than ``estimate +- z se`` (se: the midpoint's standard error bound,
``(se_lower + se_upper) / 2``); estimate and bounds are clipped at 0 bits.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

__all__ = ["BETAS", "Bracket", "bracket_terms", "pooled_bracket"]

#: Pseudo-rows per output of the lower side's shrinkage, the candidates it is chosen among.
BETAS = (0.25, 1.0, 4.0, 16.0, 64.0)


def bracket_terms(private: np.ndarray, symbols: np.ndarray, n_classes: int, q) -> dict:
    """The two sides' means and term variances of table ``q`` on one sample of rows.

    Parameters
    ----------
    private, symbols : ndarray of int, shape (n,)
        Each row's class (in ``range(n_classes)``) and input index (a row of ``q``).
    n_classes : int
    q : array_like or scipy sparse, shape (K_in, K_out)
        Row-stochastic table, fitted without these rows.

    Returns
    -------
    dict
        ``rows`` (n), ``lower`` (list, one mean per :data:`BETAS`, bits), ``lower_var`` (the terms'
        variance per beta, bits^2), ``upper`` (bits), ``upper_var`` (bits^2). Work is over the
        distinct (class, input) pairs and the table's non-zeros, never rows x K_out.

    Raises
    ------
    ValueError
        Fewer than two rows.
    """
    private, symbols = np.asarray(private, dtype=np.int64), np.asarray(symbols, dtype=np.int64)
    n = private.size
    if n < 2:
        raise ValueError("the held-out bracket needs at least two rows")
    q = sparse.csr_matrix(q)
    k_in = q.shape[0]
    pairs, weight = np.unique(private * k_in + symbols, return_counts=True)
    cls, sym = pairs // k_in, pairs % k_in
    counts = np.bincount(private, minlength=n_classes).astype(float)
    others = (counts[cls] - 0.5) / (n - 1 + n_classes / 2.0)            # m_i(a_i), free of row i
    present = counts[counts > 0] / n
    entropy = float(-np.sum(present * np.log2(present)))                 # plug-in H(A)
    released = q[sym].tocoo()                                            # (pair, output, q(c^|x))
    by_class = sparse.csr_matrix((weight.astype(float), (cls, np.arange(pairs.size))), shape=(n_classes, pairs.size))
    joint = np.asarray((by_class @ q[sym]).todense())                    # N(a, c^), (n_classes, K_out)
    n_out = joint.sum(axis=0)
    p, c, r = released.row, released.col, released.data
    own, total = joint[cls[p], c], n_out[c]

    def per_pair(values: np.ndarray) -> np.ndarray:
        return np.bincount(p, weights=r * values, minlength=pairs.size)

    upper_terms = per_pair(np.log2(own / total)) - np.log2(others)
    lower, lower_var = [], []
    for beta in BETAS:
        shrunk = np.maximum(own - r, 0.0) + beta * others[p]
        terms = per_pair(np.log2(shrunk / (np.maximum(total - r, 0.0) + beta))) + entropy
        mean, var = _weighted(terms, weight, n)
        lower.append(mean)
        lower_var.append(var)
    upper, upper_var = _weighted(upper_terms, weight, n)
    return {"rows": n, "lower": lower, "lower_var": lower_var, "upper": upper, "upper_var": upper_var}


def _weighted(terms: np.ndarray, weight: np.ndarray, n: int) -> tuple[float, float]:
    """Mean and variance over rows of per-pair ``terms`` held by ``weight`` rows each."""
    mean = float(weight @ terms) / n
    return mean, float(weight @ (terms - mean) ** 2) / n


@dataclass(frozen=True)
class Bracket:
    """The pooled bracket of :func:`pooled_bracket` (bits).

    Attributes
    ----------
    estimate : float
        Midpoint of the two sides, clipped at 0.
    low, high : float
        The interval (module docstring), ``low >= 0``.
    lower, upper : float
        The held-out cross-entropy (lower side) and the plug-in (upper side), pooled.
    standard_error : float
        Standard error bound of ``estimate``: the mean of the two sides' standard errors.
    """

    estimate: float
    low: float
    high: float
    lower: float
    upper: float
    standard_error: float


def pooled_bracket(parts: list, share: np.ndarray, confidence: float) -> Bracket:
    """The samples' brackets pooled with the weights ``share``.

    The brackets are dicts of :func:`bracket_terms`, independent samples each scored by its own
    table; ``share`` has shape (len(parts),) and sums to 1. The result is a bracket of the
    share-weighted mean of their tables' population leakages.

    Each sample's lower side takes the beta of :data:`BETAS` with the highest pooled lower side on
    the *other* samples (the only sample's own with one sample, as the out-of-sample choice cannot
    then be made). Raises ValueError for no parts.
    """
    from scipy.stats import norm
    if not parts:
        raise ValueError("no samples to pool")
    share = np.asarray(share, dtype=float)
    rows = np.array([p["rows"] for p in parts], dtype=float)
    lowers = np.array([p["lower"] for p in parts], dtype=float)          # (samples, betas)
    lower_vars = np.array([p["lower_var"] for p in parts], dtype=float)
    weighted = share[:, None] * lowers
    others = weighted.sum(axis=0)[None, :] - weighted if len(parts) > 1 else weighted
    pick = np.argmax(others, axis=1)
    at = np.arange(len(parts))
    lower = float(share @ lowers[at, pick])
    lower_se = float(np.sqrt(np.sum(share ** 2 * lower_vars[at, pick] / rows)))
    upper = float(share @ [p["upper"] for p in parts])
    upper_se = float(np.sqrt(np.sum(share ** 2 * np.array([p["upper_var"] for p in parts]) / rows)))
    z = float(norm.ppf(0.5 + confidence / 2.0))
    estimate = (lower + upper) / 2.0
    se = (lower_se + upper_se) / 2.0
    low = min(lower - z * lower_se, estimate - z * se)
    high = max(upper + z * upper_se, estimate + z * se)
    clipped = max(estimate, 0.0)
    return Bracket(estimate=clipped, low=max(low, 0.0), high=max(high, max(low, 0.0) + 2.0 * z * se),
                   lower=lower, upper=upper, standard_error=se)
