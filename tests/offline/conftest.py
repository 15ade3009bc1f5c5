"""Fixtures for the offline tests: a CLI runner, a signing key pair, bundles built on the ratings,
the first rows of the ratings and a categorical toy table."""
import csv

import numpy as np
import pytest
from click.testing import CliRunner

from privmap.offline.cli import main


@pytest.fixture(scope="session")
def run():
    """``run(*args, ok=True)``: invoke ``privmap ARGS``; with ok, assert exit status 0."""
    def invoke(*args, ok=True):
        result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
        if ok:
            assert result.exit_code == 0, result.output
        return result
    return invoke


@pytest.fixture(scope="session")
def keys(tmp_path_factory, run):
    """A key directory made by ``privmap keygen``."""
    keydir = tmp_path_factory.mktemp("keys") / "k"
    run("keygen", keydir)
    return keydir


@pytest.fixture(scope="session")
def toy_csv(tmp_path_factory):
    """``toy_csv(rows, seed)``: the path of a new CSV of ``rows`` categorical rows drawn with ``seed``:
    colour (red, green, blue), size (S, L) and secret, "yes" with probability 0.8 for red rows and 0.3
    for the others (the seed mechanisms' tests and the build commands' toy data)."""
    def write(rows, seed):
        rng = np.random.default_rng(seed)
        path = tmp_path_factory.mktemp("toy") / "toy.csv"
        with path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["colour", "size", "secret"])
            for _ in range(rows):
                colour = rng.choice(["red", "green", "blue"])
                size = rng.choice(["S", "L"])
                w.writerow([colour, size, "yes" if rng.random() < (0.8 if colour == "red" else 0.3) else "no"])
        return path
    return write


@pytest.fixture(scope="session")
def ratings_bundle(tmp_path_factory, keys, ratings_csv, run):
    """``ratings_bundle(clusters, delta_fraction)``: a new bundle built by ``privmap build`` on the bundled
    ratings (gender private), issued at 1,700,000,000 and valid for 100 years, so that tests do not
    depend on the clock."""
    def build(clusters, delta_fraction):
        out = tmp_path_factory.mktemp("b") / "ratings.bundle"
        run("build", ratings_csv, "--private", "gender", "--clusters", clusters, "--delta-fraction", delta_fraction,
            "--key", keys / "private.pem", "--out", out, "--issued-at", 1_700_000_000, "--valid-days", 36500)
        return out
    return build


@pytest.fixture(scope="session")
def ratings_head(tmp_path_factory, ratings_csv):
    """``ratings_head(genres)``: a new CSV of the ratings' first 600 rows, their first ``genres`` columns
    and gender (quick sweeps)."""
    def write(genres):
        with open(ratings_csv, newline="") as f:
            rows = list(csv.reader(f))
        keep = list(range(genres)) + [len(rows[0]) - 1]
        path = tmp_path_factory.mktemp("d") / f"ratings{genres}.csv"
        with open(path, "w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows([[r[i] for i in keep] for r in rows[:601]])
        return path
    return write
