"""Missing answers on the device: the per-feature rules (refuse, mask, impute), the masked
nearest rule against a brute-force reference (pure Python and numpy identical), typed refusals."""
from __future__ import annotations

import random

import pytest
from harness import with_leakage

from privmap.device.errors import BundleFormatError, InputError
from privmap.device.kinds import (
    table as bundle_module,
)
from privmap.device.kinds._lookup import MODE_EQUAL, MODE_L1, MODE_L2, nearest_numpy, nearest_pure


def _with_rules(sim, payload_factory, rules, fills=(None, None, None), tokens=("", "", "")):
    payload = payload_factory()
    for feature, rule, fill, token in zip(payload["features"], rules, fills, tokens):
        feature.update(missing=rule, fill=fill, missing_token=token)
    return sim.load(sim.sign_obj(with_leakage(payload)))


def _brute_force(reps, modes, x):
    """Reference: every representative's sum over the observed cells, then the first minimum."""
    sums = []
    for rep in reps:
        s = 0.0
        for mode, a, b in zip(modes, x, rep):
            if a is None:
                continue
            s += (a - b) ** 2 if mode == MODE_L2 else abs(a - b) if mode == MODE_L1 else float(a != b)
        sums.append(s)
    return sums.index(min(sums))


def test_masked_lookup_equals_brute_force_and_numpy_equals_pure_on_random_missing_patterns():
    np = pytest.importorskip("numpy")
    rng = random.Random(12)
    for trial in range(500):
        k, d = rng.randint(1, 40), rng.randint(1, 8)
        grid = [0.0, 1.0, 2.0, 3.0, 4.5] if trial % 2 else None
        value = (lambda grid=grid: rng.choice(grid)) if grid else (lambda: rng.uniform(-50, 50))
        reps = [tuple(value() for _ in range(d)) for _ in range(k)]
        modes = tuple(rng.choice((MODE_L2, MODE_L1, MODE_EQUAL)) for _ in range(d))
        x = [value() for _ in range(d)]
        for i in rng.sample(range(d), rng.randint(0, d - 1)):  # at least one observed cell
            x[i] = None
        x = tuple(x)
        expected = _brute_force(reps, modes, x)
        assert nearest_pure(reps, modes, x) == expected
        assert nearest_numpy(np.array(reps, dtype=np.float64), modes, x) == expected


def test_bundle_fast_path_equals_pure_path_with_masked_cells(sim, payload_factory, monkeypatch):
    pytest.importorskip("numpy")
    bundle = _with_rules(sim, payload_factory, ("mask", "mask", "mask"))
    rng = random.Random(3)
    rows = [[rng.choice(["", str(rng.randint(1, 5))]), rng.choice(["", str(rng.random())]),
             rng.choice([" ", str(rng.uniform(0, 24))])] for _ in range(300)]
    rows = [r for r in rows if any(c.strip() for c in r)]
    pure = [bundle.lookup(r) for r in rows]
    monkeypatch.setattr(bundle_module, "FAST_PATH_MIN_WORK", 0)
    fast_bundle = _with_rules(sim, payload_factory, ("mask", "mask", "mask"))
    assert [fast_bundle.lookup(r) for r in rows] == pure


def test_masked_cell_is_left_out_of_the_distance(sim, payload_factory):
    bundle = _with_rules(sim, payload_factory, ("mask", "mask", "mask"))
    # inputs [1, 0, 0], [3, .5, 12], [5, 1, 24]: hours alone decides when the rest is blank
    assert bundle.lookup(["", "", "23"]) == 2
    assert bundle.lookup([None, None, 11.0]) == 1
    assert bundle.lookup(["1", "", ""]) == 0


def test_impute_uses_the_recorded_fill_exactly(sim, payload_factory):
    bundle = _with_rules(sim, payload_factory, ("impute", "impute", "refuse"), fills=(5, 0.5, None))
    for hours in ("0", "12", "20", "24"):
        assert bundle.lookup(["", "", hours]) == bundle.lookup(["5", "0.5", hours])
        assert bundle.lookup(["3", None, hours]) == bundle.lookup(["3", "0.5", hours])


def test_missing_token_is_a_missing_answer_and_blank_still_is(sim, payload_factory):
    bundle = _with_rules(sim, payload_factory, ("mask", "mask", "mask"), tokens=("NA", "", ""))
    assert bundle.lookup(["NA", "", "23"]) == bundle.lookup(["", "", "23"]) == 2
    with pytest.raises(InputError):
        bundle.lookup(["N/A", "", "23"])


def test_a_number_outside_the_domain_may_code_a_missing_answer(sim, payload_factory):
    # surveys code a skipped question as 0: feature 0 holds 1..5, so "0" can only mean "missing"
    bundle = _with_rules(sim, payload_factory, ("mask", "mask", "mask"), tokens=("0", "", ""))
    assert bundle.features[0].missing_token == "0"
    assert bundle.lookup(["0", "", "23"]) == bundle.lookup(["", "", "23"])
    with pytest.raises(InputError):  # the token matches as text: 0.0 is the number 0, outside [1, 5]
        bundle.lookup(["0.0", "", "23"])


def test_missing_cell_of_a_refuse_feature_is_a_typed_error(sim, payload_factory):
    bundle = _with_rules(sim, payload_factory, ("mask", "refuse", "mask"))
    with pytest.raises(InputError, match="missing answer is not allowed"):
        bundle.sanitize(["2", "", "3"])


@pytest.mark.parametrize("rules", [("mask", "mask", "mask"), ("impute", "impute", "impute")])
def test_a_row_with_every_cell_missing_is_refused_whatever_the_rule(sim, payload_factory, rules):
    fills = (3, 0.5, 12.0) if rules[0] == "impute" else (None, None, None)
    bundle = _with_rules(sim, payload_factory, rules, fills=fills)
    with pytest.raises(InputError, match="every cell"):
        bundle.sanitize(["", None, "  "])


def test_released_row_fills_every_column_even_for_blank_cells(sim, payload_factory, enum_bits):
    bundle = _with_rules(sim, payload_factory, ("mask", "mask", "mask"))
    released = bundle.sanitize(["", "", "23"], rng=enum_bits)
    assert None not in released and list(released) in [list(r) for r in bundle.output_cells]


@pytest.mark.parametrize("change", [
    {"missing": "skip"}, {"missing": None}, {"missing": "impute", "fill": None},
    {"missing": "impute", "fill": 9}, {"missing": "impute", "fill": 2.5}, {"missing": "mask", "fill": 3},
    {"missing_token": "3"}, {"missing_token": "1"}, {"missing_token": " NA"}, {"missing_token": "x" * 17},
    {"missing_token": None},
])
def test_malformed_missing_fields_are_refused(sim, payload_factory, change):
    payload = payload_factory()
    payload["features"][0].update(change)  # feature 0 is an integer feature on [1, 5]
    with pytest.raises(BundleFormatError):
        sim.load(sim.sign_obj(with_leakage(payload)))
