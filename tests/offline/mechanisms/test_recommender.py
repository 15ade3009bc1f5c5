"""The recommendation-grade build: the factor model, the fold-in the device repeats, the whitened
distance in stars, and the bundle it writes."""
from __future__ import annotations

import csv

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from privmap.device import Limits
from privmap.device.mechanisms._recommender import parse_model
from privmap.device.format._schema import Feature
from privmap.offline.bundle._write import check_bundle, encode_payload, sign_bundle
from privmap.offline.data._schema import declare
from privmap.offline.mechanisms.quantized._pipeline import BuildOptions
from privmap.offline.mechanisms.recommender import (
    RecommenderOptions,
    build_prepared,
    choose_reg,
    fit_factors,
    prepare,
)


def ratings(n, m, rank, *, density, shift, seed):
    """Ratings 1..5 of a rank-``rank`` taste model, the private class shifting the taste, blanks
    more likely on low ratings; returns (R with NaN blanks, classes 0/1)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    users = rng.standard_normal((n, rank)) + shift * np.outer(2 * a - 1, np.ones(rank)) / np.sqrt(rank)
    items = rng.standard_normal((m, rank)) / np.sqrt(rank)
    R = np.clip(np.round(3.3 + users @ items.T + 0.4 * rng.standard_normal((n, m))), 1, 5)
    seen = rng.random((n, m)) < density * (0.6 + 0.2 * (R - 3))
    seen[np.arange(n), rng.integers(0, m, n)] = True
    return np.where(seen, R, np.nan), a


def write_csv(path, R, a):
    with open(path, "w", newline="") as handle:
        w = csv.writer(handle)
        w.writerow([f"item{j}" for j in range(R.shape[1])] + ["group"])
        for row, label in zip(R, a):
            w.writerow(["" if np.isnan(v) else str(int(v)) for v in row] + [["x", "y"][label]])
    return path


def device_model(model, m):
    payload = model.payload([f"item{j}" for j in range(m)], 1, 5, True, "", 2)
    space = tuple(Feature(name=f"factor_{i}", kind="numeric", min=-10.0, max=10.0) for i in range(model.rank + 1))
    return parse_model(payload, space, Limits())


def test_a_fully_observed_low_rank_matrix_is_fitted_within_its_noise():
    rng = np.random.default_rng(0)
    R = 3 + rng.standard_normal((200, 3)) @ rng.standard_normal((3, 40)) * 0.5 + 0.05 * rng.standard_normal((200, 40))
    model = fit_factors(R, rank=3, reg=0.1, rng=np.random.default_rng(1))
    predicted = model.mean + model.bias + model.fold_in(R) @ model.design.T
    assert np.sqrt(np.mean((predicted - R) ** 2)) < 0.06


def test_the_device_folds_a_user_in_to_the_builders_point():
    R, _ = ratings(300, 30, 3, density=0.3, shift=0.0, seed=2)
    model = fit_factors(R, rank=4, reg=5.0, rng=np.random.default_rng(0))
    device = device_model(model, R.shape[1])
    points = model.points(R)
    for u in range(0, 300, 37):
        row = tuple(None if np.isnan(v) else float(v) for v in R[u])
        assert np.allclose(device.point(row), points[u], rtol=0, atol=1e-9)


def test_the_whitened_distance_is_the_rms_difference_of_predicted_ratings():
    R, _ = ratings(200, 25, 3, density=0.4, shift=0.0, seed=3)
    model = fit_factors(R, rank=3, reg=5.0, rng=np.random.default_rng(0))
    theta = np.random.default_rng(1).standard_normal((2, 4))
    rows = model.mean + model.bias + theta @ model.design.T
    rms = np.sqrt(np.mean((rows[0] - rows[1]) ** 2))
    # to within the 1e-9 relative jitter that keeps W invertible and the 12 digits it is stored to
    assert np.linalg.norm(model.whiten @ (theta[0] - theta[1])) == pytest.approx(rms, rel=1e-7)


def test_the_decoded_rows_agree_between_builder_and_device():
    R, _ = ratings(200, 25, 3, density=0.4, shift=0.0, seed=4)
    model = fit_factors(R, rank=3, reg=5.0, rng=np.random.default_rng(0))
    device = device_model(model, R.shape[1])
    Z = model.points(R[:5])
    assert np.allclose(model.ratings(Z, 1, 5, 2), [device.ratings(tuple(z)) for z in Z], atol=0.0100001)


def test_the_chosen_penalty_has_the_least_validation_rmse():
    R, _ = ratings(300, 40, 3, density=0.3, shift=0.0, seed=5)
    best, scores = choose_reg(R, rank=3, candidates=(0.01, 5.0, 1000.0), rng=np.random.default_rng(0))
    assert set(scores) == {0.01, 5.0, 1000.0}
    assert scores[best] == min(scores.values())
    assert best == 5.0                        # neither unpenalised nor flattened to the biases


def test_a_built_bundle_loads_on_the_device_and_releases_rows_it_can_be_held_to(tmp_path):
    R, a = ratings(600, 40, 3, density=0.3, shift=0.8, seed=6)
    path = write_csv(tmp_path / "r.csv", R, a)
    options = BuildOptions(private="group", clusters=8, delta_fraction=0.5, holdout_folds=2, issued_at=1_800_000_000,
                           declared=declare(None, ["1:5"], None))
    rec = RecommenderOptions(rank=3, reg=5.0)
    built = build_prepared(prepare(path, options, rec), options, rec)
    key = Ed25519PrivateKey.from_private_bytes(bytes(32))
    data = sign_bundle(encode_payload(built.payload), key)
    bundle = check_bundle(data, key.public_key(), now=1_800_000_000)
    assert bundle.mechanism == "recommender" and len(bundle.features) == 40
    metrics = bundle.metrics
    assert metrics["leakage_bits"] < metrics["leakage_before_bits"]
    assert metrics["distortion"] <= metrics["delta"] * (1 + 1e-6) + 1e-9 or "codebook_iterations" in metrics
    assert metrics["rating_columns"] == 40 and metrics["factor_rank"] == 3
    released = bundle.sanitize(["" if np.isnan(v) else str(int(v)) for v in R[0]])
    assert len(released) == 40 and all(1 <= v <= 5 for v in released)
    again = build_prepared(prepare(path, options, rec), options, rec)
    assert sign_bundle(encode_payload(again.payload), key) == data           # reproducible to the byte


def test_every_released_row_is_one_of_the_outputs_predicted_rows(tmp_path):
    R, a = ratings(400, 30, 2, density=0.3, shift=0.5, seed=7)
    path = write_csv(tmp_path / "r.csv", R, a)
    options = BuildOptions(private="group", clusters=6, delta_fraction=0.5, holdout_folds=0, issued_at=1_800_000_000,
                           declared=declare(None, ["1:5"], None))
    rec = RecommenderOptions(rank=2, reg=5.0)
    built = build_prepared(prepare(path, options, rec), options, rec)
    key = Ed25519PrivateKey.from_private_bytes(bytes(32))
    bundle = check_bundle(sign_bundle(encode_payload(built.payload), key), key.public_key(), now=1_800_000_000)
    outputs = {tuple(row) for row in bundle.output_cells}
    for row in R[:50]:
        assert tuple(bundle.sanitize(["" if np.isnan(v) else str(int(v)) for v in row])) in outputs


@pytest.mark.parametrize("kwargs", [{"rank": 0}, {"rank": 65}, {"reg": 0.0}, {"reg": float("nan")}, {"decimals": 7}])
def test_recommender_options_out_of_range_are_refused_at_construction(kwargs):
    from privmap.offline._errors import BuildError
    with pytest.raises(BuildError):
        RecommenderOptions(**kwargs)


def test_the_evaluation_view_looks_rows_up_and_releases_as_the_device_does(tmp_path):
    from privmap.offline.evaluation._factor_view import view_of_recommender
    R, a = ratings(400, 30, 2, density=0.3, shift=0.5, seed=8)
    path = write_csv(tmp_path / "r.csv", R, a)
    options = BuildOptions(private="group", clusters=6, delta_fraction=0.5, holdout_folds=0, issued_at=1_800_000_000,
                           declared=declare(None, ["1:5"], None))
    rec = RecommenderOptions(rank=2, reg=5.0)
    built = build_prepared(prepare(path, options, rec), options, rec)
    key = Ed25519PrivateKey.from_private_bytes(bytes(32))
    bundle = check_bundle(sign_bundle(encode_payload(built.payload), key), key.public_key(), now=1_800_000_000)
    view = view_of_recommender(bundle)
    cells = [["" if np.isnan(v) else str(int(v)) for v in row] for row in R[:60]]
    assert view.lookup(R[:60]).tolist() == [bundle.lookup(c) for c in cells]
    assert np.array_equal(view.released_rows(np.arange(len(bundle.outputs))), np.array(bundle.output_cells))
    blank = np.full((1, 30), np.nan)
    assert view.lookup(blank).tolist() == [-1]
    from privmap.device.format._codec import decode_payload
    from_payload = view_of_recommender(decode_payload(encode_payload(built.payload), Limits()))
    assert from_payload.lookup(R[:60]).tolist() == view.lookup(R[:60]).tolist()
    assert np.array_equal(from_payload.outputs, view.outputs)
