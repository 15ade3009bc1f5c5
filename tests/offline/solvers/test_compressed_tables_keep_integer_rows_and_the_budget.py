"""Compressed tables: exact integer rows, metrics from the integers, budget kept."""
import numpy as np
import pytest

from privmap.offline._information import expected_distortion, leakage_bits
from privmap.offline.solvers import compress, solve_cvxpy


@pytest.fixture(scope="module")
def solved():
    rng = np.random.default_rng(7)
    points = rng.integers(0, 6, size=(40, 5)).astype(float)
    dist = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    p_ac = rng.random((2, 40)) * np.array([[1.0], [0.6]]) ** np.arange(40) ** 0
    p_ac[1] *= np.linspace(0.2, 2.0, 40)
    p_ac /= p_ac.sum()
    delta = 1.2
    return p_ac, dist, delta, solve_cvxpy(p_ac, dist, delta)


@pytest.mark.parametrize("bits", [4, 8, 16, 32])
def test_rows_are_positive_integers_summing_to_two_to_the_bits(solved, bits):
    p_ac, dist, delta, res = solved
    table = compress(res.table, p_ac, dist, delta, bits=bits)
    w = table.weights
    assert np.all(w.data > 0) and w.data.dtype.kind == "i"
    assert np.all(np.asarray(w.sum(axis=1)).ravel() == 1 << bits)
    index, weight = table.rows()
    assert all(ix == sorted(ix) and sum(wt) == 1 << bits for ix, wt in zip(index, weight))


@pytest.mark.parametrize("bits", [4, 8, 16])
def test_budget_holds_after_rounding(solved, bits):
    p_ac, dist, delta, res = solved
    assert compress(res.table, p_ac, dist, delta, bits=bits).distortion <= delta + 1e-12


def test_rounding_that_overshoots_the_budget_is_repaired():
    # With B = 1, q = (0.7, 0.3) rounds to (1/2, 1/2): distortion 0.5 > delta = 0.3.
    p_ac = np.full((2, 2), 0.25)
    dist = np.array([[0.0, 1.0], [1.0, 0.0]])
    table = compress(np.array([[0.7, 0.3], [0.3, 0.7]]), p_ac, dist, 0.3, bits=1)
    assert table.repaired_units > 0
    assert table.distortion <= 0.3


def test_declared_metrics_describe_the_integer_table(solved):
    p_ac, dist, delta, res = solved
    table = compress(res.table, p_ac, dist, delta, bits=8)
    q = table.weights.toarray() / 256.0
    assert table.leakage_bits == pytest.approx(leakage_bits(p_ac, q), abs=1e-12)
    assert table.distortion == pytest.approx(expected_distortion(p_ac.sum(axis=0), q, dist), abs=1e-12)


@pytest.mark.parametrize("bits, tolerance", [(8, 1e-3), (16, 1e-5)])
def test_leakage_of_the_compressed_table_is_close_to_the_solved_one(solved, bits, tolerance):
    p_ac, dist, delta, res = solved
    assert abs(compress(res.table, p_ac, dist, delta, bits=bits).leakage_bits - res.leakage_bits) < tolerance


def test_forbidden_entries_never_get_weight():
    p_ac = np.array([[0.3, 0.2], [0.1, 0.4]])
    dist = np.array([[0.0, np.inf], [1.0, 0.0]])
    table = np.array([[0.9, 0.1], [0.5, 0.5]])
    w = compress(table, p_ac, dist, 1.0, bits=8).weights.toarray()
    assert w[0, 1] == 0 and w[0, 0] == 256
