"""Quantization: representatives are valid domain points and psi is the device's nearest rule."""
import numpy as np
import pytest
from privmap.offline._errors import DatasetError
from privmap.offline.data._distortion import nearest, pairwise
from privmap.offline.data._quantize import quantize


@pytest.fixture
def ratings():
    rng = np.random.default_rng(3)
    return rng.integers(0, 6, size=(300, 8)).astype(float)


@pytest.mark.parametrize("metric", ["l2", "l1", "hamming"])
def test_representatives_are_integers_in_the_observed_range(ratings, metric):
    qz = quantize(ratings, 12, metric=metric, seed=1)
    assert np.all(qz.centers == np.round(qz.centers))
    assert qz.centers.min() >= 0 and qz.centers.max() <= 5
    assert len(np.unique(qz.centers, axis=0)) == qz.k


@pytest.mark.parametrize("metric", ["l2", "l1", "hamming"])
def test_labels_are_the_nearest_representative_and_r_is_the_max_distance(ratings, metric):
    qz = quantize(ratings, 10, metric=metric, seed=2)
    assert np.array_equal(qz.labels, nearest(ratings, qz.centers, metric))
    dist = pairwise(ratings, qz.centers, metric)
    assert qz.r == pytest.approx(dist.min(axis=1).max())
    assert qz.mean_distortion == pytest.approx(dist.min(axis=1).mean())


def test_same_seed_gives_same_quantization(ratings):
    a, b = quantize(ratings, 9, seed=5), quantize(ratings, 9, seed=5)
    assert np.array_equal(a.centers, b.centers) and np.array_equal(a.labels, b.labels)


def test_too_many_clusters_is_a_dataset_error(ratings):
    with pytest.raises(DatasetError, match="--clusters"):
        quantize(ratings[:3], 4)


def test_nearest_breaks_ties_by_lowest_index():
    X = np.array([[1.0, 1.0]])
    Y = np.array([[0.0, 1.0], [2.0, 1.0], [1.0, 0.0]])
    for metric in ("l2", "l1", "hamming"):
        assert nearest(X, Y, metric)[0] == 0
