"""`privmap curve`: sweeps over Delta and K, CSV and PNG outputs, tables without matplotlib."""
import csv
import json
import pathlib
import sys

import numpy as np
import pytest

from privmap.offline._errors import BuildError
from privmap.offline.commandline import parse_floats
from privmap.offline.evaluation import sweep
from privmap.offline.evaluation._curve import CSV_COLUMNS

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def small_ratings(ratings_head):
    return ratings_head(8)


def test_curve_writes_points_and_a_png_and_leakage_falls_as_delta_grows(small_ratings, tmp_path, run):
    png, out = tmp_path / "c.png", tmp_path / "c.csv"
    result = run("curve", small_ratings, "--private", "gender", "--deltas", "0:1.2:4", "--clusters", "4,8",
                 "--png", png, "--csv", out, "--json")
    report = json.loads(result.stdout)
    every = report["points"]
    points = [p for p in every if p["codebook"] == 0]             # seed 000's mapping
    assert len(every) == 16 and len(points) == 8 and report["png"] == str(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0].keys()) == CSV_COLUMNS and len(rows) == 16
    for plain, moved in zip(every[0::2], every[1::2]):           # each point, then its codebook step
        assert (plain["k"], plain["delta"], plain["codebook"], moved["codebook"]) == \
               (moved["k"], moved["delta"], 0, 1)
        assert moved["leakage_bits"] <= plain["leakage_bits"] + 1e-9
        assert moved["distortion"] <= plain["distortion"] + 1e-9
    base = report["baselines"]
    assert base["constant"]["leakage_bits"] == 0 and len(base["randomized_response"]) == 4
    for k in (4, 8):
        line = [p for p in points if p["k"] == k]
        leak = [p["leakage_bits"] for p in line]
        assert all(b <= a + 1e-6 for a, b in zip(leak, leak[1:]))
        assert all(p["distortion_symbols"] <= p["delta"] + 1e-6 for p in line)
        assert all(p["distortion"] <= p["distortion_bound"] + 1e-9 for p in line)
        assert all(0.0 <= p["lr_auc"] <= 1.0 for p in line)
    # At Delta = 0 the mapping is the identity: leakage is I(A; C) and grows with K.
    at_zero = {p["k"]: p["leakage_bits"] for p in points if p["delta"] == 0}
    assert at_zero[8] >= at_zero[4] - 1e-9


def test_curve_on_the_census_exact_mechanism_reaches_near_zero_leakage(tmp_path, run):
    data = ROOT / "data" / "census" / "census.csv"
    result = run("curve", data, "--private", "income", "--mechanism", "exact", "--deltas", "0,1,1.6",
                 "--no-attacker", "--png", tmp_path / "c.png", "--csv", tmp_path / "c.csv", "--json")
    points = json.loads(result.stdout)["points"]
    assert [p["clusters"] for p in points] == [24, 24, 24]
    assert points[0]["leakage_bits"] == pytest.approx(0.1517, abs=1e-4)
    assert points[2]["leakage_bits"] < 1e-4 and points[2]["lr_auc"] is None


def test_curve_prints_a_table_and_writes_no_png_without_matplotlib(small_ratings, tmp_path, monkeypatch, run):
    monkeypatch.setitem(sys.modules, "matplotlib", None)          # import matplotlib raises ImportError
    png, out = tmp_path / "c.png", tmp_path / "c.csv"
    result = run("curve", small_ratings, "--private", "gender", "--deltas", "0,0.5", "--clusters", "4",
                 "--png", png, "--csv", out, "--no-attacker")
    assert "leak bits" in result.stdout and "matplotlib not installed" in result.stdout
    assert out.exists() and not png.exists()


def test_unquantized_sweep_uses_every_distinct_row():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 300)
    X = (a + rng.integers(0, 3, 300))[:, None].astype(float)      # 4 distinct values
    points = sweep(X, a, ["x", "y"], ["f"], deltas=[0.0, 0.5], clusters=[0], attacker=False, codebook=False)
    assert [p["clusters"] for p in points] == [4, 4] and [p["k"] for p in points] == [0, 0]
    assert points[0]["quantization_mean"] == 0 and points[0]["r"] == 0
    assert points[1]["leakage_bits"] < points[0]["leakage_bits"]


@pytest.mark.parametrize("text, values", [("0,0.5,1", [0, 0.5, 1]), ("0:2:5", [0, 0.5, 1, 1.5, 2]), ("3", [3])])
def test_delta_lists_parse(text, values):
    assert parse_floats(text, "--deltas") == pytest.approx(values)


@pytest.mark.parametrize("deltas", ["a,b", "0:1", "-1", "0:1:0"])
def test_curve_fails_with_one_line_on_bad_deltas(small_ratings, deltas, tmp_path, run):
    result = run("curve", small_ratings, "--private", "gender", "--deltas", deltas, "--csv", tmp_path / "x.csv",
                 ok=False)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: --deltas") and result.stderr.strip().count("\n") == 0


def test_sweep_refuses_an_unknown_mechanism():
    with pytest.raises(BuildError):
        sweep(np.zeros((20, 1)), np.array([0, 1] * 10), ["x", "y"], ["f"], deltas=[0.0], mechanism="magic")


def test_quantization_alone_is_fitted_on_training_rows_and_scored_on_others():
    from privmap.offline.evaluation import quantization_alone
    train = np.array([[0, 0], [0, 0], [10, 0], [10, 0], [0, 10], [0, 10]], dtype=float)
    released, used, dist = quantization_alone(train, train, 3, "l2")
    assert used == 3 and dist == 0.0 and np.array_equal(released, train)     # no privacy: rows kept
    held_out = np.array([[1, 0], [9, 0], [0, 13]], dtype=float)
    released, used, dist = quantization_alone(train, held_out, 3, "l1")
    assert np.array_equal(released, [[0, 0], [10, 0], [0, 10]]) and dist == pytest.approx((1 + 1 + 3) / 3)
    _, used, _ = quantization_alone(train, held_out, 8, "l2")                # K capped at distinct rows
    assert used == 3


def test_curve_and_evaluate_show_quantization_alone_beside_the_constant_release(small_ratings, tmp_path, keys, run):
    report = json.loads(run("curve", small_ratings, "--private", "gender", "--deltas", "0.5", "--clusters", "4,32",
                            "--csv", tmp_path / "c.csv", "--png", tmp_path / "c.png", "--json").stdout)
    alone = report["baselines"]["quantization_alone"]
    assert [q["clusters"] for q in alone] == [4, 32]
    for q in alone:
        assert q["distortion"] < q["constant_distortion"] and 0.0 <= q["roc_auc"] <= 1.0
    assert alone[1]["distortion"] < alone[0]["distortion"]                   # where the distortion goes: K
    text = run("curve", small_ratings, "--private", "gender", "--deltas", "0.5", "--clusters", "32",
               "--csv", tmp_path / "d.csv", "--png", tmp_path / "d.png").stdout
    assert "k-means alone (no privacy), K = 32: held-out distortion" in text
    bundle = tmp_path / "b.bundle"
    run("build", small_ratings, "--private", "gender", "--clusters", 16, "--delta-fraction", 0.5,
        "--holdout-folds", 0, "--key", keys / "private.pem", "--out", bundle)
    evaluated = run("evaluate", bundle, small_ratings, "--private", "gender", "--json")
    base = json.loads(evaluated.stdout)["baselines"]
    (q,) = base["quantization_alone"]
    assert q["clusters"] == json.loads(run("inspect", bundle, "--json").stdout)["clusters"]
    assert q["distortion"] < q["constant_distortion"]
    assert "k-means alone, K = " in run("evaluate", bundle, small_ratings, "--private", "gender").stdout


def test_baselines_on_blank_cells_mask_them_as_the_device_does():
    """Blank answers (NaN) are skipped in the constant's fit, in every distortion and in randomized
    response, instead of turning the constant into a row of blanks that costs 0."""
    from privmap.offline.data import pairwise
    from privmap.offline.evaluation import baselines
    rng = np.random.default_rng(2)
    X = rng.integers(1, 6, size=(300, 6)).astype(float)
    X[rng.random(X.shape) < 0.1] = np.nan
    a = rng.integers(0, 2, 300)
    base = baselines(X, a, 2, "l2", clusters=(8,), attacker=False)
    row = np.array(base["constant"]["row"], dtype=float)
    assert not np.isnan(row).any() and np.all((row >= 1) & (row <= 5))
    assert base["constant"]["distortion"] == pytest.approx(float(np.mean(pairwise(X, row[None, :], "l2"))))
    assert base["constant"]["distortion"] > 1.0
    (alone,) = base["quantization_alone"]
    assert 0 < alone["distortion"] < alone["constant_distortion"]
    assert all(np.isfinite(p["distortion"]) and p["distortion"] > 0 for p in base["randomized_response"])


def test_the_codebook_step_of_a_sweep_on_blank_cells_releases_valid_rows_and_lowers_the_distortion():
    """The step took the columns' bounds with min and max, NaN on a column with a blank cell, and
    released rows of NaN that the measure scored at distortion 0 and leakage 0."""
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2, 400)
    X = np.clip(rng.integers(1, 6, size=(400, 5)) + a[:, None] * (rng.random((400, 5)) < 0.4), 1, 5).astype(float)
    X[rng.random(X.shape) < 0.08] = np.nan
    points = sweep(X, a, ["x", "y"], [f"q{i}" for i in range(5)], deltas=[0.5], clusters=[12], attacker=False)
    off, on = points
    assert (off["codebook"], on["codebook"]) == (0, 1)
    assert 0 < on["distortion"] <= off["distortion"] + 1e-9 and on["leakage_bits"] > 0


def test_curve_reports_each_tables_per_output_epsilon_above_its_average_leakage(small_ratings, tmp_path, run):
    # I(A; C^) is the average over outputs of KL(p(a|c^) || p(a)), so it never exceeds the largest
    # |log2 p(a|c^)/p(a)|; at a Delta past the perfect-privacy distortion every posterior is the prior.
    report = json.loads(run("curve", small_ratings, "--private", "gender", "--deltas", "0,0.3,20",
                            "--clusters", "8", "--no-attacker", "--csv", tmp_path / "c.csv",
                            "--png", tmp_path / "c.png", "--json").stdout)
    points = [p for p in report["points"] if p["status"] == "optimal"]
    assert len(points) == 6 and all("max_output_leakage_bits" in p for p in points)
    for p in points:
        if p["max_output_leakage_bits"] is not None:          # None: an output rules a class out
            assert p["leakage_bits"] <= p["max_output_leakage_bits"] + 1e-9
    assert all(p["max_output_leakage_bits"] == pytest.approx(0.0, abs=1e-6) for p in points if p["delta"] == 20)
    assert any(p["max_output_leakage_bits"] is None or p["max_output_leakage_bits"] > 0.01
               for p in points if p["delta"] == 0)


def _coded(tmp_path, code):
    """Ratings 1..5 in three columns, a fifth of the cells skipped and written as ``code``."""
    rng = np.random.default_rng(6)
    a = rng.integers(0, 2, 300)
    X = np.clip(rng.integers(1, 6, size=(300, 3)) + a[:, None] * (rng.random((300, 3)) < 0.4), 1, 5)
    skipped = rng.random(X.shape) < 0.2
    path = tmp_path / f"coded{code or 'blank'}.csv"
    lines = ["x,y,z,sex"] + [",".join([code if s else str(v) for v, s in zip(row, gone)] + ["mf"[k]])
                             for row, gone, k in zip(X, skipped, a)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_curve_reads_a_missing_token_and_a_domain_as_build_does(tmp_path, run):
    """A survey's own code for a skipped question (0) is a missing answer, as a blank cell is; without
    --missing-token it is an answer outside the declared domain, which is refused."""
    def sweep_json(path, *extra):
        result = run("curve", path, "--private", "sex", "--deltas", "0.5", "-k", 6, "--no-attacker", "--csv",
                     tmp_path / "c.csv", "--png", tmp_path / "c.png", "--json", "--domain", "1:5", *extra)
        return [{k: p[k] for k in ("leakage_bits", "distortion")} for p in json.loads(result.stdout)["points"]]

    assert sweep_json(_coded(tmp_path, "0"), "--missing-token", "0") == sweep_json(_coded(tmp_path, ""))
    refused = run("curve", _coded(tmp_path, "0"), "--private", "sex", "--deltas", "0.5", "--domain", "1:5", ok=False)
    assert refused.exit_code == 1 and "outside the declared domain [1, 5]" in refused.stderr


def test_curve_help_fits_one_screen(run):
    assert len(run("curve", "--help").output.splitlines()) <= 60
