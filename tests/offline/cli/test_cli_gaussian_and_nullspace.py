"""The pinned CLI forms of the real-valued kinds: build, inspect --json, sanitize."""
import csv
import json
import math

import numpy as np
import pytest

from privmap.offline.mechanisms.gaussian import GaussianModel
from privmap.offline.mechanisms.nullspace import clean
from privmap.offline.mechanisms.nullspace._model import fit_linear, nullspace_directions


@pytest.fixture(scope="module")
def real_csv(tmp_path_factory):
    rng = np.random.default_rng(16)
    x = rng.normal(size=(300, 4)) @ rng.normal(size=(4, 4))
    yd = x @ [1.0, -1.0, 0.5, 0.0] + 0.3 * rng.normal(size=300)
    yc = x @ [0.5, 1.0, 0.0, 1.0] + 0.3 * rng.normal(size=300)
    path = tmp_path_factory.mktemp("real") / "real.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["a", "b", "c", "d", "yd", "yc"])
        w.writerows(np.column_stack([x, yd, yc]).tolist())
    return path, x, yd, yc


def _rows(path):
    with open(path, newline="") as f:
        reader = csv.reader(f)
        return next(reader), [[float(c) for c in row] for row in reader]


def test_gaussian_pinned_form_declares_the_models_leakage_in_bits(real_csv, keys, run, tmp_path):
    path, x, yd, yc = real_csv
    out = tmp_path / "g.bundle"
    run("build", path, "--mechanism", "gaussian", "--private", "yc", "--utility", "yd", "--delta", 0.3,
        "--gamma", 0.5, "--key", keys / "private.pem", "--out", out)
    info = json.loads(run("inspect", out, "--json").output)
    model = GaussianModel.estimate(x, yc[:, None], yd[:, None])
    assert info["features"] == ["a", "b", "c", "d"]
    assert info["leakage_bits"] == pytest.approx(model.information("private", info["sigma2"]) / math.log(2), rel=1e-9)
    assert info["leakage_bits"] < info["leakage_before_bits"]
    assert info["utility_loss_nats"] <= 0.3 + 1e-9
    verified = json.loads(run("verify", out, "--trusted", keys / "public.pem", "--json").output)
    assert verified["recomputed_leakage_bits"] == pytest.approx(info["leakage_bits"], rel=1e-9)


def test_gaussian_sanitize_releases_a_repeated_row_identically(real_csv, keys, run, tmp_path):
    path, *_ = real_csv
    out = tmp_path / "g.bundle"
    run("build", path, "--mechanism", "gaussian", "--private", "yc", "--utility", "yd", "--delta", 0.3,
        "--gamma", 0, "--key", keys / "private.pem", "--out", out)
    infile, released = tmp_path / "in.csv", tmp_path / "out.csv"
    infile.write_text("yc,d,c,b,a\n9,1,2,3,4\n9,1,2,3,4\n9,1,2,3,5\n")
    run("sanitize", out, "--trusted", keys / "public.pem", infile, released)
    header, rows = _rows(released)
    assert header == ["a", "b", "c", "d"] and rows[0] == rows[1] and len(rows) == 3


def test_nullspace_pinned_form_releases_algorithm1s_cleaning(real_csv, keys, run, tmp_path):
    path, x, yd, yc = real_csv
    out = tmp_path / "n.bundle"
    run("build", path, "--mechanism", "nullspace", "--desired", "yd", "--confidential", "yc", "--epsilon", 0.01,
        "--key", keys / "private.pem", "--out", out)
    infile, released = tmp_path / "in.csv", tmp_path / "out.csv"
    infile.write_text("a,b,c,d\n" + "\n".join(",".join(repr(v) for v in row) for row in x[:20].tolist()) + "\n")
    run("sanitize", out, "--trusted", keys / "public.pem", infile, released)
    _, rows = _rows(released)
    a_d, _ = fit_linear(x, yd)
    nd = nullspace_directions(a_d, fit_linear(x, yc)[0])
    assert np.allclose(rows, clean(x[:20], nd.v, nd.lambda_d, 0.01), atol=1e-9)
    assert np.allclose(((x[:20] - np.array(rows)) @ a_d) ** 2, 0.01, rtol=1e-6)


def test_singular_covariance_fails_with_one_line_and_writes_nothing(keys, run, tmp_path):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(50, 3))
    path = tmp_path / "collinear.csv"
    np.savetxt(path, np.column_stack([x, x[:, 0] * 2.0]), delimiter=",", header="a,b,p,u", comments="")
    out = tmp_path / "bad.bundle"
    result = run("build", path, "--mechanism", "gaussian", "--private", "p", "--utility", "u", "--delta", 0.1,
                 "--key", keys / "private.pem", "--out", out, ok=False)
    assert result.exit_code == 1 and not out.exists()
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "positive definite" in lines[0]


def test_nullspace_without_epsilon_is_a_usage_error(real_csv, keys, run, tmp_path):
    path, *_ = real_csv
    result = run("build", path, "--mechanism", "nullspace", "--desired", "yd", "--confidential", "yc",
                 "--key", keys / "private.pem", "--out", tmp_path / "x.bundle", ok=False)
    assert result.exit_code == 2 and "--epsilon" in result.output + result.stderr


@pytest.mark.parametrize("mechanism,options", [
    ("gaussian", ["--private", "yc", "--utility", "yd", "--delta", 0.3]),
    ("nullspace", ["--desired", "yd", "--confidential", "yc", "--epsilon", 0.01]),
])
def test_real_valued_builds_are_byte_reproducible(real_csv, keys, run, tmp_path, mechanism, options):
    path, *_ = real_csv
    outs = [tmp_path / f"{i}.bundle" for i in range(2)]
    for out in outs:
        run("build", path, "--mechanism", mechanism, *options, "--issued-at", 1_700_000_000,
            "--key", keys / "private.pem", "--out", out)
    assert outs[0].read_bytes() == outs[1].read_bytes()


def test_evaluate_attacks_the_withheld_column_on_held_out_rows(real_csv, keys, run, tmp_path):
    path, *_ = real_csv
    out = tmp_path / "g.bundle"
    run("build", path, "--mechanism", "gaussian", "--private", "yc", "--utility", "yd", "--delta", 0.3,
        "--key", keys / "private.pem", "--out", out)
    result = json.loads(run("evaluate", out, path, "--private", "yc", "--trusted", keys / "public.pem",
                            "--json").output)
    assert result["measure"] == "r2" and result["signature_verified"] is True
    assert result["retrained"] < result["raw"] - 0.05  # the noise costs the attacker
    bad = run("evaluate", out, path, "--private", "a", ok=False)
    assert bad.exit_code == 1 and "withheld" in bad.stderr


@pytest.mark.parametrize("mechanism", ["gaussian", "nullspace"])
def test_state_dir_releases_a_row_identically_across_runs(real_csv, keys, run, tmp_path, mechanism):
    """Pinned form `sanitize B --trusted PUB --state DIR IN OUT`: two runs (two processes' worth of
    bundle objects, so no in-memory memo is shared) release identical rows; without the state the
    Gaussian kind draws fresh noise on each run."""
    path, *_ = real_csv
    out = tmp_path / "b.bundle"
    options = (["--private", "yc", "--utility", "yd", "--delta", 0.3, "--gamma", 0] if mechanism == "gaussian"
               else ["--desired", "yd", "--confidential", "yc", "--epsilon", 0.01])
    run("build", path, "--mechanism", mechanism, *options, "--key", keys / "private.pem", "--out", out)
    infile = tmp_path / "in.csv"
    infile.write_text("a,b,c,d\n1,2,3,4\n0.5,0.25,-1,2\n")
    state = tmp_path / "state"
    first, second, fresh = tmp_path / "1.csv", tmp_path / "2.csv", tmp_path / "3.csv"
    run("sanitize", out, "--trusted", keys / "public.pem", "--state", state, infile, first)
    run("sanitize", out, "--trusted", keys / "public.pem", "--state", state, infile, second)
    assert first.read_bytes() == second.read_bytes()
    run("sanitize", out, "--trusted", keys / "public.pem", infile, fresh)
    if mechanism == "gaussian":
        assert _rows(fresh)[1] != _rows(first)[1]
    else:
        assert fresh.read_bytes() == first.read_bytes()
