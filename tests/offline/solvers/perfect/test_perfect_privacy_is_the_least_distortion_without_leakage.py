"""The perfect-privacy distortion is the least distortion with zero leakage."""
import numpy as np
import pytest

from privmap.offline import leakage_bits
from privmap.offline.solvers import perfect_privacy_distortion, perfect_privacy_lp, perfect_privacy_table, solve_cvxpy
from privmap.offline.solvers.perfect import _linear_program as _perfect


@pytest.fixture
def instance():
    rng = np.random.default_rng(11)
    points = rng.integers(0, 4, size=(12, 3)).astype(float)
    dist = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    p_ac = rng.random((3, 12)) ** 2
    return p_ac / p_ac.sum(), dist


def test_leakage_is_zero_just_above_the_perfect_privacy_distortion(instance):
    # Clarabel reports 'optimal_inaccurate' at exactly d0 (the optimum sits on the
    # cone's boundary), so the reference is asked 0.1% above it.
    p_ac, dist = instance
    d0 = perfect_privacy_distortion(p_ac, dist)
    assert solve_cvxpy(p_ac, dist, d0 * 1.001).leakage_bits < 1e-8


def test_leakage_is_positive_just_below_it(instance):
    p_ac, dist = instance
    d0 = perfect_privacy_distortion(p_ac, dist)
    assert solve_cvxpy(p_ac, dist, 0.99 * d0).leakage_bits > 1e-7


def test_never_above_mapping_everyone_to_one_output(instance):
    p_ac, dist = instance
    one_output = min(p_ac.sum(axis=0) @ dist[:, j] for j in range(dist.shape[1]))
    assert perfect_privacy_distortion(p_ac, dist) <= one_output + 1e-9


@pytest.mark.parametrize("seed, n_private, K", [(1, 2, 30), (2, 3, 25), (3, 4, 40)])
def test_column_generation_matches_the_dense_lp_and_certifies_it(seed, n_private, K):
    rng = np.random.default_rng(seed)
    points = rng.normal(size=(K, 3))
    dist = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    p_ac = rng.random((n_private, K)) ** 3
    p_ac /= p_ac.sum()
    info = {}
    table, d0 = perfect_privacy_table(p_ac, dist, info=info)
    _, d_lp = perfect_privacy_lp(p_ac, dist)
    assert info["method"] == "column-generation"
    assert info["upper_bound"] - info["lower_bound"] <= 1e-9 * d0
    assert info["lower_bound"] <= d_lp * (1 + 1e-9) and d0 >= d_lp * (1 - 1e-9)
    assert abs(d0 - d_lp) <= 1e-8 * d_lp
    assert abs(p_ac.sum(axis=0) @ (table * dist).sum(axis=1) - d0) <= 1e-9 * d0
    assert leakage_bits(p_ac, table) < 1e-9


@pytest.mark.parametrize("k", [1, 3, 8, 40])
def test_each_row_prices_its_k_least_reduced_costs(k, monkeypatch):
    """A pricing pass may add up to _PRICED_PER_ROW pairs a row: exactly its k least values, read
    in row chunks (a chunk of 7 rows here), the row minimum among them; k above K_out gives all."""
    rng = np.random.default_rng(5)
    values = rng.normal(size=(30, 25))
    values[3, :] = np.inf                                 # a row with every pair forbidden
    monkeypatch.setattr(_perfect, "_CHUNK_ELEMENTS", 7 * 25)
    least, columns = _perfect._row_smallest(values, values, k)
    kk = min(k, 25)
    assert least.shape == columns.shape == (30, kk)
    assert np.array_equal(np.sort(least, axis=1), np.sort(values, axis=1)[:, :kk])
    assert np.array_equal(np.take_along_axis(values, columns, axis=1), least)
    assert all(len(set(row)) == kk for row in columns)
    assert np.array_equal(least.min(axis=1), _perfect._row_minima(values, values)[0])


def _five_class_instance(K, seed):
    """Rows at integer points of a plane (outputs = inputs, l2), five classes, two of them rare."""
    rng = np.random.default_rng(seed)
    points = rng.integers(0, 12, size=(K, 2)).astype(float)
    dist = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    p_ac = rng.random((5, K)) ** 2 * np.array([[1.0], [0.3], [0.1], [0.02], [0.01]])
    return p_ac / p_ac.sum(), dist


def test_dropping_idle_columns_keeps_the_vertex_and_drops_only_priced_out_columns():
    """A dropped column sat at zero, priced out beyond the near-tie margin, through _IDLE_SOLVES
    solves; the master then re-solves to the same value without a pivot."""
    p_ac, dist = _five_class_instance(40, 3)
    p_c, delta_a = _perfect._coefficients(p_ac)
    K = dist.shape[0]
    master = _perfect._Master(p_c, delta_a, dist)
    master.add(np.arange(K), np.full(K, int(np.argmin(p_c @ dist))))   # the constant output
    master.solve()
    rows, cols = np.divmod(np.arange(K * K), K)
    fresh = master.new_pairs(rows, cols)
    master.add(*fresh)                                     # every pair: a vertex uses few of them
    assert master.drop_idle() == 0                         # not solved with the new columns yet
    master.solve()
    master.drop_idle()                                     # the new columns are one solve old: kept
    assert set(zip(*fresh)) <= set(zip(master.rows, master.cols))
    x, value, _, _ = master.solve()
    cost = p_c[master.rows] * dist[master.rows, master.cols]
    margin = np.maximum(_perfect._NEAR_TIE * cost, _perfect._HIGHS["dual_feasibility_tolerance"])
    idle = (x <= 0) & (master._reduced > margin)
    expected = set(zip(master.rows[~idle].tolist(), master.cols[~idle].tolist()))
    assert master.drop_idle() == idle.sum() > K * K // 2
    assert set(zip(master.rows.tolist(), master.cols.tolist())) == expected
    assert master._highs.getNumCol() == len(expected)
    _, again, _, _ = master.solve()
    assert again == pytest.approx(value, rel=1e-12)
    assert master._highs.getInfo().simplex_iteration_count == 0


@pytest.mark.parametrize("seed", [0, 1])
def test_column_generation_dropping_idle_columns_matches_the_dense_lp_with_five_classes(seed, monkeypatch):
    monkeypatch.setattr(_perfect, "INTERIOR_SEED_CLASSES", 6)   # the column generation unseeded
    p_ac, dist = _five_class_instance(120, seed)
    info = {}
    table, d0 = perfect_privacy_table(p_ac, dist, info=info)
    _, d_lp = perfect_privacy_lp(p_ac, dist)
    assert info["formulation"] == "hub" and info["dropped"] > 0
    assert abs(d0 - d_lp) <= 1e-9 * d_lp
    assert info["upper_bound"] - info["lower_bound"] <= 1e-9 * d0
    assert np.allclose(table.sum(axis=1), 1.0) and (table >= 0).all()
    assert abs(p_ac.sum(axis=0) @ (table * dist).sum(axis=1) - d0) <= 1e-9 * d0
    assert leakage_bits(p_ac, table) < 1e-9


def test_forbidden_pairs_and_massless_rows_are_priced_correctly():
    # A massless row makes 0 x inf = nan in the reduced costs: the warm-started master must
    # neither add such a pair nor count it in the dual bound.
    rng = np.random.default_rng(7)
    K = 60
    points = rng.normal(size=(K, 2))
    dist = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    dist[rng.random((K, K)) < 0.3] = np.inf
    dist[:, 0] = 5.0                                           # one output every row may use
    p_ac = rng.random((3, K)) ** 2
    p_ac[:, [4, 17]] = 0.0
    dist[4, 1:] = np.inf
    p_ac /= p_ac.sum()
    info = {}
    table, d0 = perfect_privacy_table(p_ac, dist, info=info)
    _, d_lp = perfect_privacy_lp(p_ac, dist)
    assert info["method"] == "column-generation"
    assert abs(d0 - d_lp) <= 1e-8 * d_lp
    assert not table[~np.isfinite(dist)].any()
    assert leakage_bits(p_ac, table) < 1e-9


@pytest.mark.parametrize("scale", [0.0, 1.0, 100.0])
def test_dual_bound_at_any_duals_is_below_the_lp_optimum(scale):
    # The certificate (and the stabilised pricing, which keeps the best of these bounds) rests
    # on L(v) <= Delta0 for every v, however far from the master's duals.
    rng = np.random.default_rng(5)
    K, n_private = 40, 3
    points = rng.normal(size=(K, 2))
    dist = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    p_ac = rng.random((n_private, K)) ** 2
    p_ac /= p_ac.sum()
    _, d_lp = perfect_privacy_lp(p_ac, dist)
    p_c, delta_a = _perfect._coefficients(p_ac)
    for _ in range(20):
        v = scale * rng.normal(size=(n_private - 1, K))
        bound = _perfect._row_minima(dist, _perfect._reduced(p_c, delta_a, dist, v))[0].sum()
        assert bound <= d_lp * (1 + 1e-12)


def test_a_spurious_highs_verdict_on_a_warm_start_is_re_solved_from_scratch(instance, monkeypatch):
    class FailsOnce:
        """The master's HiGHS model, reporting 'infeasible' after its first warm start."""

        def __init__(self, highs):
            self._highs, self._runs = highs, 0

        def __getattr__(self, name):
            return getattr(self._highs, name)

        def run(self):
            self._runs += 1
            return self._highs.run()

        def getModelStatus(self):
            if self._runs == 2:
                return _perfect.highspy.HighsModelStatus.kInfeasible
            return self._highs.getModelStatus()

    made = []

    class Master(_perfect._Master):
        def __init__(self, *args):
            super().__init__(*args)
            self._highs = FailsOnce(self._highs)
            made.append(self)

    monkeypatch.setattr(_perfect, "_Master", Master)
    monkeypatch.setattr(_perfect, "INTERIOR_SEED_CLASSES", 4)   # unseeded: several rounds, warm started
    p_ac, dist = instance
    info = {}
    _, d0 = perfect_privacy_table(p_ac, dist, info=info)
    assert info["rounds"] >= 2 and made[0]._highs._runs == info["rounds"] + 1
    assert d0 == pytest.approx(perfect_privacy_lp(p_ac, dist)[1], rel=1e-9)


def test_forbidden_transitions_without_a_common_output_fall_back_to_the_dense_lp(instance):
    p_ac, dist = instance
    dist = dist.copy()
    dist[np.arange(12), (np.arange(12) + 1) % 12] = np.inf      # every column forbids one row
    info = {}
    _, d0 = perfect_privacy_table(p_ac, dist, info=info)
    assert info["method"] == "dense-lp"
    assert d0 == pytest.approx(perfect_privacy_lp(p_ac, dist)[1], rel=1e-12)


def test_benchmark_budget_is_the_requested_fraction_of_the_lp_delta0(bench):
    p_ac, dist = bench.hard_instance(32)
    _, d_lp = perfect_privacy_lp(p_ac, dist)
    for frac in (0.1, 0.3, 0.6):
        delta, delta0, _ = bench.delta_for(p_ac, dist, frac)
        assert delta == pytest.approx(frac * d_lp, rel=1e-9)
    assert bench.constant_output_distortion(p_ac, dist) > 1.2 * d_lp   # the old, easier budget


def _metric_instance(rng, n_private, K, metric, K_out=None):
    """Random p(a, c) (some rows pure in one class, some massless) and a (K, K_out) distortion."""
    points = rng.normal(size=(K, 3))
    outputs = points if K_out is None else rng.normal(size=(K_out, 3))
    diff = points[:, None] - outputs[None]
    dist = {"l2": lambda: np.sqrt((diff ** 2).sum(-1)),
            "squared-l2": lambda: (diff ** 2).sum(-1),
            "l1": lambda: np.abs(diff).sum(-1),
            "random": lambda: rng.random((K, outputs.shape[0]))}[metric]()
    p_ac = rng.random((n_private, K)) ** 3
    p_ac[rng.integers(0, n_private, K // 4), rng.choice(K, K // 4, replace=False)] = 0.0
    p_ac[:, rng.choice(K, 2, replace=False)] = 0.0
    return p_ac / p_ac.sum(), dist


@pytest.mark.parametrize("metric", ["l2", "squared-l2", "l1", "random"])
@pytest.mark.parametrize("n_private, K, K_out", [(2, 40, None), (2, 35, 20), (3, 30, None)])
@pytest.mark.parametrize("seed", [0, 1])
def test_delta0_equals_the_dense_lp_for_binary_and_three_valued_private_attributes(
        seed, n_private, K, K_out, metric):
    # Binary A goes through the transport (certified alone or completed by the hub program);
    # three classes through the hub program: every way must give the dense LP's optimum.
    p_ac, dist = _metric_instance(np.random.default_rng(seed), n_private, K, metric, K_out)
    info = {}
    table, d0 = perfect_privacy_table(p_ac, dist, info=info)
    _, d_lp = perfect_privacy_lp(p_ac, dist)
    assert info["formulation"].startswith("transport") == (n_private == 2)
    assert abs(d0 - d_lp) <= 1e-9 * d_lp
    assert info["lower_bound"] <= d_lp * (1 + 1e-9) and info["upper_bound"] >= d_lp * (1 - 1e-9)
    assert info["upper_bound"] - info["lower_bound"] <= 1e-9 * d0
    assert np.allclose(table.sum(axis=1), 1.0) and (table >= 0).all()
    assert abs(p_ac.sum(axis=0) @ (table * dist).sum(axis=1) - d0) <= 1e-9 * d0
    assert leakage_bits(p_ac, table) < 1e-9


def test_the_transport_alone_certifies_a_metric_whose_outputs_are_the_inputs():
    p_ac, dist = _metric_instance(np.random.default_rng(3), 2, 60, "l2")
    info = {}
    _, d0 = perfect_privacy_table(p_ac, dist, info=info)
    assert info["formulation"] == "transport"
    assert d0 == pytest.approx(perfect_privacy_lp(p_ac, dist)[1], rel=1e-9)


def test_a_binary_attribute_with_forbidden_pairs_takes_the_hub_program():
    p_ac, dist = _metric_instance(np.random.default_rng(4), 2, 30, "l2")
    dist[0, 5] = np.inf
    info = {}
    table, d0 = perfect_privacy_table(p_ac, dist, info=info)
    assert info["formulation"] == "hub" and table[0, 5] == 0.0
    assert d0 == pytest.approx(perfect_privacy_lp(p_ac, dist)[1], rel=1e-9)


def test_solving_prints_nothing_to_stdout():
    # HiGHS prints its banner on a model's first use unless output_flag is off by then; it does
    # so once per process, hence a fresh interpreter.
    import subprocess
    import sys
    code = ("import numpy as np\n"
            "from privmap.offline.solvers import perfect_privacy_table\n"
            "rng = np.random.default_rng(0)\n"
            "for n_private in (2, 3):\n"
            "    p = rng.random((n_private, 20)); x = rng.normal(size=(20, 2))\n"
            "    perfect_privacy_table(p / p.sum(), np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1)))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == ""


def test_a_binary_attribute_independent_of_the_cluster_needs_no_transport():
    # p(c|a1) = p(c|a0): no row sends or receives, every row keeps its cheapest output.
    p_ac, dist = _metric_instance(np.random.default_rng(5), 2, 20, "l1")
    p_ac = np.vstack([p_ac[0], p_ac[0]]) / (2 * p_ac[0].sum())
    info = {}
    _, d0 = perfect_privacy_table(p_ac, dist, info=info)
    assert info["formulation"] == "hub"
    assert d0 == pytest.approx(p_ac.sum(axis=0) @ dist.min(axis=1), rel=1e-12)


def test_coefficients_highs_drops_as_negligible_do_not_fail_the_master():
    """A fold of the missing-answer test data (8 clusters of 240 rows): some posterior differences
    are rounding noise of 1e-17, which HiGHS drops from added columns with a kWarning status; the
    master must go on (it once raised 'HiGHS refused 28 columns') and still certify the dense LP."""
    counts = np.array([[23, 8, 31, 6, 15, 21, 4, 16], [5, 15, 29, 26, 11, 7, 9, 14]], dtype=float)
    squared = np.array([[0, 9, 5, 9, 4, 2, 11, 9], [9, 0, 6, 12, 9, 5, 6, 10], [5, 6, 0, 2, 1, 3, 2, 8],
                        [9, 12, 2, 0, 1, 5, 2, 6], [4, 9, 1, 1, 0, 2, 3, 5], [2, 5, 3, 5, 2, 0, 5, 3],
                        [11, 6, 2, 2, 3, 5, 0, 6], [9, 10, 8, 6, 5, 3, 6, 0]], dtype=float)
    p_ac, dist = counts / 240, np.sqrt(squared)
    table, d0 = perfect_privacy_table(p_ac, dist)
    _, d_lp = perfect_privacy_lp(p_ac, dist)
    assert abs(d0 - d_lp) <= 1e-9 * d_lp
    assert leakage_bits(p_ac, table) < 1e-9


@pytest.mark.parametrize("metric", ["l2", "squared-l2", "l1"])
def test_endpoint_pair_costs_equal_the_candidate_hub_reference(metric):
    # The fast path (hub[c] = c: the two endpoints and the constant output, no fancy indexing)
    # against the reference form over the same three candidate hubs.
    from privmap.offline.solvers.perfect import _transport
    p_ac, dist = _metric_instance(np.random.default_rng(7), 2, 50, metric)
    p_c, delta_a = _perfect._coefficients(p_ac)
    w = delta_a[:, 0]
    sup, dem = np.flatnonzero(w > 0), np.flatnonzero(w < 0)
    unit = np.where(w != 0, p_c / np.where(w != 0, np.abs(w), 1.0), 0.0)
    hub = _transport._cheapest_outputs(dist)
    assert (hub == np.arange(50)).all()
    j_const = int(np.argmin(p_c @ dist))
    fast = _transport._endpoint_pair_costs(dist, unit, sup, dem, j_const)
    reference = _transport._candidate_pair_costs(dist, unit, sup, dem, hub, j_const)
    assert np.allclose(fast, reference, rtol=1e-14, atol=0)
    s, t = np.meshgrid(sup, dem, indexing="ij")
    via = _transport._best_hubs(dist, unit, s.ravel(), t.ravel(), hub, j_const)
    at_via = unit[s.ravel()] * dist[s.ravel(), via] + unit[t.ravel()] * dist[t.ravel(), via]
    assert np.allclose(at_via, fast.ravel(), rtol=1e-14, atol=0)


def _no_start(cost, supply, demand):
    return np.empty(0, np.int64), np.empty(0, np.int64)


def _few_iterations(cost, supply, demand):
    import warnings

    import ot
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.nonzero(ot.emd(supply, demand, cost, numItermax=5) > 0)


@pytest.mark.parametrize("start", ["network simplex", "network simplex stopped early", "none"])
def test_the_transport_certifies_the_dense_lp_whatever_its_first_master(start, monkeypatch):
    # The network simplex's vertex only starts the column generation: stopped after five
    # iterations, or absent, the same certified Delta0.
    from privmap.offline.solvers.perfect import _transport
    if start != "network simplex":
        monkeypatch.setattr(_transport, "_network_simplex_pairs",
                            _no_start if start == "none" else _few_iterations)
    p_ac, dist = _metric_instance(np.random.default_rng(8), 2, 45, "l2")
    info = {}
    _, d0 = perfect_privacy_table(p_ac, dist, info=info)
    assert info["formulation"] == "transport"
    assert d0 == pytest.approx(perfect_privacy_lp(p_ac, dist)[1], rel=1e-9)
    assert info["upper_bound"] - info["lower_bound"] <= 1e-9 * d0


def _build_shaped_instance(rng, K, n=4000):
    """An instance shaped like a real Adult build's: integer rows on raw scales (age, years of
    education, a capital gain that is mostly 0 and sometimes tens of thousands, a rarer capital
    loss, weekly hours), K of them as representatives, each row counted at its nearest one by
    class; 'l2' distances between the representatives (zero diagonal, far-apart optimal pairs)."""
    rows = np.column_stack([rng.integers(17, 91, n), rng.integers(1, 17, n),
                            np.where(rng.random(n) < 0.1, rng.integers(100, 100_000, n), 0),
                            np.where(rng.random(n) < 0.05, rng.integers(100, 4_400, n), 0),
                            rng.integers(1, 100, n)]).astype(float)
    male = rng.random(n) < 0.35 + 0.006 * rows[:, 4]          # the private class leans on hours
    centres = rows[rng.choice(n, K, replace=False)]
    nearest = ((rows[:, None] - centres[None]) ** 2).sum(-1).argmin(axis=1)
    p_ac = np.stack([np.bincount(nearest[~male], minlength=K),
                     np.bincount(nearest[male], minlength=K)]).astype(float) / n
    dist = np.sqrt(((centres[:, None] - centres[None]) ** 2).sum(-1))
    return p_ac, dist


@pytest.mark.parametrize("keep, prune_rounds", [(3, 400), (1, 400), (1, 2), (3, 0)])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_transport_certifies_the_dense_lp_on_a_build_shaped_instance(
        seed, keep, prune_rounds, monkeypatch):
    # Pairs dropped from the master (keep = 1 drops the most), dropping stopped early, or never:
    # the same Delta0 as the dense LP, certified by the exact lower bound.
    from privmap.offline.solvers.perfect import _transport
    monkeypatch.setattr(_transport, "_KEEP", keep)
    monkeypatch.setattr(_transport, "_PRUNE_ROUNDS", prune_rounds)
    p_ac, dist = _build_shaped_instance(np.random.default_rng(seed), 120)
    info = {}
    table, d0 = perfect_privacy_table(p_ac, dist, info=info)
    _, d_lp = perfect_privacy_lp(p_ac, dist)
    assert info["formulation"] == "transport"
    assert abs(d0 - d_lp) <= 1e-9 * d_lp
    assert info["lower_bound"] <= d_lp * (1 + 1e-9)
    assert info["upper_bound"] - info["lower_bound"] <= 1e-9 * d0
    assert abs(p_ac.sum(axis=0) @ (table * dist).sum(axis=1) - d0) <= 1e-9 * d0
    assert leakage_bits(p_ac, table) < 1e-9


class _CountingHighs:
    """A HiGHS model that counts the master pairs :func:`_transport._transport` drops."""

    def __init__(self, highs):
        self._highs, self.dropped = highs, 0

    def deleteCols(self, n, indices):
        self.dropped += n
        return self._highs.deleteCols(n, indices)

    def __getattr__(self, name):
        return getattr(self._highs, name)


def test_the_transport_drops_master_pairs_and_still_reaches_the_dense_transport_optimum():
    from scipy.optimize import linprog

    from privmap.offline.solvers.perfect import _transport
    rng = np.random.default_rng(5)
    p_ac, dist = _build_shaped_instance(rng, 160)
    p_c, delta_a = _perfect._coefficients(p_ac)
    w = delta_a[:, 0]
    sup, dem = np.flatnonzero(w > 0), np.flatnonzero(w < 0)
    unit = np.where(w != 0, p_c / np.where(w != 0, np.abs(w), 1.0), 0.0)
    cost = _transport._endpoint_pair_costs(dist, unit, sup, dem, int(np.argmin(p_c @ dist)))
    models = []

    def new_highs():
        models.append(_CountingHighs(_perfect._new_highs()))
        return models[-1]

    flow, pi_s, rounds, pairs = _transport._transport(cost, w[sup], -w[dem], new_highs)
    n_s, n_t = cost.shape
    A = np.vstack([np.kron(np.eye(n_s), np.ones(n_t)), np.kron(np.ones(n_s), np.eye(n_t))])
    dense = linprog(cost.ravel(), A_eq=A, b_eq=np.concatenate([w[sup], -w[dem]]), method="highs")
    assert models[0].dropped > 0 and pairs > np.count_nonzero(flow)
    assert np.allclose(flow.sum(axis=1), w[sup], rtol=0, atol=1e-12)
    assert np.allclose(flow.sum(axis=0), -w[dem], rtol=0, atol=1e-12)
    assert abs((flow * cost).sum() - dense.fun) <= 1e-9 * dense.fun
    # the potentials with their c-transform are a feasible dual reaching the same value
    pi_t = (cost - pi_s[:, None]).min(axis=0)
    assert w[sup] @ pi_s + (-w[dem]) @ pi_t >= dense.fun * (1 - 1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_network_simplex_vertex_leaves_the_transport_few_rounds(seed, monkeypatch):
    # On a build-shaped instance, whose optimal pairs lie far apart, the column generation from
    # the north-west corner alone needs many rounds; from the network simplex's vertex, a few.
    from privmap.offline.solvers.perfect import _transport
    p_ac, dist = _build_shaped_instance(np.random.default_rng(seed), 300)
    started, cold = {}, {}
    _, d0 = perfect_privacy_table(p_ac, dist, info=started)
    monkeypatch.setattr(_transport, "_network_simplex_pairs", _no_start)
    _, d0_cold = perfect_privacy_table(p_ac, dist, info=cold)
    assert started["formulation"] == cold["formulation"] == "transport"
    assert abs(d0 - d0_cold) <= 1e-9 * d0
    assert started["upper_bound"] - started["lower_bound"] <= 1e-9 * d0
    assert started["rounds"] <= 5 and 2 * started["rounds"] < cold["rounds"], (started, cold)


def _many_class_instance(K, classes, seed):
    """Rows at integer points of a plane (outputs = inputs, l2), ``classes`` classes of falling mass."""
    rng = np.random.default_rng(seed)
    points = rng.integers(0, 12, size=(K, 2)).astype(float)
    dist = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    p_ac = rng.random((classes, K)) ** 2 * np.geomspace(1.0, 0.02, classes)[:, None]
    return p_ac / p_ac.sum(), dist


def _certified_and_equal_to_the_dense_lp(p_ac, dist, table, d0, info):
    _, d_lp = perfect_privacy_lp(p_ac, dist)
    assert abs(d0 - d_lp) <= 1e-9 * d_lp
    assert info["upper_bound"] - info["lower_bound"] <= 1e-9 * d0
    assert np.allclose(table.sum(axis=1), 1.0) and (table >= 0).all()
    assert leakage_bits(p_ac, table) < 1e-9


@pytest.mark.parametrize("seed", [0, 1])
def test_many_classes_with_forbidden_pairs_seed_the_master_with_clarabel_and_certify_the_dense_lp(seed):
    p_ac, dist = _many_class_instance(48, _perfect.CONIC_SEED_CLASSES, seed)
    dist[3, 5] = np.inf                                     # the primal-dual interior point takes finite d only
    info = {}
    table, d0 = perfect_privacy_table(p_ac, dist, info=info)
    assert info["seed"] == "clarabel" and info["seeded"] > 48   # more than one pair a row
    _certified_and_equal_to_the_dense_lp(p_ac, dist, table, d0, info)


def test_a_failed_clarabel_leaves_the_master_unseeded_and_still_certified(monkeypatch):
    import clarabel

    def failing(*args, **kwargs):
        raise ValueError("clarabel failed")

    monkeypatch.setattr(clarabel, "DefaultSolver", failing)
    p_ac, dist = _many_class_instance(48, _perfect.CONIC_SEED_CLASSES, 0)
    dist[3, 5] = np.inf
    info = {}
    table, d0 = perfect_privacy_table(p_ac, dist, info=info)
    assert info["seeded"] == 0
    _certified_and_equal_to_the_dense_lp(p_ac, dist, table, d0, info)


@pytest.mark.parametrize("classes, seed", [(_perfect.INTERIOR_SEED_CLASSES - 1, None),
                                           (_perfect.INTERIOR_SEED_CLASSES, "primal-dual"),
                                           (7, "primal-dual"),
                                           (_perfect.CONIC_SEED_CLASSES + 2, "primal-dual")])
def test_from_three_classes_the_primal_dual_point_seeds_the_master_and_it_certifies_in_one_round(classes, seed):
    p_ac, dist = _many_class_instance(48, classes, 1)
    info = {}
    table, d0 = perfect_privacy_table(p_ac, dist, info=info)
    assert info.get("seed") == seed
    if seed is not None:
        # its support and its duals' bound: the first master is the optimum, and certified
        assert info["seeded"] >= 48 and info["rounds"] == 1
    _certified_and_equal_to_the_dense_lp(p_ac, dist, table, d0, info)


def test_the_primal_dual_point_certifies_delta0_itself_from_both_sides():
    from privmap.offline.solvers.perfect._interior import interior_point
    from privmap.offline.solvers.perfect._linear_program import _coefficients, _reduced, _row_minima

    p_ac, dist = _many_class_instance(64, 9, 2)
    p_c, delta_a = _coefficients(p_ac)
    point = interior_point(p_c, delta_a, dist, rel_tol=1e-9, bound=lambda v: float(
        _row_minima(dist, _reduced(p_c, delta_a, dist, v))[0].sum()))
    _, d_lp = perfect_privacy_lp(p_ac, dist)
    assert point.certified and point.steps < 60
    assert point.lower <= d_lp * (1 + 1e-12) and point.upper >= d_lp * (1 - 1e-12)
    assert point.upper - point.lower <= 1e-9 * d_lp
    assert (point.table > 0).all() and np.allclose(point.table.sum(axis=1), 1.0, atol=1e-10)
    assert leakage_bits(p_ac, point.table) < 1e-12
    assert np.all(point.duals[:, -1] == 0.0)                # the last output's balances are implied


def test_a_program_above_the_interior_point_s_size_or_with_forbidden_pairs_is_not_seeded_by_it(monkeypatch):
    classes = _perfect.INTERIOR_SEED_CLASSES
    p_ac, dist = _many_class_instance(48, classes, 0)
    monkeypatch.setattr(_perfect, "INTERIOR_SEED_ENTRIES", 48 * 48 * classes - 1)
    info = {}
    perfect_privacy_table(p_ac, dist, info=info)
    assert "seeded" not in info
    monkeypatch.setattr(_perfect, "INTERIOR_SEED_ENTRIES", 48 * 48 * 5)
    monkeypatch.setattr(_perfect, "FEW_CLASSES_SEED_PAIRS", 48 * 48 - 1)
    for few, seeded in [(3, False), (4, False), (5, True)]:     # the pairs' limit holds below five classes
        info = {}
        perfect_privacy_table(*_many_class_instance(48, few, 0), info=info)
        assert ("seeded" in info) == seeded
    monkeypatch.setattr(_perfect, "FEW_CLASSES_SEED_PAIRS", 48 * 48)
    dist[3, 5] = np.inf
    info = {}
    table, d0 = perfect_privacy_table(p_ac, dist, info=info)
    assert "seeded" not in info
    _certified_and_equal_to_the_dense_lp(p_ac, dist, table, d0, info)


@pytest.mark.parametrize("breaks_at", [1, 6])
def test_an_interior_point_that_breaks_down_leaves_the_master_seeded_by_the_point_it_kept_and_still_certified(
        breaks_at, monkeypatch):
    from privmap.offline.solvers.perfect import _interior

    step, calls = _interior._mehrotra_step, []

    def breaks(*args, **kwargs):
        calls.append(1)
        if len(calls) >= breaks_at:
            raise _interior._Breakdown
        return step(*args, **kwargs)

    monkeypatch.setattr(_interior, "_mehrotra_step", breaks)
    p_ac, dist = _many_class_instance(48, 7, 0)
    info = {}
    table, d0 = perfect_privacy_table(p_ac, dist, info=info)
    assert info["seed"] == "primal-dual"
    assert (info["seeded"] == 0) == (breaks_at == 1)       # a point kept before the breakdown seeds
    _certified_and_equal_to_the_dense_lp(p_ac, dist, table, d0, info)


def test_a_path_carried_off_the_constraints_keeps_its_last_feasible_table_and_its_best_bound(monkeypatch):
    from privmap.offline.solvers import _row_schur
    from privmap.offline.solvers.perfect import _interior
    from privmap.offline.solvers.perfect._linear_program import _coefficients, _reduced, _row_minima

    step, calls = _interior._mehrotra_step, []

    def drifts(*args, **kwargs):
        q, u, w, z = step(*args, **kwargs)
        calls.append(q.copy())
        if len(calls) >= 8:                                  # round-off carries q off a balance
            q = q.copy()
            q[0, 0] += 1e-9 * len(calls) ** 4
        return q, u, w, z

    monkeypatch.setattr(_interior, "_mehrotra_step", drifts)
    # the drift meets the float64 path: float32 first steps move the iterate it meets, and how
    # long the sabotaged path runs with it (86 steps against 35); they have their own tests
    monkeypatch.setattr(_row_schur, "SINGLE_CORRECTION", -1.0)
    p_ac, dist = _many_class_instance(48, 7, 0)
    p_c, delta_a = _coefficients(p_ac)
    point = _interior.interior_point(p_c, delta_a, dist, rel_tol=1e-9, bound=lambda v: float(
        _row_minima(dist, _reduced(p_c, delta_a, dist, v))[0].sum()))
    assert not point.certified and len(calls) < 60           # it stopped once the complementarity
    assert any(np.array_equal(point.table, q) for q in calls[:7])   # reached round-off; the table it
    assert _interior._violation(delta_a, point.table) <= 1e-10       # kept is from before the drift,
    _, d_lp = perfect_privacy_lp(p_ac, dist)
    assert d_lp * (1 - 1e-9) <= point.lower <= d_lp * (1 + 1e-12)    # and the duals went on to Delta0
    info = {}
    monkeypatch.setattr(_interior, "_mehrotra_step", drifts)
    calls.clear()
    table, d0 = perfect_privacy_table(p_ac, dist, info=info)
    assert info["seed"] == "primal-dual" and info["seeded"] > 0
    _certified_and_equal_to_the_dense_lp(p_ac, dist, table, d0, info)


def test_progress_climbs_through_the_interior_point_and_the_rounds_to_one_and_changes_nothing():
    p_ac, dist = _many_class_instance(48, 7, 3)
    seen, info = [], {}
    table, d0 = perfect_privacy_table(p_ac, dist, info=info, progress=seen.append)
    assert info["seed"] == "primal-dual"
    assert seen == sorted(seen) and 0.0 <= seen[0] and seen[-1] == 1.0
    steps = [f for f in seen if 0.0 < f < _perfect._SEEDED_SHARE]     # the interior point's steps
    assert len(set(steps)) >= 10
    quiet_table, quiet_d0 = perfect_privacy_table(p_ac, dist)
    assert quiet_d0 == d0 and np.array_equal(quiet_table, table)


def test_progress_of_rounds_without_an_interior_point_ends_at_one():
    p_ac, dist = _metric_instance(np.random.default_rng(4), 2, 30, "l2")
    dist[0, 5] = np.inf                                            # the hub program's rounds
    seen, info = [], {}
    perfect_privacy_table(p_ac, dist, info=info, progress=seen.append)
    assert info["formulation"] == "hub" and "seed" not in info
    assert len(seen) >= 2 and seen == sorted(seen) and seen[-1] == 1.0
