"""Fixtures for the solver tests: the benchmark scripts whose instances and budgets they check, and
the small random and anisotropic instances of the fast solver's tests."""
import importlib.util
import pathlib

import numpy as np
import pytest

from privmap.offline.data._distortion import pairwise
from privmap.offline.data._prior import joint_prior
from privmap.offline.data._quantize import quantize
from privmap.offline.solvers import perfect_privacy_table


def _benchmark(name: str):
    """``benchmarks/NAME.py`` as a module."""
    path = pathlib.Path(__file__).resolve().parents[3] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def bench():
    """``benchmarks/bench_solver.py`` as a module (its instance generators and ``delta_for``)."""
    return _benchmark("bench_solver")


@pytest.fixture(scope="session")
def bench_build():
    """``benchmarks/bench_build.py`` as a module (UCI Adult's rows, ``adult_rows``)."""
    return _benchmark("bench_build")


def _random_instance(seed, K, n_private=2, dim=3, erasure=False):
    """A random (p_ac (n_private, K), D) pair: cubed uniform prior, Euclidean distances between
    K random points in [0, 1]^dim. With ``erasure`` D is (K, K + 2): each input may stay (cost
    0) or go to one of two erasure symbols (cost 0.5 and 1); moving to another input is
    forbidden (inf)."""
    rng = np.random.default_rng(seed)
    p_ac = rng.random((n_private, K)) ** 3
    p_ac /= p_ac.sum()
    X = rng.random((K, dim))
    dist = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    if erasure:
        dist = np.full((K, K + 2), np.inf)
        np.fill_diagonal(dist, 0.0)
        dist[:, K] = 0.5
        dist[:, K + 1] = 1.0
    return p_ac, dist


def _budget(p_ac, dist, frac):
    """``frac`` times the distortion of a uniformly random allowed output, in D's unit."""
    finite = np.where(np.isfinite(dist), dist, np.nan)
    return frac * float(np.nansum(p_ac.sum(axis=0) * np.nanmean(finite, axis=1)))


def _anisotropic_instance(seed, users):
    """Integer points (x1 in 0..11, x2 = 0 for 85 % of users, else a multiple of 1000 up to 99,000,
    like UCI Adult's capital gain), one input per distinct point (p(c) its share of users, many
    with a single user and a pure posterior), L2 distortion between the points."""
    rng = np.random.default_rng(seed)
    x1 = rng.integers(0, 12, users)
    private = (rng.random(users) < 0.3 + 0.03 * x1).astype(int)
    x2 = np.where(rng.random(users) < 0.85, 0, rng.integers(1, 100, users) * 1000)
    points, labels = np.unique(np.c_[x1, x2], axis=0, return_inverse=True)
    p_ac = np.zeros((2, len(points)))
    np.add.at(p_ac, (private, labels.ravel()), 1.0)
    diff = points[:, None, :] - points[None, :, :]
    return p_ac / p_ac.sum(), np.sqrt((diff.astype(float) ** 2).sum(axis=-1))


@pytest.fixture(scope="session")
def anisotropic_instance():
    """``anisotropic_instance(seed, users)`` -> (p_ac, D) of UCI Adult's anisotropic geometry."""
    return _anisotropic_instance


@pytest.fixture(scope="session")
def random_instance():
    """``random_instance(seed, K, n_private=2, dim=3, erasure=False)`` -> (p_ac, D)."""
    return _random_instance


@pytest.fixture(scope="session")
def budget():
    """``budget(p_ac, D, frac)`` -> a budget delta between the least distortion and a loose one."""
    return _budget


def _adult_program(bench_build, private: str, K: int):
    """UCI Adult's five numeric columns quantized to K, ``private`` the private column, half of Delta0."""
    rows = bench_build.adult_rows(private=private)
    X = np.array([[float(v) for v in r[:5]] for r in rows])
    classes, labels = np.unique([r[5] for r in rows], return_inverse=True)
    found = quantize(X, K, seed=0)
    p_ac = joint_prior(labels, found.labels, len(classes), found.k)
    D = pairwise(found.centers, found.centers, "l2")
    return p_ac, D, 0.5 * perfect_privacy_table(p_ac, D)[1]


@pytest.fixture(scope="session")
def adult_workclass(bench_build):
    """UCI Adult (data/adult), K = 96, the 9 work classes private, half of Delta0: the primal-dual
    interior point answers it (where it hands UCI Adult's occupations at K = 64 to the barrier)."""
    return _adult_program(bench_build, "workclass", 96)


@pytest.fixture(scope="session")
def adult_occupations(bench_build):
    """UCI Adult (data/adult: 48,842 rows), its five numeric columns quantized to K = 64, the 15
    occupations private, half of Delta0: Clarabel's equilibrated attempts stall on it."""
    return _adult_program(bench_build, "occupation", 64)
