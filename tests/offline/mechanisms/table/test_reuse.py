"""Folds started from the build: the same certified answers, whatever the start."""
import dataclasses

import numpy as np
import pytest

from privmap.offline import ExactOptions, QuantizedOptions, SolverError
from privmap.offline.data import Dataset
from privmap.offline.mechanisms.table import InMemoryRows, _program, solve_rows
from privmap.offline.mechanisms.table._holdout import FoldKMeans
from privmap.offline.mechanisms.table._reuse import START_CLUSTERS, BuildStart, starts_folds


def _dataset(n, seed):
    """Rows on a 2-d integer grid whose class leans on the first coordinate."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 40, (n, 2)).astype(float)
    a = (rng.random(n) < 0.2 + 0.015 * x[:, 0]).astype(np.int64)
    return Dataset(features=("x", "y"), public=x, private=a, classes=("f", "m"), private_name="a",
                   categorical=False, sha256="0" * 64)


def test_a_start_on_the_build_s_own_clusters_carries_its_table_unchanged():
    # Without the codebook step the outputs are the inputs: every row and output maps to itself.
    data = _dataset(3000, 0)
    fit = solve_rows(InMemoryRows(data), QuantizedOptions(clusters=30, delta_fraction=0.5, codebook=False))
    start = BuildStart.of(fit, "l2")
    centers = np.asarray(fit.alphabet.inputs, dtype=float)
    warm = start.warm(centers)
    assert np.array_equal(warm.table.toarray(), np.asarray(fit.solved.table))
    assert warm.multiplier == fit.solved.multiplier


def test_start_is_none_where_symbols_are_not_points():
    data = _dataset(500, 1)
    fit = solve_rows(InMemoryRows(data), QuantizedOptions(clusters=8, delta_fraction=0.5, cross_fitting=None))
    assert BuildStart.of(fit, "erasures") is None
    assert BuildStart.of(dataclasses.replace(fit, alphabet=dataclasses.replace(
        fit.alphabet, inputs=[[None, 1.0]] * 8)), "l2") is None


@pytest.mark.parametrize("seed", [0, 1])
def test_a_fold_started_from_the_build_reaches_the_cold_fold_s_delta0_and_optimum(seed):
    # The fold's own clusters (one k-means++ start on 80 % of the rows), solved cold and started
    # from the build: Delta0 equal to its certificate, and both tables certified within tol_bits
    # of the same optimum, so their leakages differ by at most twice the tolerance.
    data = _dataset(4000, seed)
    options = QuantizedOptions(clusters=120, delta_fraction=0.5, seed=seed)
    start = BuildStart.of(solve_rows(InMemoryRows(data), options), "l2")
    train = np.random.default_rng(seed).permutation(data.n)[: int(0.8 * data.n)]
    fold = InMemoryRows(data).subset(train)
    cold = solve_rows(fold, options, quantizer=FoldKMeans())
    started = solve_rows(fold, options, quantizer=FoldKMeans(), start=start)
    assert np.array_equal(np.asarray(cold.alphabet.inputs), np.asarray(started.alphabet.inputs))
    assert abs(started.d_perfect - cold.d_perfect) <= 1e-9 * cold.d_perfect
    no_codebook = dataclasses.replace(options, codebook=False)
    cold19 = _program.solve_prior(cold.alphabet, cold.p_ac, no_codebook)
    started19 = _program.solve_prior(cold.alphabet, cold.p_ac, no_codebook, start=start)
    assert started19.solved.gap_bits <= options.tol_bits and cold19.solved.gap_bits <= options.tol_bits
    assert abs(started19.solved.leakage_bits - cold19.solved.leakage_bits) <= 2 * options.tol_bits + 1e-9


def test_a_start_that_fails_is_solved_again_cold(monkeypatch):
    data = _dataset(2000, 2)
    options = QuantizedOptions(clusters=20, delta_fraction=0.5, cross_fitting=None, codebook=False)
    fit = solve_rows(InMemoryRows(data), options)
    real = _program.solve
    starts = []

    def failing_when_started(*args, warm_start=None, **kwargs):
        starts.append(warm_start is not None)
        if warm_start is not None:
            raise SolverError("fast solver: no ascent direction")
        return real(*args, **kwargs)

    monkeypatch.setattr(_program, "solve", failing_when_started)
    again = _program.solve_prior(fit.alphabet, fit.p_ac, options, start=BuildStart.of(fit, "l2"))
    assert starts == [True, False]
    assert np.array_equal(np.asarray(again.solved.table), np.asarray(fit.solved.table))


def test_only_large_quantized_builds_with_folds_start_them():
    below = QuantizedOptions(clusters=START_CLUSTERS - 1, delta_fraction=0.5)
    assert not starts_folds(below)
    assert starts_folds(dataclasses.replace(below, clusters=START_CLUSTERS))
    assert not starts_folds(dataclasses.replace(below, clusters=START_CLUSTERS, cross_fitting=None))
    assert not starts_folds(ExactOptions(delta=1.0))
