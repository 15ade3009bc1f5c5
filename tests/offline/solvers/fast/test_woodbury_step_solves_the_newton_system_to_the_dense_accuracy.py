"""The Woodbury solve of the fast solver's Newton systems with more than two classes
(src/privmap/offline/solvers/fast/_newton.py: `woodbury`, `exact_product`): the product it refines
against is N from its definition, its solves reach the dense Cholesky's accuracy where rows sit on
one candidate, and a path taking every step by it certifies the optimum the dense path certifies."""
import numpy as np
import pytest

from privmap.offline.solvers import solve_fast
from privmap.offline.solvers.fast import _newton, _path, _pricing, _state

TOL = 1e-5


def _state_and_point(random_instance, budget, n_private, tau, K=15):
    """A state with every pair a candidate and a free multiplier, evaluated at random logits,
    with the pieces `factor` passes on: (state, ev, s, wk, V, floor)."""
    p_ac, dist = random_instance(7, K, n_private)
    state = _state.set_up(p_ac, dist, budget(p_ac, dist, 0.2), TOL, 100)
    state.tight, state.budget = False, True
    state.jmin = np.argmin(dist, axis=1)
    _pricing.set_candidates(state, np.repeat(np.arange(K), K), np.tile(np.arange(K), K))
    ev = _newton.evaluate(state, np.random.default_rng(1).normal(size=(n_private, K)), 0.3, tau)
    P, _, _ = _newton.primal(state, ev)
    s = P.sum(axis=0)
    A1 = n_private - 1
    wk = state.c_pc * ev["q"] / tau
    V = state.c_alpha[:A1] - ev["r"][:A1, state.cj]
    return state, ev, s, wk, V, 1e-14 * float(s.max())


def _dense(state, ev, s, wk, V, floor):
    """N + floor I, unscaled, from `product_matrix` (every pair; its diagonal blocks exact: 1 - q_k)."""
    lower, dscale = _newton.product_matrix(state, ev, s, wk, V, floor)
    lower = np.tril(lower)
    return (lower + np.tril(lower, -1).T) / np.outer(dscale, dscale)


@pytest.mark.parametrize("n_private", [3, 5])
@pytest.mark.parametrize("tau", [0.05, 1e-3, 1e-5])
def test_exact_product_equals_the_assembled_hessian(n_private, tau, random_instance, budget):
    """The product the Woodbury solve is refined against is N + floor I times v, to round-off
    of N's own entries (each element within 1e-12 of |N| |v|): at split rows and at small tau,
    where rows sit on one candidate and the codebook-and-candidate blocks less the rank-R product
    cancel (that product's own error there is about 1e-12 of N's largest entry)."""
    state, ev, s, wk, V, floor = _state_and_point(random_instance, budget, n_private, tau)
    N = _dense(state, ev, s, wk, V, floor)
    times = _newton.exact_product(state, ev, s, wk, V, floor)
    rng = np.random.default_rng(3)
    for _ in range(3):
        v = rng.normal(size=N.shape[0])
        assert (np.abs(times(v) - N @ v) <= 1e-12 * (np.abs(N) @ np.abs(v))).all()


@pytest.mark.parametrize("gram", ["dense", "sparse"])
@pytest.mark.parametrize("n_private", [3, 5])
@pytest.mark.parametrize("tau", [0.05, 1e-3, 1e-5])
def test_woodbury_step_solves_the_newton_system_to_the_dense_solves_accuracy(n_private, tau, gram, random_instance,
                                                                             budget, monkeypatch):
    """N x = b solved by the Woodbury identity with refinement leaves a residual no larger than
    (a small multiple of) the dense Cholesky solve's, and the two solutions agree, down to a tau
    where the rank-R product cancels most of the blocks it is subtracted from; with its R x R
    Gram matrix Y Y^T from dense BLAS (small R) or from the sparse product alike."""
    monkeypatch.setattr(_newton, "_DENSE_GRAM", 1e30 if gram == "dense" else 0.0)
    state, ev, s, wk, V, floor = _state_and_point(random_instance, budget, n_private, tau)
    N = _dense(state, ev, s, wk, V, floor)
    solve = _newton.woodbury(state, ev, s, wk, V, floor)
    rng = np.random.default_rng(4)
    for _ in range(3):
        b = rng.normal(size=N.shape[0])
        dense = np.linalg.solve(N, b)
        x = solve(b)
        residual = np.linalg.norm(b - N @ x)
        assert residual <= max(10 * np.linalg.norm(b - N @ dense), 1e-12 * np.linalg.norm(b))
        assert np.linalg.norm(x - dense) <= 1e-8 * np.linalg.norm(dense)


@pytest.mark.parametrize("seed, K, n_private, frac", [(2, 12, 3, 0.1), (4, 16, 5, 0.3), (6, 20, 3, 0.2)])
def test_woodbury_path_certifies_the_optimum_the_dense_path_certifies(seed, K, n_private, frac, random_instance,
                                                                       budget):
    """With more than two classes every Newton system above Settings.dense_max unknowns is solved
    by the Woodbury identity, far up the path too; forced on small instances it must certify the
    optimum that dense Cholesky of the assembled N certifies."""
    p_ac, dist = random_instance(seed, K, n_private)
    delta = budget(p_ac, dist, frac)
    dense = solve_fast(p_ac, dist, delta)
    state = _state.set_up(p_ac, dist, delta, TOL, 2000, settings=_state.Settings(dense_max=0))
    woodbury = _path.run(state)
    assert _newton.newton_system(state, state.scale) == "woodbury" and _newton.uses_woodbury(state)
    assert woodbury.gap_bits <= TOL
    assert abs(woodbury.leakage_bits - dense.leakage_bits) <= TOL
    assert woodbury.lower_bound_bits <= dense.leakage_bits + 1e-12
    assert woodbury.distortion <= delta


def test_binary_attributes_never_take_the_woodbury_path(random_instance, budget):
    """Two classes keep their solves (and their bit-for-bit answers): the Woodbury path is for more."""
    p_ac, dist = random_instance(3, 20, 2)
    state = _state.set_up(p_ac, dist, budget(p_ac, dist, 0.3), TOL, 2000, settings=_state.Settings(dense_max=0))
    _path.run(state)
    assert not _newton.uses_woodbury(state)
    assert {_newton.newton_system(state, tau) for tau in (state.scale, 1e-9 * state.scale)} == {"block-jacobi",
                                                                                                "sparse-lu"}


def test_the_heaviest_candidate_of_each_row_is_the_first_of_its_largest_weights():
    """`exact_product` sums a row's cross terms around its heaviest candidate: per row the position
    of its largest weight, the first of ties, as a stable sort by decreasing weight gives it."""
    rng = np.random.default_rng(5)
    for trial in range(200):
        lens = rng.integers(1, 7, rng.integers(1, 40))
        start = np.r_[0, np.cumsum(lens)[:-1]]
        values = rng.integers(0, 3, lens.sum()).astype(float) if trial % 2 else rng.random(lens.sum())
        order = np.lexsort((-values, np.repeat(np.arange(start.size), lens)))
        assert np.array_equal(_newton._row_argmax(values, start), order[start] - start)


def test_a_woodbury_factor_lost_to_cancellation_falls_back_to_the_dense_factor_of_n(random_instance, budget,
                                                                                   monkeypatch):
    """Where C = I - Y^T Y is not positive definite in floating point (rows on one candidate whose
    weight is nearly their output's whole block: UCI Adult, marital status, K = 256 at 0.7 x the
    fold's budget raised LinAlgError out of the build), the step is solved by the dense Cholesky of
    N instead, counted in info["woodbury_fallbacks"], and the path still certifies the optimum."""
    p_ac, dist = random_instance(4, 16, 5)
    delta = budget(p_ac, dist, 0.3)
    reference = solve_fast(p_ac, dist, delta)

    def lost(*args):
        raise np.linalg.LinAlgError("not positive definite")
    monkeypatch.setattr(_newton, "woodbury", lost)
    state = _state.set_up(p_ac, dist, delta, TOL, 2000, settings=_state.Settings(dense_max=0))
    res = _path.run(state)
    assert res.info["woodbury_fallbacks"] == res.info["newton_steps"] > 0
    assert res.gap_bits <= TOL and res.distortion <= delta
    assert abs(res.leakage_bits - reference.leakage_bits) <= TOL
