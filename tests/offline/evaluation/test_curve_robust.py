"""`privmap curve` beside the average-case points: each table's certified worst case over the
confidence set (issue 27)."""
import csv
import json

import pytest


@pytest.fixture(scope="module")
def small_ratings(tmp_path_factory, ratings_csv):
    """The first 600 rows of the ratings, 6 genres."""
    with open(ratings_csv, newline="") as f:
        rows = list(csv.reader(f))
    keep = list(range(6)) + [len(rows[0]) - 1]
    path = tmp_path_factory.mktemp("d") / "ratings6.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([[r[i] for i in keep] for r in rows[:601]])
    return path


def test_curve_certifies_each_point_above_its_in_sample_leakage_and_more_so_at_higher_confidence(
        small_ratings, tmp_path, run):
    def points(confidence):
        out = run("curve", small_ratings, "--private", "gender", "--deltas", "0,0.5", "--clusters", "6",
                  "--no-attacker", "--robust", confidence, "--png", tmp_path / "c.png", "--csv", tmp_path / "c.csv",
                  "--json").stdout
        report = json.loads(out)
        assert report["robust_confidence"] == confidence
        return report["points"]

    low, high = points(0.5), points(0.99)
    for p, q in zip(low, high):
        assert p["robust_leakage_bits"] >= p["leakage_bits"]
        assert q["robust_leakage_bits"] >= p["robust_leakage_bits"]      # a wider set certifies no less
    assert any(q["robust_leakage_bits"] > p["robust_leakage_bits"] for p, q in zip(low, high))
