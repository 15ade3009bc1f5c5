"""Per-output leakage on the command line: ``build --max-output-leakage`` and ``inspect``'s epsilon."""
import json
import math
import pathlib

import pytest

from privmap.offline.bundle._inspect import read_bytes, read_unverified

TABLES = pathlib.Path(__file__).resolve().parents[3] / "tables"


def epsilon_by_hand(payload):
    """max over outputs of positive mass and classes of |log2 p(a|c^) - log2 p(a)|, in plain Python."""
    prior = payload["prior"]
    total = sum(map(sum, prior))
    bits = payload["table"]["bits"]
    joint = {}
    for c, (index, weight) in enumerate(zip(payload["table"]["index"], payload["table"]["weight"])):
        for j, w in zip(index, weight):
            for a, row in enumerate(prior):
                joint[a, j] = joint.get((a, j), 0.0) + row[c] / total * w / 2 ** bits
    worst = 0.0
    for j in {j for _, j in joint}:
        mass = sum(joint.get((a, j), 0.0) for a in range(len(prior)))
        for a, row in enumerate(prior):
            if mass > 0:
                p_a = sum(row) / total
                post = joint.get((a, j), 0.0) / mass
                worst = max(worst, math.inf if post == 0 else abs(math.log2(post / p_a)))
    return worst


def payload_of(path):
    return read_unverified(read_bytes(path))[0]


@pytest.fixture(scope="module")
def limited(tmp_path_factory, keys, ratings_csv, run):
    out = tmp_path_factory.mktemp("eps") / "limited.bundle"
    built = json.loads(run("build", ratings_csv, "--private", "gender", "--clusters", 12, "--delta-fraction", 0.5,
                           "--max-output-leakage", 0.25, "--holdout-folds", 0, "--key", keys / "private.pem",
                           "--out", out, "--json").stdout)
    return out, built


def test_a_limited_build_ships_a_table_within_the_limit(limited, run):
    out, built = limited
    inspected = json.loads(run("inspect", out, "--json").output)
    assert inspected["max_output_leakage_bits"] == pytest.approx(built["max_output_leakage_bits"], rel=1e-11)
    assert inspected["metrics"]["max_output_leakage_limit_bits"] == 0.25
    assert "declared" in inspected["max_output_leakage_note"]
    by_hand = epsilon_by_hand(payload_of(out))
    assert by_hand <= 0.25
    assert inspected["max_output_leakage_bits"] == pytest.approx(by_hand, abs=1e-9)
    assert "codebook_iterations" not in inspected["metrics"]          # the step would re-solve without the limit


def test_a_limited_bundle_verifies_as_a_device_would(limited, keys, run):
    verified = json.loads(run("verify", limited[0], "--trusted", keys / "public.pem", "--json").output)
    assert verified["ok"] is True


def test_an_unlimited_build_reports_its_epsilon_and_keeps_the_payload_keys_of_before(tmp_path, keys, ratings_csv,
                                                                                       run):
    out = tmp_path / "free.bundle"
    built = json.loads(run("build", ratings_csv, "--private", "gender", "--clusters", 12, "--delta-fraction", 0.5,
                           "--holdout-folds", 0, "--key", keys / "private.pem", "--out", out, "--json").stdout)
    inspected = json.loads(run("inspect", out, "--json").output)
    by_hand = epsilon_by_hand(payload_of(out))
    assert inspected["max_output_leakage_bits"] == pytest.approx(by_hand, abs=1e-9)
    assert built["max_output_leakage_bits"] == pytest.approx(by_hand, abs=1e-9)
    assert "computed" in inspected["max_output_leakage_note"]
    assert not any(k.startswith("max_output_leakage") for k in inspected["metrics"])


@pytest.mark.parametrize("name", ["ssi2012-gender-k64.bundle", "census-income-erasures.bundle"])
def test_inspect_computes_epsilon_for_bundles_that_predate_the_key(name, run):
    payload = payload_of(TABLES / name)
    assert "max_output_leakage_bits" not in payload["metrics"]
    inspected = json.loads(run("inspect", TABLES / name, "--json").output)
    by_hand = epsilon_by_hand(payload)
    human = run("inspect", TABLES / name).output
    if math.isinf(by_hand):       # an output of positive mass rules a class out: reported as null, with why
        assert inspected["max_output_leakage_bits"] is None
        assert inspected["max_output_leakage_note"].startswith("unbounded: output ")
        assert "per-output leakage: -; unbounded: output " in human
        return
    assert inspected["max_output_leakage_bits"] == pytest.approx(by_hand, abs=1e-9)
    assert "computed" in inspected["max_output_leakage_note"]
    assert f"per-output leakage: {inspected['max_output_leakage_bits']:.6f} bits" in human


def test_a_limit_below_what_the_budget_allows_is_one_error_line(tmp_path, keys, ratings_csv, run):
    result = run("build", ratings_csv, "--private", "gender", "--clusters", 12, "--delta-fraction", 0.5,
                 "--max-output-leakage", 0.001, "--holdout-folds", 0, "--key", keys / "private.pem",
                 "--out", tmp_path / "x.bundle", ok=False)
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1 and lines[-1].startswith("error: max output leakage 0.001 bits is infeasible")
    assert "smallest feasible limit at this budget is" in lines[-1]
    assert not (tmp_path / "x.bundle").exists()


def test_the_limit_is_refused_for_mechanisms_without_a_prior_table(tmp_path, keys, ratings_csv, run):
    result = run("build", ratings_csv, "--mechanism", "max-correlation", "--metric", "hamming", "--delta", 0.3,
                 "--max-output-leakage", 1.0, "--key", keys / "private.pem", "--out", tmp_path / "m.bundle",
                 ok=False)
    assert result.exit_code == 1
    assert "--max-output-leakage applies to the quantized and exact mechanisms" in result.stderr


@pytest.fixture(scope="module")
def categorical_csv(tmp_path_factory):
    """Colour and size, a secret that leans on colour; every colour holds both secrets."""
    path = tmp_path_factory.mktemp("cat") / "cat.csv"
    rows = ["colour,size,secret"] + [f"{c},{s},{k}" for c, s, k, n in
                                     [("red", "S", "yes", 30), ("red", "S", "no", 10), ("red", "L", "yes", 20),
                                      ("red", "L", "no", 5), ("blue", "S", "yes", 10), ("blue", "S", "no", 30),
                                      ("blue", "L", "yes", 8), ("blue", "L", "no", 25)] for _ in range(n)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_funnel_bundle_declares_epsilon_and_a_max_correlation_bundle_says_why_not(categorical_csv, keys,
                                                                                    tmp_path, run):
    funnel, maxcorr = tmp_path / "f.bundle", tmp_path / "m.bundle"
    run("build", categorical_csv, "--private", "secret", "--mechanism", "funnel", "--disclosure-fraction", 0.5,
        "--key", keys / "private.pem", "--out", funnel)
    info = json.loads(run("inspect", funnel, "--json").stdout)
    assert info["max_output_leakage_bits"] == pytest.approx(epsilon_by_hand(payload_of(funnel)), abs=1e-9)
    assert "declared" in info["max_output_leakage_note"]
    run("build", categorical_csv, "--public", "colour", "--mechanism", "max-correlation", "--metric", "hamming",
        "--delta", 0.2, "--key", keys / "private.pem", "--out", maxcorr)
    info = json.loads(run("inspect", maxcorr, "--json").stdout)
    assert info["max_output_leakage_bits"] is None
    assert info["max_output_leakage_note"].startswith("not computable")


def test_at_the_perfect_privacy_budget_a_limited_build_ships_within_the_limit(tmp_path, keys, ratings_csv, run):
    # the perfect-privacy table is kept when its rounding meets the limit, else re-solved under it
    out = tmp_path / "p.bundle"
    run("build", ratings_csv, "--private", "gender", "--clusters", 12, "--delta-fraction", 1.0,
        "--max-output-leakage", 0.01, "--holdout-folds", 0, "--key", keys / "private.pem", "--out", out)
    inspected = json.loads(run("inspect", out, "--json").stdout)
    assert inspected["provenance"]["solver"] in ("perfect-privacy-lp", "cvxpy-clarabel")
    assert inspected["leakage_bits"] < 1e-4
    assert epsilon_by_hand(payload_of(out)) <= 0.01


def test_a_zero_limit_is_a_usage_error(tmp_path, keys, ratings_csv, run):
    result = run("build", ratings_csv, "--private", "gender", "--clusters", 12, "--delta-fraction", 1.0,
                 "--max-output-leakage", 0, "--key", keys / "private.pem", "--out", tmp_path / "z.bundle", ok=False)
    assert result.exit_code == 2 and "--max-output-leakage" in result.stderr


def test_a_build_whose_output_rules_a_class_out_says_which_as_inspect_does(tmp_path, keys, run):
    rows = ["x,y,job"] + [f"{i % 20},{i // 20},{'ab'[i % 2]}" for i in range(400)] + ["19,19,rare"] * 3
    data = tmp_path / "rare.csv"
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "rare.bundle"
    args = ("build", data, "--private", "job", "--clusters", 24, "--delta-fraction", 0.5, "--holdout-folds", 0,
            "--key", keys / "private.pem", "--out", out)
    built = json.loads(run(*args, "--json").stdout)
    assert math.isinf(epsilon_by_hand(payload_of(out)))
    inspected = json.loads(run("inspect", out, "--json").output)
    assert built["max_output_leakage_bits"] is None is inspected["max_output_leakage_bits"]
    assert built["max_output_leakage_note"] == inspected["max_output_leakage_note"]
    assert built["max_output_leakage_note"].startswith("unbounded: output ")
    assert "class 'rare'" in built["max_output_leakage_note"]
    assert f"per-output leakage: {built['max_output_leakage_note']}\n" in run(*args).output
