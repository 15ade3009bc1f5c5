"""The recommender build on partitioned ratings: a bundle the device installs and releases inside the
rating domain from, the in-memory model when the sample covers every row, a seeded bounded sample in
file order, and no temporary directory left behind."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from privmap.offline import Auto, BuildError, CrossFitting, Dataset, DatasetError, QuantizedOptions, declare
from privmap.offline.bundle import check_bundle, encode_payload, sign_bundle
from privmap.offline.data import file_sha256, open_source, source_sha256, synthetic_ratings
from privmap.offline.mechanisms import recommender
from privmap.offline.mechanisms.recommender import RecommenderOptions, sample_ratings

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

#: K = 8 at half the perfect-privacy distortion, ratings declared 1..5, two folds.
MAPPING = QuantizedOptions(clusters=8, delta_fraction=0.5, cross_fitting=CrossFitting(folds=2),
                           issued_at=1_800_000_000, declared=declare(None, ["1:5"], None))
OPTIONS = RecommenderOptions(mapping=MAPPING, rank=3)


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as c:
        yield c


def write_parts(folder, drawn, parts=3):
    """``drawn``'s ratings as one CSV (``folder``/all.csv) and as ``parts`` CSV parts (``folder``/parts)
    with blank cells; returns (all.csv, parts folder)."""
    whole = drawn.write_csv(folder / "all.csv", private="gender")
    header, *lines = whole.read_text().splitlines(keepends=True)
    (folder / "parts").mkdir()
    for i, rows in enumerate(np.array_split(np.arange(len(lines)), parts)):
        (folder / "parts" / f"p{i}.csv").write_text(header + "".join(lines[j] for j in rows))
    return whole, folder / "parts"


@pytest.fixture(scope="module")
def ratings(tmp_path_factory):
    drawn = synthetic_ratings(600, 30, rank=3, density=0.25, rng=21, shift=0.8)
    return (drawn, *write_parts(tmp_path_factory.mktemp("rec-parts"), drawn))


def build(parts, client, options=OPTIONS, **kwargs):
    return recommender.build_partitioned(open_source(parts, private="gender"), options, client, **kwargs)


def test_the_bundle_installs_on_the_device_and_releases_inside_the_domain(client, ratings, tmp_path):
    drawn, _, parts = ratings
    built = build(parts, client, scratch=tmp_path)
    key = Ed25519PrivateKey.from_private_bytes(bytes(32))
    bundle = check_bundle(sign_bundle(encode_payload(built.payload), key), key.public_key(), now=1_800_000_000)
    assert bundle.mechanism == "recommender" and len(bundle.features) == 30
    assert bundle.metrics["n"] == int((~np.isnan(drawn.ratings)).any(axis=1).sum())
    for row in drawn.ratings[:60]:
        released = bundle.sanitize(["" if np.isnan(v) else str(int(v)) for v in row])
        assert len(released) == 30 and all(1 <= v <= 5 for v in released)
    assert list(tmp_path.iterdir()) == []                      # the factor points are gone


def test_with_every_row_in_the_sample_the_model_is_the_in_memory_one(client, ratings, tmp_path):
    _, whole, parts = ratings
    memory = recommender.build(Dataset.from_csv(whole, private="gender"), OPTIONS).payload
    got = build(parts, client, scratch=tmp_path).payload
    assert got["model"] == memory["model"]
    for figure in ("rating_columns", "missing_cell_fraction", "rows_all_missing_dropped", "factor_rank", "factor_reg",
                   "factor_validation_rmse", "n"):
        assert got["metrics"][figure] == memory["metrics"][figure], figure
    files = open_source(parts, private="gender").files
    assert got["provenance"]["data_sha256"] == source_sha256(files, [file_sha256(f) for f in files])   # the parts'
    assert got["provenance"]["utility"] == "recommender"


def test_the_sample_is_seeded_bounded_and_in_file_order(client, ratings):
    drawn, _, parts = ratings
    src = open_source(parts, private="gender")
    rated = drawn.ratings[(~np.isnan(drawn.ratings)).any(axis=1)]
    every = sample_ratings(client, src, seed=0, size=10_000)
    assert np.array_equal(every, rated, equal_nan=True)
    some = sample_ratings(client, src, seed=0, size=100)
    assert some.shape == (100, 30)
    assert np.array_equal(some, sample_ratings(client, src, seed=0, size=100), equal_nan=True)
    assert not np.array_equal(some, sample_ratings(client, src, seed=1, size=100), equal_nan=True)
    where = [next(i for i, row in enumerate(rated) if np.array_equal(row, s, equal_nan=True)) for s in some]
    assert where == sorted(where)                              # kept in the order of the files


def test_the_temporary_directory_is_gone_after_a_failure(client, tmp_path):
    drawn = synthetic_ratings(300, 20, rank=2, density=0.3, rng=4)
    _, parts = write_parts(tmp_path, drawn)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    # one user of class c1: a cross-fitting fold without it fails the pipeline on the written factor points
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    for i, part in enumerate(sorted(parts.iterdir())):
        text = part.read_text().replace(",c1\n", ",c0\n")
        if i == 0:
            text = text.replace(",c0\n", ",c1\n", 1)          # one user of class c1 in all
        (lonely / part.name).write_text(text)
    with pytest.raises(BuildError, match="fold"):
        build(lonely, client, scratch=scratch)
    assert list(scratch.iterdir()) == []


def test_a_rating_outside_the_declared_domain_is_refused_by_partition(client, tmp_path):
    drawn = synthetic_ratings(300, 20, rank=2, density=0.3, rng=4)
    _, parts = write_parts(tmp_path, drawn)
    part = sorted(parts.iterdir())[1]
    header, first, *rest = part.read_text().splitlines(keepends=True)
    part.write_text(header + "7" + first[first.index(","):] + "".join(rest))
    with pytest.raises(DatasetError, match=r"p1.csv.*outside the declared domain"):
        build(parts, client, scratch=tmp_path)



def test_the_outputs_are_calibrated_out_of_core_as_in_memory(client, ratings, tmp_path):
    """The partitioned calibration (a pass of pools over the parts, one of distances over the
    factor points) gives the in-memory calibration's outputs and released distortion on one mapping."""
    from privmap.offline.data import nearest
    from privmap.offline.mechanisms.quantized import build_points
    from privmap.offline.mechanisms.recommender._partitioned import _Reading, calibrate, fold_in
    from privmap.offline.mechanisms.table import StageTimer
    drawn, whole, parts = ratings
    prepared = recommender.prepare(Dataset.from_csv(whole, private="gender"), OPTIONS)
    options = dataclasses.replace(MAPPING, declared=None, cross_fitting=None)     # the factor points' domain
    mapping = build_points(prepared.factors, options, StageTimer(None)).payload
    points = prepared.factors.public
    memory = recommender.calibrate_payload(mapping, prepared.fitted.model, prepared.ratings, points,
                                           nearest(points, np.asarray(mapping["inputs"]), "l2"))
    source = open_source(parts, private="gender")
    reading = _Reading(source.features, source.private_name)
    fold_in(client, source.partitions, reading, prepared.fitted.model, tmp_path)
    got = calibrate(client, source.partitions, reading, prepared.fitted.model, mapping, tmp_path)
    np.testing.assert_allclose(got["outputs"], memory["outputs"], rtol=1e-9, atol=1e-12)
    assert got["metrics"]["released_distortion"] == pytest.approx(memory["metrics"]["released_distortion"], rel=1e-9)
    assert got["outputs"] != mapping["outputs"]


#: The auto search for an AUC target over both codebooks (k-means and class-blind), the posteriors prior.
AUTO = RecommenderOptions(mapping=QuantizedOptions(auto=Auto(target_auc=0.65, class_blind=(False, True)),
                                                   prior="posteriors", cross_fitting=CrossFitting(folds=2),
                                                   issued_at=1_800_000_000, declared=declare(None, ["1:5"], None)),
                          rank=3)


def test_the_auto_search_class_blind_clusters_and_posteriors_choose_as_in_memory(client, ratings, tmp_path):
    """Points that fit in core are mapped by the in-memory engine: the same users in one file and
    in parts give the same search, the same mapping and the same new-user figures."""
    _, whole, parts = ratings
    memory = recommender.build(Dataset.from_csv(whole, private="gender"), AUTO)
    got = build(parts, client, AUTO, scratch=tmp_path)
    assert got.detail.choice.summary() == memory.detail.choice.summary()
    assert got.payload["inputs"] == memory.payload["inputs"] and got.payload["table"] == memory.payload["table"]
    assert got.payload["prior"] == memory.payload["prior"]
    np.testing.assert_allclose(got.payload["outputs"], memory.payload["outputs"], rtol=1e-9, atol=1e-12)
    for figure, value in memory.payload["metrics"].items():
        if figure.startswith("holdout_"):
            assert got.payload["metrics"][figure] == pytest.approx(value, rel=1e-9, abs=1e-12), figure
    assert got.payload["provenance"].get("class_blind") == memory.payload["provenance"].get("class_blind")


def test_out_of_core_the_mapping_takes_a_number_of_clusters(client, ratings, tmp_path):
    """An in-core limit of 0 maps the factor points by the partitioned pipeline's passes: a fixed K
    builds; what only the mapping in memory does is refused before the sample, in one line naming
    the option and the limit."""
    _, _, parts = ratings
    built = build(parts, client, scratch=tmp_path, in_core_bytes=0)
    assert built.detail.alphabet.labels is None and built.payload["metrics"]["clusters"] <= 8
    with pytest.raises(BuildError, match=r"^--clusters auto or --smoothing auto needs the users' points in memory "
                                         r"\(the 600 users' points, 4 coordinates each, .* in-core limit is 0 MiB"):
        build(parts, client, AUTO, scratch=tmp_path, in_core_bytes=0)
    assert list(tmp_path.iterdir()) == []
