"""The ``auto`` search over many users: its candidates judged on a seeded sample, the chosen one
cross-fitted and attacked again over every user, and its target checked there (fail closed)."""
import dataclasses

import numpy as np
import pytest

from privmap.offline import Auto, CrossFitting, Dataset, QuantizedOptions, TargetNotMetError
from privmap.offline.mechanisms.quantized import _build, build, search_sample


def population(n, seed=5):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    X = np.clip(np.round(rng.normal(1.5, 1.0, (n, 3)) + 0.8 * a[:, None] * [1, 0, 0]), 0, 4)
    return Dataset(features=("x", "y", "z"), public=X, private=a.astype(np.int64), classes=("f", "m"),
                   private_name="a", categorical=False, sha256="0" * 64)


OPTIONS = QuantizedOptions(delta_fraction=0.5, seed=3, cross_fitting=CrossFitting(folds=2),
                           auto=Auto(target_auc=0.7))


def test_the_sample_is_seeded_in_the_rows_order_and_blind_to_the_private_column():
    rows = population(1000)
    rows = dataclasses.replace(rows, public=np.column_stack([np.arange(1000), rows.public]))   # each row's place
    sample = search_sample(rows, 3, 300)
    assert sample.n == 300 and search_sample(rows, 3, 1000) is rows
    kept = sample.public[:, 0]
    assert np.all(np.diff(kept) > 0) and np.array_equal(sample.private, rows.private[kept.astype(int)])
    relabelled = dataclasses.replace(rows, private=1 - rows.private)
    assert np.array_equal(search_sample(relabelled, 3, 300).public, sample.public)
    assert not np.array_equal(search_sample(rows, 4, 300).public, sample.public)


def test_over_the_sample_size_the_bundle_declares_what_every_users_folds_measured(monkeypatch):
    monkeypatch.setattr(_build, "SEARCH_USERS", 300)
    built = build(population(900), OPTIONS)
    choice, metrics = built.detail.choice, built.payload["metrics"]
    assert choice.searched_users == 300 and choice.summary()["searched_users"] == 300 and metrics["n"] == 900
    assert metrics["holdout_attacker_auc_high"] <= 0.7            # met over all 900, not only on the sample
    assert metrics["holdout_leakage_bits"] != choice.holdout.leakage_bits   # measured again, not copied
    assert "holdout-all" in [r["stage"] for r in built.detail.stages.records()]


def test_a_choice_that_misses_the_target_over_every_user_fails_closed(monkeypatch):
    monkeypatch.setattr(_build, "SEARCH_USERS", 300)
    measured = _build.cross_fitted_leakage

    def worse(*args, **kwargs):         # the full users' folds find the release leakier than the sample did
        return dataclasses.replace(measured(*args, **kwargs), attacker_auc_high=0.9)
    monkeypatch.setattr(_build, "cross_fitted_leakage", worse)
    with pytest.raises(TargetNotMetError, match=r"met the privacy target on its sample of 300 users but not over "
                                                r"all 900: attacker AUC bound 0\.9000"):
        build(population(900), OPTIONS)
    allowed = dataclasses.replace(OPTIONS, auto=Auto(target_auc=0.7, allow_unmet=True))
    assert build(population(900), allowed).payload["metrics"]["holdout_attacker_auc_high"] == 0.9
