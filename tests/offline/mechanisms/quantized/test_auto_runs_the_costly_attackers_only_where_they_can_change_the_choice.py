"""`--clusters auto` runs gradient boosting and logistic regression only where their figures can change
the choice, and chooses what judging every candidate with all three attackers chooses."""
import csv
import dataclasses

import numpy as np
import pytest

from privmap.offline import CrossFitting, QuantizedOptions
from privmap.offline.data import load_dataset
from privmap.offline.mechanisms.quantized import _autotune
from privmap.offline.mechanisms.quantized._autotune import REFINE_STEPS, UNATTACKED, _Targets, choose
from privmap.offline.mechanisms.table import InMemoryRows, cross_fitted_many

FRACTIONS = (0.3, 0.6, 0.9)
CLUSTERS = (4, 8, 16)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """300 rows, 3 integer features, a private class that moves the first feature."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2, 300)
    X = np.clip(np.round(rng.normal(1.5, 1.0, (300, 3)) + 0.8 * a[:, None] * [1, 0, 0]), 0, 4).astype(int)
    path = tmp_path_factory.mktemp("d") / "rows.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["x", "y", "z", "a"])
        w.writerows([[*row, "m" if k else "f"] for row, k in zip(X, a)])
    return load_dataset(path, private="a")


OPTIONS = QuantizedOptions(clusters=1, delta_fraction=0.5, seed=1, cross_fitting=CrossFitting(folds=3))


class Full:
    """Every candidate's estimate with all three attackers at once, computed on demand and kept."""

    def __init__(self, data):
        self.data, self.known = data, {}

    def __call__(self, k, fraction):
        if (k, fraction) not in self.known:
            options = dataclasses.replace(OPTIONS, clusters=k, delta_fraction=fraction)
            self.known[k, fraction] = cross_fitted_many(InMemoryRows(self.data), [options], attacker=True, jobs=1)[0]
        return self.known[k, fraction]


@pytest.fixture(scope="module")
def full(data):
    return Full(data)


def plain_search(full, target):
    """The search with every candidate judged fully: the candidates it tries and the one it chooses.

    Each K from the largest fraction down while it meets the target, then the grid's best bisected
    REFINE_STEPS times below its fraction (the module docstring of _autotune), the least distortion
    meeting the target chosen.
    """
    def meets(k, f):
        return target.met_by(full(k, f))

    def key(kf):
        return full(*kf).distortion, kf[0], -kf[1]
    tried, active = [], list(CLUSTERS)
    for f in sorted(FRACTIONS, reverse=True):
        tried += [(k, f) for k in active]
        active = [k for k in active if meets(k, f)]
    met = [kf for kf in tried if meets(*kf)]
    k, hi = min(met, key=key)
    below = [f for kk, f in tried if kk == k and f < hi]
    lo = max(below) if below else hi / 2
    for _ in range(REFINE_STEPS):
        middle = round((lo + hi) / 2, 4)
        tried.append((k, middle))
        hi, lo = (middle, lo) if meets(k, middle) else (hi, middle)
    return tried, min((kf for kf in tried if meets(*kf)), key=key)


@pytest.fixture(scope="module")
def searched(data):
    """The search at an AUC target that some candidates meet and some fail on the Bayes attacker alone,
    with the costly attackers' runs and the progress told recorded."""
    attacked, told = [], []
    real = _autotune.attack_pending
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_autotune, "attack_pending", lambda pending, **kw: attacked.extend(pending) or real(pending, **kw))
        choice = choose(data, OPTIONS, clusters=CLUSTERS, target_auc=0.65, delta_fractions=FRACTIONS, jobs=1,
                        progress=lambda done, total, current: told.append((done, total)))
    return choice, attacked, told


def test_the_choice_and_its_estimate_are_those_of_judging_every_candidate_fully(searched, full):
    choice, _, _ = searched
    target = _Targets(leakage_bits=None, auc=0.65, columns={})
    tried, chosen = plain_search(full, target)
    assert (choice.clusters, choice.delta_fraction) == chosen
    assert choice.holdout == full(*chosen) and len(choice.holdout.attackers) == 3
    rows = {(r["clusters"], r["delta_fraction"]): r for r in choice.candidates}
    # the plain search's candidates are all here; any other was tried below a budget not attacked
    assert set(tried) <= set(rows)
    assert all("tried_as_if_met" in rows[kf] for kf in set(rows) - set(tried))
    for kf, row in rows.items():
        est = full(*kf)
        assert row["holdout_leakage_bits"] == est.leakage_bits and row["holdout_distortion"] == est.distortion
        if "attacked" not in row:             # attacked fully: the very figures of judging it fully
            assert row["holdout_attacker_auc_high"] == est.attacker_auc_high
            assert row["holdout_attacker"] == est.attacker and row["meets_target"] == target.met_by(est)


def test_a_candidate_not_attacked_says_so_and_carries_no_costly_attackers_figures(searched, full):
    choice, _, _ = searched
    chosen = next(r for r in choice.candidates if r["chosen"])
    marked = [r for r in choice.candidates if "attacked" in r]
    reasons = {r["unattacked"] for r in marked}
    assert reasons == {UNATTACKED["bayes"], UNATTACKED["beaten"]}       # both kinds are exercised here
    assert "attacked" not in chosen and "unattacked" not in chosen
    for row in marked:
        est = full(row["clusters"], row["delta_fraction"])
        assert row["attacked"] == "bayes" and not {"holdout_attacker_auc", "holdout_attacker_auc_high",
                                                   "holdout_attacker"} & set(row)
        assert (row["holdout_attacker_auc_bayes"], row["holdout_attacker_auc_high_bayes"]) == est.attackers[0][1:]
        if row["unattacked"] == UNATTACKED["beaten"]:      # undecided, and it could not have been chosen
            assert row["meets_target"] is None
            assert (row["holdout_distortion"], row["clusters"]) > (chosen["holdout_distortion"], chosen["clusters"])
        else:
            assert row["meets_target"] is False and row["holdout_attacker_auc_high_bayes"] > 0.65
    assert "bayes..." in _autotune.format_candidates(choice)


def test_a_candidate_failing_on_the_bayes_attacker_alone_is_not_given_the_costly_attackers(searched):
    choice, attacked, _ = searched
    failed = [r for r in choice.candidates if r.get("unattacked") == UNATTACKED["bayes"]]
    assert failed and attacked
    assert all(p.estimate.attacker_auc_high <= 0.65 for p in attacked)
    assert len(attacked) < len(choice.candidates)
    assert {p.estimate.distortion for p in attacked}.isdisjoint(r["holdout_distortion"] for r in failed)


def test_progress_never_runs_past_its_total_and_reaches_it_at_the_end(searched):
    _, _, told = searched
    assert all(0 <= done <= total for done, total in told)
    assert told[-1][0] == told[-1][1] and [done for done, _ in told] == sorted(done for done, _ in told)


def test_with_no_candidate_meeting_the_target_the_nearest_on_full_figures_is_chosen(data, full):
    choice = choose(data, OPTIONS, clusters=CLUSTERS, target_auc=0.52, delta_fractions=FRACTIONS, jobs=1)
    target = _Targets(leakage_bits=None, auc=0.52, columns={})
    assert not choice.met
    assert all("attacked" not in r for r in choice.candidates)      # every figure the shortfall reads is full
    rows = [(r["clusters"], r["delta_fraction"]) for r in choice.candidates]
    nearest = min(rows, key=lambda kf: ((full(*kf).attacker_auc_high - 0.52) / 0.02, full(*kf).leakage_bits,
                                        full(*kf).distortion, kf[0], -kf[1]))
    assert (choice.clusters, choice.delta_fraction) == nearest and choice.holdout == full(*nearest)
    assert rows == [(k, 0.9) for k in CLUSTERS]                       # below a fraction that failed, none is tried
    assert not any(target.met_by(full(*kf)) for kf in rows)
