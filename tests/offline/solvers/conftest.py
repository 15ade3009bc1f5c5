"""Fixtures for the solver tests: the benchmark script whose instances and budgets they check."""
import importlib.util
import pathlib

import pytest


@pytest.fixture(scope="session")
def bench():
    """``benchmarks/bench_solver.py`` as a module (its instance generators and ``delta_for``)."""
    path = pathlib.Path(__file__).resolve().parents[3] / "benchmarks" / "bench_solver.py"
    spec = importlib.util.spec_from_file_location("bench_solver", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
