"""``privmap build --utility ranking`` as outside checks call it, and ``sanitize`` of its bundles:
one released row of scores per input row under the input's header, every cell a number."""
from __future__ import annotations

import csv
import json

import pytest

from privmap.offline.data import synthetic_ratings


@pytest.fixture(scope="module")
def ratings_csv(tmp_path_factory):
    drawn = synthetic_ratings(700, 60, rank=3, density=0.15, rng=11, shift=0.8, popularity=1.5, taste=1.0)
    return drawn.write_csv(tmp_path_factory.mktemp("rank") / "ratings.csv", private="gender")


@pytest.fixture(scope="module")
def ranking_bundle(run, keys, ratings_csv, tmp_path_factory):
    out = tmp_path_factory.mktemp("rank-bundle") / "rank.bundle"
    result = run("build", ratings_csv, "--private", "gender", "--domain", "1:5", "--utility", "ranking",
                 "--clusters", "auto", "--target-auc", "0.55", "--seed", "3", "--key", keys / "private.pem",
                 "--out", out, "--holdout-folds", "3", "--factors", "8")
    return out, result


def test_the_pinned_build_form_writes_a_ranking_bundle_inspect_describes(run, ranking_bundle):
    out, result = ranking_bundle
    assert "ranking: 60 item columns" in result.output
    info = json.loads(run("inspect", out, "--json").stdout)
    assert info["mechanism"] == "ranking"
    assert isinstance(info["clusters"], int) and info["clusters"] >= 1
    assert isinstance(info["holdout_leakage_bits"], float)
    assert len(info["features"]) == 8 and info["metrics"]["score_rank"] == 8


def test_sanitize_releases_one_row_of_scores_per_user_under_the_input_header(run, keys, ranking_bundle,
                                                                            ratings_csv, tmp_path):
    out, _ = ranking_bundle
    with open(ratings_csv, newline="") as handle:
        rows = list(csv.reader(handle))
    users = tmp_path / "users.csv"
    with open(users, "w", newline="") as handle:
        csv.writer(handle).writerows([rows[0], *rows[1:41]])          # the private column kept: it is ignored
    released = tmp_path / "released.csv"
    run("sanitize", out, "--trusted", keys / "public.pem", users, released)
    with open(released, newline="") as handle:
        got = list(csv.reader(handle))
    assert got[0] == rows[0][:-1]
    assert len(got) == 41
    for row in got[1:]:
        assert len(row) == 60 and all(cell != "" for cell in row)
        [float(cell) for cell in row]


def test_the_ranking_mode_refuses_options_it_cannot_honour(run, keys, ratings_csv, tmp_path):
    for extra, says in ((["--metric", "l1"], "l2 metric"), (["--mechanism", "exact"], "quantized mechanism"),
                        (["--missing", "impute"], "--missing mask"), (["--factors", "1"], "2..64")):
        result = run("build", ratings_csv, "--private", "gender", "--domain", "1:5", "--utility", "ranking",
                     "--clusters", "8", "--delta-fraction", "0.5", "--key", keys / "private.pem",
                     "--out", tmp_path / "x.bundle", *extra, ok=False)
        assert result.exit_code == 1 and says in result.output
        assert not (tmp_path / "x.bundle").exists()


def test_the_pinned_form_on_partitioned_ratings_gives_the_one_file_bundle(run, keys, ratings_csv, ranking_bundle,
                                                                          tmp_path):
    """The same users in three parts, in order: the score space fitted on the sample (every row),
    the users embedded on the workers and the points mapped in core give the one file's search,
    mapping and new-user figures."""
    pytest.importorskip("distributed")
    header, *lines = ratings_csv.read_text().splitlines(keepends=True)
    parts = tmp_path / "parts"
    parts.mkdir()
    for i in range(3):
        (parts / f"p{i}.csv").write_text(header + "".join(lines[i * len(lines) // 3:(i + 1) * len(lines) // 3]))
    out = tmp_path / "parts.bundle"
    run("build", parts, "--private", "gender", "--domain", "1:5", "--utility", "ranking", "--clusters", "auto",
        "--target-auc", "0.55", "--seed", "3", "--key", keys / "private.pem", "--out", out, "--holdout-folds", "3",
        "--factors", "8", "--workers", "2")
    one, got = (json.loads(run("inspect", path, "--json").stdout) for path in (ranking_bundle[0], out))
    for figure in ("clusters", "outputs", "holdout_leakage_bits", "holdout_attacker_auc", "holdout_attacker_auc_high",
                   "leakage_bits", "distortion"):
        assert got[figure] == one[figure], figure


def test_the_robust_certificate_covers_a_ranking_table(run, keys, ratings_csv, tmp_path):
    result = run("build", ratings_csv, "--private", "gender", "--domain", "1:5", "--utility", "ranking",
                 "--clusters", "8", "--delta-fraction", "0.5", "--factors", "4", "--holdout-folds", "0",
                 "--robust", "0.95", "--key", keys / "private.pem", "--out", tmp_path / "r.bundle", "--json")
    summary = json.loads(result.stdout)
    assert summary["robust_confidence"] == 0.95
    assert summary["robust_leakage_bits"] >= summary["leakage_bits"]


def test_the_per_output_limit_holds_for_a_ranking_table(run, keys, ratings_csv, tmp_path):
    result = run("build", ratings_csv, "--private", "gender", "--domain", "1:5", "--utility", "ranking",
                 "--clusters", "8", "--delta-fraction", "0.5", "--factors", "4", "--holdout-folds", "0",
                 "--max-output-leakage", "0.5", "--key", keys / "private.pem", "--out", tmp_path / "l.bundle", "--json")
    assert json.loads(result.stdout)["max_output_leakage_bits"] <= 0.5 + 1e-9


def test_several_private_columns_build_a_joint_ranking_bundle_that_sanitizes_rows_carrying_them(run, keys, tmp_path):
    drawn = synthetic_ratings(600, 40, rank=3, density=0.2, classes=4, rng=5, taste=1.0)
    path = tmp_path / "joint.csv"
    with open(path, "w", newline="") as handle:
        w = csv.writer(handle, lineterminator="\n")
        w.writerow([*drawn.items, "gender", "band"])
        rated = [(row, a) for row, a in zip(drawn.ratings, drawn.private) if (row == row).any()]
        for row, a in rated:
            w.writerow(["" if v != v else int(v) for v in row] + ["FM"[a % 2], f"b{a // 2}"])
    out = tmp_path / "joint.bundle"
    summary = json.loads(run("build", path, "--private", "gender,band", "--domain", "1:5", "--utility", "ranking",
                             "--clusters", "8", "--delta-fraction", "0.5", "--factors", "4", "--holdout-folds", "2",
                             "--key", keys / "private.pem", "--out", out, "--json").stdout)
    assert set(summary["leakage_bits_by_column"]) == {"gender", "band"}
    released = tmp_path / "released.csv"
    run("sanitize", out, "--trusted", keys / "public.pem", path, released)
    with open(released, newline="") as handle:
        got = list(csv.reader(handle))
    assert got[0] == list(drawn.items) and len(got) == len(rated) + 1


def test_evaluate_with_the_training_file_reports_the_ranking_value_and_no_rating_error_of_scores(run, keys, tmp_path):
    drawn = synthetic_ratings(1500, 60, rank=3, density=0.15, rng=13, shift=0.8, popularity=1.5, taste=1.0)
    train, test = tmp_path / "train.csv", tmp_path / "new.csv"
    for path, rows in ((train, slice(0, 1050)), (test, slice(1050, None))):
        with open(path, "w", newline="") as handle:
            w = csv.writer(handle, lineterminator="\n")
            w.writerow([*drawn.items, "gender"])
            for row, a in zip(drawn.ratings[rows], drawn.private[rows]):
                w.writerow(["" if v != v else int(v) for v in row] + [drawn.classes[a]])
    out = tmp_path / "rank.bundle"
    run("build", train, "--private", "gender", "--domain", "1:5", "--utility", "ranking", "--clusters", "32",
        "--delta-fraction", "0.3", "--factors", "8", "--holdout-folds", "0", "--key", keys / "private.pem", "--out", out)
    report = json.loads(run("evaluate", out, "--trusted", keys / "public.pem", test, "--train", train,
                            "--private", "gender", "--json").stdout)
    assert report["value_kept"] is None                        # scores are not ratings: no RMSE to keep
    assert report["ranking_value_kept"] > 0.0                  # the lists beat popularity
    assert 0.0 <= report["attacker_auc"] <= 1.0 and 0.0 <= report["exposed_2x"] <= 1.0
    text = run("evaluate", out, test, "--train", train, "--private", "gender", "--repeats", 2).output
    assert "by rating error - (the bundle releases scores, not ratings)" in text
