"""unique_rows: numpy's distinct rows, counts and inverse, exactly, by a lexicographic sort."""
import numpy as np
import pytest

from privmap.offline._rows import unique_rows


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("nan", [False, True])
def test_unique_rows_equals_numpys_unique_over_rows(seed, nan):
    rng = np.random.default_rng(seed)
    values = rng.choice([-2.5, -1.0, 0.0, 1.0, 3.0, 1e300, -np.inf], size=(40, 4))
    A = values[rng.integers(0, 40, 900)]
    if nan:
        A[rng.random(A.shape) < 0.01] = np.nan
    want = np.unique(A, axis=0, return_inverse=True, return_counts=True)
    distinct, inverse, counts = unique_rows(A, return_inverse=True)
    assert np.array_equal(distinct, want[0], equal_nan=True)
    assert np.array_equal(inverse, want[1].reshape(-1)) and np.array_equal(counts, want[2])
    two = unique_rows(A)
    assert len(two) == 2 and np.array_equal(two[0], distinct, equal_nan=True) and np.array_equal(two[1], counts)
    assert np.array_equal(distinct[inverse], A, equal_nan=True)


def test_unique_rows_of_integers_and_of_one_row():
    A = np.array([[3, 1], [1, 2], [3, 1], [1, 0]])
    distinct, inverse, counts = unique_rows(A, return_inverse=True)
    assert distinct.tolist() == [[1, 0], [1, 2], [3, 1]]
    assert inverse.tolist() == [2, 1, 2, 0] and counts.tolist() == [1, 1, 2]
    assert [x.tolist() for x in unique_rows(np.array([[5.0, 6.0]]))] == [[[5.0, 6.0]], [1]]
