"""The ranking kind on the device: a point is the unit direction of the rated columns' embedding
rows in exact integers, the release is a full row of scores decided by the sampled output alone,
and a malformed model is refused before anything is released."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from harness import COLUMNS, FixedBits, Sim, ranking_payload

from privmap.device.errors import BundleFormatError, InputError, WorkLimitError
from privmap.device.kinds.ranking import MAX_ENTRY, MAX_SCORE_WORK
from privmap.device.randomness import InsecureTestBits

K = 3  # the harness's ranking payload's rank


@pytest.fixture
def bundle(sim: Sim):
    return sim.load(sim.sign_obj(ranking_payload()))


def test_a_point_is_the_unit_direction_of_the_rated_columns_embedding_rows(bundle):
    row = [4, None, 2, None, 5, 1, None]
    E = np.array(bundle.model.embed, dtype=np.int64)
    y = E[[r is not None for r in row]].sum(axis=0)
    z = bundle.model.point(row)
    assert list(z) == (y / math.sqrt(float(np.sum(y * y)))).tolist()      # bit for bit, as the builder computes
    assert math.isclose(math.fsum(v * v for v in z), 1.0, rel_tol=1e-12)


def test_only_which_cells_are_rated_moves_the_point(bundle):
    assert bundle.model.point([5, None, 1, None, None, None, 3]) == bundle.model.point([1, None, 5, None, None, None, 1])


def test_release_is_a_score_for_every_column_from_the_sampled_output_alone(bundle):
    first, second = ["5", "", "", "", "", "", ""], ["1", "", "", "", "", "", ""]
    assert bundle.lookup(first) == bundle.lookup(second)
    for value in range(16):
        a = bundle.sanitize(first, rng=InsecureTestBits(FixedBits(value), test_mode=True))
        b = bundle.sanitize(second, rng=InsecureTestBits(FixedBits(value), test_mode=True))
        assert a == b and len(a) == len(COLUMNS) and all(type(v) is float and math.isfinite(v) for v in a)
        j = bundle.release_index(first, rng=InsecureTestBits(FixedBits(value), test_mode=True))
        basis = np.array(bundle.model.basis) / 2.0 ** bundle.model.basis_bits
        assert np.allclose(a, basis @ np.array(bundle.outputs[j]), atol=5e-4)


def test_a_row_with_nothing_rated_is_refused(bundle, enum_bits):
    with pytest.raises(InputError, match="missing"):
        bundle.sanitize([""] * len(COLUMNS), rng=enum_bits)


def test_rated_items_whose_rows_cancel_out_are_refused(sim):
    payload = ranking_payload()
    payload["model"]["embed"][1] = [-v for v in payload["model"]["embed"][0]]
    bundle = sim.load(sim.sign_obj(payload))
    with pytest.raises(InputError, match="direction"):
        bundle.lookup(["1", "2", "", "", "", "", ""])


def _broken(change):
    payload = ranking_payload()
    change(payload["model"])
    return payload


@pytest.mark.parametrize("change, says", [
    (lambda m: m.pop("basis"), "exactly the keys"),
    (lambda m: m.update(extra=1), "exactly the keys"),
    (lambda m: m["embed"].pop(), "one row per column"),
    (lambda m: m["basis"][2].append(1), "3 ints"),
    (lambda m: m["embed"][0].__setitem__(0, MAX_ENTRY + 1), "embed\\[0\\]"),
    (lambda m: m["basis"][0].__setitem__(1, 1.5), "basis\\[0\\]"),
    (lambda m: m.update(basis_bits=31), "basis_bits"),
    (lambda m: m.update(decimals=7), "decimals"),
    (lambda m: m.update(min=5, max=1), "below max"),
    (lambda m: m.update(min=float("nan")), "finite"),
    (lambda m: m.update(integer=True, min=0.5), "whole-number"),
    (lambda m: m.update(columns=COLUMNS[:-1] + [COLUMNS[0]]), "unique"),
    (lambda m: m.update(missing_token="x" * 17), "missing_token"),
])
def test_a_malformed_model_is_refused_at_load_naming_the_field(sim, change, says):
    with pytest.raises(BundleFormatError, match=says):
        sim.load(sim.sign_obj(_broken(change)))


def test_a_score_space_outside_the_unit_cube_is_refused(sim):
    payload = ranking_payload()
    payload["features"][0]["max"] = 2.0
    with pytest.raises(BundleFormatError, match="unit vector"):
        sim.load(sim.sign_obj(payload))


def test_more_columns_times_rank_than_the_work_cap_is_refused_before_the_rows_are_read(sim):
    payload = ranking_payload()
    k = 40
    payload["features"] = [dict(payload["features"][0], name=f"score_{i}") for i in range(k)]
    payload["inputs"] = [[0.0] * k] * 3
    payload["outputs"] = [[0.0] * k] * 4
    payload["model"]["columns"] = [f"c{j}" for j in range(MAX_SCORE_WORK // k + 1)]   # embed and basis unread
    with pytest.raises(WorkLimitError, match="work cap"):
        sim.load(sim.sign_obj(payload))


def test_a_ranking_bundle_with_another_metric_is_refused(sim):
    payload = copy.deepcopy(ranking_payload())
    payload["metric"] = "l1"
    with pytest.raises(BundleFormatError, match="'l2'"):
        sim.load(sim.sign_obj(payload))
