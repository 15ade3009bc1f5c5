"""Cross-fitted leakage: in-sample on the prior itself, above it where a small sample is overfit."""
import dataclasses
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from privmap.offline import CrossFitting, QuantizedOptions
from privmap.offline.data import Dataset, quantize
from privmap.offline.mechanisms.table import InMemoryRows, cross_fitted_leakage, cross_fitted_many, solve_rows

ROOT = pathlib.Path(__file__).resolve().parents[4]
GRID = np.array([(i % 8, i // 8) for i in range(64)], dtype=float)


def _dataset(a, x):
    return Dataset(features=("x", "y"), public=GRID[x], private=np.asarray(a, dtype=np.int64), classes=("f", "m"),
                   private_name="a", categorical=False, sha256="0" * 64)


def _from_prior(n, seed):
    """n rows drawn from one fixed prior over 10 points, with a moderate class dependence."""
    rng = np.random.default_rng(seed)
    p_x_given_a = np.random.default_rng(0).dirichlet(np.ones(10), size=2)
    a = rng.integers(0, 2, n)
    x = np.array([rng.choice(10, p=p_x_given_a[k]) for k in a])
    return _dataset(a, x)


def _disjoint(n, half, seed):
    """Each class on its own points: a perfect-privacy table must balance noisy training counts."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    return _dataset(a, rng.integers(0, half, n) + half * a)


def test_cross_fitted_leakage_equals_in_sample_on_rows_drawn_from_the_prior():
    data = _from_prior(20000, seed=1)
    options = QuantizedOptions(clusters=10, delta_fraction=0.5, cross_fitting=CrossFitting(folds=5))
    in_sample = solve_rows(InMemoryRows(data), options).solved.leakage_bits
    estimate = cross_fitted_leakage(InMemoryRows(data), options)
    assert in_sample > 0.005                                   # a leaky table, not a trivial zero
    assert estimate.leakage_bits == pytest.approx(in_sample, abs=0.002)
    assert estimate.low_bits <= in_sample <= estimate.high_bits
    assert estimate.rows == 20000 and estimate.unmatched_rows == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cross_fitted_leakage_exceeds_in_sample_on_an_overfit_small_sample(seed):
    data = _disjoint(200, 16, seed)                            # 32 clusters of about 6 rows each
    options = QuantizedOptions(clusters=32, delta_fraction=0.7, cross_fitting=CrossFitting(folds=2))
    in_sample = solve_rows(InMemoryRows(data), options).solved.leakage_bits
    estimate = cross_fitted_leakage(InMemoryRows(data), options)
    assert estimate.leakage_bits > in_sample + 0.03
    assert estimate.bias_bits > 0.05                           # the held-out plug-in was corrected, not taken raw
    assert estimate.plugin_bits - estimate.bias_bits == pytest.approx(estimate.leakage_bits)
    assert estimate.cross_entropy_bits <= estimate.leakage_bits <= estimate.plugin_bits
    assert estimate.high_bits - estimate.low_bits >= estimate.standard_error_bits > 0


def test_cross_fitting_refuses_more_folds_than_a_class_has_rows():
    from privmap.offline._errors import BuildError
    data = _dataset([0] * 30 + [1] * 3, list(range(33)))
    with pytest.raises(BuildError, match="folds"):
        cross_fitted_leakage(InMemoryRows(data),
                             QuantizedOptions(clusters=4, delta_fraction=0.5, cross_fitting=CrossFitting(folds=5)))


def test_a_fold_whose_solve_fails_is_named_in_the_error_of_its_own_type(monkeypatch):
    """A solver failure inside a fold surfaces as that SolverError, saying which fold failed."""
    from privmap.offline._errors import SolverError
    from privmap.offline.mechanisms.table import _program

    def fails(*args, **kwargs):
        raise SolverError("fast solver: no certificate within 2 Newton steps")

    monkeypatch.setattr(_program, "solve", fails)
    data = _disjoint(400, 16, seed=4)
    options = QuantizedOptions(clusters=16, delta_fraction=0.6, cross_fitting=CrossFitting(folds=4), seed=7)
    with pytest.raises(SolverError, match=r"^cross-fitting fold 1: fast solver: no certificate within 2"):
        cross_fitted_leakage(InMemoryRows(data), options, jobs=1)


def test_folds_in_parallel_workers_give_the_sequential_result_exactly():
    data = _disjoint(400, 16, seed=4)
    options = QuantizedOptions(clusters=16, delta_fraction=0.6, cross_fitting=CrossFitting(folds=4), seed=7)
    sequential = cross_fitted_leakage(InMemoryRows(data), options, jobs=1, attacker=True)
    parallel = cross_fitted_leakage(InMemoryRows(data), options, jobs=2, attacker=True)
    assert parallel == sequential                              # every figure, interval and AUC included
    assert cross_fitted_leakage(InMemoryRows(data), dataclasses.replace(options, seed=8), jobs=2) != sequential


def test_the_costly_attackers_run_later_give_the_estimate_of_all_three_at_once(jobs=2):
    from privmap.offline.mechanisms.table import PendingAttackers, attack_pending
    data = _disjoint(400, 16, seed=4)
    options = QuantizedOptions(clusters=16, delta_fraction=0.6, cross_fitting=CrossFitting(folds=4), seed=7)
    budgets = [dataclasses.replace(options, delta_fraction=f) for f in (0.9, 0.6)]
    at_once = cross_fitted_many(InMemoryRows(data), budgets, attacker=True, jobs=jobs)
    pending = cross_fitted_many(InMemoryRows(data), budgets, attacker="bayes", jobs=jobs)
    assert all(isinstance(p, PendingAttackers) for p in pending)
    for p, full in zip(pending, at_once):
        # before them: every figure but the costly attackers', and the Bayes attacker's alone
        assert dataclasses.replace(p.estimate, attacker_auc=None, attacker_auc_high=None, attacker=None,
                                   attackers=()) == dataclasses.replace(full, attacker_auc=None, attacker_auc_high=None,
                                                                        attacker=None, attackers=())
        assert p.estimate.attackers == full.attackers[:1] and full.attackers[0][0] == "bayes"
        assert p.estimate.attacker_auc_high <= full.attacker_auc_high
    later = attack_pending(pending, jobs=jobs)
    assert later == at_once                                    # every figure, interval and AUC included
    assert [len(e.attackers) for e in later] == [3, 3]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_fold_s_k_means_at_one_k_is_made_once_for_every_budget_and_the_estimates_are_unchanged(jobs, monkeypatch):
    from privmap.offline.mechanisms.table import _holdout
    data = _disjoint(400, 16, seed=4)
    options = QuantizedOptions(clusters=16, delta_fraction=0.6, cross_fitting=CrossFitting(folds=4), seed=7)
    budgets = [dataclasses.replace(options, delta_fraction=f) for f in (0.9, 0.6)]
    fresh = [cross_fitted_many(InMemoryRows(data), [b], attacker=True, jobs=jobs)[0] for b in budgets]
    made = []
    monkeypatch.setattr(_holdout, "quantize", lambda *a, **kw: made.append(a[1]) or quantize(*a, **kw))
    known: dict = {}
    shared = [cross_fitted_many(InMemoryRows(data), [b], attacker=True, jobs=jobs, quantizations=known)[0]
              for b in budgets]
    assert shared == fresh                                     # every figure, interval and AUC included
    assert sorted(known) == [0, 1, 2, 3] and all(len(found) == 1 for found in known.values())
    if jobs == 1:                                              # a worker's calls are not seen here
        assert made == [16] * 4                                # the first budget's folds alone clustered


def test_the_libraries_folds_import_on_first_use_are_imported_before_workers_are_forked():
    """A forked worker inherits this process's modules; one that imported them itself would pay
    the import in every worker."""
    code = """if True:
        import sys
        import numpy as np
        from privmap.offline import CrossFitting, QuantizedOptions
        from privmap.offline.data import Dataset
        from privmap.offline.mechanisms.table import InMemoryRows
        from privmap.offline.mechanisms.table._holdout import start_cross_fitting
        x = np.arange(60, dtype=float).reshape(-1, 1) % 9
        data = Dataset(features=("x",), public=x, private=np.arange(60) % 2, classes=("f", "m"),
                       private_name="a", categorical=False, sha256="0" * 64)
        options = QuantizedOptions(clusters=4, delta_fraction=0.5, cross_fitting=CrossFitting(folds=2), seed=0)
        before = [m for m in ("sklearn.cluster", "ot") if m in sys.modules]
        with start_cross_fitting(InMemoryRows(data), options, jobs=2):
            print(before, [m for m in ("sklearn.cluster", "ot") if m in sys.modules])
    """
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "[] ['sklearn.cluster', 'ot']"


def test_the_number_of_workers_comes_from_privmap_jobs_and_is_checked(monkeypatch):
    from privmap.offline._errors import BuildError
    from privmap.offline.mechanisms.table._holdout import fold_jobs
    monkeypatch.setenv("PRIVMAP_JOBS", "3")
    assert fold_jobs(5) == 3 and fold_jobs(2) == 2 and fold_jobs(5, jobs=1) == 1
    monkeypatch.setenv("PRIVMAP_JOBS", "many")
    with pytest.raises(BuildError, match="PRIVMAP_JOBS"):
        fold_jobs(5)
    with pytest.raises(BuildError, match=">= 1"):
        fold_jobs(5, jobs=0)


@pytest.fixture(scope="module")
def tastes():
    options = QuantizedOptions(clusters=16, delta_fraction=0.5, codebook=False, cross_fitting=CrossFitting(folds=3))
    return Dataset.from_csv(ROOT / "data" / "ssi2012" / "tastes_gender.csv", private="gender"), options


def test_one_k_means_start_per_fold_estimates_what_the_builds_four_restarts_do(tastes):
    """On bundled survey data (SSI 2012 tastes, 2,258 users), the default start's estimate lies within the
    restarts' interval, and its held-out distortion within 1 % of theirs."""
    data, options = tastes
    restarts = cross_fitted_leakage(InMemoryRows(data), options, start="restarts")
    single = cross_fitted_leakage(InMemoryRows(data), options)
    assert restarts.low_bits <= single.leakage_bits <= restarts.high_bits
    assert single.distortion == pytest.approx(restarts.distortion, rel=0.01)


def test_folds_started_from_the_full_data_centres_see_the_held_out_rows(tastes):
    """Why that start is not the default: the held-out rows shaped the centres, so held-out
    distortion comes out below what folds that never saw those rows measure."""
    data, options = tastes
    options = dataclasses.replace(options, clusters=64)
    centers = np.asarray(InMemoryRows(data).alphabet(options).inputs, dtype=float)
    warm = cross_fitted_leakage(InMemoryRows(data), options, start="warm", centers=centers)
    restarts = cross_fitted_leakage(InMemoryRows(data), options, start="restarts")
    assert warm.distortion < restarts.distortion - 0.01


def test_simulated_release_draws_each_output_with_its_table_probability():
    # The fold's sampler searches each table row's non-zeros only; the counts it draws per (input,
    # output) must fit the table (chi-square on counts), and it never draws an output of probability 0.
    from types import SimpleNamespace

    from scipy.stats import chisquare

    from privmap.offline.mechanisms.table._holdout import _drawn_outputs
    table = np.array([[0.5, 0.0, 0.3, 0.2], [0.0, 1.0, 0.0, 0.0], [0.1, 0.2, 0.3, 0.4]])
    fit = SimpleNamespace(solved=SimpleNamespace(table=table), alphabet=SimpleNamespace(outputs=np.eye(4).tolist()))
    symbols = np.repeat([0, 1, 2], 4000)
    drawn = _drawn_outputs(fit, symbols, np.random.default_rng(7))
    for c in range(3):
        counts = np.bincount(drawn[symbols == c], minlength=4)
        assert np.all(counts[table[c] == 0] == 0)
        live = table[c] > 0
        if live.sum() > 1:
            assert chisquare(counts[live], 4000 * table[c][live]).pvalue > 1e-3


def test_a_build_gives_the_same_estimate_with_its_folds_started_before_its_own_stages(ratings_csv, monkeypatch):
    from privmap.offline.mechanisms.quantized import build
    options = QuantizedOptions(clusters=12, delta_fraction=0.5, cross_fitting=CrossFitting(folds=3))
    monkeypatch.setenv("PRIVMAP_JOBS", "1")                # one process: the folds after the build's stages
    after = build(Dataset.from_csv(ratings_csv, private="gender"), options).payload["metrics"]
    monkeypatch.setenv("PRIVMAP_JOBS", "2")                # a worker: folding while this process builds
    early = build(Dataset.from_csv(ratings_csv, private="gender"), options).payload["metrics"]
    assert {k: v for k, v in early.items() if k.startswith("holdout_")} == \
        {k: v for k, v in after.items() if k.startswith("holdout_")}


def test_a_build_that_fails_before_its_folds_stops_the_workers_folding_early(ratings_csv, monkeypatch):
    import time

    from privmap.offline import BuildError
    from privmap.offline.mechanisms.quantized import build
    from privmap.offline.mechanisms.table import _pipeline
    monkeypatch.setenv("PRIVMAP_JOBS", "2")
    started = []

    def failing(*args, **kwargs):
        started.append(time.perf_counter())
        raise BuildError("the build's own stage failed")

    monkeypatch.setattr(_pipeline, "solve_rows", failing)
    with pytest.raises(BuildError, match="own stage failed"):
        build(Dataset.from_csv(ratings_csv, private="gender"), QuantizedOptions(clusters=12, delta_fraction=0.5,
                                                  cross_fitting=CrossFitting(folds=5)))
    assert time.perf_counter() - started[0] < 2.0          # no waiting for the five folds
    monkeypatch.undo()
    monkeypatch.setenv("PRIVMAP_JOBS", "2")
    options = QuantizedOptions(clusters=8, delta_fraction=0.5, cross_fitting=CrossFitting(folds=2))
    assert build(Dataset.from_csv(ratings_csv, private="gender"), options).payload["metrics"]["holdout_folds"] == 2
