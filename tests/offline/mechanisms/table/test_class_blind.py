"""The class-blind codebook: clusters formed with the private classes' mean differences projected
out, looked up on the full points by the device's rule, its directions fitted on the rows it is
given, and the budget search that starts at the clusters alone."""
from __future__ import annotations

import numpy as np
import pytest

from privmap.offline import BuildError, CrossFitting, Dataset, QuantizedOptions
from privmap.offline.data import nearest
from privmap.offline.mechanisms import quantized
from privmap.offline.mechanisms.quantized._autotune import choose
from privmap.offline.mechanisms.table import _class_blind
from privmap.offline.mechanisms.table._class_blind import ClassBlind, class_directions


def shifted(n=600, d=4, classes=2, shift=1.5, seed=0):
    """Points whose class moves their mean along two axes, and the class codes."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, classes, n)
    X = rng.normal(size=(n, d))
    X[:, 0] += shift * a
    X[:, 1] -= 0.5 * shift * (a == classes - 1)
    return X, a


def dataset(X, a, classes=2):
    return Dataset(features=tuple(f"x{i}" for i in range(X.shape[1])), public=X, private=a,
                   classes=tuple(f"c{k}" for k in range(classes)), private_name="a", categorical=False,
                   sha256="0" * 64)


def test_the_blinded_points_of_every_class_share_one_mean():
    X, a = shifted(classes=3)
    V, m = class_directions(X, a, 3)
    assert V.shape == (4, 2) and np.allclose(V.T @ V, np.eye(2))
    blind = X - ((X - m) @ V) @ V.T
    means = np.array([blind[a == k].mean(axis=0) for k in range(3)])
    assert np.allclose(means, means[0], atol=1e-12)


def test_as_many_classes_as_dimensions_leave_one_dimension_to_cluster():
    X, a = shifted(n=900, d=3, classes=6, seed=5)
    V, _ = class_directions(X, a, 6)
    assert V.shape == (3, 2)
    assert len(np.unique(ClassBlind(a, 6)(X, 8, seed=0).labels)) == 8


def test_one_class_gives_no_direction():
    X, _ = shifted()
    V, _ = class_directions(X, np.zeros(len(X), dtype=int), 2)
    assert V.shape == (4, 0)


def test_a_full_point_is_looked_up_to_the_centre_its_blinded_point_is_nearest_to():
    X, a = shifted(n=800, classes=3, seed=1)
    found = ClassBlind(a, 3)(X, 24, seed=0)
    V, m = class_directions(X, a, 3)
    assert np.allclose((found.centers - m) @ V, 0.0, atol=1e-9)           # the centres lie in m + V-perp
    blind = X - ((X - m) @ V) @ V.T
    assert np.array_equal(found.labels, nearest(X, found.centers, "l2"))     # the device's rule on full points
    assert np.array_equal(found.labels, nearest(blind, found.centers, "l2"))


def test_class_blind_clusters_leak_far_less_where_the_class_moves_the_mean():
    X, a = shifted(n=1200, seed=2)
    leaks = {}
    for blind in (False, True):
        options = QuantizedOptions(clusters=16, delta_fraction=0.0, seed=0, cross_fitting=None, class_blind=blind)
        leaks[blind] = quantized.build(dataset(X, a), options).payload["metrics"]["leakage_bits"]
    assert leaks[False] > 0.2 and leaks[True] < 0.2 * leaks[False]


def test_each_cross_fitting_fold_fits_its_directions_on_its_own_training_rows(monkeypatch):
    X, a = shifted(n=300, seed=3)
    seen = []
    original = _class_blind.class_directions

    def recording(X_, private, n_classes):
        seen.append(len(private))
        return original(X_, private, n_classes)

    monkeypatch.setattr(_class_blind, "class_directions", recording)
    monkeypatch.setenv("PRIVMAP_JOBS", "1")            # every fold in this process
    options = QuantizedOptions(clusters=8, delta_fraction=0.5, seed=0, cross_fitting=CrossFitting(folds=3),
                               class_blind=True)
    built = quantized.build(dataset(X, a), options)
    assert built.payload["provenance"]["class_blind"] == 1
    assert len(seen) == 4 and sorted(seen)[-1] == 300  # the build's rows, and each fold's training rows
    assert all(195 <= n <= 205 for n in sorted(seen)[:3])


def test_the_class_blind_codebook_refuses_another_metric_and_missing_cells():
    with pytest.raises(BuildError, match="l2"):
        QuantizedOptions(clusters=4, delta_fraction=0.5, metric="l1", class_blind=True)
    X, a = shifted(n=100)
    X[3, 1] = np.nan
    with pytest.raises(BuildError, match="missing cells"):
        quantized.build(dataset(X, a), QuantizedOptions(clusters=4, delta_fraction=0.5, cross_fitting=None,
                                                        class_blind=True))


def test_a_plain_build_records_no_class_blind_codebook():
    X, a = shifted(n=200)
    built = quantized.build(dataset(X, a), QuantizedOptions(clusters=4, delta_fraction=0.5, cross_fitting=None))
    assert "class_blind" not in built.payload["provenance"]


def test_the_budget_search_tries_the_clusters_alone_first_and_stops_a_k_that_meets_the_target():
    X, a = shifted(n=600, seed=4)
    options = QuantizedOptions(clusters=1, delta_fraction=0.5, seed=1, cross_fitting=CrossFitting(folds=3),
                               class_blind=True)
    choice = choose(dataset(X, a), options, clusters=(4, 8), target_leakage_bits=1.0,
                    delta_fractions=(0.0, 0.3, 0.9))
    assert {(c["clusters"], c["delta_fraction"]) for c in choice.candidates} == {(4, 0.0), (8, 0.0)}
    assert choice.delta_fraction == 0.0
    strict = choose(dataset(X, a), options, clusters=(4,), target_leakage_bits=0.0, delta_fractions=(0.0, 0.3, 0.9))
    assert [c["delta_fraction"] for c in strict.candidates][:2] == [0.0, 0.9]   # then from the top, as without


def test_a_search_of_both_codebooks_takes_the_least_held_out_distortion_and_builds_with_it():
    from privmap.offline import Auto
    X, a = shifted(n=600, seed=6)
    options = QuantizedOptions(clusters=None, seed=1, cross_fitting=CrossFitting(folds=3),
                               auto=Auto(target_leakage_bits=1.0, class_blind=(False, True)))
    choice = choose(dataset(X, a), options, clusters=(4, 8), delta_fractions=(0.0, 0.5))
    assert {(c["clusters"], c["class_blind"]) for c in choice.candidates} == {(k, b) for k in (4, 8)
                                                                             for b in (False, True)}
    best = min(choice.candidates, key=lambda c: (c["holdout_distortion"], c["clusters"]))
    assert (choice.clusters, choice.class_blind) == (best["clusters"], best["class_blind"])
    assert choice.chosen(options).class_blind is best["class_blind"]
    assert choice.summary()["class_blind"] is best["class_blind"]


def test_a_search_of_both_codebooks_tells_its_progress_and_its_table_names_each_rows_codebook():
    from privmap.offline import Auto
    from privmap.offline.mechanisms.quantized._autotune import format_candidates
    X, a = shifted(n=300, seed=6)
    options = QuantizedOptions(clusters=None, seed=1, cross_fitting=CrossFitting(folds=2),
                               auto=Auto(target_leakage_bits=1.0, class_blind=(False, True)))
    told = []
    choice = choose(dataset(X, a), options, clusters=(4,), delta_fractions=(0.0, 0.5), jobs=1,
                    progress=lambda done, total, current: told.append((done, total, current)))
    done = [d for d, _, _ in told]
    assert done == sorted(done) and done[-1] == told[-1][1] and len(set(done)) > 2
    assert any("k-means" in c for _, _, c in told) and any("class-blind" in c for _, _, c in told)
    assert all(c.startswith("K 4, smoothing ") for _, _, c in told)
    rows = format_candidates(choice).splitlines()[1:-1]
    assert len(rows) == len(choice.candidates)
    assert all(("class-blind" if c["class_blind"] else "k-means") in row for row, c in zip(rows, choice.candidates))


def test_a_codebook_named_twice_is_refused():
    from privmap.offline import Auto
    with pytest.raises(BuildError, match="distinct"):
        Auto(class_blind=(True, True))
