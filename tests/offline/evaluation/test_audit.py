"""evaluate --train: a bundle audited from outside, the operator's training users beside new ones."""
import csv
import json

import numpy as np
import pytest

ATTACKERS = ("bayes", "boosting", "logistic")


@pytest.fixture(scope="module")
def split(tmp_path_factory, music_csv, keys, run):
    """The GSS music ratings split 70/30 into TRAIN and TEST files, and a recommender bundle built on TRAIN."""
    with open(music_csv, newline="") as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    order = np.random.default_rng(0).permutation(len(body))
    cut = int(0.7 * len(body))
    folder = tmp_path_factory.mktemp("audit")
    paths = {}
    for name, part in (("train", order[:cut]), ("test", order[cut:])):
        paths[name] = folder / f"{name}.csv"
        with open(paths[name], "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(head)
            w.writerows(body[i] for i in part)
    styles = ",".join(c for c in head if c not in ("age", "educ", "sex"))
    paths["bundle"] = folder / "b.bundle"
    run("build", paths["train"], "--private", "sex", "--public", styles, "--domain", "1:5", "--utility",
        "recommender", "--clusters", 16, "--delta-fraction", 0.5, "--holdout-folds", 0, "--factors", 4,
        "--key", keys / "private.pem", "--out", paths["bundle"])
    return paths


def test_the_auditor_reports_the_service_the_strongest_attacker_and_exposure(run, split, keys):
    result = run("evaluate", split["bundle"], "--trusted", keys / "public.pem", split["test"], "--train",
                 split["train"], "--private", "sex", "--json")
    report = json.loads(result.stdout)
    info = json.loads(run("inspect", split["bundle"], "--json").stdout)
    assert (report["mechanism"], report["metric"], report["clusters"]) == (info["mechanism"], info["metric"],
                                                                          info["clusters"])
    assert report["signature_verified"] and not report["overlap"]["data_is_training_file"]
    assert report["overlap"]["train_is_training_file"]
    assert report["value_kept"] == report["baselines"]["bundle"]["value_kept"] and report["value_kept"] < 1.5
    assert "ranking_value_kept" in report and set(report["baselines"]) == {"true rows", "nothing", "popularity",
                                                                           "k-means alone", "bundle"}
    assert report["baselines"]["k-means alone"]["clusters"] <= 16
    aucs = {name: report["attackers"][name]["auc"] for name in ATTACKERS}
    assert report["attacker_auc"] == max(aucs.values()) and report["attacker"] in ATTACKERS
    low, high = report["attacker_auc_interval"]
    assert low < report["attacker_auc"] < high
    assert report["attacker_before"] in ATTACKERS and 0.5 < report["attacker_auc_before"] <= 1.0   # the true rows tell
    assert 0.0 <= report["exposed_4x"] <= report["exposed_2x"] <= 1.0
    assert report["users"] == {"training": 1117, "evaluated": 480}


def test_the_bundles_own_training_file_is_said_so_on_the_first_line(run, split):
    text = run("evaluate", split["bundle"], split["train"], "--train", split["train"], "--private", "sex",
               "--repeats", 1)
    assert text.output.splitlines()[0].startswith("warning: DATA is the bundle's own training file")
    report = json.loads(run("evaluate", split["bundle"], split["train"], "--train", split["train"], "--private",
                            "sex", "--repeats", 1, "--json").stdout)
    assert report["overlap"]["data_is_training_file"] and report["overlap"]["rows"] == 1117


def test_a_training_file_that_is_not_the_bundles_is_named_so(run, split, music_csv):
    report = json.loads(run("evaluate", split["bundle"], split["test"], "--train", music_csv, "--private",
                            "sex", "--repeats", 1, "--json").stdout)
    assert not report["overlap"]["train_is_training_file"] and report["overlap"]["rows"] is None
    assert "data_sha256" in report["overlap"]["note"]


def test_value_kept_is_the_runs_mean_with_the_interval_where_one_more_run_lands(run, split):
    report = json.loads(run("evaluate", split["bundle"], split["test"], "--train", split["train"], "--private",
                            "sex", "--repeats", 3, "--json").stdout)
    assert report["repeats"] == 3
    runs = report["value_kept_runs"]
    assert len(runs) == 3 and len(set(runs)) == 3                      # each run draws its own hidden cells
    assert report["value_kept"] == pytest.approx(np.mean(runs))
    low, high = report["value_kept_interval"]
    assert low < min(runs) <= max(runs) < high                         # wider than the runs' own spread
    # 18 items, most rated: every unseen item fits a top-10, so popularity ranks as well as the true rows
    assert report["ranking_value_kept_runs"] == [None] * 3 and report["ranking_value_kept_interval"] is None
    single = json.loads(run("evaluate", split["bundle"], split["test"], "--train", split["train"], "--private",
                            "sex", "--repeats", 1, "--json").stdout)
    assert single["value_kept_interval"] is None and single["value_kept_runs"] == [report["value_kept_runs"][0]]
