"""The BLAS form of the nearest-representative rule answers exactly as the device's rule."""
import numpy as np
import pytest

from privmap.offline.data._blas_nearest import assigned_distance_l2, nearest_l2
from privmap.offline.data._distortion import nearest, pairwise


@pytest.mark.parametrize("centers", ["float", "integer-with-ties", "copies-of-rows"])
def test_nearest_l2_equals_device_rule(centers):
    rng = np.random.default_rng(11)
    X = rng.integers(1, 6, size=(5000, 20)).astype(float)
    Y = {"float": rng.normal(3, 1, size=(300, 20)),
         "integer-with-ties": rng.integers(1, 6, size=(300, 20)).astype(float),
         "copies-of-rows": np.concatenate([X[:50], X[:50]])}[centers]
    assert np.array_equal(nearest_l2(X, Y), nearest(X, Y, "l2"))


def test_nearest_l2_breaks_exact_ties_to_the_lowest_index():
    X = np.array([[0.0, 0.0], [1.0, 1.0]])
    Y = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])  # all at distance 1 from the origin
    assert nearest_l2(X, Y).tolist() == nearest(X, Y, "l2").tolist() == [0, 0]


def test_assigned_distance_is_bitwise_the_pairwise_entry():
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(400, 7)), rng.normal(size=(30, 7))
    labels = rng.integers(0, 30, 400)
    expected = pairwise(X, Y, "l2")[np.arange(400), labels]
    assert np.array_equal(assigned_distance_l2(X, Y, labels), expected)


@pytest.mark.parametrize("metric", ["l2", "l1"])
@pytest.mark.parametrize("blanks", [False, True])
def test_the_package_nearest_answers_as_the_running_rule_on_real_points_and_blanks(metric, blanks):
    from privmap.offline.data import nearest as package_nearest
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 11))
    X[:40] = X[40:80]                                   # copies of rows: exact ties between centres below
    Y = np.concatenate([rng.normal(size=(200, 11)), X[:40], X[:40]])
    if blanks:
        X[rng.random(X.shape) < 0.1] = np.nan
    assert np.array_equal(package_nearest(X, Y, metric), nearest(X, Y, metric))
