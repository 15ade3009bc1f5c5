"""A build's program (19) starts from the outputs its perfect-privacy table uses: the solve is
offered them, and with many classes the interior point's column generation over the outputs
starts there and ends certified over every output."""
import numpy as np

from privmap.offline import QuantizedOptions
from privmap.offline.data import Dataset
from privmap.offline.mechanisms.table import InMemoryRows, _program, solve_rows
from privmap.offline.solvers import perfect_privacy_table
from privmap.offline.solvers.interior import _solve as interior_solve


def _six_classes(n, seed):
    """Rows on a 2-d grid whose class (six of them) leans on the first coordinate."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 40, (n, 2)).astype(float)
    a = np.minimum(5, (x[:, 0] / 8 + rng.integers(0, 3, n)).astype(np.int64))
    return Dataset(features=("x", "y"), public=x, private=a, classes=tuple("abcdef"), private_name="a",
                   categorical=False, sha256="0" * 64)


def test_the_solve_is_offered_the_outputs_of_the_perfect_privacy_table(monkeypatch):
    options = QuantizedOptions(clusters=48, delta_fraction=0.5, cross_fitting=None, codebook=False)
    offered, real = [], _program.solve

    def recording(*args, start_outputs=None, **kwargs):
        offered.append(start_outputs)
        return real(*args, start_outputs=start_outputs, **kwargs)

    monkeypatch.setattr(_program, "solve", recording)
    fit = solve_rows(InMemoryRows(_six_classes(4000, 0)), options)
    table, _ = perfect_privacy_table(fit.p_ac, fit.alphabet.distortion)
    assert len(offered) == 1
    assert np.array_equal(offered[0], np.flatnonzero(fit.p_ac.sum(axis=0) @ table > 0))
    assert offered[0].size < fit.alphabet.distortion.shape[1]


def test_from_those_outputs_the_build_s_answer_is_certified_over_every_output(monkeypatch):
    options = QuantizedOptions(clusters=48, delta_fraction=0.5, cross_fitting=None, codebook=False)
    data = _six_classes(4000, 1)
    everywhere = solve_rows(InMemoryRows(data), options)
    monkeypatch.setattr(interior_solve, "MIN_OUTPUTS", 0)       # the rounds at a test's size, where
    monkeypatch.setattr(interior_solve, "MOST_SHARE", 1.0)      # the optimum uses most outputs
    by_columns = solve_rows(InMemoryRows(data), options)
    assert "columns" not in everywhere.solved.info and by_columns.solved.info["columns"]["rounds"] >= 1
    assert by_columns.solved.gap_bits <= options.tol_bits
    assert abs(by_columns.solved.leakage_bits - everywhere.solved.leakage_bits) <= 2 * options.tol_bits
