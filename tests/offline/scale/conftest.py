"""Fixtures for the partitioned build: a small local Dask cluster and labelled ratings."""
import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")


@pytest.fixture(scope="session")
def dask_cluster():
    """A LocalCluster of two single-threaded workers (threads, to start fast), shared by the tests."""
    from distributed import LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster:
        yield cluster


@pytest.fixture
def client(dask_cluster):
    from distributed import Client
    with Client(dask_cluster) as c:
        yield c


@pytest.fixture(scope="session")
def ratings_frame():
    """``ratings_frame(n=1200, d=6, seed=3)``: a pandas frame of labelled ratings."""
    return _ratings_frame


def _ratings_frame(n=1200, d=6, seed=3):
    """n users x d integer ratings in 1..5 whose level depends on a binary party."""
    import pandas as pd
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    X = np.clip(rng.integers(1, 6, size=(n, d)) + a[:, None] * (rng.random((n, d)) < 0.5), 1, 5)
    frame = pd.DataFrame(X, columns=[f"r{i}" for i in range(d)])
    frame["party"] = np.where(a == 1, "left", "right")
    return frame


@pytest.fixture(scope="session")
def ratings(tmp_path_factory, ratings_frame):
    """The same rows as one CSV, as three CSV files in a folder, and as two Parquet files."""
    root = tmp_path_factory.mktemp("ratings")
    frame = ratings_frame()
    frame.to_csv(root / "all.csv", index=False)
    (root / "csv").mkdir()
    (root / "parquet").mkdir()
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), 3)):
        frame.iloc[rows].to_csv(root / "csv" / f"part{i}.csv", index=False)
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), 2)):
        frame.iloc[rows].to_parquet(root / "parquet" / f"part{i}.parquet", row_group_size=200)
    return root


@pytest.fixture(scope="session")
def blank_ratings(tmp_path_factory, ratings_frame):
    """Ratings with about 5% blank cells (missing answers), as one CSV and as three CSV parts."""
    root = tmp_path_factory.mktemp("blank_ratings")
    frame = ratings_frame()
    rng = np.random.default_rng(8)
    columns = [c for c in frame.columns if c != "party"]
    frame[columns] = frame[columns].astype("Int64").mask(rng.random((len(frame), len(columns))) < 0.05)
    frame.to_csv(root / "all.csv", index=False)
    (root / "csv").mkdir()
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), 3)):
        frame.iloc[rows].to_csv(root / "csv" / f"part{i}.csv", index=False)
    return root


#: Metrics summed over rows, whose partitioned sums add in another order (equal to 1e-12).
REORDERED_SUMS = {"quantization_distortion", "measured_distortion"}


@pytest.fixture
def same_as_in_memory():
    """``same_as_in_memory(got, memory)``: two payloads agree in every field but provenance, and in every
    metric (exactly, or to 1e-12 for :data:`REORDERED_SUMS`)."""
    def check(got, memory):
        for key in memory:
            if key not in ("metrics", "provenance"):
                assert got[key] == memory[key], key
        for key, value in memory["metrics"].items():
            if key in REORDERED_SUMS:
                assert got["metrics"][key] == pytest.approx(value, rel=1e-12), key
            else:
                assert got["metrics"][key] == value, key
    return check
