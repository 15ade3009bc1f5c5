"""The rows' Schur complement formed by strips up to the diagonal and mirrored is the whole
product of its definition, exactly symmetric, whatever the rows' count against the strips'."""
import numpy as np
import pytest

from privmap.offline.solvers._row_schur import row_schur


@pytest.mark.parametrize("rows", [1, 127, 128, 300])
def test_the_strips_give_the_whole_product_exactly_symmetric(rows):
    rng = np.random.default_rng(rows)
    a, outputs = 4, 7
    U = rng.random((rows, a))
    weights = rng.random((rows, outputs)) + 0.1
    half = rng.standard_normal((outputs, a, a))
    T = half + half.transpose(0, 2, 1)
    whole = np.diag(weights.sum(axis=1))
    for j in range(outputs):
        Y = weights[:, j, None] * U
        whole -= Y @ T[j] @ Y.T
    S = row_schur(U, weights, T)
    assert np.array_equal(S, S.T)
    assert np.abs(S - whole).max() <= 1e-12 * np.abs(whole).max()
