"""`--clusters auto`: K (and smoothing) chosen by cross-fitting, reproducibly from the seed."""
import csv
import json

import numpy as np
import pytest

from privmap.offline import CrossFitting, QuantizedOptions
from privmap.offline.bundle._write import canonical_float
from privmap.offline.data import load_dataset
from privmap.offline.mechanisms.quantized._autotune import REFINE_STEPS, choose
from privmap.offline.mechanisms.table import _reuse


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    """300 rows, 3 integer features, a private class that moves the first feature."""
    return _rows_csv(tmp_path_factory, 300)


@pytest.fixture(scope="module")
def larger_csv(tmp_path_factory):
    """The same population, 2,000 rows: enough that the cross-fitted estimate of a few clusters
    falls below a hundredth of H(A), the default target."""
    return _rows_csv(tmp_path_factory, 2000)


def _rows_csv(tmp_path_factory, n):
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2, n)
    X = np.clip(np.round(rng.normal(1.5, 1.0, (n, 3)) + 0.8 * a[:, None] * [1, 0, 0]), 0, 4).astype(int)
    path = tmp_path_factory.mktemp("d") / f"rows{n}.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["x", "y", "z", "a"])
        w.writerows([[*row, "m" if k else "f"] for row, k in zip(X, a)])
    return path


def _auto(run, small_csv, keys, out, seed, *extra):
    # the default target (1 % of H(A)) is above what 300 rows can show met: build the nearest candidate
    result = run("build", small_csv, "--private", "a", "--clusters", "auto", "--delta-fraction", 0.5, "--allow-unmet",
                 "--seed", seed, "--holdout-folds", 3, "--issued-at", 1_700_000_000, "--key", keys / "private.pem",
                 "--out", out, "--json", *extra)
    return json.loads(result.stdout), result.stderr


def test_clusters_auto_is_reproducible_with_a_seed(run, small_csv, keys, tmp_path):
    first, table = _auto(run, small_csv, keys, tmp_path / "a.bundle", 3)
    second, _ = _auto(run, small_csv, keys, tmp_path / "b.bundle", 3)
    assert (tmp_path / "a.bundle").read_bytes() == (tmp_path / "b.bundle").read_bytes()
    assert first["auto"] == second["auto"]
    chosen = [c for c in first["auto"]["candidates"] if c["chosen"]]
    assert len(chosen) == 1 and chosen[0]["clusters"] == first["clusters"] == first["auto"]["clusters"]
    assert "holdout leak bits" in table and "*" in table              # the printed table of candidates


def test_auto_with_a_target_takes_the_least_held_out_distortion_that_meets_it(small_csv):
    data = load_dataset(small_csv, private="a")
    options = QuantizedOptions(clusters=1, delta_fraction=0.5, seed=1, cross_fitting=CrossFitting(folds=3))
    loose = choose(data, options, clusters=(4, 8, 16), smoothing=(0.0, 1.0), target_leakage_bits=1.0)
    assert all(c["meets_target"] for c in loose.candidates)
    best = min(loose.candidates, key=lambda c: c["holdout_distortion"])
    assert (loose.clusters, loose.smoothing) == (best["clusters"], best["smoothing"])
    strict = choose(data, options, clusters=(4, 8, 16), target_leakage_bits=-1.0)   # nothing meets it
    least = min(strict.candidates, key=lambda c: c["holdout_leakage_bits"])
    assert strict.clusters == least["clusters"]


def test_auto_with_an_auc_target_measures_the_attacker_and_leaves_the_leakage_figures_alone(small_csv):
    data = load_dataset(small_csv, private="a")
    options = QuantizedOptions(clusters=1, delta_fraction=0.2, seed=2, cross_fitting=CrossFitting(folds=3))
    plain = choose(data, options, clusters=(4, 8))
    judged = choose(data, options, clusters=(4, 8), target_auc=1.0)          # every candidate meets it
    for a, b in zip(plain.candidates, judged.candidates):
        assert a["holdout_leakage_bits"] == b["holdout_leakage_bits"]
        if b["chosen"]:
            assert 0.0 <= b["holdout_attacker_auc"] <= 1.0 and b["meets_target"]
        else:                # the least distortion met it first: the other's costly attackers are not run
            assert b["attacked"] == "bayes" and 0.0 <= b["holdout_attacker_auc_bayes"] <= 1.0
            assert b["meets_target"] is None and "holdout_attacker_auc" not in b
    best = min(judged.candidates, key=lambda c: c["holdout_distortion"])
    assert judged.clusters == best["clusters"]
    none = choose(data, options, clusters=(4, 8), target_auc=0.0)            # nothing meets it
    assert not none.met      # the nearest by the target's own measure: the least AUC bound
    assert none.clusters == min(none.candidates, key=lambda c: c["holdout_attacker_auc_high"])["clusters"]


def test_an_auc_target_is_met_by_the_strongest_of_three_attackers(small_csv):
    from privmap.offline._strongest import ATTACKERS
    data = load_dataset(small_csv, private="a")
    options = QuantizedOptions(clusters=1, delta_fraction=0.2, seed=2, cross_fitting=CrossFitting(folds=3))
    choice = choose(data, options, clusters=(4, 8), target_auc=1.0)
    metrics = choice.holdout.metrics()
    aucs = [metrics[f"holdout_attacker_auc_{name}"] for name in ATTACKERS]
    highs = [metrics[f"holdout_attacker_auc_high_{name}"] for name in ATTACKERS]
    assert metrics["holdout_attacker_auc"] == max(aucs) and metrics["holdout_attacker_auc_high"] == max(highs)
    assert choice.holdout.attacker == ATTACKERS[aucs.index(max(aucs))]
    assert all(c["holdout_attacker"] in ATTACKERS for c in choice.candidates if "attacked" not in c)


def test_with_both_targets_unmet_the_nearest_misses_each_by_the_least_fraction():
    from privmap.offline.mechanisms.quantized._autotune import _best, _Targets
    targets = _Targets(leakage_bits=0.01, auc=0.55, columns={})
    near_leak = {"holdout_leakage_bits": 0.011, "holdout_attacker_auc_high": 0.58, "meets_target": False}
    near_auc = {"holdout_leakage_bits": 0.015, "holdout_attacker_auc_high": 0.56, "meets_target": False}
    # misses by 10 % of the bits and 60 % of the AUC's room above chance, against 50 % and 20 %
    assert targets.shortfall(near_leak) == pytest.approx(0.6) and targets.shortfall(near_auc) == pytest.approx(0.5)
    rows = [{**r, "holdout_distortion": 1.0, "clusters": 4, "smoothing": 0.0} for r in (near_leak, near_auc)]
    assert _best(rows, targets) is rows[1]


@pytest.fixture(scope="module")
def leaky_csv(tmp_path_factory):
    """600 rows, 2 integer features, a private class that moves the first by three standard deviations."""
    rng = np.random.default_rng(6)
    a = rng.integers(0, 2, 600)
    X = np.clip(np.round(rng.normal(2, 1.0, (600, 2)) + 3 * a[:, None] * [1, 0]), 0, 8).astype(int)
    path = tmp_path_factory.mktemp("d") / "leaky.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["x", "y", "a"])
        w.writerows([[*row, "m" if k else "f"] for row, k in zip(X, a)])
    return path


def test_a_build_whose_target_no_candidate_meets_fails_and_writes_no_bundle(run, leaky_csv, keys, tmp_path):
    out = tmp_path / "unmet.bundle"       # 5 % of the way to perfect privacy leaves the class plain to see
    args = ("build", leaky_csv, "--private", "a", "--clusters", "auto", "--delta-fraction", 0.05, "--holdout-folds", 3,
            "--target-auc", 0.6, "--key", keys / "private.pem", "--out", out)
    failed = run(*args, ok=False)
    assert failed.exit_code == 1 and not out.exists()
    line = failed.output.strip().splitlines()[-1]
    assert line.startswith("error: no candidate of the auto search meets the privacy target")
    assert "attacker AUC bound" in line and "--allow-unmet" in line
    shipped = run(*args, "--allow-unmet", "--json")
    summary = json.loads(shipped.stdout)
    chosen = next(c for c in summary["auto"]["candidates"] if c["chosen"])
    assert chosen["holdout_attacker_auc_high"] == min(c["holdout_attacker_auc_high"]
                                                      for c in summary["auto"]["candidates"])
    assert "built as --allow-unmet asks" in shipped.stderr and out.exists()
    info = json.loads(run("inspect", out, "--json").stdout)
    assert info["holdout_attacker_auc"] == canonical_float(chosen["holdout_attacker_auc"])
    assert summary["holdout_attacker_auc"] == pytest.approx(chosen["holdout_attacker_auc"])
    assert info["holdout_attacker"] == summary["holdout_attacker"] == chosen["holdout_attacker"]


def test_allow_unmet_without_a_search_is_refused(run, small_csv, keys, tmp_path):
    result = run("build", small_csv, "--private", "a", "--clusters", 4, "--delta-fraction", 0.5, "--allow-unmet",
                 "--key", keys / "private.pem", "--out", tmp_path / "x.bundle", ok=False)
    assert result.exit_code == 1 and "--allow-unmet applies to a search" in result.output


def test_candidates_double_up_to_thirty_two_training_rows_per_cluster():
    from privmap.offline.mechanisms.quantized._autotune import MIN_USERS_PER_CLUSTER, candidate_clusters
    assert MIN_USERS_PER_CLUSTER == 32
    assert candidate_clusters(13_715, 10_000, folds=5) == [4, 8, 16, 32, 64, 128, 256]   # 10,972 / 32 = 342
    assert candidate_clusters(48_842, 14_846, folds=5) == [4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert candidate_clusters(48_842, 300, folds=5) == [4, 8, 16, 32, 64, 128, 256]      # distinct rows bound K
    assert candidate_clusters(300, 50, folds=3) == [4]                                   # 200 / 32 < 8
    assert candidate_clusters(60, 3, folds=3) == [3]


def test_without_a_target_auto_takes_the_least_held_out_distortion_within_one_percent_of_h_a(larger_csv):
    from privmap.offline.mechanisms.quantized._autotune import default_target_bits
    data = load_dataset(larger_csv, private="a")
    # 0.9 x Delta0 on 2,000 rows: K = 4 and 8 estimate below the default target (0.0006 and 0.0061
    # bits against 0.0100) and K = 16 above it (0.0114), so the rule among candidates that meet it is
    # exercised against one that does not.
    options = QuantizedOptions(clusters=1, delta_fraction=0.9, seed=1, cross_fitting=CrossFitting(folds=3))
    choice = choose(data, options, clusters=(4, 8, 16), jobs=1)
    p = np.bincount(data.private) / data.n
    assert choice.target_source == "default"
    assert choice.target_leakage_bits == pytest.approx(0.01 * -(p * np.log2(p)).sum()) == default_target_bits(data)
    meeting = [c for c in choice.candidates if c["holdout_leakage_bits"] <= choice.target_leakage_bits]
    assert meeting and all(c["meets_target"] == (c in meeting) for c in choice.candidates)
    assert choice.clusters == min(meeting, key=lambda c: c["holdout_distortion"])["clusters"]
    assert choice.holdout.leakage_bits == next(c for c in choice.candidates if c["chosen"])["holdout_leakage_bits"]


def test_auto_refuses_to_judge_candidates_without_folds(small_csv):
    from privmap.offline._errors import BuildError
    data = load_dataset(small_csv, private="a")
    with pytest.raises(BuildError, match="--holdout-folds"):
        choose(data, QuantizedOptions(clusters=1, delta_fraction=0.5, cross_fitting=None))


@pytest.fixture(scope="module")
def blank_csv(tmp_path_factory):
    """600 survey rows, answers 1-5 with about 5 % blank cells, a private class that shifts two answers."""
    rng = np.random.default_rng(11)
    a = rng.integers(0, 2, 600)
    X = np.clip(np.round(rng.normal(3.0, 1.1, (600, 4)) + 0.9 * a[:, None] * [1, 1, 0, 0]), 1, 5).astype(int)
    path = tmp_path_factory.mktemp("d") / "blank.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["q1", "q2", "q3", "q4", "gender"])
        for row, k in zip(X, a):
            cells = ["" if rng.random() < 0.05 else str(v) for v in row]
            w.writerow([*cells, "m" if k else "f"])
    return path


@pytest.mark.parametrize("start_clusters", [10**9, 4])
def test_the_bundle_auto_writes_declares_the_very_figure_that_met_the_target(run, blank_csv, keys, tmp_path,
                                                                             start_clusters, monkeypatch):
    """The outside form with blank cells; the target is met by the declared new-user leakage, which is
    what a build at the chosen K declares too (not a second estimate), whether or not builds of the
    candidates' K start their folds from their answers (``_reuse.START_CLUSTERS``)."""
    monkeypatch.setattr(_reuse, "START_CLUSTERS", start_clusters)
    out = tmp_path / "auto.bundle"
    result = run("build", blank_csv, "--private", "gender", "--domain", "1:5", "--delta-fraction", 0.6,
                 "--clusters", "auto", "--seed", 4, "--key", keys / "private.pem", "--out", out,
                 "--target-leakage", 0.02, "--issued-at", 1_700_000_000, "--json")
    summary = json.loads(result.stdout)
    chosen = next(c for c in summary["auto"]["candidates"] if c["chosen"])
    declared = json.loads(run("inspect", out, "--json").output)["metrics"]["holdout_leakage_bits"]
    # the bundle declares its figures to FLOAT_SIGNIFICANT_DIGITS (docs/bundle-format.md 7.1)
    assert chosen["meets_target"] and declared == canonical_float(chosen["holdout_leakage_bits"]) <= 0.02
    assert [c["clusters"] for c in summary["auto"]["candidates"]] == [4, 8]             # 480 / 32 = 15
    # a target of leakage alone: the attackers decide nothing, and only the chosen candidate's costly ones run
    assert all({"holdout_distortion", "holdout_leakage_bits", "holdout_attacker_auc" if c["chosen"]
                else "holdout_attacker_auc_bayes"} <= set(c) for c in summary["auto"]["candidates"])
    assert "holdout AUC" in result.stderr and "target: held-out leakage <= 0.02000 bits" in result.stderr
    plain = tmp_path / "plain.bundle"
    run("build", blank_csv, "--private", "gender", "--domain", "1:5", "--delta-fraction", 0.6, "--clusters",
        chosen["clusters"], "--seed", 4, "--key", keys / "private.pem", "--out", plain, "--issued-at", 1_700_000_000)
    assert json.loads(run("inspect", plain, "--json").output)["metrics"]["holdout_leakage_bits"] == declared


def test_a_target_is_met_by_the_figure_the_bundle_declares_not_a_figure_that_rounds_above_it(small_csv,
                                                                                             monkeypatch):
    """An estimate at the target whose declared (rounded) figure is above it does not meet the target:
    the candidate of higher distortion whose declared figure is below it is chosen."""
    import dataclasses as dc

    from privmap.offline.mechanisms.quantized import _autotune
    from privmap.offline.mechanisms.table._holdout import HoldoutLeakage, PendingAttackers
    target = 0.01234567890126                     # 13 significant digits: a default target is such a figure
    assert canonical_float(target) > target       # the bundle's 12 digits round it up

    def fake(dataset, candidates, **kw):
        base = HoldoutLeakage(leakage_bits=0.0, low_bits=0.0, high_bits=0.0, plugin_bits=0.0, bias_bits=0.0,
                              distortion=1.0, folds=3, rows=300, unmatched_rows=0, attacker_auc=0.5)
        leak = {4: (0.012, 2.0), 8: (target, 1.0)}
        return [PendingAttackers(dc.replace(base, leakage_bits=leak[o.clusters][0], distortion=leak[o.clusters][1]),
                                 (), 3) for o in candidates]

    monkeypatch.setattr(_autotune, "cross_fitted_many", fake)
    monkeypatch.setattr(_autotune, "attack_pending", lambda pending, **kw: [p.estimate for p in pending])
    data = load_dataset(small_csv, private="a")
    options = QuantizedOptions(clusters=1, delta_fraction=0.5, seed=1, cross_fitting=CrossFitting(folds=3))
    choice = choose(data, options, clusters=(4, 8), target_leakage_bits=target)
    rows = {c["clusters"]: c for c in choice.candidates}
    assert rows[8]["holdout_leakage_bits"] <= target                      # the raw estimate is below it ...
    assert canonical_float(rows[8]["holdout_leakage_bits"]) > target       # ... its declared figure is not
    assert not rows[8]["meets_target"] and rows[4]["meets_target"]
    assert choice.clusters == 4 and canonical_float(choice.holdout.leakage_bits) <= target


def test_the_posteriors_prior_lets_auto_try_eight_times_finer_alphabets():
    from privmap.offline.mechanisms.quantized import QuantizedOptions
    from privmap.offline.mechanisms.quantized._autotune import candidate_clusters, min_users_for
    counts = QuantizedOptions(clusters=4, delta_fraction=0.5)
    posteriors = QuantizedOptions(clusters=4, delta_fraction=0.5, prior="posteriors")
    assert (min_users_for(counts), min_users_for(posteriors)) == (32, 4)
    assert candidate_clusters(13_715, 10_000, folds=5, min_users=4) == [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]


def test_auto_without_a_budget_searches_the_fraction_with_k_and_ships_the_winner(small_csv, run, keys, tmp_path):
    data = load_dataset(small_csv, private="a")
    options = QuantizedOptions(clusters=1, delta_fraction=0.5, seed=1, cross_fitting=CrossFitting(folds=3))
    choice = choose(data, options, clusters=(4, 8), target_leakage_bits=1.0, delta_fractions=(0.3, 0.9))
    grid, refined = choice.candidates[:4], choice.candidates[4:]
    assert {(c["clusters"], c["delta_fraction"]) for c in grid} == {(4, 0.3), (4, 0.9), (8, 0.3), (8, 0.9)}
    # then the budget of the grid's best K is bisected below its fraction, REFINE_STEPS times
    grid_best = min(grid, key=lambda c: c["holdout_distortion"])
    assert len(refined) == REFINE_STEPS
    assert all(c["clusters"] == grid_best["clusters"] and c["delta_fraction"] < grid_best["delta_fraction"]
               for c in refined)
    best = min(choice.candidates, key=lambda c: c["holdout_distortion"])
    assert (choice.clusters, choice.delta_fraction) == (best["clusters"], best["delta_fraction"])
    result = run("build", small_csv, "--private", "a", "--clusters", "auto", "--target-leakage", 1.0, "--seed", 1,
                 "--holdout-folds", 3, "--key", keys / "private.pem", "--out", tmp_path / "b.bundle", "--json")
    summary = json.loads(result.stdout)
    chosen = next(c for c in summary["auto"]["candidates"] if c["chosen"])
    assert summary["auto"]["delta_fraction"] == chosen["delta_fraction"] and 0 < chosen["delta_fraction"] <= 0.9
    assert summary["delta"] == pytest.approx(summary["auto"]["delta_fraction"] * summary["perfect_privacy_distortion"])


def test_an_auc_target_is_met_by_the_upper_end_of_the_interval_not_the_estimate():
    from privmap.offline.mechanisms.quantized._autotune import _Targets
    from privmap.offline.mechanisms.table._holdout import HoldoutLeakage
    estimate = HoldoutLeakage(leakage_bits=0.01, low_bits=0.0, high_bits=0.02, plugin_bits=0.02, bias_bits=0.01,
                              distortion=1.0, folds=5, rows=1000, unmatched_rows=0, attacker_auc=0.53,
                              attacker_auc_high=0.56)
    assert not _Targets(leakage_bits=None, auc=0.55, columns={}).met_by(estimate)
    assert _Targets(leakage_bits=None, auc=0.56, columns={}).met_by(estimate)
    assert estimate.metrics()["holdout_attacker_auc_high"] == 0.56          # and the bundle declares it


def test_a_ks_smaller_budgets_are_tried_only_while_its_larger_one_meets_the_target(small_csv):
    data = load_dataset(small_csv, private="a")
    options = QuantizedOptions(clusters=1, delta_fraction=0.5, seed=1, cross_fitting=CrossFitting(folds=3))
    none = choose(data, options, clusters=(4, 8), target_leakage_bits=0.0, delta_fractions=(0.3, 0.6, 0.9))
    assert {(c["clusters"], c["delta_fraction"]) for c in none.candidates} == {(4, 0.9), (8, 0.9)}
    every = choose(data, options, clusters=(4, 8), target_leakage_bits=1.0, delta_fractions=(0.3, 0.6, 0.9))
    assert {(k, f) for k in (4, 8) for f in (0.3, 0.6, 0.9)} <= {(c["clusters"], c["delta_fraction"])
                                                                  for c in every.candidates}
