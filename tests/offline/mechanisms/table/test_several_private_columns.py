"""Several private columns protected at once (``--private COL1,COL2``): the bundle protects their
joint attribute and declares what the joint and each column alone leak."""
import csv
import json

import numpy as np
import pytest

from privmap.offline import CrossFitting, QuantizedOptions
from privmap.offline._information import leakage_bits, mutual_information_bits
from privmap.offline.bundle import payload_table
from privmap.offline.data import Dataset, joint_prior
from privmap.offline.mechanisms import quantized
from privmap.offline.mechanisms.table import view_from_payload

COLUMNS = ("sex", "band")


def _rows(n: int, seed: int):
    """``n`` users: ``sex`` (F/M) moves the first public column by two units (strongly
    predictable), ``band`` (three values) is independent of every public column; cells on a grid of
    halves, so that rows repeat."""
    rng = np.random.default_rng(seed)
    sex = rng.integers(0, 2, n)
    band = rng.integers(0, 3, n)
    public = np.column_stack([np.round(2 * (sex * 1.2 + rng.normal(0, 0.7, n))) / 2,
                              np.round(2 * rng.normal(0, 1, n)) / 2])
    return public, sex, band


def _write(path, n: int, seed: int):
    public, sex, band = _rows(n, seed)
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["x1", "x2", "sex", "band"])
        for (x1, x2), s, b in zip(public, sex, band):
            w.writerow([f"{x1:g}", f"{x2:g}", "FM"[s], f"b{b}"])
    return path


@pytest.fixture(scope="module")
def joint_csv(tmp_path_factory):
    return _write(tmp_path_factory.mktemp("joint") / "joint.csv", 1500, seed=3)


@pytest.fixture(scope="module")
def joint_build(joint_csv):
    dataset = Dataset.from_csv(joint_csv, private=list(COLUMNS))
    options = QuantizedOptions(clusters=12, delta_fraction=0.3, cross_fitting=CrossFitting(folds=5))
    return dataset, quantized.build(dataset, options).payload


def test_the_joint_class_is_the_tuple_of_the_columns_values(joint_build):
    dataset, payload = joint_build
    assert payload["private"]["name"] == '["sex","band"]'
    assert payload["private"]["classes"] == [json.dumps([s, b], separators=(",", ":"))
                                             for s in "FM" for b in ("b0", "b1", "b2")]
    assert dataset.columns.names == COLUMNS and dataset.columns.codes.shape == (6, 2)


def test_the_joint_leakage_is_at_least_each_columns(joint_build):
    _, payload = joint_build
    m = payload["metrics"]
    assert m["leakage_bits"] > 0.001
    for c in COLUMNS:
        assert m[f"leakage_bits[{c}]"] <= m["leakage_bits"] + 1e-12
        assert m[f"leakage_before_bits[{c}]"] <= m["leakage_before_bits"] + 1e-12
        assert m[f"holdout_leakage_low_bits[{c}]"] <= m[f"holdout_leakage_bits[{c}]"] \
            <= m[f"holdout_leakage_high_bits[{c}]"]


def test_each_columns_in_sample_leakage_is_its_mutual_information_recomputed_from_the_rows_and_table(joint_build):
    """I(A_i; C^) from the training rows looked up as the device does and the shipped integer table,
    independently of the build's prior."""
    dataset, payload = joint_build
    view = view_from_payload(payload)
    symbols = view.lookup(dataset.public)
    q = payload_table(payload)
    k_in = len(payload["inputs"])
    for i, c in enumerate(COLUMNS):
        values = np.array([json.loads(dataset.classes[a])[i] for a in dataset.private])
        codes = np.unique(values, return_inverse=True)[1]
        p = joint_prior(codes, symbols, codes.max() + 1, k_in)
        assert payload["metrics"][f"leakage_bits[{c}]"] == pytest.approx(leakage_bits(p, q), rel=1e-9, abs=1e-12)
        assert payload["metrics"][f"leakage_before_bits[{c}]"] == pytest.approx(mutual_information_bits(p),
                                                                                rel=1e-9, abs=1e-12)


def test_the_predictable_column_leaks_and_the_independent_one_hardly(joint_build):
    m = joint_build[1]["metrics"]
    assert m["leakage_before_bits[sex]"] > 0.3 > 0.02 > m["leakage_before_bits[band]"]


def test_each_columns_cross_fitted_leakage_meets_an_independent_estimate_on_new_users(joint_build):
    """The bundle's declared interval for each column holds the leakage its table shows on 30,000
    users drawn afresh (plug-in I(A_i; C^) of the users looked up by the device's rule, less its
    permutation bias)."""
    _, payload = joint_build
    view = view_from_payload(payload)
    public, sex, band = _rows(30000, seed=99)
    symbols = view.lookup(public)
    q = payload_table(payload)
    rng = np.random.default_rng(0)
    for c, codes in (("sex", sex), ("band", band)):
        k = codes.max() + 1

        def plug_in(a, k=k):
            return leakage_bits(joint_prior(a, symbols, k, q.shape[0]), q)

        estimate = plug_in(codes) - np.mean([plug_in(rng.permutation(codes)) for _ in range(10)])
        m = payload["metrics"]
        assert m[f"holdout_leakage_low_bits[{c}]"] - 1e-3 <= estimate <= m[f"holdout_leakage_high_bits[{c}]"] + 1e-3


def test_a_sequence_of_one_private_column_builds_the_one_column_bundle(joint_csv):
    options = QuantizedOptions(clusters=6, delta_fraction=0.5, cross_fitting=CrossFitting(folds=2),
                               issued_at=1_700_000_000)
    one = quantized.build(Dataset.from_csv(joint_csv, private="sex", public=["x1", "x2"]), options).payload
    same = quantized.build(Dataset.from_csv(joint_csv, private=["sex"], public=["x1", "x2"]), options).payload
    assert one == same
    assert one["private"] == {"name": "sex", "classes": ["F", "M"]}
    assert not [k for k in one["metrics"] if "[" in k]
