"""Too few users for the ``auto`` search's AUC target, said before the work: the floor of the AUC's
upper bound that a varied release telling nothing gets, the users that bring it under the target,
and the builds (rows and recommender) that refuse at once with that number in one line."""
from __future__ import annotations

import time

import numpy as np
import pytest

from privmap.offline import Auto, CrossFitting, Dataset, DatasetError, QuantizedOptions
from privmap.offline._attacker import auc_with_error
from privmap.offline.data import synthetic_ratings
from privmap.offline.mechanisms import quantized, recommender
from privmap.offline.mechanisms.quantized import chance_auc_high, check_enough_users, users_needed


@pytest.mark.parametrize("counts", [[300, 700], [40, 120, 240, 130, 60, 50, 30]])
def test_the_floor_is_the_delong_bound_of_an_attacker_at_chance(counts):
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(len(counts)), counts)
    errors = [auc_with_error(y, rng.dirichlet(np.ones(len(counts)), size=len(y)), len(counts))[1]
              for _ in range(20)]
    from scipy.stats import norm
    assert chance_auc_high(counts) == pytest.approx(0.5 + norm.ppf(0.95) * np.mean(errors), rel=0.03)


def test_the_users_needed_bring_the_floor_under_the_target_in_the_same_shares():
    counts = np.array([33, 119, 238, 132, 53, 53, 33])
    assert chance_auc_high(counts) > 0.55
    needed = users_needed(counts, 0.55)
    assert chance_auc_high(counts * needed / counts.sum()) <= 0.55 + 1e-12
    assert chance_auc_high(counts * (needed - 2) / counts.sum()) > 0.55
    assert users_needed(counts * 4, 0.55) is None and users_needed(counts, 0.5) is None


def _people(n, classes, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, classes, n)
    return Dataset(features=("x0", "x1"), public=rng.normal(size=(n, 2)) + a[:, None], private=a,
                   classes=tuple(f"c{k}" for k in range(classes)), private_name="job", categorical=False,
                   sha256="0" * 64)


def test_a_build_with_too_few_users_for_its_classes_refuses_before_the_search():
    options = QuantizedOptions(clusters=None, cross_fitting=CrossFitting(folds=3), auto=Auto(target_auc=0.55))
    started = time.perf_counter()
    with pytest.raises(DatasetError, match=r"too few users for --target-auc 0.55: over 300 users in 12 classes "
                                           r"of 'job'.*needs at least [0-9,]+ users") as refused:
        quantized.build(_people(300, 12), options)
    assert time.perf_counter() - started < 5.0 and "\n" not in str(refused.value)
    check_enough_users(_people(3000, 2), options)                      # enough: nothing said
    check_enough_users(_people(300, 12), QuantizedOptions(clusters=None, cross_fitting=CrossFitting(folds=3),
                                                          auto=Auto(target_leakage_bits=0.01)))


def test_a_recommender_build_refuses_before_it_fits_the_factor_model(monkeypatch):
    drawn = synthetic_ratings(200, 30, rank=2, density=0.3, classes=8, rng=1)
    data = Dataset(features=tuple(drawn.items), public=drawn.ratings, private=drawn.private,
                   classes=tuple(f"c{k}" for k in range(8)), private_name="age", categorical=False,
                   sha256="0" * 64)
    from privmap.offline.mechanisms.recommender import _build
    monkeypatch.setattr(_build, "fit_model", lambda *a, **k: pytest.fail("the factor model was fitted"))
    options = recommender.RecommenderOptions(mapping=QuantizedOptions(
        clusters=None, prior="posteriors", cross_fitting=CrossFitting(folds=3), auto=Auto(target_auc=0.55)))
    with pytest.raises(DatasetError, match="too few users"):
        recommender.build(data, options)
