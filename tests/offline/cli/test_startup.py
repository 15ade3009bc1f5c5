"""Every ``privmap`` command starts without importing the heavy libraries of the build.

``privmap --help``, ``inspect``, ``verify`` and ``keygen`` use none of them, and the cross-fitting
folds' loky workers (where they are not forked) import ``privmap.offline`` before running a fold:
scikit-learn alone (with the scipy.stats and pandas it imports) took about 0.9 s of each start. The
modules that use them import them inside the functions that do. Checked in a fresh interpreter,
where nothing else has loaded them.
"""
import subprocess
import sys

import pytest

#: Libraries no command needs before it runs: the builder's solvers, clustering and attacker, the
#: partitioned path's data frames, the plots.
HEAVY = ("sklearn", "cvxpy", "clarabel", "ot", "scipy.stats", "scipy.optimize", "pandas", "dask",
         "matplotlib")


@pytest.mark.parametrize("module", ["privmap.offline.cli", "privmap.offline",
                                    "privmap.offline.mechanisms.table._holdout"])
def test_import_leaves_heavy_libraries_unloaded(module):
    """The CLI, the curated API, and what a fold worker imports (``_holdout``)."""
    code = (f"import sys, {module}\n"
            f"print(sorted({{h for h in {HEAVY!r} for m in sys.modules if m == h or m.startswith(h + '.')}}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "[]"
