"""The released rows calibrated to the ratings of the users who release them: each output is the
least-squares pseudo-user of its pool, it predicts those users' ratings better than the mapping's
own output did, and nothing of the mapping (table, prior, leakage) moves."""
from __future__ import annotations

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from scipy import sparse

from privmap.offline import Dataset, QuantizedOptions, declare
from privmap.offline.bundle import check_bundle, encode_payload, sign_bundle
from privmap.offline.data import synthetic_ratings
from privmap.offline.mechanisms import recommender
from privmap.offline.mechanisms.recommender import RecommenderOptions, calibrated_outputs, fit_factors, pooled_sums
from privmap.offline.mechanisms.table import table_probabilities


def small_build():
    drawn = synthetic_ratings(600, 40, rank=3, density=0.3, rng=4, shift=0.6)
    dataset = Dataset.from_frame(_frame(drawn.ratings, drawn.private), private="group")
    options = QuantizedOptions(clusters=16, delta_fraction=0.5, issued_at=1_800_000_000,
                               declared=declare(None, ["1:5"], None))
    prepared = recommender.prepare(dataset, RecommenderOptions(mapping=options, rank=3, reg=5.0))
    built = recommender.build(dataset, RecommenderOptions(mapping=options, rank=3, reg=5.0))
    return prepared, built


def _frame(R, a):
    import pandas as pd
    frame = pd.DataFrame(R, columns=[f"item{j}" for j in range(R.shape[1])])
    frame["group"] = np.array(["x", "y"])[a]
    return frame


def released_rows(model, points):
    theta = np.linalg.solve(model.whiten, np.asarray(points, float).T).T
    return model.mean + model.bias + theta @ model.design.T


def test_an_output_is_the_weighted_least_squares_pseudo_user_of_its_pool():
    rng = np.random.default_rng(1)
    R = np.where(rng.random((80, 12)) < 0.5, rng.integers(1, 6, (80, 12)).astype(float), np.nan)
    R[:, 0] = 3.0                                             # every user rates something
    model = fit_factors(R, rank=2, reg=3.0, rng=rng)
    weights = rng.random((80, 2)) * (rng.random((80, 2)) < 0.7)
    sums, counts = pooled_sums(model, R, sparse.csr_matrix(weights))
    wide = np.full(3, 1e9)
    points = calibrated_outputs(model, sums, counts, np.zeros((2, 3)), -wide, wide)
    theta = np.linalg.solve(model.whiten, points.T).T
    X, observed = model.design, ~np.isnan(R)
    for o in range(2):
        # the normal equations of sum_u w_uo sum_{j rated} (r_uj - mean - b_j - x_j t)^2 + reg |t|^2
        gram = sum(weights[u, o] * X[observed[u]].T @ X[observed[u]] for u in range(80)) + model.reg * np.eye(3)
        rhs = sum(weights[u, o] * X[observed[u]].T @ (R[u, observed[u]] - model.mean - model.bias[observed[u]])
                  for u in range(80))
        np.testing.assert_allclose(theta[o], np.linalg.solve(gram, rhs), rtol=1e-9, atol=1e-9)


def test_pools_of_disjoint_users_add_up():
    rng = np.random.default_rng(2)
    R = np.where(rng.random((50, 8)) < 0.6, rng.integers(1, 6, (50, 8)).astype(float), np.nan)
    R[:, 1] = 4.0
    model = fit_factors(R, rank=2, reg=2.0, rng=rng)
    weights = sparse.csr_matrix(rng.random((50, 3)))
    whole = pooled_sums(model, R, weights)
    halves = [pooled_sums(model, R[s], weights[s]) for s in (slice(0, 20), slice(20, 50))]
    for k in range(2):
        np.testing.assert_allclose(whole[k], halves[0][k] + halves[1][k], rtol=1e-12, atol=1e-12)


def test_calibrated_rows_predict_their_users_ratings_better_than_the_mappings_outputs():
    prepared, built = small_build()
    model, R = prepared.fitted.model, prepared.ratings
    payload = built.payload
    labels = built.detail.alphabet.labels
    q = table_probabilities(payload["table"]["index"], payload["table"]["weight"], payload["table"]["bits"],
                            len(payload["outputs"]))[labels]
    observed = ~np.isnan(R)

    def squared_error(points):
        rows = released_rows(model, points)                   # (K_out, m)
        per_output = np.array([np.nansum((R - rows[o]) ** 2, axis=1) for o in range(len(rows))]).T
        return float(np.sum(q * per_output) / observed.sum())

    lo = np.array([f["min"] for f in payload["features"]])
    hi = np.array([f["max"] for f in payload["features"]])
    mapping_outputs = np.clip(np.asarray(payload["outputs"]), lo, hi)
    assert squared_error(payload["outputs"]) < squared_error(_mapping_outputs(prepared))
    assert np.all(mapping_outputs == np.asarray(payload["outputs"]))      # inside the factor domain


def _mapping_outputs(prepared):
    """The outputs the quantized pipeline places on the same points (no calibration)."""
    from privmap.offline.mechanisms.quantized import build_points
    from privmap.offline.mechanisms.table import StageTimer
    options = QuantizedOptions(clusters=16, delta_fraction=0.5, issued_at=1_800_000_000)
    return build_points(prepared.factors, options, StageTimer(None)).payload["outputs"]


def test_calibration_moves_the_outputs_only():
    prepared, built = small_build()
    from privmap.offline.mechanisms.quantized import build_points
    from privmap.offline.mechanisms.table import StageTimer
    options = QuantizedOptions(clusters=16, delta_fraction=0.5, issued_at=1_800_000_000)
    mapping = build_points(prepared.factors, options, StageTimer(None)).payload
    for key in ("inputs", "table", "prior"):
        assert built.payload[key] == mapping[key]
    for key in ("leakage_bits", "distortion", "delta"):
        assert built.payload["metrics"][key] == mapping["metrics"][key]
    assert built.payload["outputs"] != mapping["outputs"]
    assert built.payload["metrics"]["released_distortion"] > 0


def test_the_declared_released_distortion_is_the_mean_rms_gap_to_the_shipped_outputs():
    """Recomputed from its definition with the evaluation view: each training user's expected RMS
    difference (stars, all columns, before clipping) between their own predicted ratings and those
    of the output they release, under the shipped table and outputs."""
    prepared, built = small_build()
    payload = built.payload
    key = Ed25519PrivateKey.from_private_bytes(bytes(32))
    bundle = check_bundle(sign_bundle(encode_payload(payload), key), key.public_key(), now=1_800_000_000)
    view = recommender.view_of_recommender(bundle)
    q = table_probabilities(payload["table"]["index"], payload["table"]["weight"], payload["table"]["bits"],
                            len(payload["outputs"]))[built.detail.alphabet.labels]
    gaps = view.costs(prepared.ratings, np.asarray(payload["outputs"]))         # (n, K_out), stars
    expected = float(np.sum(q * gaps)) / len(prepared.ratings)
    # the view reads the bundle, whose floats are rounded to canonical digits: agreement to 1e-6
    assert payload["metrics"]["released_distortion"] == pytest.approx(expected, rel=1e-6)
