"""The robust program (issue 27): a mapping whose worst-case leakage over a confidence set of
priors is certified, and small.

The certified bound
-------------------
Over the set S of :mod:`._confidence` (per-cluster L1 balls of radius eps_c around p_hat(a|c),
p(c) fixed), a mapping q gives outputs with fixed masses P(j) = sum_c p(c) q(c, j) and
posteriors p(.|j) = sum_c w(c|j) p(.|c), w(c|j) = p(c) q(c, j) / P(j), so for every prior in S

    || p(.|j) - p_hat(.|j) ||_1 <= e_j = sum_c w(c|j) eps_c,
    || p(a)   - p_hat(a)   ||_1 <= e_A = sum_c p(c) eps_c.

Since I(A; C^) = H(A) - sum_j P(j) H(A | C^ = j),

    max_S I(A; C^) <= U(q) = Hmax(p_hat(a), e_A) - sum_j P(j) Hmin(p_hat(.|j), e_j),

where Hmax / Hmin are the largest / least entropy in an L1 ball on the simplex, both computed
exactly (:func:`._confidence.max_entropy_point`, :func:`._confidence.min_entropy_point`). U is a
true upper bound (it lets H(A) and each H(A|j) take their own worst case, so it may exceed the
exact maximum, never fall below it). :func:`certified_leakage_bits` evaluates it on any table,
in particular on the shipped integer table; a small relative margin covers float round-off.

The per-output bound
--------------------
Each coordinate of a point in an L1 ball of radius e moves by at most e/2, so over S
p(a|j) lies in [x_ja - e_j/2, x_ja + e_j/2] and p(a) in [p_hat(a) - e_A/2, p_hat(a) + e_A/2]
(clipped to [0, 1]); :func:`certified_max_output_leakage_bits` is the largest |log2 p(a|j) -
log2 p(a)| those intervals allow over the outputs of positive mass (``inf`` when an interval
reaches 0).

The program
-----------
Minimising U over q subject to E d <= Delta is not convex (Hmin of a ball is not concave in its
centre once the ball reaches the simplex's boundary), so :func:`solve_robust` searches: it
solves program (19) with the project's solver on a few tilted priors, all with the training p(c)
(so every table meets the same budget), and keeps the table of least U:

- the training prior itself (the average-case optimum: the robust table is never worse by U),
  at the budget and at a few tighter budgets (U is not monotone in the budget: a table solved
  for less distortion can certify less, and it meets the budget too);
- sharpened priors: each cluster's posterior moved by t * eps_c / 2 towards the class its
  posterior favours most relative to p(a) (t = 0.5, 1), which makes thinly observed clusters
  look as telling as the set allows, so the solver hides them more;
- adversarial rounds: for the best table so far, each cluster's posterior moved by eps_c / 2
  towards the leading class of the output it feeds most (the direction that lowers that
  output's H(A|j), the worst case U prices), solved again.

So the result is the least certified bound among those tables, not a proven optimum of
min_q max_S I; tests compare it with a cvxpy solve of the exact robust program on small
instances where that program is convex.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .._errors import InfeasibleError
from .._information import expected_distortion, leakage_bits
from ._confidence import ConfidenceSet, max_entropy_point, min_entropy_point
from ._result import SolveResult

__all__ = ["certified_leakage_bits", "certified_max_output_leakage_bits", "solve_robust", "RobustResult",
           "output_balls"]

_LN2 = math.log(2.0)
#: Relative margin added to a certified figure for float round-off (sums of K terms of order 1).
_MARGIN = 1e-9


def _entropy_bits(x: np.ndarray) -> float:
    x = x[x > 0]
    return float(-np.sum(x * np.log2(x)))


def output_balls(cs: ConfidenceSet, q) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Output masses P(j) (K_out,), centre posteriors p_hat(.|j) (|A|, K_out) and radii e_j (K_out,)
    of the outputs of table ``q`` (shape (K, K_out), rows on the simplex) over the set ``cs``.
    Outputs of zero mass get a uniform centre and radius 0."""
    q = np.asarray(q, dtype=float)
    mass = cs.p_c @ q
    live = mass > 0
    safe = np.where(live, mass, 1.0)
    joint = cs.prior() @ q                                     # (|A|, K_out)
    centre = np.where(live, joint / safe, 1.0 / joint.shape[0])
    radius = np.where(live, np.minimum(2.0, ((cs.p_c * cs.radius) @ q) / safe), 0.0)
    return mass, centre, radius


def _deviations(cs: ConfidenceSet, q):
    """Per output j of positive mass: P(j), the centre's v_j = p_hat(.|j) - p_hat(a) (|A|, J), the
    L1 radius f_j of v_j's moves over the set, and the floor of p(a) over the set (|A|,)."""
    q = np.asarray(q, dtype=float)
    mass, centre, _ = output_balls(cs, q)
    live = mass > 0
    p_a = cs.prior().sum(axis=1)
    w = cs.p_c[:, None] * q[:, live] / mass[live][None, :]           # w(c|j), (K, J)
    f = np.minimum(2.0, (np.abs(w - cs.p_c[:, None]) * cs.radius[:, None]).sum(axis=0))
    e_a = min(2.0, float(cs.p_c @ cs.radius))
    return mass[live], centre[:, live] - p_a[:, None], f, np.clip(p_a - e_a / 2, 0, 1)


def certified_leakage_bits(cs: ConfidenceSet, q) -> float:
    """An upper bound on max over the set of I(A; C^) for table ``q`` (module docstring), bits:
    the lesser of the entropy bound U(q) and the chi-square bound.

    ``q`` has shape (K, K_out) with rows on the simplex (an integer table divided by 2^B).
    The result is at least the leakage on the set's centre and at most log2 |A| (plus margin).
    """
    mass, centre, radius = output_balls(cs, q)
    p_a = cs.prior().sum(axis=1)
    e_a = min(2.0, float(cs.p_c @ cs.radius))
    h_a = _entropy_bits(max_entropy_point(p_a, e_a))
    h_given = math.fsum(float(m) * _entropy_bits(min_entropy_point(centre[:, j], float(radius[j])))
                        for j, m in enumerate(mass) if m > 0)
    value = min(max(h_a - h_given, 0.0), _chi_square_bits(cs, q), math.log2(len(p_a)))
    return value + _MARGIN * max(h_a, 1.0)


def _chi_square_bits(cs: ConfidenceSet, q) -> float:
    """sum_j P(j) max over the set of log2(1 + chi^2(p(.|j) || p(a))), an upper bound on the
    set's worst I(A; C^) (KL <= log(1 + chi^2)).

    Over the set p(.|j) - p(a) = v_j + delta_j with delta_j = sum_c (w(c|j) - p(c)) (p(.|c) -
    p_hat(.|c)), so ||delta_j||_1 <= f_j and delta_j sums to 0: at most f_j / 2 up and f_j / 2
    down. chi^2 = sum_a (v_ja + delta_ja)^2 / p(a) <= sum_a v_ja^2 / lo_a plus the two largest
    gains ((|v_ja| + f_j/2)^2 - v_ja^2) / lo_a. A constant release scores 0 (f_j = 0, v_j = 0)."""
    mass, v, f, lo = _deviations(cs, q)

    def per_class(numerator):                 # numerator / lo, 0 where nothing moves, inf at lo = 0
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(numerator > 0, numerator / lo[:, None], 0.0)

    base = per_class(v ** 2).sum(axis=0)
    gain = per_class((np.abs(v) + f[None, :] / 2) ** 2 - v ** 2)
    top2 = np.sort(gain, axis=0)[-2:].sum(axis=0)
    return float(mass @ np.log2(1.0 + base + top2))


def certified_max_output_leakage_bits(cs: ConfidenceSet, q) -> float:
    """An upper bound on max over the set of max over outputs j of positive mass and classes a of
    |log2 p(a|j) - log2 p(a)| for table ``q`` (shape (K, K_out)), in bits; ``inf`` when the set
    lets some p(a|j) or p(a) reach 0.

    Per (j, a) the lesser of two bounds: the intervals of p(a|j) and p(a) separately (module
    docstring), and p(a|j) / p(a) = 1 + (v_ja + delta_ja) / p(a) with |delta_ja| <= f_j / 2
    (:func:`_chi_square_bits`)."""
    mass, centre, radius = output_balls(cs, q)
    live = mass > 0
    x, e = centre[:, live], radius[live][None, :]
    p_a = cs.prior().sum(axis=1)[:, None]
    e_a = min(2.0, float(cs.p_c @ cs.radius))
    lo_j, hi_j = np.clip(x - e / 2, 0, 1), np.clip(x + e / 2, 0, 1)
    lo_a, hi_a = np.clip(p_a - e_a / 2, 0, 1), np.clip(p_a + e_a / 2, 0, 1)
    with np.errstate(divide="ignore"):
        separate = np.where((lo_j > 0) & (lo_a > 0),
                            np.maximum(np.log2(hi_j / np.maximum(lo_a, 1e-300)),
                                       np.log2(hi_a / np.maximum(lo_j, 1e-300))), np.inf)
        _, v, f, lo = _deviations(cs, q)
        ratio = (np.abs(v) + f[None, :] / 2) / np.maximum(lo[:, None], 1e-300)
        coupled = np.where((lo[:, None] > 0) & (ratio < 1),
                           np.maximum(np.log2(1 + ratio), -np.log2(np.maximum(1 - ratio, 1e-300))), np.inf)
    worst = float(np.minimum(separate, coupled).max())
    return max(worst, 0.0) * (1 + _MARGIN) + _MARGIN if math.isfinite(worst) else math.inf


@dataclass(frozen=True)
class RobustResult:
    """What :func:`solve_robust` found.

    ``solved`` is the chosen table's :class:`SolveResult` (its ``leakage_bits`` and ``distortion``
    on the training prior), ``certified_bits`` its bound U over the set, ``candidates`` one dict
    per table tried (``name``, ``certified_bits``, ``leakage_bits``, ``distortion``).
    """

    solved: SolveResult
    certified_bits: float
    candidates: list = field(default_factory=list)


def _toward(cs: ConfidenceSet, direction: np.ndarray, scale: float) -> np.ndarray:
    """Posteriors moved by scale * eps_c / 2 onto class ``direction[c]``, taken from the others
    in proportion (staying on the simplex and inside each ball)."""
    post = cs.posterior.copy()
    k = post.shape[1]
    cols = np.arange(k)
    room = 1.0 - post[direction, cols]
    t = np.minimum(scale * cs.radius / 2.0, room)
    others = post.copy()
    others[direction, cols] = 0.0
    share = np.where(room > 0, t / np.where(room > 0, room, 1.0), 0.0)
    post = post - others * share[None, :]
    post[direction, cols] += t
    return post


def solve_robust(cs: ConfidenceSet, distortion, delta: float, *,
                 solve: Callable[[np.ndarray, float], SolveResult], start: SolveResult | None = None,
                 sharpen=(0.5, 1.0), rounds: int = 2, tighter=(0.9, 0.75, 0.5)) -> RobustResult:
    """Search for a table of least certified worst-case leakage at the budget (module docstring).

    Parameters
    ----------
    cs : ConfidenceSet
    distortion : array_like, shape (K, K_out)
        d(c, c_hat), as for program (19).
    delta : float
        Budget on E d(C, C_hat) under the set's fixed p(c).
    solve : callable(p_ac, budget) -> SolveResult, keyword-only
        Program (19) on a prior of shape (|A|, K) at a budget (the build's own solver).
    start : SolveResult, optional, keyword-only
        The average-case table on the centre, when already solved (else it is solved here).
    sharpen : sequence of float, keyword-only
        Scales t of the sharpened priors tried.
    rounds : int, keyword-only
        Adversarial rounds.
    tighter : sequence of float, keyword-only
        Fractions of ``delta`` at which the average-case table is also tried (the certified bound
        is not monotone in the budget; a budget below the least reachable distortion is skipped).

    Returns
    -------
    RobustResult

    Raises
    ------
    Whatever ``solve`` raises (InfeasibleError, SolverError).
    """
    D = np.asarray(distortion, dtype=float)
    centre = cs.prior()
    candidates = []
    best = None

    def consider(name, result):
        nonlocal best
        result = dataclasses.replace(result, leakage_bits=leakage_bits(centre, result.table),
                                     distortion=expected_distortion(cs.p_c, result.table, D),
                                     gap_bits=result.gap_bits if name == "average-case" else math.inf,
                                     message=f"{name} table of the robust search")
        bound = certified_leakage_bits(cs, result.table)
        candidates.append({"name": name, "certified_bits": bound, "leakage_bits": result.leakage_bits,
                           "distortion": result.distortion})
        if best is None or bound < best[1] - 1e-12:
            best = (result, bound)

    consider("average-case", start if start is not None else solve(centre, delta))
    for t in tighter:
        try:
            consider(f"average-case-at-{t:g}-delta", solve(centre, t * delta))
        except InfeasibleError:
            continue
    p_a = centre.sum(axis=1)
    lift = cs.posterior / np.where(p_a > 0, p_a, 1.0)[:, None]
    favoured = np.argmax(lift, axis=0)
    for t in sharpen:
        consider(f"sharpened-{t:g}", solve(cs.prior(_toward(cs, favoured, t)), delta))
    for r in range(rounds):
        q = np.asarray(best[0].table)
        _, out_centre, _ = output_balls(cs, q)
        feeds = np.argmax(q, axis=1)
        leading = np.argmax(out_centre[:, feeds], axis=0)
        consider(f"adversarial-{r + 1}", solve(cs.prior(_toward(cs, leading, 1.0)), delta))
    solved, bound = best
    return RobustResult(solved=solved, certified_bits=bound, candidates=candidates)


def counts_from_prior(prior, n: int) -> np.ndarray | None:
    """The training counts (|A|, K) behind an unsmoothed empirical prior of ``n`` users, or None when
    ``prior * n`` is not a table of whole numbers summing to ``n`` (a smoothed prior, or no ``n``)."""
    prior = np.asarray(prior, dtype=float)
    if n is None or n < 1:
        return None
    scaled = prior * n
    counts = np.round(scaled)
    if np.max(np.abs(scaled - counts)) > 1e-6 * max(1.0, n) ** 0.5 or counts.sum() != n:
        return None
    return counts


def robust_figures_of_table(prior, q, n: int, confidence: float) -> dict | None:
    """``robust_leakage_bits``, ``robust_confidence`` and, when finite, ``robust_max_output_leakage_bits``
    of table ``q`` (shape (K, K_out)) over the confidence set of the empirical ``prior`` (shape
    (|A|, K)) of ``n`` users; None when the prior is not an unsmoothed empirical one
    (:func:`counts_from_prior`)."""
    from ._confidence import confidence_set
    counts = counts_from_prior(prior, n)
    if counts is None:
        return None
    cs = confidence_set(counts, confidence, centre_prior=np.asarray(prior, dtype=float))
    figures = {"robust_leakage_bits": certified_leakage_bits(cs, q), "robust_confidence": float(confidence)}
    epsilon = certified_max_output_leakage_bits(cs, q)
    if math.isfinite(epsilon):
        figures["robust_max_output_leakage_bits"] = epsilon
    return figures
