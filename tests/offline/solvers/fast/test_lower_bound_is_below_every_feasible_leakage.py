"""The certification of the fast solver (src/privmap/offline/solvers/fast/_certify.py): its lower bound is at
most the leakage of every feasible table, at any duals, and the figures it returns are those of the
table it returns."""
import math

import numpy as np
import pytest

from privmap.offline._information import expected_distortion, leakage_bits
from privmap.offline.solvers import solve_cvxpy, solve_fast
from privmap.offline.solvers.fast import _certify, _pricing, _state


def _feasible_tables(p_ac, dist, delta, rng, n):
    """n random row-stochastic tables on the allowed pairs, each mixed with the cheapest-output
    table just enough to meet the budget (shape (K, K_out) each)."""
    p_c = p_ac.sum(axis=0)
    low = np.zeros(dist.shape)
    low[np.arange(dist.shape[0]), np.argmin(dist, axis=1)] = 1.0
    d_low = expected_distortion(p_c, low, dist)
    for _ in range(n):
        q = np.where(np.isfinite(dist), rng.random(dist.shape) ** 8, 0.0)
        q /= q.sum(axis=1, keepdims=True)
        d_q = expected_distortion(p_c, q, dist)
        t = 0.0 if d_q <= delta else min(1.0, (d_q - delta) / (d_q - d_low) * (1 + 1e-9))
        yield (1 - t) * q + t * low


def _bound_bits(solver, G, mu):
    """The certified lower bound (bits) at codebook G (A, K_out) and multiplier mu (nats)."""
    total, absolute, *_ = _pricing.pricing_pass(solver, G, mu, None, 0)
    return _certify.lower_bound(solver, total, absolute, mu) / math.log(2)


@pytest.mark.parametrize("seed, K, n_private, erasure", [(0, 12, 2, False), (1, 10, 3, False), (2, 8, 2, True)])
def test_the_lower_bound_at_any_duals_is_below_every_feasible_tables_leakage(seed, K, n_private, erasure,
                                                                              random_instance, budget):
    """Weak duality as the solver computes it: at random duals and at those of the optimum (each
    output's posterior under the reference table, the reference multiplier), the bound is at most
    the leakage of random feasible tables and of the reference optimum; at the optimum's duals it
    is also close to that optimum, so the check is not vacuous."""
    p_ac, dist = random_instance(seed, K, n_private, erasure=erasure)
    delta = 0.2 if erasure else budget(p_ac, dist, 0.2)
    solver = _state.set_up(p_ac, dist, delta, 1e-5, 100)
    solver.tight = False
    rng = np.random.default_rng(seed)
    ref = solve_cvxpy(p_ac, dist, delta)
    leak = [leakage_bits(p_ac, q) for q in _feasible_tables(p_ac, dist, delta, rng, 20)]
    leak.append(ref.leakage_bits)
    duals = [(rng.normal(size=(n_private, dist.shape[1])), float(rng.random())) for _ in range(5)]
    P = p_ac @ ref.table                                   # (A, K_out): p(a, c_hat)
    s = P.sum(axis=0)
    p_a = p_ac.sum(axis=1)[:, None]
    r = np.where(s > 1e-12, P / np.maximum(s, 1e-300), p_a)
    r = np.maximum(r, 1e-300)
    duals.append((np.log(r) - np.log(p_a), max(ref.multiplier, 0.0) * math.log(2)))
    bounds = [_bound_bits(solver, G, mu) for G, mu in duals]
    assert max(bounds) <= min(leak)
    assert bounds[-1] >= ref.leakage_bits - 1e-3


def test_the_rounding_margin_only_lowers_the_bound(random_instance, budget):
    """The bound subtracts a positive margin for the rounding of its sums, growing with them."""
    p_ac, dist = random_instance(4, 10)
    solver = _state.set_up(p_ac, dist, budget(p_ac, dist, 0.2), 1e-5, 100)
    plain = _certify.lower_bound(solver, 0.5, 1.0, 0.2) - (0.5 - 0.2 * solver.delta)
    larger = _certify.lower_bound(solver, 0.5, 100.0, 0.2) - (0.5 - 0.2 * solver.delta)
    assert larger < plain < 0.0


def test_reported_metrics_are_recomputed_from_the_returned_table(random_instance, budget):
    p_ac, dist = random_instance(7, 10)
    delta = budget(p_ac, dist, 0.2)
    res = solve_fast(p_ac, dist, delta)
    assert np.all(res.table >= 0) and np.allclose(res.table.sum(axis=1), 1.0)
    assert res.leakage_bits == pytest.approx(leakage_bits(p_ac, res.table), abs=1e-12)
    assert res.distortion == pytest.approx(expected_distortion(p_ac.sum(axis=0), res.table, dist),
                                           abs=1e-12)
    assert res.info["lower_bound_bits"] == pytest.approx(res.leakage_bits - res.gap_bits, abs=1e-12)
