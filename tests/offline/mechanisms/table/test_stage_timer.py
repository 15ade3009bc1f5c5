"""Whole-build measurement: each stage's seconds and peak memory, in the build result and in --json."""
import json
import os

import numpy as np
import pytest

from privmap.offline.data import Dataset
from privmap.offline.mechanisms.quantized import CrossFitting, QuantizedOptions, build
from privmap.offline.mechanisms.table import InMemoryRows, StageTimer, solve_rows


def test_build_times_every_stage_in_order_with_a_non_decreasing_memory_peak(ratings_csv):
    told = []
    result = build(Dataset.from_csv(ratings_csv, private="gender"),
                   QuantizedOptions(clusters=12, delta_fraction=0.5, cross_fitting=CrossFitting(folds=2)),
                   progress=lambda stage, f: told.append(stage))
    records = result.detail.stages.records()
    names = [r["stage"] for r in records]
    assert names == ["load", "cluster", "prior", "perfect-privacy", "solve", "codebook", "compress",
                     "holdout-fold-1", "holdout-fold-2", "payload"]
    assert told[-1] == "done" and set(names) <= set(told)          # the progress callback still hears all
    peaks = [r["peak_rss_bytes"] for r in records]
    assert all(r["seconds"] >= 0 and r["cpu_seconds"] >= 0 for r in records)
    assert peaks[0] > 10 * 2 ** 20 and peaks == sorted(peaks)     # a high-water mark, in bytes, not KiB


def test_a_stage_named_again_goes_on_and_done_opens_none():
    timer = StageTimer()
    for stage in ("a", "a", "b", "done"):
        timer(stage, 0.0)
    timer("c", 1.0)
    timer.close()
    assert [r["stage"] for r in timer.records()] == ["a", "b", "c"]


def test_a_child_reaped_during_a_stage_does_not_add_its_cpu_to_that_stage():
    # loky reaps idle fold workers when it chooses; their folds are attributed from their own
    # measurements, so their whole lives must not land again in whatever stage is open then
    import subprocess
    import sys
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass"
    timer = StageTimer()
    timer("a", 0.0)
    subprocess.run([sys.executable, "-c", burn], check=True)
    timer.close()
    assert timer.records()[0]["cpu_seconds"] < 0.25


def test_build_json_reports_the_stages_with_encode_sign(tmp_path, keys, ratings_csv, run):
    out = tmp_path / "b.bundle"
    summary = json.loads(run("build", ratings_csv, "--private", "gender", "--clusters", 8, "--delta-fraction", 0.5,
                             "--holdout-folds", 0, "--key", keys / "private.pem", "--out", out, "--json").stdout)
    names = [r["stage"] for r in summary["stages"]]
    assert names[0] == "load" and names[-1] == "encode-sign" and "codebook" in names
    assert not any(n.startswith("holdout") for n in names)
    assert sum(r["seconds"] for r in summary["stages"]) <= summary["build_seconds"] + 0.01


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_each_fold_stage_carries_the_cpu_and_memory_its_own_process_measured(ratings_csv, monkeypatch, jobs):
    """Pooled fold workers are invisible to the parent's RUSAGE_CHILDREN until reaped, so each fold
    measures itself and its CPU counts in its own stage's cpu_seconds, an in-process fold's moved
    there from the stage open while it ran. Two processes: the worker starts folding before the
    build's own stages, so it may run both folds."""
    monkeypatch.setenv("PRIVMAP_JOBS", jobs)
    result = build(Dataset.from_csv(ratings_csv, private="gender"),
                   QuantizedOptions(clusters=12, delta_fraction=0.5, cross_fitting=CrossFitting(folds=2)))
    folds = [r for r in result.detail.stages.records() if r["stage"].startswith("holdout-fold")]
    assert len(folds) == 2
    for r in folds:
        assert r["fold_cpu_seconds"] > 0 and r["fold_seconds"] > 0
        assert r["fold_peak_rss_bytes"] > 10 * 2 ** 20
        assert r["fold_pooled"] == (r["fold_pid"] != os.getpid())
        assert r["cpu_seconds"] >= r["fold_cpu_seconds"] - 0.05             # in its own stage
    pooled = [r["fold_pooled"] for r in folds]
    assert (True in pooled) if jobs == "2" else pooled == [False, False]


def test_an_in_process_folds_cpu_moves_to_its_record_from_the_one_open_while_it_ran():
    """This process ran fold 2 while fold 1's record was open (a worker had fold 1): fold 2's CPU
    was counted in record 1 and moves to record 2; a pooled fold's CPU is added to its record."""
    import time
    timer = StageTimer()
    timer("holdout-fold-1", 0.0)
    started, cpu = time.perf_counter(), time.process_time()
    sum(i * i for i in range(300_000))                      # fold 2's work, in this process
    cpu = round(time.process_time() - cpu, 3)
    timer("holdout-fold-2", 0.5)
    timer.close()
    one, two = (dict(r) for r in timer.records())
    timer.attach_folds([{"fold": 1, "started": 0.0, "seconds": 1.0, "cpu_seconds": 1.0, "peak_rss_bytes": 1,
                         "pid": -1, "pooled": True},
                        {"fold": 2, "started": started, "seconds": cpu, "cpu_seconds": cpu, "peak_rss_bytes": 1,
                         "pid": os.getpid(), "pooled": False}])
    after = timer.records()
    assert cpu > 0 and one["cpu_seconds"] >= cpu - 0.002                # record 1 had counted fold 2's work
    assert after[0]["cpu_seconds"] == pytest.approx(one["cpu_seconds"] + 1.0 - cpu, abs=2e-3)
    assert after[1]["cpu_seconds"] == pytest.approx(two["cpu_seconds"] + cpu, abs=2e-3)


def test_build_json_times_the_auto_search_as_the_stage_after_load_with_every_fold_in_it(tmp_path, keys, ratings_csv,
                                                                                   run, monkeypatch):
    """The search's folds run in this process and a pooled worker, whose CPU the parent cannot see
    until the pool is reaped: the search's record adds the worker's folds as they measured
    themselves, and the build's time includes the search."""
    monkeypatch.setenv("PRIVMAP_JOBS", "2")
    summary = json.loads(run("build", ratings_csv, "--private", "gender", "--clusters", "auto", "--delta-fraction",
                             0.5, "--holdout-folds", 2, "--key", keys / "private.pem", "--out", tmp_path / "b.bundle",
                             "--json").stdout)
    search = summary["stages"][1]
    assert summary["stages"][0]["stage"] == "load" and search["stage"] == "auto-search"
    candidates = summary["auto"]["candidates"]
    assert search["folds"] == 2 * len(candidates)
    assert [(c["clusters"], c["smoothing"]) for c in search["candidates"]] == [
        (c["clusters"], c["smoothing"]) for c in candidates]
    assert search["fold_cpu_seconds"] == pytest.approx(sum(c["fold_cpu_seconds"] for c in search["candidates"]),
                                                       abs=0.01 * len(candidates))
    assert search["cpu_seconds"] >= search["fold_cpu_seconds"] - 0.05      # every fold, pooled or not, counted
    assert search["seconds"] <= summary["build_seconds"]
    assert sum(r["seconds"] for r in summary["stages"]) <= summary["build_seconds"] + 0.01


def test_a_searchs_record_gains_the_cpu_of_its_pooled_folds_only():
    timer = StageTimer()
    timer("auto-search", 0.0)
    timer.close()
    before = timer.records()[0]["cpu_seconds"]
    timer.attach_search("auto-search", [{"cpu_seconds": 2.0, "pooled": True}, {"cpu_seconds": 1.0, "pooled": False}],
                        candidates=[{"clusters": 4}])
    record = timer.records()[0]
    assert record["cpu_seconds"] == pytest.approx(before + 2.0)       # this process's fold is in `before`
    assert record["folds"] == 2 and record["fold_cpu_seconds"] == 3.0 and record["candidates"] == [{"clusters": 4}]


def test_the_perfect_privacy_stage_moves_while_delta0_is_solved():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 30, (3000, 2)).astype(float)
    a = np.minimum(3, (x[:, 0] / 8 + rng.integers(0, 2, x.shape[0])).astype(np.int64))   # four classes
    data = Dataset(features=("x", "y"), public=x, private=a, classes=tuple("abcd"), private_name="a",
                   categorical=False, sha256="0" * 64)
    told = []
    solve_rows(InMemoryRows(data), QuantizedOptions(clusters=40, delta_fraction=0.5, cross_fitting=None,
                                                    codebook=False),
               progress=lambda stage, f: told.append((stage, f)))
    fractions = [f for stage, f in told if stage == "perfect-privacy"]
    assert fractions == sorted(fractions) and 0.25 <= fractions[0] and fractions[-1] <= 0.35
    assert len(set(fractions)) >= 10                  # the interior point's steps, not only its ends


class _Terminal:
    """A stderr that says it is a terminal and keeps what is drawn."""

    def __init__(self):
        self.text = ""

    def write(self, text):
        self.text += text

    def flush(self):
        pass

    def isatty(self):
        return True


def test_the_build_bar_moves_through_the_auto_search_and_names_where_it_is(monkeypatch):
    import sys

    from privmap.offline.mechanisms.table._run import SEARCH_SHARE, _stage_bar
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with _stage_bar("build") as progress:
        progress("load", 0.0)
        progress("auto-search", 0.5, "6/12 tasks, K 8, smoothing 0, Delta/D0 0.5, class-blind")
        assert "6/12 tasks, K 8" in terminal.text and f"{int(50 * SEARCH_SHARE)}%" in terminal.text
        progress("cluster", 0.5)                  # the chosen build fills the rest of the bar
        assert f"{int(100 * (SEARCH_SHARE + 0.05))}%" in terminal.text
