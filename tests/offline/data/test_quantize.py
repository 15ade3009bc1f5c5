"""Quantization: representatives are valid domain points and psi is the device's nearest rule."""
import numpy as np
import pytest

from privmap.offline._errors import DatasetError
from privmap.offline.data._blas_nearest import nearest_with_distance
from privmap.offline.data._distortion import (
    NEAREST_BLOCK_BYTES,
    assigned_distance,
    block_shape,
    nearest,
    pairwise,
)
from privmap.offline.data._quantize import _group_representatives, quantize


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


@pytest.mark.parametrize("metric", ["l2", "l1", "hamming"])
def test_group_representatives_are_each_groups_statistic_over_its_observed_cells(metric):
    rng = np.random.default_rng(4)
    X = rng.integers(1, 6, size=(500, 6)).astype(float)
    X[rng.random(X.shape) < 0.2] = np.nan
    X[rng.integers(0, 500, 3)] = np.nan                         # every cell of three rows blank
    groups = rng.integers(0, 40, 500) * 3                       # labels with gaps, in no order
    statistic = {"l2": np.mean, "l1": np.median,
                 "hamming": lambda v: max(np.unique(v), key=lambda x: ((v == x).sum(), -x))}[metric]
    want = []
    for g in np.unique(groups):
        column_cells = [c[~np.isnan(c)] for c in X[groups == g].T]
        want.append([statistic(c) if c.size else np.nan for c in column_cells])
    got = _group_representatives(X, groups, metric)
    assert np.array_equal(got, np.array(want), equal_nan=True)   # to the bit: whole-number sums are exact
    if metric == "l2":                                          # real values: summed in another order
        Y = rng.normal(size=(500, 6))
        assert np.allclose(_group_representatives(Y, groups, "l2"),
                           [Y[groups == g].mean(axis=0) for g in np.unique(groups)], rtol=0, atol=1e-15)


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


# ------------------------------------------------------------------ bounded-memory nearest search

def _dense_keys(X, Y, metric):
    """The former dense computation: one (n, m) matrix of rank keys, summed feature by feature."""
    acc = np.zeros((X.shape[0], Y.shape[0]))
    for i in range(X.shape[1]):
        diff = X[:, i, None] - Y[None, :, i]
        term = {"l2": diff * diff, "l1": np.abs(diff), "hamming": (diff != 0).astype(float)}[metric]
        acc += np.where(np.isnan(diff), 0.0, term)
    return acc


def _tied_data(missing: bool):
    """Small integers (many exact ties, duplicated centres) and, optionally, masked cells."""
    rng = np.random.default_rng(8)
    X = rng.integers(0, 3, size=(257, 4)).astype(float)
    Y = rng.integers(0, 3, size=(37, 4)).astype(float)
    Y[20:30] = Y[:10]                                  # exact duplicates: ties across blocks
    if missing:
        X[rng.random(X.shape) < 0.3] = np.nan
        X[0] = [np.nan, np.nan, np.nan, 1.0]
    return X, Y


@pytest.mark.parametrize("metric", ["l2", "l1", "hamming"])
@pytest.mark.parametrize("missing", [False, True])
@pytest.mark.parametrize("block_bytes", [40, 40 * 7, 40 * 100, NEAREST_BLOCK_BYTES])
def test_blocked_nearest_and_distance_equal_the_dense_computation_ties_included(metric, missing, block_bytes):
    X, Y = _tied_data(missing)
    keys = _dense_keys(X, Y, metric)
    expected = np.argmin(keys, axis=1)
    dense = np.sqrt(keys) if metric == "l2" else keys
    assert np.mean(np.sum(keys == keys.min(axis=1, keepdims=True), axis=1) > 1) > 0.2   # ties do occur
    labels, dist = nearest_with_distance(X, Y, metric, block_bytes=block_bytes)
    assert np.array_equal(labels, expected)
    assert np.array_equal(nearest(X, Y, metric, block_bytes=block_bytes), expected)
    assert np.array_equal(dist, dense[np.arange(X.shape[0]), expected])
    assert np.array_equal(pairwise(X, Y, metric, block_bytes=block_bytes), dense)
    assert np.array_equal(assigned_distance(X, Y, expected, metric), dense[np.arange(X.shape[0]), expected])


def test_blocked_nearest_on_real_valued_data_equals_the_dense_argmin():
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(500, 6)), rng.normal(size=(300, 6))
    keys = _dense_keys(X, Y, "l2")
    labels, dist = nearest_with_distance(X, Y, "l2", block_bytes=4096)
    assert np.array_equal(labels, np.argmin(keys, axis=1))
    assert np.array_equal(dist, np.sqrt(keys.min(axis=1)))


def test_block_shape_fits_the_byte_limit_and_refuses_a_non_positive_one():
    rows, columns = block_shape(10_000, 8192, 2 ** 20, 5)
    assert (rows, columns) == (3, 8192) and rows * columns * 8 * 5 <= 2 ** 20
    assert block_shape(10, 10 ** 6, 2 ** 20, 5) == (1, 2 ** 20 // 40)
    assert block_shape(3, 4, 10 ** 9) == (3, 4)
    with pytest.raises(ValueError, match="block_bytes"):
        block_shape(3, 4, 0)


@pytest.mark.parametrize("metric", ["l2", "l1"])
def test_quantize_and_the_missing_alphabet_stay_within_the_block_limit(metric, monkeypatch):
    """No (n, K) matrix: peak traced allocations stay far below n * K * 8 bytes (the former
    12.5 GiB at K = 8192 on Adult came from two such matrices)."""
    import tracemalloc

    import privmap.offline.data._distortion as distortion
    from privmap.offline.data._schema import Column
    from privmap.offline.mechanisms.table._missing import missing_alphabet
    rng = np.random.default_rng(2)
    X = rng.integers(0, 60, size=(12_000, 3)).astype(float)
    X[rng.random(X.shape) < 0.1] = np.nan
    k = 300
    monkeypatch.setattr(distortion, "NEAREST_BLOCK_BYTES", 2 ** 20)
    schema = [Column(f"x{i}", True, 0, 59, True, "", ("type", "domain")) for i in range(3)]
    tracemalloc.start()
    try:
        found = missing_alphabet(X, schema, "mask", clusters=k, metric=metric, seed=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    dense = X.shape[0] * len(found.cells) * 8
    assert len(found.cells) > 200
    assert peak < dense / 3, (peak, dense)
    keys = _dense_keys(X, found.centers, metric)
    assert np.array_equal(found.labels, np.argmin(keys, axis=1))


def test_whole_number_l2_keys_by_matrix_product_are_bitwise_the_left_to_right_sums():
    """Likert answers with blank cells take the two-product form; it must equal the device's sums
    exactly, and numbers too large for exact products must not take it."""
    from privmap.offline.data._distortion import _exact_in_blas, _rank_keys
    rng = np.random.default_rng(3)
    X = rng.integers(1, 6, size=(400, 50)).astype(float)
    X[rng.random(X.shape) < 0.1] = np.nan
    Y = rng.integers(1, 6, size=(64, 50)).astype(float)
    assert _exact_in_blas(X, Y)
    assert np.array_equal(_rank_keys(X, Y, "l2"), _dense_keys(X, Y, "l2"))
    assert not _exact_in_blas(X + 0.5, Y)
    big = np.full((2, 50), 2.0 ** 24)
    assert not _exact_in_blas(big, Y)                    # 50 x (2^24 + 5)^2 exceeds 2^52
    assert np.array_equal(_rank_keys(big, Y, "l2"), _dense_keys(big, Y, "l2"))


@pytest.mark.parametrize("whole", [True, False])
def test_pair_distances_on_fifty_columns_are_bitwise_the_left_to_right_sums(whole):
    # Whole numbers take one einsum per chunk (exact in any order); other values keep the
    # left-to-right sum, which an einsum does not reproduce on them (checked below).
    rng = np.random.default_rng(6)
    X = rng.integers(1, 6, size=(400, 50)).astype(float)
    Y = rng.integers(1, 6, size=(30, 50)).astype(float)
    if not whole:
        X, Y = X / 3.0, Y * 0.7
    X[rng.random(X.shape) < 0.1] = np.nan
    rows, outs = rng.integers(0, 400, 2000), rng.integers(0, 30, 2000)
    want = np.sqrt(_dense_keys(X, Y, "l2"))[rows, outs]
    assert np.array_equal(assigned_distance(X, Y, outs, "l2", rows=rows), want)
    diff = np.nan_to_num(X[rows] - Y[outs])
    assert np.array_equal(np.sqrt(np.einsum("ij,ij->i", diff, diff)), want) == whole


@pytest.mark.parametrize("metric", ["l2", "l1", "hamming"])
@pytest.mark.parametrize("chunk_cells", [1, 7, 1 << 16])
def test_pair_distances_in_chunks_are_bitwise_the_dense_entries(metric, chunk_cells, monkeypatch):
    import privmap.offline.data._distortion as distortion
    monkeypatch.setattr(distortion, "PAIR_CHUNK_CELLS", chunk_cells)
    X, Y = _tied_data(True)
    dense = pairwise(X, Y, metric)
    rng = np.random.default_rng(5)
    rows, outs = rng.integers(0, X.shape[0], 301), rng.integers(0, Y.shape[0], 301)
    assert np.array_equal(assigned_distance(X, Y, outs, metric, rows=rows), dense[rows, outs])


@pytest.mark.filterwarnings("error")  # the blank column is expected: numpy's all-NaN warning is not news
def test_a_column_no_row_rated_is_quantized_as_blank_not_refused():
    X = np.array([[1.0, np.nan, 2.0], [5.0, np.nan, 4.0], [1.0, np.nan, np.nan], [5.0, np.nan, 5.0]])
    q = quantize(X, 2, seed=0)
    assert q.centers.shape == (2, 3) and sorted(q.centers[:, 0].tolist()) == [1.0, 5.0]
    assert (q.centers[:, 1] == np.round(np.nanmean(X))).all()       # every observed cell's mean, rounded
    declared = quantize(X, 2, seed=0, integer=np.ones(3, bool), bounds=(np.full(3, 1.0), np.full(3, 5.0)))
    assert np.isfinite(declared.centers).all()


def test_kmeans_stops_each_start_at_the_iteration_cap(monkeypatch):
    from privmap.offline.data import _quantize
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 5))

    def spread(labels, centers):
        return float(np.mean(np.sum((X - centers[labels]) ** 2, axis=1)))

    converged = spread(*_quantize.kmeans(X, 64, seed=0, n_init=1))
    monkeypatch.setattr(_quantize, "MAX_ITERATIONS", 1)
    capped = spread(*_quantize.kmeans(X, 64, seed=0, n_init=1))
    assert capped > converged * 1.01
