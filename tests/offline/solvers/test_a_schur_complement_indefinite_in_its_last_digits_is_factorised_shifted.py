"""The rows' Schur complement of the interior points: round-off that leaves it indefinite in its
last digits is absorbed by the least diagonal shift tried; a truly indefinite one is refused."""
import numpy as np
import pytest

from privmap.offline.solvers._row_schur import SchurBreakdown, shifted_cholesky

SHIFTS = (0.0, 1e-12, 1e-10)


def test_a_semidefinite_matrix_indefinite_in_its_last_digits_is_factorised_with_a_small_shift():
    rng = np.random.default_rng(0)
    basis = rng.standard_normal((6, 5))
    singular = basis @ basis.T                               # rank 5: semidefinite
    singular -= 1e-13 * np.trace(singular) * np.eye(6)       # and indefinite in its last digits
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(singular)
    factor, lower = shifted_cholesky(singular, SHIFTS)
    assert lower and np.all(np.isfinite(factor))
    rebuilt = np.tril(factor) @ np.tril(factor).T
    assert np.abs(rebuilt - singular).max() <= 2 * SHIFTS[-1] * np.diag(singular).max()


def test_a_positive_definite_matrix_is_factorised_unshifted_when_no_shift_comes_first():
    spd = np.array([[4.0, 1.0], [1.0, 3.0]])
    factor, _ = shifted_cholesky(spd, SHIFTS)
    assert np.allclose(np.tril(factor) @ np.tril(factor).T, spd, rtol=0, atol=1e-15)


def test_an_indefinite_matrix_is_refused():
    with pytest.raises(SchurBreakdown):
        shifted_cholesky(-np.eye(3), SHIFTS)
