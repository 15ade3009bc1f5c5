"""The codebook step: released rows moved to the metric's optimum, then re-solved (privacy-aware Lloyd)."""
import numpy as np
import pytest

from privmap.offline._information import expected_distortion, leakage_bits
from privmap.offline.data import joint_prior, pairwise, quantize
from privmap.offline.mechanisms.table._codebook import (
    MAX_ITERATIONS,
    RELATIVE_TOLERANCE,
    Pairs,
    conditional_distortion,
    metric_center,
    move_outputs,
    refine,
)
from privmap.offline.solvers import solve


def _ratings(n=600, d=6, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    X = np.clip(np.round(rng.normal(1.5 + 0.6 * a[:, None] * (np.arange(d) % 2), 1.0, (n, d))), 0, 3)
    return X, a


def _instance(metric, k=12, budget=0.5, seed=0):
    X, a = _ratings(seed=seed)
    qz = quantize(X, k, metric=metric, seed=seed)
    p_ac = joint_prior(a, qz.labels, 2, qz.k)
    D = conditional_distortion(X, qz.labels, qz.k, qz.centers, lambda P, Q: pairwise(P, Q, metric))
    delta = budget * float(p_ac.sum(axis=0) @ D.max(axis=1))
    table = solve(p_ac, D, delta).table
    tools = metric_center(metric, integer=np.ones(X.shape[1], bool), lo=X.min(axis=0), hi=X.max(axis=0))
    return X, qz, p_ac, table, tools


@pytest.mark.parametrize("metric", ["l2", "l1", "hamming"])
def test_moving_outputs_never_raises_any_outputs_cost_and_keeps_them_valid(metric):
    X, qz, p_ac, table, (distance, centre, project) = _instance(metric)
    weights = table[qz.labels] / X.shape[0]
    before = np.sum(weights * distance(X, qz.centers), axis=0)
    moved, rounding = move_outputs(X, weights, qz.centers, distance=distance, centre=centre, project=project)
    after = np.sum(weights * distance(X, moved), axis=0)
    assert np.all(after <= before + 1e-12)
    if metric == "l2":             # k-means centres are means; the geometric median is cheaper for l2 distance
        # (before rounding to the domain: the rounded median may coincide with the rounded mean)
        optimum = centre(X, weights, qz.centers)
        assert np.sum(weights * distance(X, optimum)) < before.sum()
    assert np.array_equal(moved, np.clip(np.round(moved), 0, 3))       # valid ratings


@pytest.mark.parametrize("metric", ["l2", "l1", "hamming"])
def test_rounding_cost_is_the_moved_outputs_cost_at_their_valid_point_less_at_their_optimum(metric):
    # outputs started at random valid points: some move, some stay (move_outputs prices the exact
    # optima of the moved ones only)
    X, qz, p_ac, table, (distance, centre, project) = _instance(metric)
    weights = table[qz.labels] / X.shape[0]
    start = np.random.default_rng(2).integers(0, 4, qz.centers.shape).astype(float)
    start[::2] = project(centre(X, weights, qz.centers))[::2]             # already at their valid optimum
    moved, rounding = move_outputs(X, weights, start, distance=distance, centre=centre, project=project)
    was_moved = np.any(moved != start, axis=1)
    assert 0 < was_moved.sum() < was_moved.size
    optimum = centre(X, weights, start)

    def cost(Y):
        return np.sum(weights * distance(X, Y), axis=0)
    assert rounding == pytest.approx(float(np.sum((cost(project(optimum)) - cost(optimum))[was_moved])),
                                     rel=1e-9, abs=1e-12)


def test_pairs_of_some_outputs_sum_per_output_as_all_pairs_do():
    # move_outputs prices the exact optima of the moved outputs only, from their own pairs
    rng = np.random.default_rng(4)
    pairs = Pairs.from_dense(rng.random((40, 9)) * (rng.random((40, 9)) < 0.5))
    values = rng.random(pairs.rows.size)
    chosen = np.arange(9) % 3 == 0
    some = pairs.of_outputs(chosen)
    full = pairs.per_output(values)
    part = some.per_output(values[chosen[pairs.outs]])
    assert np.array_equal(part[chosen], full[chosen]) and not part[~chosen].any()
    assert some.n_outputs == 9 and np.array_equal(np.unique(some.outs), np.flatnonzero(chosen))


@pytest.mark.parametrize("metric", ["l2", "l1", "hamming"])
def test_codebook_step_never_raises_leakage_or_distortion_and_terminates(metric):
    X, qz, p_ac, table, (distance, centre, project) = _instance(metric)
    step = refine(X, qz.labels, p_ac, table, qz.centers, distance=distance, centre=centre, project=project)
    assert 1 <= step.iterations <= MAX_ITERATIONS and len(step.history) == step.iterations
    leaks = [step.start_leakage_bits] + [h[0] for h in step.history]
    dists = [step.start_distortion] + [h[1] for h in step.history]
    assert all(b <= a + 1e-9 for a, b in zip(leaks, leaks[1:]))
    assert all(b <= a + 1e-12 for a, b in zip(dists, dists[1:]))
    assert step.distortion <= step.start_distortion
    # the declared figures are those of the returned table and outputs, recomputed
    assert step.leakage_bits == pytest.approx(leakage_bits(p_ac, step.table), abs=1e-12)
    D = conditional_distortion(X, qz.labels, qz.k, step.outputs, distance)
    assert step.distortion == pytest.approx(expected_distortion(p_ac.sum(axis=0), step.table, D), rel=1e-12)
    raw = np.mean(np.sum(step.table[qz.labels] * distance(X, step.outputs), axis=1))
    assert step.distortion == pytest.approx(raw, rel=1e-9)            # empirical prior: the raw-row distortion


def test_codebook_step_at_a_fixed_table_leaves_the_leakage_untouched():
    X, qz, p_ac, table, (distance, centre, project) = _instance("l2")
    step = refine(X, qz.labels, p_ac, table, qz.centers, distance=distance, centre=centre, project=project,
                  max_iterations=1, solver="fast")
    moved, _ = move_outputs(X, table[qz.labels] / X.shape[0], qz.centers, distance=distance, centre=centre,
                            project=project)
    assert np.array_equal(moved, step.outputs)
    assert leakage_bits(p_ac, table) == step.start_leakage_bits      # step A alone: same table, same bits


def test_perfect_privacy_codebook_keeps_zero_leakage_and_lowers_distortion():
    from privmap.offline.solvers import perfect_privacy_table
    X, qz, p_ac, _, (distance, centre, project) = _instance("l2")
    D = conditional_distortion(X, qz.labels, qz.k, qz.centers, distance)
    table, _ = perfect_privacy_table(p_ac, D)
    step = refine(X, qz.labels, p_ac, table, qz.centers, distance=distance, centre=centre, project=project,
                  perfect=True)
    assert step.leakage_bits < 1e-9 and step.distortion < step.start_distortion


def test_geometric_median_beats_the_mean_and_every_row_for_l2():
    X, _ = _ratings(n=200, d=3, seed=4)
    distance, centre, _ = metric_center("l2", integer=np.zeros(3, bool), lo=X.min(0), hi=X.max(0))
    w = np.ones((X.shape[0], 1))
    median = centre(X, w, X[:1])

    def cost(y):
        return float(np.sum(distance(X, y.reshape(1, -1))))

    assert cost(median) <= cost(X.mean(axis=0)) + 1e-9
    assert cost(median) <= min(cost(x) for x in X) + 1e-9


def test_weighted_median_and_mode_match_brute_force_per_column():
    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, (50, 2)).astype(float)
    w = rng.random((50, 1))
    for metric in ("l1", "hamming"):
        distance, centre, _ = metric_center(metric, integer=np.ones(2, bool), lo=X.min(0), hi=X.max(0))
        best = centre(X, w, X[:1])
        grid = np.array([(i, j) for i in range(4) for j in range(4)], float)
        costs = (w[:, 0] @ distance(X, grid))
        assert float(w[:, 0] @ distance(X, best)[:, 0]) == pytest.approx(costs.min())


@pytest.mark.parametrize("metric", ["l2", "l1", "hamming"])
def test_optima_with_missing_cells_skip_them_like_the_masked_distance(metric):
    """Rows with missing answers (NaN): each output's optimum is no worse, in the masked distance,
    than every candidate on a grid of valid points, and a column's optimum ignores the rows that
    skipped it (the optimum of the same weights on the observed cells alone)."""
    X, a = _ratings(n=200, d=3, seed=3)
    rng = np.random.default_rng(3)
    X[rng.random(X.shape) < 0.3] = np.nan
    X[np.all(np.isnan(X), axis=1), 0] = 1.0
    distance, centre, project = metric_center(metric, integer=np.zeros(3, bool), lo=np.zeros(3), hi=np.full(3, 3.0))
    W = rng.random((X.shape[0], 2))
    Y = centre(X, W, np.full((2, 3), 1.5))
    assert np.all(np.isfinite(Y))
    grid = np.array(np.meshgrid(*[np.linspace(0, 3, 13)] * 3)).reshape(3, -1).T
    costs = (W.T @ distance(X, grid))                       # (2, grid)
    best = np.einsum("ij,ij->j", W, distance(X, Y))
    assert np.all(best <= costs.min(axis=1) + 1e-3 * costs.min(axis=1) + 1e-9)
    if metric != "l2":  # separable metrics: column k's optimum uses only rows observed in column k
        for k in range(3):
            rows = ~np.isnan(X[:, k])
            alone = centre(X[rows][:, [k]], W[rows], np.full((2, 1), 1.5))
            assert np.array_equal(alone[:, 0], Y[:, k])


# ------------------------------------------------------------------ the sparse step against dense references

def _dense_reference_centre(metric):
    """The former optima on a dense (n, m) weight matrix: 40 Weiszfeld steps over all n x m
    entries, per-column median and mode over all rows (the code this step replaced)."""
    def mean(X, W, Y0):
        observed = ~np.isnan(X)
        total, sums = W.T @ observed, W.T @ np.where(observed, X, 0.0)
        return np.where(total > 0, sums / np.where(total > 0, total, 1.0), Y0)

    def l2(X, W, Y0):
        Y = mean(X, W, Y0)
        for _ in range(40):
            Y = mean(X, W / np.maximum(pairwise(X, Y, "l2"), 1e-9), Y)
        return Y

    def l1(X, W, Y0):
        Y = np.array(Y0, dtype=float)
        for k in range(X.shape[1]):
            rows = np.flatnonzero(~np.isnan(X[:, k]))
            column, weights = X[rows, k], W[rows]
            total = weights.sum(axis=0)
            order = np.argsort(column, kind="stable")
            at = np.argmax(np.cumsum(weights[order], axis=0) >= 0.5 * total[None, :], axis=0)
            Y[total > 0, k] = column[order[at[total > 0]]]
        return Y

    def hamming(X, W, Y0):
        Y = np.array(Y0, dtype=float)
        for k in range(X.shape[1]):
            rows = np.flatnonzero(~np.isnan(X[:, k]))
            values, codes = np.unique(X[rows, k], return_inverse=True)
            scores = np.zeros((values.size, W.shape[1]))
            np.add.at(scores, codes.reshape(-1), W[rows])
            has = W[rows].sum(axis=0) > 0
            Y[has, k] = values[np.argmax(scores, axis=0)[has]]
        return Y

    return {"l2": l2, "l1": l1, "hamming": hamming}[metric]


def _row_mass(qz, p_ac):
    return (p_ac.sum(axis=0) / np.bincount(qz.labels, minlength=qz.k))[qz.labels]


def test_pairs_from_a_table_are_exactly_its_nonzero_weights():
    X, qz, p_ac, table, _ = _instance("l2")
    mass = _row_mass(qz, p_ac)
    pairs = Pairs.from_table(qz.labels, table, mass)
    dense = np.zeros((X.shape[0], qz.k))
    np.add.at(dense, (pairs.rows, pairs.outs), pairs.weights)
    assert np.array_equal(dense, table[qz.labels] * mass[:, None])
    assert pairs.rows.size == np.count_nonzero(table[qz.labels])        # one pair per non-zero, no more


@pytest.mark.parametrize("metric", ["l2", "l1", "hamming"])
@pytest.mark.parametrize("missing", [False, True])
def test_sparse_optima_match_the_former_dense_optima(metric, missing):
    X, qz, p_ac, table, (distance, centre, project) = _instance(metric)
    if missing:
        X = X.copy()
        X[np.random.default_rng(1).random(X.shape) < 0.2] = np.nan
    mass = _row_mass(qz, p_ac)
    W = table[qz.labels] * mass[:, None]
    new = centre(X, Pairs.from_table(qz.labels, table, mass), qz.centers)
    old = _dense_reference_centre(metric)(X, W, qz.centers)
    if metric == "l2":       # fewer Weiszfeld steps once converged: the same cost within 1e-6
        def cost(Y):
            return np.einsum("ij,ij->j", W, distance(X, Y))
        assert np.all(cost(new) <= cost(old) * (1 + 1e-6) + 1e-12)
    else:
        assert np.array_equal(new, old)


@pytest.mark.parametrize("metric", ["l2", "l1", "hamming"])
def test_sparse_optimum_of_each_output_beats_a_brute_force_grid(metric):
    """Small data: every output's optimum over the rows its table column reaches is no worse than
    any point of a fine grid (l2) or any point of observed values (l1, hamming)."""
    X, qz, p_ac, table, (distance, centre, _) = _instance(metric, k=6, budget=0.9)
    X = X[:, :2]
    mass = _row_mass(qz, p_ac)
    pairs = Pairs.from_table(qz.labels, table, mass)
    Y = centre(X, pairs, qz.centers[:, :2])
    W = table[qz.labels] * mass[:, None]
    grid = np.array(np.meshgrid(*[np.linspace(0, 3, 61)] * 2)).reshape(2, -1).T
    grid_costs = W.T @ distance(X, grid)                        # (K_out, grid)
    costs = np.einsum("ij,ij->j", W, distance(X, Y))
    slack = 1e-3 if metric == "l2" else 1e-12
    assert np.all(costs <= grid_costs.min(axis=1) * (1 + slack) + 1e-12)


@pytest.mark.parametrize("metric", ["l2", "l1", "hamming"])
def test_codebook_step_is_no_worse_than_the_former_dense_step_within_its_tolerance(metric):
    X, qz, p_ac, table, (distance, centre, project) = _instance(metric, k=16)
    new = refine(X, qz.labels, p_ac, table, qz.centers, distance=distance, centre=centre, project=project)
    dense_centre = _dense_reference_centre(metric)
    old = refine(X, qz.labels, p_ac, table, qz.centers, distance=lambda P, Q: pairwise(P, Q, metric),
                 centre=lambda P, W, Y0: dense_centre(P, _dense(W, P.shape[0]), Y0),
                 project=project, tolerance=1e-4)
    assert new.distortion <= old.distortion * (1 + RELATIVE_TOLERANCE)
    assert new.leakage_bits <= old.leakage_bits + 1e-6


def _dense(pairs, n):
    W = np.zeros((n, pairs.n_outputs))
    np.add.at(W, (pairs.rows, pairs.outs), pairs.weights)
    return W


def test_conditional_distortion_in_blocks_equals_the_dense_means(monkeypatch):
    import privmap.offline.data._distortion as distortion
    X, qz, *_ = _instance("l1")
    dense = pairwise(X, qz.centers, "l1")
    expected = np.stack([dense[qz.labels == c].mean(axis=0) for c in range(qz.k)])
    monkeypatch.setattr(distortion, "NEAREST_BLOCK_BYTES", 8 * 6 * qz.k * 7)      # blocks of 7 rows
    got = conditional_distortion(X, qz.labels, qz.k, qz.centers, lambda P, Q: pairwise(P, Q, "l1"))
    assert np.allclose(got, expected, rtol=1e-13, atol=1e-13)


def test_the_codebook_steps_warm_started_re_solves_reach_the_cold_ones_answers(monkeypatch):
    # Each re-solve starts from the previous answer; with every warm start stripped the step must
    # end at the same outputs and, within the solver's certified tolerance, the same leakage.
    from privmap.offline.solvers import fast, solve_fast
    # An instance where step A moves the outputs by more than the tolerance, so step B re-solves,
    # and whose leakage (about 2e-3 bits) is far above the solver's tolerance: near perfect
    # privacy, warm and cold answers within tol_bits of each other can move step A differently.
    X, qz, p_ac, table, (distance, centre, project) = _instance("l2", k=20, budget=0.45)
    D = conditional_distortion(X, qz.labels, qz.k, qz.centers, distance)
    delta = float(p_ac.sum(axis=0) @ (table * D).sum(axis=1))
    start = solve_fast(p_ac, D, delta, tol_bits=1e-7)
    seen = []

    def spy(*args, warm_start=None, **kw):
        seen.append(warm_start)
        return solve_fast(*args, warm_start=warm_start, **kw)

    monkeypatch.setattr(fast, "solve_fast", spy)           # what solve() runs
    warm = refine(X, qz.labels, p_ac, start.table, qz.centers, distance=distance, centre=centre,
                  project=project, tol_bits=1e-7, warm_start=start)
    assert seen and seen[0] is start
    monkeypatch.setattr(fast, "solve_fast", lambda *a, warm_start=None, **kw: solve_fast(*a, **kw))
    cold = refine(X, qz.labels, p_ac, start.table, qz.centers, distance=distance, centre=centre,
                  project=project, tol_bits=1e-7)
    assert warm.leakage_bits == pytest.approx(cold.leakage_bits, abs=2e-7)
    assert warm.distortion == pytest.approx(cold.distortion, rel=1e-6)


def test_weiszfeld_in_small_chunks_equals_the_dense_reference_step_for_step(monkeypatch):
    # With no output stopped early the sparse steps are the dense reference's 40 steps exactly:
    # chunks of one pair, blank cells, and an output no row reaches (it keeps its start).
    from privmap.offline.mechanisms.table import _codebook
    monkeypatch.setattr(_codebook, "WEISZFELD_TOLERANCE", 0.0)
    monkeypatch.setattr(_codebook, "WEISZFELD_CHUNK_CELLS", 1)
    rng = np.random.default_rng(3)
    X = rng.normal(0.0, 2.0, (80, 5))
    X[rng.random(X.shape) < 0.2] = np.nan
    W = rng.random((80, 7)) * (rng.random((80, 7)) < 0.4)
    W[:, 4] = 0.0
    Y0 = rng.normal(0.0, 1.0, (7, 5))
    _, centre, _ = metric_center("l2", integer=np.zeros(5, bool), lo=np.full(5, -9.0), hi=np.full(5, 9.0))
    got = centre(X, Pairs.from_dense(W), Y0)
    assert np.allclose(got, _dense_reference_centre("l2")(X, W, Y0), rtol=1e-12, atol=1e-12)
    assert np.array_equal(got[4], Y0[4])


@pytest.mark.parametrize("classes", [2, 7])
def test_a_re_solve_keeps_its_warm_start_unless_another_solver_starts_a_cold_solve(classes, monkeypatch):
    # with seven private classes a cold solve starts from the interior point, which is then the
    # faster re-solve too: the warm start is set aside there, and only there
    from privmap.offline.mechanisms.table import _codebook
    from privmap.offline.solvers import fast, solve_fast
    rng = np.random.default_rng(classes)
    X = rng.integers(0, 4, (400, 4)).astype(float)
    a = rng.integers(0, classes, 400)
    qz = quantize(X, 10, metric="l2", seed=0)
    p_ac = joint_prior(a, qz.labels, classes, qz.k)
    D = conditional_distortion(X, qz.labels, qz.k, qz.centers, lambda P, Q: pairwise(P, Q, "l2"))
    delta = 0.5 * float(p_ac.sum(axis=0) @ D.max(axis=1))
    start = solve_fast(p_ac, D, delta)
    warm_starts = []

    def spy(*args, warm_start=None, **kw):
        warm_starts.append(warm_start)
        return solve_fast(*args, warm_start=warm_start, **kw)

    monkeypatch.setattr(fast, "solve_fast", spy)           # what solve() runs
    again = _codebook.resolve_at(p_ac, D, delta, perfect=False, solver="fast", tol_bits=1e-5, warm=start)
    assert again.gap_bits <= 1e-5
    if classes == 2:
        assert warm_starts == [start] and "started_from" not in again.info
    else:
        assert warm_starts == [None] and again.info["started_from"].startswith("interior-")   # the polish
