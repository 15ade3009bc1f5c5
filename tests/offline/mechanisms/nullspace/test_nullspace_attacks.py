"""Attacks on null-space cleaning (seed 001): the retraining attack recovers what the fixed
predictor loses, and epsilon does not change linear e_privacy when rank[A_d A_c] = N_d + N_c."""
import numpy as np

from privmap.offline.mechanisms.nullspace import nullspace_experiment


def _data(seed=0, m=1500):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(m, 5))
    y_d = (x @ [1.0, 0.5, 0.0, 0.0, 0.3] + 0.5 * rng.normal(size=m) > 0).astype(float)[:, None]
    y_c = (x @ [0.2, -1.0, 1.0, 0.0, 0.0] + 0.5 * rng.normal(size=m) > 0).astype(float)[:, None]
    return x, y_d, y_c


def test_retraining_attack_recovers_most_of_what_cleaning_hides_from_the_fixed_predictor():
    x, y_d, y_c = _data()
    r = nullspace_experiment(x, y_d, y_c, 0.01, splits=2, test_fraction=0.2)
    assert r["conf_fixed"] < r["conf_raw"] - 0.05
    assert r["conf_retrained"] > r["conf_fixed"] + 0.05
    assert r["e_utility"] <= 0.01 + 1e-12
    assert abs(r["desired_cleaned"] - r["desired_raw"]) < 0.02


def test_epsilon_buys_no_linear_privacy_in_the_degenerate_case():
    x, y_d, y_c = _data(1)
    low, high = (nullspace_experiment(x, y_d, y_c, eps, splits=2, test_fraction=0.2) for eps in (0.01, 0.05))
    assert abs(low["e_privacy_fixed"] - high["e_privacy_fixed"]) < 1e-9
