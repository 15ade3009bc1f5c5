"""The evaluation suite: `privmap evaluate`, MappingView, attackers and plug-in bias."""
import json
import math

import numpy as np
import pytest

from privmap.offline import BuildError, mutual_information_bits
from privmap.offline.data import joint_prior
from privmap.offline.measures import permutation_bias, prior_mismatch_bounds
from privmap.offline.mechanisms.table import evaluate_view, format_summary, view_from_table


def stdout_json(result):
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def private_bundle(ratings_bundle):
    """A perfectly private bundle (Delta at the perfect-privacy distortion) on the ratings."""
    return ratings_bundle(12, 1.0)


@pytest.fixture(scope="module")
def leaky_bundle(ratings_bundle):
    return ratings_bundle(12, 0.3)


# ----------------------------------------------------------------------------- the command

def test_attacker_accuracy_on_a_perfectly_private_bundle_is_within_sampling_error_of_the_majority_class(
        private_bundle, keys, ratings_csv, run):
    report = stdout_json(run("evaluate", private_bundle, ratings_csv, "--private", "gender",
                             "--trusted", keys / "public.pem", "--json"))
    assert report["signature_verified"] is True
    assert report["leakage_bits"] < 1e-5
    after = report["attacker"]["after"]
    n_test = report["attacker"]["test_rows"]
    p = after["majority"]
    three_sigma = 3 * math.sqrt(p * (1 - p) / n_test)
    assert abs(after["accuracy"] - p) <= three_sigma
    # Balanced accuracy and AUC of an uninformed guess are 1/2, within sampling error.
    n1 = round(n_test * min(p, 1 - p))
    n0 = n_test - n1
    auc_sigma = math.sqrt((n0 + n1 + 1) / (12 * n0 * n1))
    assert abs(after["roc_auc"] - 0.5) <= 3 * auc_sigma
    assert abs(after["balanced_accuracy"] - 0.5) <= 3 * math.sqrt(0.25 / n1)
    # The MAP adversary who knows the mapping does no better than the majority class either.
    assert report["map_accuracy_after"] == pytest.approx(report["majority"], abs=1e-6)
    # Before the mapping the attacker beats the majority class on these ratings.
    assert report["attacker"]["before"]["roc_auc"] > after["roc_auc"] + 0.03


def test_evaluate_json_reports_the_leakage_and_distortion_the_bundle_declares_on_its_training_data(
        leaky_bundle, ratings_csv, run):
    report = stdout_json(run("evaluate", leaky_bundle, ratings_csv, "--private", "gender", "--json"))
    declared = stdout_json(run("inspect", leaky_bundle, "--json"))
    for key in ("leakage_bits", "distortion", "delta", "clusters"):
        assert key in report
    assert report["signature_verified"] is False
    assert report["leakage_bits"] == pytest.approx(declared["leakage_bits"], abs=1e-9)
    assert report["distortion"] == pytest.approx(declared["metrics"]["measured_distortion"], rel=1e-9)
    # the codebook step prices the table by raw rows, so the declared distortion is the one on the data
    assert report["distortion"] == pytest.approx(declared["distortion"], rel=1e-9)
    assert report["distortion"] <= report["distortion_bound"] + 1e-9
    assert report["delta"] == pytest.approx(declared["delta"])
    assert report["clusters"] == declared["clusters"]
    assert 0 < report["leakage_bits"] < report["leakage_before_bits"]
    assert report["leakage_bias_bits"] >= 0
    assert report["map_accuracy_after"] <= report["map_accuracy_before"] + 1e-12


def test_evaluate_reports_declared_new_user_leakage_and_beats_the_constant_release(leaky_bundle, ratings_csv, run):
    report = stdout_json(run("evaluate", leaky_bundle, ratings_csv, "--private", "gender", "--json"))
    declared = stdout_json(run("inspect", leaky_bundle, "--json"))
    assert report["declared"]["leakage_bits"] == declared["leakage_bits"]
    assert report["declared"]["holdout_leakage_bits"] == declared["holdout_leakage_bits"]
    base = report["baselines"]
    assert report["distortion"] < base["constant"]["distortion"]
    assert report["distortion"] <= base["table_releasing_inputs"]["distortion"] + 1e-9
    rr = base["randomized_response"]
    assert [p["epsilon_per_feature"] for p in rr] == sorted(p["epsilon_per_feature"] for p in rr)
    assert all(b["distortion"] < a["distortion"] for a, b in zip(rr, rr[1:]))   # more epsilon, less noise


def test_evaluate_prints_a_human_table_by_default(leaky_bundle, ratings_csv, run):
    out = run("evaluate", leaky_bundle, ratings_csv, "--private", "gender").stdout
    assert "NOT verified" in out and "ROC AUC" in out and "leakage" in out


def test_evaluate_census_erasure_bundle_releases_only_erasures(tmp_path, keys, run):
    from pathlib import Path
    data = Path(__file__).resolve().parents[3] / "data" / "census" / "census.csv"
    out = tmp_path / "census.bundle"
    run("build", data, "--private", "income", "--mechanism", "exact", "--metric", "erasures", "--delta", 1,
        "--key", keys / "private.pem", "--out", out)
    report = stdout_json(run("evaluate", out, data, "--private", "income", "--json", "--permutations", 3))
    assert report["mechanism"] == "exact" and report["clusters"] == 24 and report["unmatched_rows"] == 0
    assert report["leakage_bits"] == pytest.approx(0.026, abs=0.002)
    assert report["distortion"] == pytest.approx(1.0, abs=1e-3) and report["r"] == 0.0


def _one_line_error(result, message):
    assert result.exit_code == 1
    err = result.stderr
    assert err.strip().count("\n") == 0 and err.startswith("error:") and message in err, err


def test_evaluate_fails_with_one_line_on_an_unknown_private_column(leaky_bundle, ratings_csv, run):
    _one_line_error(run("evaluate", leaky_bundle, ratings_csv, "--private", "nope", ok=False),
                    "unknown private column")


def test_evaluate_fails_with_one_line_on_classes_the_bundle_does_not_know(leaky_bundle, ratings_csv, tmp_path, run):
    text = ratings_csv.read_text().replace(",female\n", ",woman\n")
    other = tmp_path / "renamed.csv"
    other.write_text(text)
    _one_line_error(run("evaluate", leaky_bundle, other, "--private", "gender", ok=False),
                    "not among the bundle's classes")


def test_evaluate_fails_with_one_line_when_a_feature_is_missing(leaky_bundle, ratings_csv, tmp_path, run):
    lines = ratings_csv.read_text().splitlines()
    other = tmp_path / "fewer.csv"
    other.write_text("\n".join(",".join(line.split(",")[1:]) for line in lines) + "\n")
    _one_line_error(run("evaluate", leaky_bundle, other, "--private", "gender", ok=False),
                    "unknown public column")


def test_evaluate_refuses_a_file_that_is_not_a_bundle(tmp_path, ratings_csv, run):
    junk = tmp_path / "junk.bundle"
    junk.write_bytes(b"not a bundle at all")
    result = run("evaluate", junk, ratings_csv, "--private", "gender", ok=False)
    assert result.exit_code == 1 and result.stderr.strip().count("\n") == 0


# ----------------------------------------------------------------------------- the core

def _toy(n=4000, seed=1):
    """Binary A; 3 numeric symbols strongly tied to A."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    b = 2 * np.where(rng.random(n) < 0.8, a, 1 - a) + (rng.random(n) < 0.3)
    centers = np.array([[0.0], [1.0], [2.0], [3.0]])
    return centers[b], a, centers


def test_identity_mapping_leaks_exactly_the_input_information():
    X, a, centers = _toy()
    view = view_from_table("quantized", "l2", centers, centers, np.eye(4), ["x", "y"], ["f"], delta=0.0)
    s = evaluate_view(view, X, a, permutations=5).summary
    assert s["leakage_bits"] == pytest.approx(s["leakage_before_bits"], abs=1e-12)
    assert s["map_accuracy_after"] == pytest.approx(s["map_accuracy_before"])
    assert s["distortion"] == 0 and s["distortion_sampled"] == 0 and s["r"] == 0
    assert s["distortion_bound"] == 0.0
    assert "leakage" in format_summary(s)


def test_a_release_independent_of_the_input_leaves_the_attackers_at_the_majority_class():
    X, a, centers = _toy(n=6000)
    rng = np.random.default_rng(3)
    row = rng.dirichlet(np.ones(4))
    q = np.tile(row, (4, 1))                       # same output distribution for every input
    view = view_from_table("quantized", "l2", centers, centers, q, ["x", "y"], ["f"], delta=1.0)
    s = evaluate_view(view, X, a, permutations=5, seed=2).summary
    assert s["leakage_bits"] < 1e-12
    after = s["attacker"]["after"]
    n_test = s["attacker"]["test_rows"]
    p = after["majority"]
    assert abs(after["accuracy"] - p) <= 3 * math.sqrt(p * (1 - p) / n_test)
    assert abs(after["roc_auc"] - 0.5) <= 3 * math.sqrt((n_test + 1) / (12 * (n_test / 2) ** 2))
    assert s["attacker"]["before"]["accuracy"] > 0.7


def test_simulated_releases_follow_the_mapping():
    centers = np.array([[0.0], [1.0], [2.0]])
    q = np.array([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0], [0.1, 0.0, 0.9]])
    view = view_from_table("quantized", "l2", centers, centers, q, ["x", "y"], ["f"])
    rng = np.random.default_rng(0)
    for c in range(3):
        draws = view.release(np.full(40000, c), rng)
        freq = np.bincount(draws, minlength=3) / draws.size
        assert np.all(np.abs(freq - q[c]) < 0.01)
        assert np.all(freq[q[c] == 0] == 0)


def test_expected_distortion_matches_the_mean_of_simulated_releases():
    X, a, centers = _toy()
    q = np.full((4, 4), 0.25)
    view = view_from_table("quantized", "l1", centers, centers, q, ["x", "y"], ["f"])
    s = evaluate_view(view, X, a, attacker=False, permutations=2).summary
    per_input = np.abs(np.arange(4)[:, None] - np.arange(4)[None, :]).mean(axis=1)   # 1.5, 1, 1, 1.5
    expected = per_input[X[:, 0].astype(int)].mean()
    assert s["distortion"] == pytest.approx(expected, abs=1e-12)
    assert s["distortion_sampled"] == pytest.approx(expected, abs=0.05)


def test_exact_mechanism_counts_rows_it_cannot_look_up():
    inputs = [("a", "x"), ("b", "y")]
    outputs = [("a", "x"), ("b", "y"), (None, None)]
    q = np.array([[0.5, 0.0, 0.5], [0.0, 0.5, 0.5]])
    view = view_from_table("exact", "erasures", inputs, outputs, q, ["0", "1"], ["f", "g"])
    public = np.array([("a", "x"), ("b", "y"), ("c", "z")] * 10, dtype=object)
    private = np.array([0, 1, 0] * 10)
    s = evaluate_view(view, public, private, permutations=2).summary
    assert s["unmatched_rows"] == 10 and s["rows"] == 20
    assert s["distortion"] == pytest.approx(1.0)   # half the mass on two erasures


def test_evaluate_refuses_a_mapping_whose_rows_are_not_distributions():
    centers = np.array([[0.0], [1.0]])
    with pytest.raises(BuildError):
        view_from_table("quantized", "l2", centers, centers, np.array([[0.5, 0.4], [0, 1]]), ["x", "y"], ["f"])


def test_permutation_bias_is_near_zero_on_large_data_and_positive_on_small_data():
    rng = np.random.default_rng(0)
    big = rng.integers(0, 2, 50000), rng.integers(0, 8, 50000)
    small = rng.integers(0, 2, 60), rng.integers(0, 20, 60)
    bias_big, _ = permutation_bias(big[0], big[1], 2, 8, permutations=5)
    bias_small, _ = permutation_bias(small[0], small[1], 2, 20, permutations=5)
    assert bias_big < 1e-3
    assert bias_small > 0.05
    # The plug-in estimate of independent data is of the order of its bias.
    plug_in = mutual_information_bits(joint_prior(small[0], small[1], 2, 20))
    assert plug_in < 3 * bias_small


def test_prior_mismatch_bound_shrinks_with_more_samples_and_says_when_vacuous():
    few = prior_mismatch_bounds(100, 2, 50, d_max=3.0)
    many = prior_mismatch_bounds(10**8, 2, 4, d_max=3.0)
    assert few["vacuous"] and not many["vacuous"]
    assert many["l1_radius"] < few["l1_radius"]
    assert many["distortion_bound"] == pytest.approx(3.0 * many["l1_radius"])


def test_the_attacker_fits_each_distinct_released_row_once_weighted_by_its_count_to_the_same_model():
    """Released rows of a quantized table repeat; fitting the distinct (row, class) pairs with their
    counts as weights must give the model the rows themselves give (a sum over rows either way)."""
    from sklearn.linear_model import LogisticRegression

    from privmap.offline._attacker import _distinct_weighted, encode_features, logistic_attack
    rng = np.random.default_rng(6)
    points = rng.integers(1, 6, size=(12, 4)).astype(float)
    X = points[rng.integers(0, 12, 600)]
    y = (rng.random(600) < 0.3 + 0.1 * X[:, 0]).astype(np.int64)
    Xd, yd, w = _distinct_weighted(X, y)
    assert w is not None and Xd.shape[0] <= 24 and w.sum() == 600
    test = points[rng.integers(0, 12, 200)]
    attack = logistic_attack(X, y, test, rng.integers(0, 2, 200), 2)
    Xtr, Xte = encode_features(X, test, False)
    want = LogisticRegression(C=attack.regularisation, max_iter=2000, random_state=0).fit(Xtr, y).predict_proba(Xte)
    assert np.allclose(attack.scores, want, atol=1e-4)
    assert _distinct_weighted(rng.normal(size=(50, 3)), y[:50])[2] is None     # nothing to merge: as given
