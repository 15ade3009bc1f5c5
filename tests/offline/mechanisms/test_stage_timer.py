"""Whole-build measurement: each stage's seconds and peak memory, in the build result and in --json."""
import json
import os

import pytest

from privmap.offline.mechanisms.quantized._pipeline import BuildOptions, StageTimer, build


def test_build_times_every_stage_in_order_with_a_non_decreasing_memory_peak(ratings_csv):
    told = []
    result = build(ratings_csv, BuildOptions(private="gender", clusters=12, delta_fraction=0.5, holdout_folds=2),
                   progress=lambda stage, f: told.append(stage))
    records = result.stages.records()
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
    there from the stage open while it ran. Two processes: this one and one worker, a fold each."""
    monkeypatch.setenv("PRIVMAP_JOBS", jobs)
    result = build(ratings_csv, BuildOptions(private="gender", clusters=12, delta_fraction=0.5, holdout_folds=2))
    folds = [r for r in result.stages.records() if r["stage"].startswith("holdout-fold")]
    assert len(folds) == 2
    for r in folds:
        assert r["fold_cpu_seconds"] > 0 and r["fold_seconds"] > 0
        assert r["fold_peak_rss_bytes"] > 10 * 2 ** 20
        assert r["fold_pooled"] == (r["fold_pid"] != os.getpid())
        assert r["cpu_seconds"] >= r["fold_cpu_seconds"] - 0.05             # in its own stage
    assert sorted(r["fold_pooled"] for r in folds) == ([False, True] if jobs == "2" else [False, False])
