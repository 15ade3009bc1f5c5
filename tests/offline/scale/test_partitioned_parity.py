"""The partitioned build at parity with the in-memory one: missing answers, declared domains, the
codebook step and cross-fitted leakage out of core, and every refusal before a cluster starts."""
import dataclasses
import json
import time

import numpy as np
import pytest

from privmap.offline import CrossFitting, Dataset, DatasetError, QuantizedOptions, declare
from privmap.offline.data import open_source
from privmap.offline.mechanisms.quantized import build, build_partitioned
from privmap.offline.mechanisms.table._partitioned import _fold_of

#: Where the algorithms coincide: k-means in memory, no codebook step, no cross-fitting.
PLAIN = QuantizedOptions(clusters=12, delta_fraction=0.5, issued_at=1_700_000_000, codebook=False,
                         cross_fitting=None, declared=declare(None, ["1:5"]))


def in_memory(path, options):
    """The in-memory build of the CSV at ``path`` (party private)."""
    return build(Dataset.from_csv(path, private="party"), options)


def partitioned(path, options, client, **kwargs):
    """The partitioned build of the files at ``path`` (party private) on ``client``, mapped out of
    core (its passes over the partitions; rows this small would be mapped in core by default)."""
    return build_partitioned(open_source(path, private="party"), options, client, in_core_bytes=0, **kwargs)
#: Float sums that a partitioned build adds in another order.
@pytest.mark.parametrize("missing", ["mask", "impute"])
def test_blank_cells_and_declared_domain_give_the_in_memory_bundle(client, blank_ratings, missing,
                                                                   same_as_in_memory):
    options = dataclasses.replace(PLAIN, missing=missing)
    memory = in_memory(blank_ratings / "all.csv", options).payload
    got = partitioned(blank_ratings / "csv", options, client, kmeans="in-memory").payload
    assert memory["metrics"]["missing_cell_fraction"] > 0.03
    assert all(f["min"] == 1 and f["max"] == 5 and f["missing"] == missing for f in got["features"])
    same_as_in_memory(got, memory)


def test_codebook_step_out_of_core_lowers_distortion_as_in_memory(client, blank_ratings):
    # K = 16: at PLAIN's K = 12 the rounded optima of these rows are the k-means representatives
    # themselves, so no output moves, in memory or out of core (nothing to compare)
    base = dataclasses.replace(PLAIN, clusters=16)
    options = dataclasses.replace(base, codebook=True)
    plain = partitioned(blank_ratings / "csv", base, client, kmeans="in-memory").payload["metrics"]
    memory = in_memory(blank_ratings / "all.csv", options).payload["metrics"]
    result = partitioned(blank_ratings / "csv", options, client, kmeans="in-memory")
    m = result.payload["metrics"]
    assert result.payload["provenance"]["codebook"] == 1 and result.payload["outputs"] != result.payload["inputs"]
    assert m["codebook_start_distortion"] == pytest.approx(plain["measured_distortion"], rel=1e-3)
    assert m["leakage_bits"] <= m["codebook_start_leakage_bits"] + 1e-6
    assert m["measured_distortion"] < 0.999 * plain["measured_distortion"]
    assert m["measured_distortion"] <= m["delta_plus_r"]
    # one round of four passes: within 1% of the in-memory step's distortion (up to 12 rounds)
    assert m["measured_distortion"] <= 1.01 * memory["measured_distortion"]


@pytest.mark.parametrize("codebook", [False, True])
def test_cross_fitted_leakage_out_of_core_agrees_with_the_in_memory_estimate(client, blank_ratings, codebook):
    options = dataclasses.replace(PLAIN, codebook=codebook, cross_fitting=CrossFitting(folds=5))
    memory = in_memory(blank_ratings / "all.csv", options).payload["metrics"]
    m = partitioned(blank_ratings / "csv", options, client, kmeans="in-memory").payload["metrics"]
    assert m["holdout_folds"] == 5 and m["holdout_confidence"] == memory["holdout_confidence"]
    assert m["holdout_leakage_low_bits"] <= m["holdout_leakage_bits"] <= m["holdout_leakage_high_bits"]
    # The in-memory folds refit k-means on their own rows; out of core the centres are shared by the
    # folds (cross_fitted_from_counts docstring). The leakage estimates agree within their intervals, the
    # out-of-core one on the cautious side; the held-out distortion out of core is optimistic (the
    # held-out rows shaped the centres): 5 % below the in-memory figure on these rows.
    assert memory["holdout_leakage_low_bits"] <= m["holdout_leakage_bits"] <= memory["holdout_leakage_high_bits"] * 1.1
    assert m["holdout_leakage_low_bits"] <= memory["holdout_leakage_bits"] <= m["holdout_leakage_high_bits"]
    assert 0.93 * memory["holdout_distortion"] <= m["holdout_distortion"] <= 1.03 * memory["holdout_distortion"]
    assert m["holdout_distortion"] > m["measured_distortion"] - 0.05 * m["measured_distortion"]


def test_folds_are_a_balanced_deterministic_hash_of_partition_and_row():
    fold = _fold_of(3, 100_000, 5, seed=0)
    assert np.array_equal(fold, _fold_of(3, 100_000, 5, seed=0))
    assert np.abs(np.bincount(fold, minlength=5) / 20_000 - 1).max() < 0.03
    assert (fold != _fold_of(4, 100_000, 5, seed=0)).mean() > 0.7
    assert (fold != _fold_of(3, 100_000, 5, seed=1)).mean() > 0.7


def test_value_outside_a_declared_domain_is_named_by_partition(client, ratings_frame, tmp_path):
    frame = ratings_frame(n=200)
    frame.iloc[:100].to_csv(tmp_path / "a.csv", index=False)
    frame = frame.iloc[100:].copy()
    frame.iloc[30, 2] = 7
    frame.to_csv(tmp_path / "b.csv", index=False)
    options = dataclasses.replace(PLAIN, clusters=4)
    with pytest.raises(DatasetError, match=r"b\.csv, lines from 2: column 'r2': 1 training value\(s\) outside the "
                                           r"declared domain \[1, 5\] \(first in data row 31\)"):
        partitioned(tmp_path, options, client)


@pytest.fixture
def no_cluster(monkeypatch):
    """Fails any attempt to start or reach a Dask cluster, whichever module asks for one."""
    import distributed

    def refuse(*args, **kwargs):
        raise AssertionError("a cluster was started")
    monkeypatch.setattr(distributed, "LocalCluster", refuse)
    monkeypatch.setattr(distributed, "Client", refuse)


@pytest.mark.parametrize("extra, fragment", [
    (["--metric", "l1"], "l2 metric only"),
    (["--domain", "nope=1:5"], "unknown public column(s) 'nope'"),
    (["--domain", "1:5", "--domain", "r0=0.5:3.5", "--schema", "SCHEMA"], "whole-number bounds"),
    (["--clusters", "auto", "--in-core-limit", "0"], "--clusters auto or --smoothing auto needs the users' points"),
    (["--domain", "1:x"], "expected LO:HI"),
    (["--private", "nobody"], "nobody"),
])
def test_partitioned_refusals_come_before_any_cluster(run, keys, ratings, tmp_path, no_cluster, extra, fragment):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"columns": {"r0": {"type": "integer"}}}))
    args = ["build", ratings / "csv", "--private", "party", "--clusters", 4, "--delta-fraction", 0.5,
            "--key", keys / "private.pem", "--out", tmp_path / "x.bundle", "--workers", 2,
            *[str(schema) if a == "SCHEMA" else a for a in extra]]
    started = time.perf_counter()
    result = run(*args, ok=False)
    assert time.perf_counter() - started < 5.0
    assert result.exit_code != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and fragment in errors[0], result.stderr
    assert not (tmp_path / "x.bundle").exists()


def test_pinned_form_on_csv_parts_with_blank_cells(run, keys, blank_ratings, tmp_path):
    """``privmap build DIR --private COL --domain 1:5 --clusters K --delta-fraction F --workers N --key KEY --out B``
    then ``privmap inspect B --json``: clusters and a number for holdout_leakage_bits."""
    out = tmp_path / "parts.bundle"
    run("build", blank_ratings / "csv", "--private", "party", "--domain", "1:5", "--clusters", 8,
        "--delta-fraction", 0.5, "--workers", 1, "--key", keys / "private.pem", "--out", out)
    info = json.loads(run("inspect", out, "--json").stdout)
    assert 1 <= info["clusters"] <= 8
    assert isinstance(info["holdout_leakage_bits"], float) and info["holdout_leakage_bits"] >= 0
    low, high = info["holdout_leakage_interval_bits"]
    assert low <= info["holdout_leakage_bits"] <= high
    assert all(d["min"] == 1 and d["max"] == 5 for d in info["domains"].values())
