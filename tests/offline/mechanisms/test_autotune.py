"""`--clusters auto`: K (and smoothing) chosen by cross-fitting, reproducibly from the seed."""
import csv
import json

import numpy as np
import pytest
from privmap.offline import BuildOptions
from privmap.offline.data import load_dataset
from privmap.offline.mechanisms._autotune import choose


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    """300 rows, 3 integer features, a private class that moves the first feature."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2, 300)
    X = np.clip(np.round(rng.normal(1.5, 1.0, (300, 3)) + 0.8 * a[:, None] * [1, 0, 0]), 0, 4).astype(int)
    path = tmp_path_factory.mktemp("d") / "small.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["x", "y", "z", "a"])
        w.writerows([[*row, "m" if k else "f"] for row, k in zip(X, a)])
    return path


def _auto(run, small_csv, keys, out, seed, *extra):
    result = run("build", small_csv, "--private", "a", "--clusters", "auto", "--delta-fraction", 0.5,
                 "--seed", seed, "--holdout-folds", 3, "--issued-at", 1_700_000_000, "--key", keys / "private.pem",
                 "--out", out, "--json", *extra)
    return json.loads(result.stdout), result.stderr


def test_clusters_auto_is_reproducible_with_a_seed(run, small_csv, keys, tmp_path):
    first, table = _auto(run, small_csv, keys, tmp_path / "a.bundle", 3)
    second, _ = _auto(run, small_csv, keys, tmp_path / "b.bundle", 3)
    assert (tmp_path / "a.bundle").read_bytes() == (tmp_path / "b.bundle").read_bytes()
    assert first["auto"] == second["auto"]
    chosen = [c for c in first["auto"]["candidates"] if c["chosen"]]
    assert len(chosen) == 1 and chosen[0]["clusters"] == first["clusters"] == first["auto"]["clusters"]
    assert "holdout leak bits" in table and "*" in table              # the printed table of candidates


def test_auto_with_a_target_takes_the_least_held_out_distortion_that_meets_it(small_csv):
    data = load_dataset(small_csv, private="a")
    options = BuildOptions(private="a", clusters=1, delta_fraction=0.5, seed=1, holdout_folds=3)
    loose = choose(data, options, clusters=(4, 8, 16), smoothing=(0.0, 1.0), target_leakage_bits=1.0)
    assert all(c["meets_target"] for c in loose.candidates)
    best = min(loose.candidates, key=lambda c: c["holdout_distortion"])
    assert (loose.clusters, loose.smoothing) == (best["clusters"], best["smoothing"])
    strict = choose(data, options, clusters=(4, 8, 16), target_leakage_bits=-1.0)   # nothing meets it
    least = min(strict.candidates, key=lambda c: c["holdout_leakage_bits"])
    assert strict.clusters == least["clusters"]


def test_auto_with_an_auc_target_measures_the_attacker_and_leaves_the_leakage_figures_alone(small_csv):
    data = load_dataset(small_csv, private="a")
    options = BuildOptions(private="a", clusters=1, delta_fraction=0.2, seed=2, holdout_folds=3)
    plain = choose(data, options, clusters=(4, 8))
    judged = choose(data, options, clusters=(4, 8), target_auc=1.0)          # every candidate meets it
    for a, b in zip(plain.candidates, judged.candidates):
        assert a["holdout_leakage_bits"] == b["holdout_leakage_bits"]
        assert 0.0 <= b["holdout_attacker_auc"] <= 1.0 and b["meets_target"]
    best = min(judged.candidates, key=lambda c: c["holdout_distortion"])
    assert judged.clusters == best["clusters"]
    none = choose(data, options, clusters=(4, 8), target_auc=0.0)            # nothing meets it
    assert none.clusters == min(none.candidates, key=lambda c: c["holdout_leakage_bits"])["clusters"]
