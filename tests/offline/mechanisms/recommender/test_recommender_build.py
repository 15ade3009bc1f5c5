"""The recommendation-grade build: the factor model, the fold-in the device repeats, the whitened
distance in stars, and the bundle it writes."""
from __future__ import annotations

import csv

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from privmap.device import Limits
from privmap.device.format import Feature
from privmap.device.kinds.recommender import parse_model
from privmap.offline import BuildError, CrossFitting, Dataset, QuantizedOptions, declare
from privmap.offline.bundle import check_bundle, encode_payload, sign_bundle
from privmap.offline.data import synthetic_ratings
from privmap.offline.mechanisms import recommender
from privmap.offline.mechanisms.recommender import RecommenderOptions, choose_reg, fit_factors, view_of_recommender


def ratings(n, m, rank, *, density, shift, seed):
    """(ratings with NaN blanks, class codes) of :func:`synthetic_ratings` (two classes)."""
    drawn = synthetic_ratings(n, m, rank=rank, density=density, rng=seed, shift=shift)
    return drawn.ratings, drawn.private


def write_csv(path, R, a):
    with open(path, "w", newline="") as handle:
        w = csv.writer(handle)
        w.writerow([f"item{j}" for j in range(R.shape[1])] + ["group"])
        for row, label in zip(R, a):
            w.writerow(["" if np.isnan(v) else str(int(v)) for v in row] + [["x", "y"][label]])
    return path


def cells(row):
    return ["" if np.isnan(v) else str(int(v)) for v in row]


def built_bundle(path, *, clusters, rank, folds):
    """A recommender bundle of the CSV at ``path`` (K = ``clusters``, half Delta0, penalty 5),
    signed and loaded back by the device; returns (the build, its bytes, the device's Bundle)."""
    options = QuantizedOptions(clusters=clusters, delta_fraction=0.5,
                               cross_fitting=CrossFitting(folds=folds) if folds else None,
                               issued_at=1_800_000_000, declared=declare(None, ["1:5"], None))
    built = recommender.build(Dataset.from_csv(path, private="group"),
                              RecommenderOptions(mapping=options, rank=rank, reg=5.0))
    key = Ed25519PrivateKey.from_private_bytes(bytes(32))
    data = sign_bundle(encode_payload(built.payload), key)
    return built, data, check_bundle(data, key.public_key(), now=1_800_000_000)


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


def test_the_chosen_penalty_has_the_least_validation_rmse():
    R, _ = ratings(300, 40, 3, density=0.3, shift=0.0, seed=5)
    told = []
    best, scores = choose_reg(R, rank=3, candidates=(0.01, 5.0, 1000.0), rng=np.random.default_rng(0),
                              progress=told.append)
    assert told == pytest.approx([1 / 3, 2 / 3, 1.0])                        # the factor model's stage moves
    assert set(scores) == {0.01, 5.0, 1000.0}
    assert scores[best] == min(scores.values())
    assert best == 5.0                        # neither unpenalised nor flattened to the biases


def test_a_built_bundle_loads_on_the_device_and_releases_rows_it_can_be_held_to(tmp_path):
    R, a = ratings(600, 40, 3, density=0.3, shift=0.8, seed=6)
    path = write_csv(tmp_path / "r.csv", R, a)
    _, data, bundle = built_bundle(path, clusters=8, rank=3, folds=2)
    assert bundle.mechanism == "recommender" and len(bundle.features) == 40
    metrics = bundle.metrics
    assert metrics["leakage_bits"] < metrics["leakage_before_bits"]
    assert metrics["rating_columns"] == 40 and metrics["factor_rank"] == 3
    released = bundle.sanitize(cells(R[0]))
    assert len(released) == 40 and all(1 <= v <= 5 for v in released)
    assert built_bundle(path, clusters=8, rank=3, folds=2)[1] == data           # reproducible to the byte


def test_every_released_row_is_one_of_the_outputs_predicted_rows(tmp_path):
    R, a = ratings(400, 30, 2, density=0.3, shift=0.5, seed=7)
    _, _, bundle = built_bundle(write_csv(tmp_path / "r.csv", R, a), clusters=6, rank=2, folds=0)
    outputs = {tuple(row) for row in bundle.output_cells}
    for row in R[:50]:
        assert tuple(bundle.sanitize(cells(row))) in outputs


@pytest.mark.parametrize("kwargs", [{"rank": 0}, {"rank": 65}, {"reg": 0.0}, {"reg": float("nan")}, {"decimals": 7}])
def test_recommender_options_out_of_range_are_refused_at_construction(kwargs):
    with pytest.raises(BuildError):
        RecommenderOptions(mapping=QuantizedOptions(clusters=4, delta_fraction=0.5), **kwargs)


def test_the_evaluation_view_looks_rows_up_and_releases_as_the_device_does(tmp_path):
    from privmap.device.format import decode_payload
    R, a = ratings(400, 30, 2, density=0.3, shift=0.5, seed=8)
    built, _, bundle = built_bundle(write_csv(tmp_path / "r.csv", R, a), clusters=6, rank=2, folds=0)
    view = view_of_recommender(bundle)
    assert view.lookup(R[:60]).tolist() == [bundle.lookup(cells(row)) for row in R[:60]]
    assert np.array_equal(view.released_rows(np.arange(len(bundle.outputs))), np.array(bundle.output_cells))
    assert view.lookup(np.full((1, 30), np.nan)).tolist() == [-1]
    from_payload = view_of_recommender(decode_payload(encode_payload(built.payload), Limits()))
    assert from_payload.lookup(R[:60]).tolist() == view.lookup(R[:60]).tolist()
    assert np.array_equal(from_payload.outputs, view.outputs)
