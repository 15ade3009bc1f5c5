"""Sparse ratings end to end: Theorem 2 with missing cells under both policies, the recorded
imputation statistic, declared domains in the signed bundle and on the device."""
from __future__ import annotations

import csv
import json
import math
import statistics

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from privmap.device.errors import InputError
from privmap.offline import Dataset, DatasetError, QuantizedOptions, leakage_bits
from privmap.offline.bundle import check_bundle, encode_payload, sign_bundle
from privmap.offline.data import declare, read_schema_file, resolve, schema_json
from privmap.offline.mechanisms import quantized

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
ISSUED_AT = 1_700_000_000
#: The 18 music ratings of the GSS file (its other columns: age, educ and the private sex).
COLUMNS = [
    "bigb", "blug", "coun", "blue", "musi", "clas", "folk", "gosp", "jazz",
    "lati", "mood", "newa", "oper", "rap", "regg", "conr", "oldi", "hvym",
]


@pytest.fixture(scope="module")
def sparse_csv(music_csv, tmp_path_factory):
    """The first 500 GSS respondents (ratings and sex only): about 6% of the cells blank."""
    path = tmp_path_factory.mktemp("gss") / "music500.csv"
    with music_csv.open(newline="") as f:
        rows = list(csv.DictReader(f))[:500]
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS + ["sex"])
        for row in rows:
            writer.writerow([row[c] for c in COLUMNS] + [row["sex"]])
    return path


def _signed(csv_path, **options):
    """(the build's record, the signed bundle checked by the device) of the rows at ``csv_path``
    (sex private)."""
    result = quantized.build(Dataset.from_csv(csv_path, private="sex"), QuantizedOptions(issued_at=ISSUED_AT, **options))
    bundle = check_bundle(sign_bundle(encode_payload(result.payload), KEY), KEY.public_key(), now=ISSUED_AT + 1)
    return result.detail, bundle


def _raw_rows(csv_path):
    with csv_path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return [[r[c] for c in COLUMNS] for r in rows], [r["sex"] for r in rows]


def _observed_distance(row, rep, metric):
    terms = [(float(a) - b) for a, b in zip(row, rep) if a.strip()]
    if metric == "l2":
        return math.sqrt(sum(t * t for t in terms))
    return sum(abs(t) for t in terms)


@pytest.mark.parametrize("policy", ["mask", "impute"])
@pytest.mark.parametrize("metric", ["l2", "l1"])
def test_theorem2_with_missing_cells_raw_leakage_equals_bundle_leakage(sparse_csv, policy, metric):
    result, bundle = _signed(sparse_csv, clusters=16, delta_fraction=0.4, missing=policy, metric=metric)
    rows, sexes = _raw_rows(sparse_csv)
    served = [(r, s) for r, s in zip(rows, sexes) if any(c.strip() for c in r)]
    assert len(rows) - len(served) == bundle.metrics["rows_all_missing_dropped"]
    classes = list(bundle.classes)
    # The mapping on raw rows: the device's own lookup, then the signed integer table.
    counts = np.zeros((len(classes), len(bundle.inputs)))
    psi = []
    for row, sex in served:
        c = bundle.lookup(row)
        psi.append(c)
        counts[classes.index(sex), c] += 1
    assert psi == result.alphabet.labels.tolist()  # the builder's psi is the device's, blanks included
    q = np.zeros((len(bundle.inputs), len(bundle.outputs)))
    for c, (idx, w) in enumerate(zip(bundle.index, bundle.weight)):
        q[c, list(idx)] = np.array(w) / 2 ** bundle.bits
    assert leakage_bits(counts / counts.sum(), q) == pytest.approx(bundle.metrics["leakage_bits"], abs=1e-9)
    # Distortion on raw rows over observed cells, recomputed by hand: as declared, within Delta + r.
    outputs = [[float(v) for v in out] for out in bundle.output_cells]
    measured = np.mean([sum(q[c, j] * _observed_distance(row, outputs[j], metric) for j in np.nonzero(q[c])[0])
                        for (row, _), c in zip(served, psi)])
    assert measured == pytest.approx(bundle.metrics["measured_distortion"], rel=1e-9)
    assert measured <= bundle.metrics["delta_plus_r"] + 1e-9


def test_impute_policy_records_the_column_training_median(sparse_csv):
    _, bundle = _signed(sparse_csv, clusters=8, delta_fraction=0.5, missing="impute")
    rows, _ = _raw_rows(sparse_csv)
    served = [r for r in rows if any(c.strip() for c in r)]
    for k, feature in enumerate(bundle.features):
        median = statistics.median(float(r[k]) for r in served if r[k].strip())
        assert feature.missing == "impute" and feature.fill == round(median)
        row = [r for r in served if r[k].strip() == "" and sum(1 for c in r if c.strip()) >= 2][:1]
        for r in row:  # a blank cell looks up exactly as the recorded statistic typed in
            filled = list(r)
            filled[k] = str(feature.fill)
            assert bundle.lookup(r) == bundle.lookup(filled)


def test_schema_round_trips_through_the_signed_bundle(sparse_csv, tmp_path):
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps({"columns": {
        "bigb": {"type": "integer", "min": 0, "max": 9, "missing": True, "missing_token": "NA"},
        "rap": {"type": "real", "min": 0.5, "max": 5.5}}}))
    declared = declare(read_schema_file(schema_file), ["1:6", "jazz=1:5"])
    result, bundle = _signed(sparse_csv, clusters=8, delta_fraction=0.5, declared=declared)
    by_name = {f.name: f for f in bundle.features}
    assert (by_name["bigb"].min, by_name["bigb"].max, by_name["bigb"].missing_token) == (0, 9, "NA")
    assert (by_name["rap"].min, by_name["rap"].max, by_name["rap"].integer) == (0.5, 5.5, False)
    assert (by_name["jazz"].min, by_name["jazz"].max) == (1, 5)
    assert (by_name["oper"].min, by_name["oper"].max, by_name["oper"].integer) == (1, 6, True)
    assert all(f.missing == "mask" for f in bundle.features)
    # The resolved schema written out (--schema-out) reads back to the same columns.
    again = tmp_path / "again.json"
    again.write_text(json.dumps(schema_json(result.alphabet.schema)))
    rebuilt = resolve(result.dataset.features, result.dataset.public, declare(read_schema_file(again)))
    assert [(c.name, c.integer, c.min, c.max, c.missing, c.missing_token) for c in rebuilt] == \
        [(c.name, c.integer, c.min, c.max, c.missing, c.missing_token) for c in result.alphabet.schema]


@pytest.mark.parametrize("spec, words", [({"min": 0, "max": "9"}, "finite numbers"), ({"min": -1e101, "max": 9}, "within")])
def test_a_schema_file_domain_beyond_what_devices_read_is_refused(tmp_path, spec, words):
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps({"columns": {"bigb": {"type": "integer", **spec}}}))
    with pytest.raises(DatasetError, match=words):
        read_schema_file(schema_file)


def _ratings_without_fives(tmp_path):
    rng = np.random.default_rng(4)
    path = tmp_path / "no_fives.csv"
    lines = ["a,b,c,sex"]
    for i in range(200):
        cells = [str(v) if rng.random() > 0.15 else "" for v in rng.integers(1, 5, size=3)]  # 1..4 only
        lines.append(",".join(cells + ["x" if i % 2 else "y"]))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def declared_bundle(tmp_path_factory):
    """Trained on ratings 1-4 only, declared on 1:5."""
    path = _ratings_without_fives(tmp_path_factory.mktemp("nf"))
    return _signed(path, clusters=6, delta_fraction=0.5, declared=declare(domains=["1:5"]))[1]


def test_value_in_declared_domain_but_unseen_in_training_is_accepted(declared_bundle):
    assert all(f.max == 5 for f in declared_bundle.features)
    assert declared_bundle.lookup(["5", "5", ""]) in range(len(declared_bundle.inputs))


def test_cell_outside_the_declared_domain_is_a_typed_device_error(declared_bundle):
    bundle = declared_bundle
    for bad in ("6", "0", "4.5"):
        with pytest.raises(InputError) as info:
            bundle.sanitize(["2", bad, "3"])
        assert bad not in str(info.value)


def test_inferred_domain_is_the_observed_range(tmp_path):
    _, bundle = _signed(_ratings_without_fives(tmp_path), clusters=6, delta_fraction=0.5)
    assert all((f.min, f.max) == (1, 4) for f in bundle.features)
    with pytest.raises(InputError):
        bundle.lookup(["5", "", ""])


@pytest.mark.parametrize("domains, words", [
    (["2:4"], "outside the declared domain"), (["a=1:5"], None), (["zz=1:5"], "unknown public column"),
    (["1:x"], "LO:HI"), (["5:1"], "LO <= HI"), (["1:5", "0:9"], "given twice"), (["a=1.5:5"], "whole-number"),
    (["a=1:1e101"], "within"),
])
def test_bad_declarations_are_dataset_errors(tmp_path, domains, words):
    path = _ratings_without_fives(tmp_path)
    if words is None:
        _signed(path, clusters=6, delta_fraction=0.5, declared=declare(domains=domains))
        return
    with pytest.raises(DatasetError, match=words):
        _signed(path, clusters=6, delta_fraction=0.5, declared=declare(domains=domains))
