"""`privmap curve` beside the average-case points: each table's certified worst case over the
confidence set."""
import json

import pytest


@pytest.fixture(scope="module")
def small_ratings(ratings_head):
    return ratings_head(6)


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
