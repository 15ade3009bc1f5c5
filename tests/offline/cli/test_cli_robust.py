"""``build --robust CONFIDENCE`` (the pinned form), inspect --json, and evaluate's drift check."""
import csv
import json

import numpy as np
import pytest

from privmap.offline.bundle._inspect import read_bytes, read_unverified
from privmap.offline.solvers import robust_figures_of_table


def _build(run, ratings_csv, keys, out, *extra):
    return run("build", ratings_csv, "--private", "gender", "--clusters", 12, "--delta-fraction", 0.5,
               "--key", keys / "private.pem", "--out", out, "--holdout-folds", 0, "--issued-at", 1_700_000_000,
               "--valid-days", 36500, *extra)


@pytest.fixture(scope="module")
def robust_bundle(tmp_path_factory, keys, ratings_csv, run):
    out = tmp_path_factory.mktemp("robust") / "r.bundle"
    summary = json.loads(_build(run, ratings_csv, keys, out, "--robust", 0.9, "--json").stdout)
    return out, summary


@pytest.fixture(scope="module")
def plain_bundle(tmp_path_factory, keys, ratings_csv, run):
    out = tmp_path_factory.mktemp("plain") / "p.bundle"
    _build(run, ratings_csv, keys, out)
    return out


def _dense(payload):
    table = payload["table"]
    q = np.zeros((len(payload["prior"][0]), len(payload["outputs"])))
    for c, (index, weight) in enumerate(zip(table["index"], table["weight"])):
        q[c, index] = np.asarray(weight, float) / 2 ** table["bits"]
    return q


def test_build_robust_declares_a_certified_bound_of_the_shipped_table(robust_bundle, keys, run):
    out, summary = robust_bundle
    inspected = json.loads(run("inspect", out, "--json").stdout)
    assert inspected["robust_confidence"] == 0.9 == summary["robust_confidence"]
    assert inspected["robust_source"] == "declared"
    assert inspected["robust_leakage_bits"] == pytest.approx(summary["robust_leakage_bits"], rel=1e-11)  # 12 digits
    assert inspected["robust_leakage_bits"] >= inspected["leakage_bits"]
    payload, _ = read_unverified(read_bytes(out))
    recomputed = robust_figures_of_table(payload["prior"], _dense(payload), payload["metrics"]["n"], 0.9)
    assert recomputed["robust_leakage_bits"] == pytest.approx(inspected["robust_leakage_bits"], rel=1e-9)
    verified = json.loads(run("verify", out, "--trusted", keys / "public.pem", "--json").stdout)
    assert verified["ok"] is True


def test_inspect_computes_the_robust_bound_at_the_default_confidence_without_robust(plain_bundle, run):
    inspected = json.loads(run("inspect", plain_bundle, "--json").stdout)
    assert inspected["robust_source"] == "computed at the default confidence"
    assert inspected["robust_confidence"] == 0.95
    assert inspected["robust_leakage_bits"] >= inspected["leakage_bits"]
    assert "robust_leakage_bits" not in inspected["metrics"]
    assert "confidence set of priors" in run("inspect", plain_bundle).output


def test_robust_applies_only_to_table_mechanisms_and_a_confidence_in_the_open_unit_interval(
        ratings_csv, keys, run, tmp_path):
    bad = run("build", ratings_csv, "--private", "gender", "--mechanism", "funnel", "--disclosure-fraction", 0.5,
              "--robust", 0.9, "--key", keys / "private.pem", "--out", tmp_path / "f.bundle", ok=False)
    assert bad.exit_code == 1 and "--robust applies to" in bad.output + (bad.stderr or "")
    usage = run("build", ratings_csv, "--private", "gender", "--clusters", 4, "--delta-fraction", 0.5, "--robust", 1.5,
        "--key", keys / "private.pem", "--out", tmp_path / "x.bundle", ok=False)
    assert usage.exit_code == 2
    assert not (tmp_path / "f.bundle").exists() and not (tmp_path / "x.bundle").exists()


def test_evaluate_on_the_training_data_finds_it_inside_the_set(robust_bundle, ratings_csv, run):
    out, _ = robust_bundle
    report = json.loads(run("evaluate", out, ratings_csv, "--private", "gender", "--no-attacker", "--json").stdout)
    drift = report["drift"]
    assert drift["set_available"] is True and drift["confidence"] == 0.9
    assert drift["outside"] == [] and drift["drifted"] == []
    assert drift["cluster_frequency"]["distance"] < 1e-9
    low, high = drift["leakage_interval_bits"]
    assert low <= drift["leakage_corrected_bits"] <= high
    assert drift["within_robust_bound"] is True


def test_evaluate_flags_clusters_whose_labels_drifted(robust_bundle, ratings_csv, run, tmp_path):
    """Every user relabelled by one rule (gender := whether the first rating is 3): the posteriors
    move far beyond sampling noise, and the drift check says so."""
    out, _ = robust_bundle
    with open(ratings_csv, newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    g = header.index("gender")
    for row in body:
        row[g] = "male" if row[0] == "3" else "female"
    shifted = tmp_path / "shifted.csv"
    with open(shifted, "w", newline="") as fh:
        csv.writer(fh).writerows([header, *body])
    report = json.loads(run("evaluate", out, shifted, "--private", "gender", "--no-attacker", "--json").stdout)
    assert len(report["drift"]["drifted"]) >= 1
    human = run("evaluate", out, shifted, "--private", "gender", "--no-attacker").output
    assert "drift check" in human and "rebuild" in human


def test_evaluate_reports_the_bundles_per_output_epsilon_as_inspect_does(robust_bundle, ratings_csv, run):
    out, _ = robust_bundle
    report = json.loads(run("evaluate", out, ratings_csv, "--private", "gender", "--no-attacker", "--json").stdout)
    inspected = json.loads(run("inspect", out, "--json").output)
    assert report["declared"]["max_output_leakage_bits"] == inspected["max_output_leakage_bits"]
    assert report["declared"]["max_output_leakage_note"] == inspected["max_output_leakage_note"]
    human = run("evaluate", out, ratings_csv, "--private", "gender", "--no-attacker").output
    assert "per-output epsilon " in human
