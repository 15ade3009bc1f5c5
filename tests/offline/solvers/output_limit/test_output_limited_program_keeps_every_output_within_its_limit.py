"""Program (19) with a per-output leakage limit (seed 002's information privacy, in bits)."""
import math

import numpy as np
import pytest
from known_answers import bsc

from privmap.offline._errors import InfeasibleError
from privmap.offline._information import expected_distortion, leakage_bits, max_output_leakage_bits
from privmap.offline.solvers import (
    compress,
    least_distortion,
    perfect_privacy_distortion,
    smallest_feasible_epsilon,
    solve_fast,
    solve_for_shipping,
    solve_output_limited,
)
from privmap.offline.solvers.output_limit import dense_least_table, dense_limited


def brute_force(p_ac, dist, delta, eps, steps=401):
    """Least leakage over a grid of 2 x 2 tables meeting the budget and the limit."""
    best = math.inf
    for a in np.linspace(0, 1, steps):
        for b in np.linspace(0, 1, steps):
            q = np.array([[1 - a, a], [b, 1 - b]])
            if expected_distortion(p_ac.sum(axis=0), q, dist) <= delta and max_output_leakage_bits(p_ac, q) <= eps:
                best = min(best, leakage_bits(p_ac, q))
    return best


def instance(K=12, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    x = rng.random((K, 2))
    p_ac = rng.random((classes, K)) ** 3
    p_ac /= p_ac.sum()
    dist = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(axis=2))
    return p_ac, dist


def test_epsilon_of_the_identity_and_of_a_constant_release():
    p_ac, _ = bsc(0.1)
    assert max_output_leakage_bits(p_ac, np.eye(2)) == pytest.approx(math.log2(0.5 / 0.1))
    assert max_output_leakage_bits(p_ac, np.array([[1.0, 0.0], [1.0, 0.0]])) == 0.0
    pure = np.array([[0.5, 0.0], [0.0, 0.5]])
    assert max_output_leakage_bits(pure, np.eye(2)) == math.inf


@pytest.mark.parametrize("factor", [1.05, 1.3, 2.0])
def test_limited_optimum_matches_brute_force_on_the_binary_channel(factor):
    p_ac, dist = bsc(0.1)
    limit = factor * smallest_feasible_epsilon(p_ac, dist, 0.05)
    res = solve_output_limited(p_ac, dist, 0.05, limit)
    assert res.info["max_output_leakage_bits"] <= limit + 1e-6
    assert res.distortion <= 0.05 + 1e-7
    assert res.leakage_bits == pytest.approx(brute_force(p_ac, dist, 0.05, limit), abs=2e-3)
    assert res.leakage_bits <= brute_force(p_ac, dist, 0.05, limit) + 1e-6


def test_a_loose_limit_gives_the_fast_solvers_optimum():
    p_ac, dist = instance()
    delta = 0.3 * float(p_ac.sum(axis=0) @ dist.mean(axis=1))
    free = solve_fast(p_ac, dist, delta, tol_bits=1e-7)
    unlimited = max_output_leakage_bits(p_ac, free.table)
    assert math.isfinite(unlimited)
    limited = solve_output_limited(p_ac, dist, delta, unlimited + 1.0)
    assert limited.leakage_bits == pytest.approx(free.leakage_bits, abs=1e-4)


def test_a_tight_limit_costs_leakage_and_holds():
    p_ac, dist = instance()
    delta = 0.05 * float(p_ac.sum(axis=0) @ dist.mean(axis=1))
    free = solve_fast(p_ac, dist, delta, tol_bits=1e-7)
    unlimited = max_output_leakage_bits(p_ac, free.table)
    floor = smallest_feasible_epsilon(p_ac, dist, delta)
    limit = 0.5 * (floor + min(unlimited, 10 * floor))
    assert floor < limit < unlimited
    res = solve_output_limited(p_ac, dist, delta, limit)
    assert max_output_leakage_bits(p_ac, res.table) <= limit * (1 + 1e-6)
    assert res.distortion <= delta * (1 + 1e-6)
    assert res.leakage_bits > free.leakage_bits + 1e-4


def test_the_shipped_integer_table_meets_the_limit():
    p_ac, dist = instance(K=16, seed=3)
    delta = 0.3 * float(p_ac.sum(axis=0) @ dist.mean(axis=1))
    limit = max(1.5 * smallest_feasible_epsilon(p_ac, dist, delta), 0.1)
    for bits in (8, 16):
        res = solve_for_shipping(p_ac, dist, delta, limit, bits=bits)
        shipped = compress(res.table, p_ac, dist, delta, bits=bits)
        assert max_output_leakage_bits(p_ac, shipped.probabilities()) <= limit
        assert shipped.distortion <= delta * (1 + 1e-12)


def test_a_limit_below_what_the_budget_allows_is_refused_naming_the_smallest():
    p_ac, dist = instance()
    delta = 0.2 * float(p_ac.sum(axis=0) @ dist.mean(axis=1))
    floor = smallest_feasible_epsilon(p_ac, dist, delta)
    assert 0 < floor < math.inf
    assert least_distortion(p_ac, dist, floor) <= delta * (1 + 1e-9)
    assert least_distortion(p_ac, dist, floor * 0.99) > delta
    with pytest.raises(InfeasibleError, match=f"smallest feasible limit at this budget is {floor:.4g} bits"):
        solve_output_limited(p_ac, dist, delta, floor / 2)


def test_least_distortion_falls_with_the_limit_to_the_unconstrained_floor():
    p_ac, dist = instance()
    values = [least_distortion(p_ac, dist, e) for e in (0.0, 0.1, 0.5, 2.0, 20.0)]
    assert all(a >= b - 1e-12 for a, b in zip(values, values[1:]))
    assert values[-1] == pytest.approx(0.0, abs=1e-6)            # identity is allowed when eps is loose
    constant = min(float(p_ac.sum(axis=0) @ dist[:, j]) for j in range(dist.shape[1]))
    assert values[0] <= constant + 1e-9


def test_outputs_left_unbalanced_by_rounding_are_closed_and_the_limit_holds(ratings_csv):
    """SSI, first 6 columns, the benchmark's training split, K = 64: a 0.0357-bit limit once shipped
    0.94 bits (an output balanced by entries below one unit) and the build refused."""
    from sklearn.model_selection import train_test_split

    from privmap.offline import Dataset, QuantizedOptions
    from privmap.offline.mechanisms.table import InMemoryRows, solve_rows
    options = QuantizedOptions(clusters=64, delta_fraction=1.0, codebook=False, cross_fitting=None)
    rows = InMemoryRows(*Dataset.from_csv(ratings_csv, private="gender", public=(
        "classical", "opera", "jazz", "bwayst", "moodez", "bband")).without_all_missing())
    train, _ = train_test_split(np.arange(rows.n), test_size=0.3, random_state=0, stratify=rows.dataset.private)
    done = solve_rows(rows.subset(train), options)
    p_ac, dist = done.p_ac, done.alphabet.distortion
    limit = 0.0356613
    delta = 1.1 * least_distortion(p_ac, dist, limit)
    res = solve_for_shipping(p_ac, dist, delta, limit, bits=16)
    shipped = compress(res.table, p_ac, dist, delta, bits=16)
    assert res.info["closed_outputs"] > 0
    assert max_output_leakage_bits(p_ac, shipped.probabilities()) <= limit
    assert shipped.distortion <= delta


def binding_limit(p_ac, dist, delta):
    """A limit halfway between the least feasible one and the unconstrained optimum's (it binds)."""
    free = solve_fast(p_ac, dist, delta, tol_bits=1e-7)
    floor = smallest_feasible_epsilon(p_ac, dist, delta)
    return 0.5 * (floor + min(max_output_leakage_bits(p_ac, free.table), 10 * floor))


@pytest.mark.parametrize("K, seed, classes", [(12, 0, 2), (20, 1, 2), (24, 2, 2), (16, 3, 3)])
def test_column_generation_reaches_the_dense_models_optimum(K, seed, classes):
    p_ac, dist = instance(K=K, seed=seed, classes=classes)
    delta = 0.1 * float(p_ac.sum(axis=0) @ dist.mean(axis=1))
    limit = binding_limit(p_ac, dist, delta)
    dense = dense_limited(p_ac, dist, delta, limit)
    columns = solve_output_limited(p_ac, dist, delta, limit)
    assert columns.leakage_bits == pytest.approx(dense.leakage_bits, rel=1e-5, abs=1e-8)
    assert columns.distortion <= delta * (1 + 1e-6)
    assert limit_excess(p_ac, columns.table, limit) <= 1e-8


def limit_excess(p_ac, table, eps_bits):
    """Largest excess of the limit in its linear form, max over (a, j) of P(a, j) - 2^eps p(a) P(j)
    and 2^-eps p(a) P(j) - P(a, j) (an output of interior-point mass 1e-8 has any posterior)."""
    joint = p_ac @ table
    expected = p_ac.sum(axis=1)[:, None] * joint.sum(axis=0)[None, :]
    return float(max((joint - 2.0 ** eps_bits * expected).max(), (2.0 ** -eps_bits * expected - joint).max()))


def test_pricing_brings_in_the_pairs_a_poor_start_leaves_out():
    """Started from each row's own output only (plus the nearest pairs every start has, and the
    least-distortion table's when that start holds no feasible table), the working set must grow
    by pricing to reach the dense model's optimum."""
    p_ac, dist = instance(K=40, seed=5)
    delta = 0.2 * float(p_ac.sum(axis=0) @ dist.mean(axis=1))
    limit = binding_limit(p_ac, dist, delta)
    columns = solve_output_limited(p_ac, dist, delta, limit, start=np.eye(40))
    assert columns.info["rounds"] > 1
    assert columns.leakage_bits == pytest.approx(dense_limited(p_ac, dist, delta, limit).leakage_bits,
                                                 rel=1e-5, abs=1e-8)


def test_an_unconstrained_optimum_within_the_limit_ships_without_a_limited_solve():
    p_ac, dist = instance()
    delta = 0.5 * perfect_privacy_distortion(p_ac, dist)
    free = solve_fast(p_ac, dist, delta)
    res = solve_for_shipping(p_ac, dist, delta, max_output_leakage_bits(p_ac, free.table) + 1.0, bits=16)
    assert res.info["ship_attempts"] == 0
    assert res.solver == free.solver and res.gap_bits == free.gap_bits
    assert res.leakage_bits == pytest.approx(free.leakage_bits, abs=1e-4)


def test_a_budget_only_the_limit_itself_allows_still_ships():
    """The first limited solve aims 0.1 % inside the limit; at a budget between the least distortion
    of the limit and that of the aim, only the limit itself is feasible, and the build must not
    refuse a feasible request (bench_ldp at K = 256 once did, naming the aim instead of the limit)."""
    p_ac, dist = instance()
    limit = 0.5
    at_limit, inside = least_distortion(p_ac, dist, limit), least_distortion(p_ac, dist, limit * (1 - 1e-3))
    assert inside > at_limit
    delta = 0.5 * (at_limit + inside)
    res = solve_for_shipping(p_ac, dist, delta, limit, bits=16)
    shipped = compress(res.table, p_ac, dist, delta, bits=16)
    assert max_output_leakage_bits(p_ac, shipped.probabilities()) <= limit
    assert shipped.distortion <= delta


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("eps", [0.0, 0.05, 0.3, 1.0, 5.0])
def test_least_distortion_by_column_generation_matches_the_dense_program(classes, eps):
    p_ac, dist = instance(K=30, seed=classes, classes=classes)
    dist[np.random.default_rng(7).random(dist.shape) < 0.3] = np.inf     # forbidden pairs ...
    np.fill_diagonal(dist, 0.0)
    dist[:, 4] = np.where(np.isfinite(dist[:, 4]), dist[:, 4], 2.0)        # ... one output open to all
    dense, _ = dense_least_table(p_ac, dist, eps)
    assert least_distortion(p_ac, dist, eps) == pytest.approx(dense, rel=1e-9, abs=1e-12)


def test_the_shipping_loop_closes_outputs_that_break_the_limit_and_every_sliver():
    # Outputs: 0 is fed by both classes alike (kept); 1 by one row of each class at 63 units each, a
    # sliver whose posterior is still the prior (closed); 2 only by a class-1 row, at 100 units
    # (breaks the limit: closed); 3 by nobody (left open).
    from scipy import sparse

    from privmap.offline.solvers.output_limit._program import SLIVER_UNITS, outputs_to_close
    bits = 16
    unit = 2.0 ** -bits
    assert SLIVER_UNITS == 64
    p_ac = np.array([[0.5, 0.0], [0.0, 0.5]])             # row 0 is class 0, row 1 class 1
    table = np.zeros((2, 4))
    table[0, 1] = table[1, 1] = 63 * unit
    table[1, 2] = 100 * unit
    table[0, 0] = 1 - table[0].sum()
    table[1, 0] = 1 - table[1].sum()
    close = outputs_to_close(table, sparse.csr_matrix(table), p_ac, 0.05, bits)
    assert close.tolist() == [False, True, True, False]
    table[0, 1] = table[1, 1] = 64 * unit                 # no longer a sliver
    table[0, 0], table[1, 0] = 1 - table[0, 1:].sum(), 1 - table[1, 1:].sum()
    assert outputs_to_close(table, sparse.csr_matrix(table), p_ac, 0.05, bits).tolist() == [False, False, True, False]


def test_a_stalled_limited_solve_is_retried_a_little_further_inside_the_limit(monkeypatch):
    # Clarabel stalls (SolverError) at some aims and not at others nearby (SSI, K = 512): the next
    # solve aims 1 % further inside; a stall at every aim is refused with the stall's own error.
    from privmap.offline._errors import SolverError
    from privmap.offline.solvers.output_limit import _program as _output_limit
    p_ac, dist = instance(K=16, seed=3)
    delta = 0.3 * float(p_ac.sum(axis=0) @ dist.mean(axis=1))
    free = solve_fast(p_ac, dist, delta, tol_bits=1e-7)
    limit = 0.5 * (smallest_feasible_epsilon(p_ac, dist, delta) + max_output_leakage_bits(p_ac, free.table))
    real, aims = _output_limit.solve_output_limited, []

    def stalls_once(p, D, budget, target, **kwargs):
        aims.append(target)
        if len(aims) == 1:
            raise SolverError("cvxpy/Clarabel did not reach an optimum: InsufficientProgress")
        return real(p, D, budget, target, **kwargs)

    monkeypatch.setattr(_output_limit, "solve_output_limited", stalls_once)
    res = solve_for_shipping(p_ac, dist, delta, limit, bits=16)
    assert aims[1] == pytest.approx(aims[0] * (1 - _output_limit._STALL_INSIDE), rel=1e-12)
    assert max_output_leakage_bits(p_ac, compress(res.table, p_ac, dist, delta, bits=16).probabilities()) <= limit

    def always_stalls(p, D, budget, target, **kwargs):
        raise SolverError("cvxpy/Clarabel did not reach an optimum: InsufficientProgress")

    monkeypatch.setattr(_output_limit, "solve_output_limited", always_stalls)
    with pytest.raises(SolverError, match="InsufficientProgress"):
        solve_for_shipping(p_ac, dist, delta, limit, bits=16)
