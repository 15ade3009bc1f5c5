"""The partitioned build on a LocalCluster: the in-memory build's bundle where the algorithms coincide,
a valid bundle with mini-batch k-means, and the pinned CLI form."""
import json

import numpy as np
import pytest

from privmap.device import Keyring, read_bundle_file
from privmap.device.kinds import recompute_leakage_bits
from privmap.offline import BuildError, Dataset, QuantizedOptions
from privmap.offline.bundle import encode_payload
from privmap.offline.data import open_source
from privmap.offline.mechanisms.quantized import build, build_partitioned

#: Where the algorithms coincide: the codebook step and the cross-fitted leakage differ out of core
#: (one round of the step; k-means shared by the folds), so both builds here skip them.
OPTIONS = QuantizedOptions(clusters=12, delta_fraction=0.5, issued_at=1_700_000_000, codebook=False,
                           cross_fitting=None)


def in_memory(path, options):
    """The in-memory build of the CSV at ``path`` (party private)."""
    return build(Dataset.from_csv(path, private="party"), options)


def partitioned(path, options, client, **kwargs):
    """The partitioned build of the files at ``path`` (party private) on ``client``, mapped out of
    core (its passes over the partitions; rows this small would be mapped in core by default)."""
    return build_partitioned(open_source(path, private="party"), options, client, in_core_bytes=0, **kwargs)
#: Float sums that a partitioned build adds in another order.
def test_one_file_gives_the_in_memory_bundle_byte_for_byte(client, ratings):
    memory = in_memory(ratings / "all.csv", OPTIONS)
    got = partitioned(ratings / "all.csv", OPTIONS, client, kmeans="in-memory")
    assert encode_payload(got.payload) == encode_payload(memory.payload)


@pytest.mark.parametrize("folder", ["csv", "parquet"])
def test_many_partitions_give_the_in_memory_table_and_metrics(client, ratings, folder, same_as_in_memory):
    memory = in_memory(ratings / "all.csv", OPTIONS).payload
    got = partitioned(ratings / folder, OPTIONS, client, kmeans="in-memory").payload
    same_as_in_memory(got, memory)
    assert {k: v for k, v in got["provenance"].items() if k != "data_sha256"} == \
        {k: v for k, v in memory["provenance"].items() if k != "data_sha256"}


def test_minibatch_build_keeps_theorem_2_and_quantizes_near_full_kmeans(client, ratings, tmp_path):
    memory = in_memory(ratings / "all.csv", OPTIONS)
    result = partitioned(ratings / "parquet", OPTIONS, client, kmeans="minibatch")
    m = result.payload["metrics"]
    assert m["n"] == 1200 and np.isclose(result.detail.p_ac.sum(), 1.0)
    assert m["measured_distortion"] <= m["delta_plus_r"]
    assert m["leakage_bits"] < m["leakage_before_bits"]
    # mini-batch k-means on this small sample: within 10% of the in-memory k-means' mean distance
    assert m["quantization_distortion"] <= 1.10 * memory.payload["metrics"]["quantization_distortion"]


def test_other_metrics_are_refused(client, ratings):
    options = QuantizedOptions(clusters=4, delta_fraction=0.5, metric="l1")
    with pytest.raises(BuildError, match="l2 metric only"):
        partitioned(ratings / "csv", options, client)


def test_cli_pinned_form_on_a_glob_with_an_existing_scheduler(run, keys, ratings, tmp_path, dask_cluster):
    out = tmp_path / "big.bundle"
    result = run("build", str(ratings / "parquet" / "*.parquet"), "--private", "party", "--clusters", 12,
                 "--delta-fraction", 0.5, "--key", keys / "private.pem", "--out", out,
                 "--scheduler", dask_cluster.scheduler_address, "--json")
    summary = json.loads(result.stdout)
    loaded = read_bundle_file(out, Keyring.from_pem_files(keys / "public.pem"))
    assert summary["n"] == 1200 and abs(recompute_leakage_bits(loaded) - summary["leakage_bits"]) < 1e-9


def test_cli_local_cluster_with_workers(run, keys, ratings, tmp_path):
    out = tmp_path / "w.bundle"
    run("build", ratings / "csv", "--private", "party", "--clusters", 8, "--delta-fraction", 0.5,
        "--key", keys / "private.pem", "--out", out, "--workers", 1)
    assert out.stat().st_size > 0


def test_cli_bad_cell_is_one_error_line_and_no_bundle(run, keys, ratings_frame, tmp_path, dask_cluster):
    (tmp_path / "data").mkdir()
    frame = ratings_frame(n=200)
    frame.iloc[:100].to_csv(tmp_path / "data" / "a.csv", index=False)
    text = frame.iloc[100:].to_csv(index=False).splitlines()
    text[40] = "3,3,x,3,3,3,left"
    (tmp_path / "data" / "b.csv").write_text("\n".join(text) + "\n")
    out = tmp_path / "x.bundle"
    result = run("build", tmp_path / "data", "--private", "party", "--clusters", 4, "--delta-fraction", 0.5,
                 "--key", keys / "private.pem", "--out", out, "--scheduler", dask_cluster.scheduler_address, ok=False)
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {tmp_path / 'data' / 'b.csv'}, line 41, column 'r2': not a number: 'x'"]
    assert not out.exists()


def test_dask_ml_kmeans_build_keeps_theorem_2(client, ratings):
    pytest.importorskip("dask_ml")
    options = QuantizedOptions(clusters=6, delta_fraction=0.5, issued_at=0)
    m = partitioned(ratings / "parquet", options, client, kmeans="dask-ml").payload["metrics"]
    assert m["n"] == 1200 and 1 <= m["clusters"] <= 6
    assert m["measured_distortion"] <= m["delta_plus_r"]
