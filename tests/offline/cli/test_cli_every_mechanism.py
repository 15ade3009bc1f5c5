"""Verify, inspect, evaluate and sanitize work with every mechanism build accepts.

One small bundle of each of the six mechanisms is built from the bundled data (a slice of it,
small K); each of the four commands is then run on it with and without ``--json``. Every run
must exit 0 with sane output (one JSON object with ``--json``); no command may end in a
traceback or print half its output before failing.
"""
import csv
import json
import math
import pathlib

import pytest

DATA = pathlib.Path(__file__).resolve().parents[3] / "data"
MECHANISMS = ("quantized", "exact", "funnel", "max-correlation", "gaussian", "nullspace")
COMMANDS = ("verify", "inspect", "evaluate", "sanitize")


def _slice(src: pathlib.Path, dst: pathlib.Path, rows: int, columns=None) -> pathlib.Path:
    """The header and the first ``rows`` rows of ``src`` (only ``columns``, if given) into ``dst``."""
    with src.open(newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        keep = [header.index(c) for c in columns] if columns else list(range(len(header)))
        with dst.open("w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow([header[i] for i in keep])
            for _, row in zip(range(rows), reader):
                writer.writerow([row[i] for i in keep])
    return dst


@pytest.fixture(scope="module")
def bundles(tmp_path_factory, run, keys):
    """mechanism -> (bundle, labelled DATA.csv, private column, IN.csv for sanitize)."""
    tmp = tmp_path_factory.mktemp("every_mechanism")
    tastes = _slice(DATA / "ssi2012" / "tastes_gender.csv", tmp / "tastes.csv", 300)
    census = _slice(DATA / "census" / "census.csv", tmp / "census.csv", 300)
    iris = _slice(DATA / "iris" / "iris.csv", tmp / "iris.csv", 150,
                  ["sepal length (cm)", "sepal width (cm)", "petal length (cm)", "petal width (cm)", "target"])
    census_public = _slice(census, tmp / "census_public.csv", 20, ["age", "education"])
    builds = {
        "quantized": (tastes, "gender", ["--private", "gender", "--clusters", 4, "--delta-fraction", 0.5,
                                         "--holdout-folds", 0]),
        "exact": (census, "sex", ["--private", "sex", "--mechanism", "exact", "--metric", "erasures",
                                  "--delta", 0.5, "--holdout-folds", 0]),
        "funnel": (census, "sex", ["--private", "sex", "--mechanism", "funnel", "--disclosure-fraction", 0.5]),
        "max-correlation": (census, "sex", ["--public", "age,education", "--mechanism", "max-correlation",
                                            "--metric", "hamming", "--delta", 0.3]),
        "gaussian": (iris, "target", ["--mechanism", "gaussian", "--private", "target", "--utility",
                                      "petal width (cm)", "--delta", 0.3, "--gamma", 0]),
        "nullspace": (iris, "target", ["--mechanism", "nullspace", "--desired", "petal width (cm)",
                                       "--confidential", "target", "--epsilon", 0.01]),
    }
    out = {}
    for mechanism, (data, private, args) in builds.items():
        bundle = tmp / f"{mechanism}.bundle"
        run("build", data, *args, "--key", keys / "private.pem", "--out", bundle)
        infile = census_public if mechanism == "max-correlation" else _slice(data, tmp / f"in_{mechanism}.csv", 20)
        out[mechanism] = (bundle, data, private, infile)
    return out


def _check_json(mechanism: str, command: str, info: dict, outfile: pathlib.Path) -> None:
    """What each command's JSON must say about a bundle of ``mechanism``."""
    if command == "verify":
        assert info["ok"] is True and len(info["sha256"]) == 64
    elif command == "inspect":
        assert info["mechanism"] == mechanism and info["signature_verified"] is True
    elif command == "sanitize":
        assert info["rows"] == info["read"] == 20 and info["refused"] == 0
    elif mechanism == "max-correlation":
        assert info["guarantee_holds"] is True
    elif mechanism in ("gaussian", "nullspace"):
        assert all(math.isfinite(info[k]) for k in ("raw", "fixed", "retrained"))
    else:  # a deterministic function of the symbols leaks no more than they do (data processing)
        assert 0 <= info["leakage_bits"] <= info["leakage_before_bits"] + 1e-12
        assert math.isfinite(info["distortion"]) and info["distortion"] >= 0
        if mechanism == "funnel":
            assert info["disclosure_bits"] == pytest.approx(info["entropy_x_bits"] - info["distortion"], abs=1e-12)


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_every_command_runs_on_every_mechanism_with_sane_output(bundles, run, keys, tmp_path, mechanism, command,
                                                                as_json):
    bundle, data, private, infile = bundles[mechanism]
    trusted = ["--trusted", keys / "public.pem"]
    outfile = tmp_path / "out.csv"
    args = {"verify": ["verify", bundle, *trusted],
            "inspect": ["inspect", bundle, *trusted],
            "evaluate": ["evaluate", bundle, data, "--private", private, *trusted],
            "sanitize": ["sanitize", bundle, *trusted, infile, outfile]}[command]
    result = run(*args, *(["--json"] if as_json else []), ok=False)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    if as_json:
        _check_json(mechanism, command, json.loads(result.stdout), outfile)
    else:
        first = result.stdout.splitlines()[0]
        assert first.startswith({"verify": "OK: ", "sanitize": "released 20 rows"}.get(command, str(bundle)))
    if command == "sanitize":
        with outfile.open(newline="") as f:
            released = list(csv.reader(f))
        assert len(released) == 21 and all(len(r) == len(released[0]) for r in released)


def test_evaluate_tells_its_models_warnings_once_in_one_line(bundles, run, keys, monkeypatch):
    """A model that warns on every fit (a logistic attacker that does not converge on a thousand
    columns) gives one note after the figures, with the count, not one copy of the warning per fit."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    fit = LogisticRegression.fit

    def warning_fit(self, *args, **kwargs):
        warnings.warn("lbfgs failed to converge", ConvergenceWarning, stacklevel=2)
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(LogisticRegression, "fit", warning_fit)
    bundle, data, private, _ = bundles["quantized"]
    result = run("evaluate", bundle, data, "--private", private, "--trusted", keys / "public.pem")
    notes = [line for line in result.stderr.splitlines() if "lbfgs failed to converge" in line]
    assert len(notes) == 1, result.stderr
    count = int(notes[0].split(" raised ")[1].split()[0])
    assert count > 1 and notes[0].startswith("note: the measurement's models raised ")
    assert "ConvergenceWarning: lbfgs failed to converge (x" in notes[0]
