"""The Python API: build, evaluate, curve and sanitize take a DataFrame (or a NumPy array with column
names) as well as a path, and give what the CLI gives."""
import json
import pathlib

import numpy as np
import pytest

from privmap.device.errors import InputError
from privmap.offline import BuildError, api

pd = pytest.importorskip("pandas")
RATINGS = pathlib.Path(__file__).resolve().parents[3] / "data" / "ssi2012" / "tastes_gender.csv"
OPTIONS = dict(private="gender", clusters=4, delta_fraction=0.5, domains=["0:3"], cross_fitting=None)


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """The first 300 survey rows, as a CSV file and as the DataFrame pandas reads from it."""
    path = tmp_path_factory.mktemp("api") / "rows.csv"
    path.write_text("".join(RATINGS.read_text().splitlines(keepends=True)[:301]))
    return path, pd.read_csv(path)


@pytest.fixture(scope="module")
def built(rows, keys):
    path, frame = rows
    return api.build_quantized(frame, key=keys / "private.pem", **OPTIONS)


def test_a_dataframe_builds_the_bundle_the_csv_path_builds_byte_for_byte(rows, keys, built, run, tmp_path):
    path, _ = rows
    out = tmp_path / "cli.bundle"
    issued = built.payload["issued_at"]
    run("build", path, "--private", "gender", "--clusters", 4, "--delta-fraction", 0.5, "--domain", "0:3",
        "--holdout-folds", 0, "--issued-at", issued, "--key", keys / "private.pem", "--out", out)
    assert built.bundle == out.read_bytes()
    assert built.summary["bytes"] == len(built.bundle) and built.summary["clusters"] == 4
    assert f"{built.metrics['leakage_bits']:.6f} bits" in str(built)


def test_a_numpy_array_with_column_names_builds_what_its_dataframe_builds(rows, keys, built):
    _, frame = rows
    array = api.build_quantized(frame.to_numpy(), columns=list(frame.columns), key=keys / "private.pem",
                                issued_at=built.payload["issued_at"], **OPTIONS)
    assert array.bundle == built.bundle


def test_out_writes_the_signed_bundle_and_needs_a_key(rows, keys, tmp_path):
    _, frame = rows
    out = tmp_path / "b.bundle"
    result = api.build_quantized(frame, key=keys / "private.pem", out=out, **OPTIONS)
    assert result.out == out and out.read_bytes() == result.bundle
    with pytest.raises(BuildError, match="needs key="):
        api.build_quantized(frame, out=tmp_path / "c.bundle", **OPTIONS)


def test_evaluate_on_a_dataframe_gives_the_figures_of_privmap_evaluate_json(rows, keys, built, run, tmp_path):
    path, frame = rows
    bundle = tmp_path / "e.bundle"
    bundle.write_bytes(built.bundle)
    report = api.evaluate(bundle, frame, private="gender", trusted=keys / "public.pem")
    cli = json.loads(run("evaluate", bundle, path, "--private", "gender", "--json").stdout)
    assert report.signature_verified
    assert report.leakage_bits == cli["leakage_bits"] and report.distortion == cli["distortion"]
    assert report.summary["attacker"] == cli["attacker"] and report.summary["baselines"] == cli["baselines"]
    assert "declared by the bundle" in str(report)


def test_a_builds_result_in_memory_is_evaluated_and_sanitized_as_its_signed_bundle_is(rows, keys, built):
    _, frame = rows
    signed = api.evaluate(built.bundle, frame, private="gender", attacker=False)
    unsigned = api.evaluate(built.result, frame, private="gender", attacker=False)
    assert unsigned.summary == signed.summary and not unsigned.signature_verified
    released = api.sanitize(built.result, frame.head(5))
    assert released.columns == api.sanitize(built.bundle, frame.head(5), trusted=keys / "public.pem").columns
    assert len(released.rows) == 5 and not released.refused


def test_an_exact_build_takes_categorical_rows_and_the_exact_options(tmp_path):
    rows = ["party,age,town"] + [f"{'ab'[i % 2]},{'xyz'[i % 3]},{'uv'[(i // 2) % 2]}" for i in range(60)]
    path = tmp_path / "census.csv"
    path.write_text("\n".join(rows) + "\n")
    built = api.build_exact(path, private="party", delta_fraction=0.5, cross_fitting=None, issued_at=0)
    assert built.payload["mechanism"] == "exact" and built.payload["metric"] == "erasures"
    with pytest.raises(BuildError, match="does not fit the quantized mechanism"):
        api.build_quantized(path, private="party", clusters=2, delta_fraction=0.5, metric="erasures")


def test_sanitize_releases_the_bundles_features_from_a_dataframe_and_names_a_refused_row(rows, keys, built):
    _, frame = rows
    released = api.sanitize(built.bundle, frame.head(5), trusted=keys / "public.pem")
    features = [f["name"] for f in built.payload["features"]]
    assert list(released.columns) == features and len(released.rows) == 5 and released.refused == []
    outputs = {tuple(row) for row in built.payload["outputs"]}
    assert all(tuple(row) in outputs for row in released.rows)
    assert list(released.to_frame().columns) == features
    bad = frame.head(3).astype({features[0]: object})
    bad.loc[1, features[0]] = 9                      # outside the declared domain 0..3
    with pytest.raises(InputError, match="row 1 refused"):
        api.sanitize(built.bundle, bad, trusted=keys / "public.pem")
    kept = api.sanitize(built.bundle, bad, trusted=keys / "public.pem", skip_invalid=True)
    assert len(kept.rows) == 2 and [i for i, _ in kept.refused] == [1]


def test_sanitize_keeps_the_dataframes_index_of_the_rows_it_releases(rows, keys, built):
    _, frame = rows
    features = [f["name"] for f in built.payload["features"]]
    bad = frame.head(4).astype({features[0]: object}).set_axis(["ann", "bob", "cy", "dee"])
    bad.loc["bob", features[0]] = 9                  # outside the declared domain 0..3
    with pytest.raises(InputError, match="row 'bob' refused"):
        api.sanitize(built.bundle, bad, trusted=keys / "public.pem")
    kept = api.sanitize(built.bundle, bad, trusted=keys / "public.pem", skip_invalid=True)
    assert kept.index == ["ann", "cy", "dee"] and [i for i, _ in kept.refused] == ["bob"]
    assert list(kept.to_frame().index) == ["ann", "cy", "dee"]


def test_every_result_has_a_short_repr(rows, keys, built):
    _, frame = rows
    released = api.sanitize(built.bundle, frame, trusted=keys / "public.pem")
    report = api.evaluate(built.bundle, frame, private="gender", attacker=False)
    for result in (built, released, report):
        assert len(repr(result)) < 200, repr(result)
    assert repr(released) == f"<Released {len(frame)} rows of 20 columns, 0 refused>"
    assert "leakage_bits=" in repr(built) and f"{len(built.bundle)} bytes" in repr(built)


def test_a_bad_cell_is_reported_in_the_dataframe_not_a_temporary_file(rows):
    _, frame = rows
    bad = frame.astype({"classical": object})
    bad.loc[4, "classical"] = "often"
    with pytest.raises(BuildError) as raised:
        api.build_quantized(bad, **OPTIONS)
    message = str(raised.value)
    assert message.startswith("DataFrame, line 6") and "classical" in message and "tmp" not in message


def test_curve_on_a_dataframe_gives_one_point_per_budget_with_and_without_the_codebook(rows, tmp_path):
    _, frame = rows
    sweep = api.curve(frame, private="gender", deltas=[0.0, 1.0], clusters=[4], attacker=False)
    assert len(sweep.points) == 4 and sweep.baselines is not None
    leak = {(p["delta"], p["codebook"]): p["leakage_bits"] for p in sweep.points}
    assert leak[(1.0, True)] <= leak[(0.0, True)]
    sweep.to_csv(tmp_path / "c.csv")
    assert (tmp_path / "c.csv").read_text().count("\n") == 5


def test_curve_measures_the_recommender_mode_and_plots_it_under_a_whole_title(tmp_path):
    pytest.importorskip("matplotlib")
    music = RATINGS.parents[1] / "gss1993_music" / "music.csv"
    frame = pd.read_csv(music).drop(columns=["age", "educ"]).head(300)
    sweep = api.curve(frame, private="sex", deltas=[0.5], clusters=[4], attacker=False, recommender=True)
    assert sweep.points and all(p.get("value_kept") is not None for p in sweep.points)
    assert len(repr(sweep)) < 200
    assert sweep.plot(tmp_path / "c.png") == str(tmp_path / "c.png") and (tmp_path / "c.png").stat().st_size > 0
    with pytest.raises(BuildError, match="quantized"):
        api.curve(frame, private="sex", deltas=[0.5], mechanism="exact", recommender=True)


def test_a_curves_default_title_names_whole_columns_and_counts_the_rest():
    from privmap.offline.measures import curve_title
    title = curve_title("music", ["sex"], [f"column_{i}" for i in range(18)])
    assert title == "music: sex vs column_0, column_1, column_2, column_3, column_4, column_5 and 12 more"


def test_a_numpy_array_needs_its_column_names():
    with pytest.raises(BuildError, match="columns="):
        api.build_quantized(np.zeros((10, 3)), **OPTIONS)


def test_the_warnings_of_a_builds_folds_come_as_one(rows, monkeypatch):
    """Every (candidate, fold) task of the search warns; the build gives one warning that counts them."""
    import warnings

    from privmap.offline import Auto, CrossFitting, _attacker
    real = _attacker.auc_with_error

    def warning(*args, **kwargs):
        warnings.warn("a held-out fold lacks a class", UserWarning, stacklevel=1)
        return real(*args, **kwargs)
    monkeypatch.setattr(_attacker, "auc_with_error", warning)
    _, frame = rows
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        api.build_quantized(frame, private="gender", clusters=None, delta_fraction=0.5, domains=["0:3"],
                            cross_fitting=CrossFitting(folds=3), auto=Auto(target_auc=1.0))
    routed = [str(w.message) for w in caught if "held-out fold lacks" in str(w.message)]
    assert len(routed) == 1 and "(x" in routed[0]
