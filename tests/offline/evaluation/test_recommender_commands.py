"""`privmap evaluate` and `privmap curve` report the service's recommender figures beside the attacker."""
import csv
import json
import math
import pathlib

import pytest

from privmap.offline.data import synthetic_ratings

KEYS = {"rmse_true", "rmse_released", "rmse_nothing", "value_kept", "ndcg_at_k_true", "ndcg_at_k_released",
        "ndcg_at_k_nothing", "recall_at_k_true", "recall_at_k_released", "recall_at_k_nothing", "k",
        "heldout_users", "train_users", "hidden_ratings", "hidden_fraction", "factors", "model"}


@pytest.fixture(scope="module")
def sparse_csv(tmp_path_factory):
    s = synthetic_ratings(500, 24, density=0.3, rng=21)
    return s.write_csv(tmp_path_factory.mktemp("sparse") / "sparse.csv", private="group")


@pytest.fixture(scope="module")
def sparse_bundle(sparse_csv, keys, run, tmp_path_factory):
    out = tmp_path_factory.mktemp("b") / "sparse.bundle"
    run("build", sparse_csv, "--private", "group", "--clusters", 8, "--delta-fraction", 0.5, "--domain", "1:5",
        "--holdout-folds", 0, "--key", keys / "private.pem", "--out", out, "--issued-at", 1_700_000_000,
        "--valid-days", 36500)
    return out


def test_evaluate_measures_the_recommender_on_ratings_with_blank_cells(sparse_bundle, sparse_csv, run):
    report = json.loads(run("evaluate", sparse_bundle, sparse_csv, "--private", "group", "--json").stdout)
    r = report["recommender"]
    assert KEYS <= set(r)
    assert r["heldout_users"] == report["attacker"]["test_rows"] and r["k"] == 10
    assert r["rmse_true"] < r["rmse_nothing"]
    assert r["value_kept"] == pytest.approx((r["rmse_nothing"] - r["rmse_released"])
                                            / (r["rmse_nothing"] - r["rmse_true"]))
    assert 0.0 <= r["ndcg_at_k_released"] <= 1.0
    assert 0.0 <= report["attacker"]["after"]["roc_auc"] <= 1.0


def test_evaluate_prints_the_recommender_table_and_skips_it_when_told(sparse_bundle, sparse_csv, run):
    text = run("evaluate", sparse_bundle, sparse_csv, "--private", "group").output
    assert "value kept" in text and "their released rows" in text and "regularisation C" in text
    report = json.loads(run("evaluate", sparse_bundle, sparse_csv, "--private", "group", "--no-recommender",
                            "--no-attacker", "--json").stdout)
    assert "recommender" not in report


def test_evaluate_measures_complete_rows_only_when_asked(leaky_ratings_bundle, ratings_csv, run):
    plain = json.loads(run("evaluate", leaky_ratings_bundle, ratings_csv, "--private", "gender", "--no-attacker",
                           "--json").stdout)
    assert "recommender" not in plain
    asked = json.loads(run("evaluate", leaky_ratings_bundle, ratings_csv, "--private", "gender", "--no-attacker",
                           "--recommender", "--json").stdout)
    assert KEYS <= set(asked["recommender"])


@pytest.fixture(scope="module")
def leaky_ratings_bundle(ratings_bundle):
    return ratings_bundle(8, 0.3)


def test_curve_adds_the_recommender_columns_to_each_point(sparse_csv, run, tmp_path):
    out = tmp_path / "c.csv"
    report = json.loads(run("curve", sparse_csv, "--private", "group", "--domain", "1:5", "-k", "4",
                            "--deltas", "0.5", "--csv", out, "--png", tmp_path / "c.png", "--json").stdout)
    points = report["points"]
    assert len(points) == 2                                  # the mapping, then after the codebook step
    for p in points:
        assert p["rmse_released"] is not None and p["value_kept"] is not None
        assert p["rmse_true"] == points[0]["rmse_true"] and p["rmse_nothing"] == points[0]["rmse_nothing"]
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert math.isfinite(float(rows[0]["value_kept"])) and "ndcg_at_k_released" in rows[0]


def test_curve_reports_the_top_10_lists_beside_the_ratings(sparse_csv, run, tmp_path):
    written = ("--csv", tmp_path / "c.csv", "--png", tmp_path / "c.png")    # not the current folder
    result = run("curve", sparse_csv, "--private", "group", "--domain", "1:5", "-k", "4", "--deltas", "0.5", *written)
    assert "top-10 lists of unseen items: recall@10 of EASE on the true rows" in result.output
    points = json.loads(run("curve", sparse_csv, "--private", "group", "--domain", "1:5", "-k", "4",
                            "--deltas", "0.5", "--json", *written).stdout)["points"]
    for p in points:
        assert 0.0 <= p["ranking_recall_released"] <= 1.0 and p["ranking_value_kept"] is not None
        assert p["ranking_recall_popularity"] == points[0]["ranking_recall_popularity"]


def test_recommender_asked_of_the_exact_mechanism_is_an_error(toy_csv, run):
    result = run("curve", toy_csv(50, 0), "--private", "secret", "--mechanism", "exact", "--deltas", "0.5",
                 "--recommender", ok=False)
    assert result.exit_code == 1 and "--recommender" in result.output
    root = pathlib.Path(__file__).resolve().parents[3]
    result = run("evaluate", root / "tables" / "census-income-erasures.bundle", root / "data" / "census" / "census.csv",
                 "--private", "income", "--recommender", ok=False)
    assert result.exit_code == 1 and result.output.startswith("error: --recommender")
