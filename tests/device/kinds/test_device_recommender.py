"""The recommender kind on the device: the fold-in is the ridge solve it claims, the release is a
full row inside the rating domain decided by the sampled output alone, and a malformed model is
refused before anything is released."""
from __future__ import annotations

import copy
import math
import re
import time
import tracemalloc

import numpy as np
import pytest
from harness import COLUMNS, RANK, FixedBits, Sim, base_payload, recommender_payload, wide_recommender_payload

from privmap.device.errors import BundleFormatError, InputError
from privmap.device.kinds.recommender import _cholesky_solve
from privmap.device.randomness import InsecureTestBits


def signed(sim: Sim, payload: dict) -> bytes:
    return sim.sign_obj(payload)


@pytest.fixture
def bundle(sim):
    return sim.load(signed(sim, recommender_payload()))


def test_fold_in_is_the_ridge_solution_over_the_rated_columns(bundle):
    model = bundle.model
    row = [4, None, 2, None, 5, 1, None]
    x = np.array(model.factors)
    y = np.array([r - model.mean - b if r is not None else 0.0 for r, b in zip(row, model.bias)])
    rated = np.array([r is not None for r in row])
    a = x[rated].T @ x[rated] + model.reg * np.eye(RANK + 1)
    expected = np.linalg.solve(a, x[rated].T @ y[rated])
    assert np.allclose(model.fold_in(row), expected, rtol=1e-12, atol=1e-12)


def test_a_point_is_the_whitened_fold_in(bundle):
    model = bundle.model
    row = [4, None, 2, None, 5, 1, None]
    assert np.allclose(model.point(row), np.array(model.whiten) @ np.array(model.fold_in(row)), atol=1e-12)


def test_release_fills_every_column_inside_the_rating_domain(bundle, enum_bits):
    for cells in (["5", "", "", "", "", "", ""], ["1", "1", "1", "1", "1", "1", "1"], ["", "", "3", "", "", "4", ""]):
        released = bundle.sanitize(cells, rng=enum_bits)
        assert len(released) == len(COLUMNS)
        assert all(type(v) is float and 1 <= v <= 5 for v in released)


def test_release_is_the_predicted_row_of_the_sampled_output_alone(bundle):
    """Two users whose rows fall in the same cluster and draw the same bits release the same row:
    which items they rated, and how, reaches the release only through the output."""
    first, second = ["5", "", "", "", "", "", ""], ["5", "", "", "", "", "", "1"]
    assert bundle.lookup(first) == bundle.lookup(second)
    for value in range(16):
        a = bundle.sanitize(first, rng=InsecureTestBits(FixedBits(value), test_mode=True))
        b = bundle.sanitize(second, rng=InsecureTestBits(FixedBits(value), test_mode=True))
        assert a == b
        j = bundle.release_index(first, rng=InsecureTestBits(FixedBits(value), test_mode=True))
        assert a == bundle.representative(j)


def test_decoded_output_predicts_through_the_inverse_whitening(bundle):
    model = bundle.model
    z = bundle.outputs[0]
    theta = np.linalg.solve(np.array(model.whiten), np.array(z))
    predicted = model.mean + np.array(model.bias) + np.array(model.factors) @ theta
    assert bundle.representative(0) == [round(min(max(p, 1.0), 5.0), 2) for p in predicted]


def test_the_features_a_row_holds_are_the_rating_columns(bundle):
    assert [f.name for f in bundle.features] == COLUMNS
    assert [f.name for f in bundle.space] == [f"factor_{i}" for i in range(RANK + 1)]


@pytest.mark.parametrize("cells, what", [
    (["", "", "", "", "", "", ""], "every cell"),
    (["6", "", "", "", "", "", ""], "cell 0"),
    (["2.5", "", "", "", "", "", ""], "cell 0"),
    (["3", "", ""], "exactly 7"),
])
def test_a_bad_ratings_row_is_refused_without_echoing_it(bundle, enum_bits, cells, what):
    with pytest.raises(InputError, match=what) as info:
        bundle.sanitize(cells, rng=enum_bits)
    assert "2.5" not in str(info.value) and "6" not in str(info.value).replace("feature", "")


def _mutated(change):
    payload = recommender_payload()
    change(payload)
    return payload


@pytest.mark.parametrize("change, message", [
    (lambda p: p["model"].pop("reg"), "exactly the keys"),
    (lambda p: p["model"].update(extra=1), "exactly the keys"),
    (lambda p: p["model"].update(reg=0.0), "reg"),
    (lambda p: p["model"].update(reg=math.inf), "reg"),
    (lambda p: p["model"]["items"][3].append(0), "items\\[3\\]"),
    (lambda p: p["model"]["items"].pop(), "one entry per column"),
    (lambda p: p["model"]["items"][0].__setitem__(0, 1 << 40), "items\\[0\\]"),
    (lambda p: p["model"]["items"][0].__setitem__(0, 1.5), "items\\[0\\]"),
    (lambda p: p["model"]["whiten"][1].__setitem__(0, 0.5), "upper triangular"),
    (lambda p: p["model"]["whiten"][2].__setitem__(2, 0.0), "positive diagonal"),
    (lambda p: p["model"].update(min=5, max=1), "min must be below max"),
    (lambda p: p["model"].update(min=0.5), "whole-number bounds"),
    (lambda p: p["model"].update(columns=COLUMNS[:-1] + [COLUMNS[0]]), "unique"),
    (lambda p: p["model"].update(decimals=9), "decimals"),
    (lambda p: p["model"].update(scale_bits=31), "scale_bits"),
    (lambda p: p.update(metric="l1"), "metric is 'l2'"),
    (lambda p: p.pop("model"), "payload"),
    (lambda p: p["model"].update(integer=False, min=0.4, decimals=0), "multiples of 10\\*\\*-0"),
    (lambda p: p["model"].update(integer=False, max=4.75, decimals=1), "multiples of 10\\*\\*-1"),
    (lambda p: p["model"].update(mean=1e300), "mean"),
    (lambda p: p["model"]["whiten"][2].__setitem__(2, 1e-300), "ill-conditioned"),
    (lambda p: p["model"]["whiten"][0].__setitem__(2, 1e100), "ill-conditioned"),
    (lambda p: p["features"][0].update(min=-1e100, max=1e100), "ill-conditioned"),
    (lambda p: p["model"]["whiten"][0].__setitem__(0, 5e-324), "ill-conditioned"),
])
def test_a_malformed_model_is_refused_at_load(sim, change, message):
    error = sim.refused(signed(sim, _mutated(change)), BundleFormatError)
    assert re.search(message, str(error)), str(error)


def test_a_quantized_payload_with_a_model_is_refused(sim):
    payload = copy.deepcopy(base_payload())
    payload["model"] = recommender_payload()["model"]
    sim.refused(signed(sim, payload), BundleFormatError)


def test_a_model_beyond_the_fold_in_work_cap_is_refused_before_its_products_are_built(sim):
    from privmap.device.constants import MAX_RANK
    from privmap.device.errors import WorkLimitError
    from privmap.device.kinds.recommender import MAX_FOLD_IN_WORK
    k1 = MAX_RANK + 1
    columns = MAX_FOLD_IN_WORK // k1 ** 2 + 1                # within max_features, beyond the work cap
    payload = recommender_payload()
    payload["features"] = [dict(payload["features"][0], name=f"factor_{i}") for i in range(k1)]
    payload["inputs"] = [[0.0] * k1 for _ in payload["inputs"]]
    payload["outputs"] = [[0.0] * k1 for _ in payload["outputs"]]
    payload["model"].update(columns=[f"c{j}" for j in range(columns)], items=[[0] * k1] * columns,
                            whiten=[[1.0 if i == j else 0.0 for j in range(k1)] for i in range(k1)])
    sim.refused(signed(sim, payload), WorkLimitError)


def test_a_released_rating_is_rounded_then_clipped_so_it_never_leaves_the_domain(sim, enum_bits):
    """A float domain on the decimals grid, outputs predicting far outside it: every released
    cell is inside [min, max] and on the grid, both ends reached."""
    payload = recommender_payload()
    payload["model"].update(integer=False, min=0.4, max=4.6, decimals=1, mean=0.0)
    payload["outputs"] = [[-3.0, 3.0, -3.0], [3.0, -3.0, 3.0], [0.0, 3.0, 3.0], [-3.0, -3.0, -3.0]]
    bundle = sim.load(signed(sim, payload))
    released = [v for j in range(len(bundle.outputs)) for v in bundle.representative(j)]
    assert {0.4, 4.6} <= set(released)
    assert all(type(v) is float and 0.4 <= v <= 4.6 and v == round(v, 1) for v in released)


def test_a_solve_that_overflows_refuses_the_row_with_an_input_error():
    """Pivots near zero make the next pivot's sum of squares overflow inside math.fsum: the row
    is refused with InputError (which refuses it alone in a batch), not OverflowError."""
    tiny, big = 1e-300, 1.2e4
    a = [[tiny, 0.0, big], [0.0, tiny, big], [0.0, 0.0, 1.0]]
    with pytest.raises(InputError, match="finite fold-in"):
        _cholesky_solve(a, [1.0, 1.0, 1.0])


def _point_seconds(model, cells, trials):
    best = math.inf
    for _ in range(trials):
        started = time.perf_counter()
        model.point(cells)
        best = min(best, time.perf_counter() - started)
    return best


def test_the_fold_in_takes_as_long_for_one_rated_cell_as_for_a_thousand(sim):
    """A 1,000-column row, rank 7: the fastest of interleaved runs at 1 and at 1,000 rated cells
    agree within a factor the machine's noise cannot reach (skipping blank cells made them
    differ some 15-fold)."""
    bundle = sim.load(signed(sim, wide_recommender_payload(1000, 7)))
    one = (4.0,) + (None,) * 999
    every = tuple(float(1 + j % 5) for j in range(1000))
    fastest = {"one": math.inf, "every": math.inf}
    for _ in range(10):
        fastest["one"] = min(fastest["one"], _point_seconds(bundle.model, one, 2))
        fastest["every"] = min(fastest["every"], _point_seconds(bundle.model, every, 2))
    assert max(fastest.values()) < 1.6 * min(fastest.values()), fastest


def test_releasing_keeps_no_decoded_row(sim, enum_bits):
    """Decoding all 300 outputs of a 100-column bundle, twice, leaves the bundle's memory as it
    was: a released row is decoded per release, never cached (a cache would hold 30,000 floats,
    about 1 MiB)."""
    bundle = sim.load(signed(sim, wide_recommender_payload(100, 2, outputs=300)))
    bundle.representative(0)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(2):
            for j in range(len(bundle.outputs)):
                bundle.representative(j)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, grown
