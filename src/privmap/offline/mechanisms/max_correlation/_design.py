"""Marginal-only design through maximal correlation (seed 002, case (b): only P_X known).

For S -> X -> Y and any S, I(S;Y) <= S*(X;Y) I(S;X), with S*(X;Y) = sup_{r != P_X}
D(r W || P_X W) / D(r || P_X) the KL contraction coefficient of the channel W = P_{Y|X} at P_X.
S* is hard to optimise, so the seed minimises its lower bound rho_m(X;Y)^2 (the chi-square
contraction coefficient, S* >= rho_m^2) subject to E d(X,Y) <= D:

    rho_m = sigma_2(Q),   Q(x, y) = P_X(x) W(y|x) / sqrt(P_X(x) P_Y(y))   (Witsenhausen),

whose top singular value is exactly 1 with vectors sqrt(P_X), sqrt(P_Y). The program is
non-convex; it is solved here over W directly (distortion is linear in W, rho_m^2 has the
closed-form gradient below) from several feasible starts: SLSQP for small alphabets (K^2 <=
``SLSQP_MAX_VARIABLES``), and above that Frank-Wolfe with an exact line search, whose linear
step over {row-stochastic W, E d <= D} is solved in closed form (bisection on the budget's
multiplier, then the feasible mix of the two argmin vertices around it).

Because rho_m^2 is only a lower bound on S*, the bundle declares a certified upper bound too:

- Dobrushin: S* <= eta_TV(W) = max_{x, x'} TV(W(.|x), W(.|x'))  (any f-divergence contraction
  is at most eta_TV; Cohen, Kemperman and Zbaganu 1998);
- S* <= rho_m^2 / min_x P_X(x)  (Makur and Zheng 2020, comparison of contraction coefficients);
- S* <= 1 (data processing).

The guarantee I(S;Y) <= S*_upper I(S;X) is then certified; S* = rho_m^2 is declared verified
only where the upper bound meets rho_m^2.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._errors import BuildError, SolverError

__all__ = [
    "MaxCorrResult", "witsenhausen_q", "joint_from_q", "rho_m_squared", "s_star_upper_bound",
    "s_star_lower_bound", "design_max_correlation",
]

#: Largest K^2 solved by SLSQP (its quadratic subproblem is O((K^2)^3)); Frank-Wolfe above.
SLSQP_MAX_VARIABLES = 144
#: Frank-Wolfe stops when a step improves rho_m^2 by less than this.
FW_MIN_IMPROVEMENT = 1e-10
#: S* = rho_m^2 counts as verified when the certified upper bound is within this relative gap.
VERIFIED_RELATIVE_GAP = 1e-9


def witsenhausen_q(p_xy) -> np.ndarray:
    """Q(x, y) = P_XY(x, y) / sqrt(P_X(x) P_Y(y)), shape (|X|, |Y|) (zero rows/columns stay 0)."""
    p = np.asarray(p_xy, dtype=float)
    p = p / p.sum()
    px, py = p.sum(axis=1), p.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = p / np.sqrt(np.outer(px, py))
    return np.where(np.outer(px, py) > 0, q, 0.0)


def joint_from_q(q: np.ndarray, p_x) -> np.ndarray:
    """Inverse of :func:`witsenhausen_q` (Theorem 2).

    sqrt(P_Y) = Q^T sqrt(P_X) and P_XY(x, y) = Q(x, y) sqrt(P_X(x)) sqrt(P_Y(y)). Shapes
    (|X|, |Y|) and (|X|,).
    """
    sx = np.sqrt(np.asarray(p_x, dtype=float))
    sy = q.T @ sx
    return q * np.outer(sx, sy)


def rho_m_squared(p_x, w) -> float:
    """rho_m(X;Y)^2: the second singular value of Q, squared, for P_X (|X|,) and W (|X|, |Y|)."""
    s = np.linalg.svd(witsenhausen_q(np.asarray(p_x, float)[:, None] * np.asarray(w, float)), compute_uv=False)
    return float(s[1] ** 2) if s.size > 1 else 0.0


def _rho2_and_gradient(p_x: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray]:
    """rho_m^2 and its gradient in W (where sigma_2 is simple), shapes () and (|X|, |Y|)."""
    p_y = p_x @ w
    p_y = np.maximum(p_y, 1e-300)
    sx = np.sqrt(p_x)
    q = sx[:, None] * w / np.sqrt(p_y)[None, :]
    u, s, vt = np.linalg.svd(q)
    if s.size < 2:
        return 0.0, np.zeros_like(w)
    sigma, a, b = s[1], u[:, 1], vt[1]
    # d sigma = a^T dQ b;  Q = diag(sx) W diag(p_y^-1/2),  p_y = p_x^T W
    direct = np.outer(sx * a, b / np.sqrt(p_y))
    coupling = (sx * a) @ w  # sum_x sqrt(p_x) a_x W(x, y), per y
    through_py = -0.5 * np.outer(p_x, coupling * b * p_y ** -1.5)
    return float(sigma ** 2), 2.0 * sigma * (direct + through_py)


def s_star_upper_bound(p_x, w) -> float:
    """Certified upper bound on S*(X;Y): min(1, eta_TV(W), rho_m^2 / min P_X) (module docstring)."""
    w = np.asarray(w, dtype=float)
    tv = 0.5 * np.abs(w[:, None, :] - w[None, :, :]).sum(axis=2).max()
    p_x = np.asarray(p_x, dtype=float)
    return float(min(1.0, tv, rho_m_squared(p_x, w) / p_x.min()))


def s_star_lower_bound(p_x, w, *, starts: int = 4, seed: int = 0) -> float:
    """A numerical lower bound on S*.

    The best ratio D(rW || P_Y) / D(r || P_X) found by multi-start local search over r (softmax
    parametrised). Not certified as the supremum.
    """
    from scipy.optimize import minimize
    p_x = np.asarray(p_x, dtype=float)
    w = np.asarray(w, dtype=float)
    p_y = p_x @ w
    rng = np.random.default_rng(seed)
    log_px = np.log(p_x)

    def ratio(theta):
        r = np.exp(theta - theta.max())
        r /= r.sum()
        num_r = r @ w
        num = np.sum(np.where(num_r > 0, num_r * (np.log(np.maximum(num_r, 1e-300)) - np.log(p_y)), 0.0))
        den = np.sum(np.where(r > 0, r * (np.log(np.maximum(r, 1e-300)) - log_px), 0.0))
        return num / den if den > 1e-6 else 0.0  # near r = P_X both sides vanish: round-off

    best = 0.0
    for k in range(starts):
        theta0 = log_px + (rng.normal(size=p_x.size) * (0.1 if k % 2 else 2.0))
        res = minimize(lambda t: -ratio(t), theta0, method="Nelder-Mead" if p_x.size <= 2 else "L-BFGS-B",
                       options={"maxiter": 100})
        best = max(best, ratio(res.x), ratio(theta0))
    return float(best)


@dataclass(frozen=True)
class MaxCorrResult:
    """A designed channel.

    Attributes
    ----------
    w : ndarray, shape (|X|, |X|)
        P_{Y|X}, row-stochastic (Y takes values in X's alphabet).
    rho_m_squared : float
        rho_m(X;Y)^2 of ``w`` at P_X.
    distortion : float
        E d(X, Y) under P_X.
    starts : int
        Starts tried; ``feasible_starts`` of them ended within the budget.
    """

    w: np.ndarray
    rho_m_squared: float
    distortion: float
    starts: int
    feasible_starts: int


def _starts(p_x: np.ndarray, d: np.ndarray, budget: float, count: int, rng) -> list[np.ndarray]:
    """Feasible starting channels: blends of the identity with 'output y0' or with P_X rows."""
    n = p_x.size
    eye = np.eye(n)
    targets = [np.tile(p_x, (n, 1)), np.full((n, n), 1.0 / n)]
    targets += [np.tile(rng.dirichlet(np.ones(n)), (n, 1)) for _ in range(max(count - 2, 0))]
    out = []
    for target in targets[:count]:
        cost = float(p_x @ (target * d).sum(axis=1))
        t = 1.0 if cost <= budget else budget / cost
        out.append((1 - t) * eye + t * target)
    return out


def _linear_step(grad: np.ndarray, p_x: np.ndarray, d: np.ndarray, budget: float) -> np.ndarray:
    """The argmin <grad, V> over row-stochastic V with sum_x p_x(x) sum_y V(x, y) d(x, y) <= budget."""
    n = p_x.size
    rows = np.arange(n)
    cost = p_x[:, None] * d

    def vertex(mu):
        v = np.zeros_like(grad)
        v[rows, np.argmin(grad + mu * cost, axis=1)] = 1.0
        return v, float(np.sum(cost * v))

    v, spent = vertex(0.0)
    if spent <= budget:
        return v
    lo, hi = 0.0, 1.0
    while vertex(hi)[1] > budget and hi < 1e12:
        hi *= 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if vertex(mid)[1] > budget:
            lo = mid
        else:
            hi = mid
    (v_in, d_in), (v_out, d_out) = vertex(hi), vertex(lo)
    if d_out <= d_in:
        return v_in
    t = (budget - d_in) / (d_out - d_in)  # mix so that the budget is met exactly
    return (1.0 - t) * v_in + t * v_out


def _frank_wolfe(p_x, d, budget, w, iterations: int) -> np.ndarray:
    """Frank-Wolfe on rho_m^2 from the feasible ``w`` (every iterate stays feasible)."""
    from scipy.optimize import minimize_scalar
    for _ in range(iterations):
        value, grad = _rho2_and_gradient(p_x, w)
        direction = _linear_step(grad, p_x, d, budget) - w
        if float(np.sum(grad * direction)) > -1e-12:
            break
        res = minimize_scalar(lambda t, w=w, direction=direction: rho_m_squared(p_x, w + t * direction),
                              bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-9})
        if res.fun >= value - FW_MIN_IMPROVEMENT:
            break
        w = w + res.x * direction
    return w


def design_max_correlation(p_x, distortion, budget: float, *, starts: int = 6, seed: int = 0,
                           max_iter: int = 300) -> MaxCorrResult:
    """The channel of least rho_m(X;Y)^2 over P_{Y|X} s.t. sum_x P_X(x) sum_y W(y|x) d(x, y) <= budget.

    Parameters
    ----------
    p_x : array-like, shape (n,)
        The public marginal (strictly positive; normalised here).
    distortion : array-like, shape (n, n)
        d(x, y) >= 0 between X's symbols, d(x, x) = 0.
    budget : float
        D, in the metric's unit.
    starts : int
        Multi-start count (SLSQP from each; the best feasible end point wins).
    seed : int
        Seed of the random starting points (offline only).

    Raises
    ------
    BuildError
        Bad shapes, a negative budget or a marginal with zero entries.
    SolverError
        No start ended feasible.
    """
    p_x = np.asarray(p_x, dtype=float)
    d = np.asarray(distortion, dtype=float)
    n = p_x.size
    if p_x.ndim != 1 or n < 1 or np.any(~np.isfinite(p_x)) or np.any(p_x <= 0):
        raise BuildError("P_X must be a vector of positive finite numbers")
    if d.shape != (n, n) or np.any(~np.isfinite(d)) or np.any(d < 0) or np.any(np.diag(d) != 0):
        raise BuildError("distortion must be a finite (n, n) matrix >= 0 with a zero diagonal")
    if not (np.isfinite(budget) and budget >= 0):
        raise BuildError(f"distortion budget must be finite and >= 0, got {budget}")
    from scipy.optimize import minimize
    p_x = p_x / p_x.sum()
    rng = np.random.default_rng(seed)
    cost = (p_x[:, None] * d).ravel()
    rows = np.kron(np.eye(n), np.ones(n))
    constraints = [
        {"type": "eq", "fun": lambda v: rows @ v - 1.0, "jac": lambda v: rows},
        {"type": "ineq", "fun": lambda v: budget - cost @ v, "jac": lambda v: -cost[None, :]},
    ]

    def objective(v):
        value, grad = _rho2_and_gradient(p_x, v.reshape(n, n))
        return value, grad.ravel()

    best, feasible = None, 0
    for w0 in _starts(p_x, d, budget, starts, rng):
        if n * n <= SLSQP_MAX_VARIABLES:
            res = minimize(objective, w0.ravel(), jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * (n * n),
                           constraints=constraints, options={"maxiter": max_iter, "ftol": 1e-12})
            w = res.x.reshape(n, n)
        else:
            w = _frank_wolfe(p_x, d, budget, w0, max_iter)
        w = np.clip(w, 0.0, None)
        w /= w.sum(axis=1, keepdims=True)
        if float(p_x @ (w * d).sum(axis=1)) > budget * (1 + 1e-9) + 1e-12:
            continue
        feasible += 1
        value = rho_m_squared(p_x, w)
        if best is None or value < best[0] - 1e-15:
            best = (value, w)
    if best is None:
        raise SolverError("max-correlation design: no start ended within the distortion budget")
    w = best[1]
    return MaxCorrResult(w=w, rho_m_squared=best[0], distortion=float(p_x @ (w * d).sum(axis=1)),
                         starts=starts, feasible_starts=feasible)
