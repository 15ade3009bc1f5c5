"""One API function per mechanism: each builds from a DataFrame the bundle bytes its ``privmap build``
command writes on the same CSV, checks its options before reading a row, and its result goes
wherever a bundle does. ``privmap.offline`` serves the API as its face."""
import pathlib
import subprocess
import sys

import pytest

import privmap.offline
from privmap.offline import BuildError, api

pd = pytest.importorskip("pandas")
DATA = pathlib.Path(__file__).resolve().parents[3] / "data"
ISSUED = 1_700_000_000
#: Fixed header: the bundles' bytes do not depend on the clock, and they stay valid for a century.
HEADER = dict(issued_at=ISSUED, valid_days=36500)
ITEMS = "bigb,blug,coun,blue,musi,clas,folk,gosp,jazz,lati,mood,newa,oper,rap,regg,conr,oldi,hvym"

#: mechanism: (data file, the command's arguments, the API function, its keywords). 300 rows of each.
CASES = {
    "recommender": ("gss1993_music/music.csv",
                    ["--utility", "recommender", "--private", "sex", "--public", ITEMS, "--clusters", 4,
                     "--delta-fraction", 0.5, "--domain", "1:5", "--holdout-folds", 0],
                    api.build_recommender, dict(private="sex", public=ITEMS.split(","), clusters=4, delta_fraction=0.5,
                                                domains=["1:5"], cross_fitting=None, **HEADER)),
    "ranking": ("gss1993_music/music.csv",
                ["--utility", "ranking", "--private", "sex", "--public", ITEMS, "--clusters", 4, "--factors", 6,
                 "--delta-fraction", 0.5, "--domain", "1:5", "--holdout-folds", 0],
                api.build_ranking, dict(private="sex", public=ITEMS.split(","), clusters=4, delta_fraction=0.5, rank=6,
                                        domains=["1:5"], cross_fitting=None, **HEADER)),
    "funnel": ("adult_funnel/adult_funnel.csv", ["funnel", "--private", "income_sex", "--disclosure-fraction", 0.5],
               api.build_funnel, dict(private="income_sex", disclosure_fraction=0.5, **HEADER)),
    "max-correlation": ("census/census.csv", ["max-correlation", "--public", "sex,income", "--delta", 0.3],
                        api.build_max_correlation, dict(public="sex,income", delta=0.3, **HEADER)),
    "gaussian": ("anes96/anes96.csv", ["gaussian", "--private", "PID", "--utility", "educ", "--delta", 0.1],
                 api.build_gaussian, dict(private="PID", utility=["educ"], delta=0.1, **HEADER)),
    "nullspace": ("anes96/anes96.csv", ["nullspace", "--desired", "educ", "--confidential", "PID", "--epsilon", 0.5],
                  api.build_nullspace, dict(desired="educ", confidential=("PID",), epsilon=0.5, **HEADER)),
}


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    """``head(name)``: the first 300 rows of a bundled CSV, as a file and as the DataFrame pandas reads."""
    made = {}

    def rows(name):
        if name not in made:
            path = tmp_path_factory.mktemp("rows") / pathlib.Path(name).name
            path.write_text("".join((DATA / name).read_text().splitlines(keepends=True)[:301]))
            made[name] = path, pd.read_csv(path)
        return made[name]
    return rows


@pytest.fixture(scope="module")
def built(head, keys):
    """``built(mechanism)``: the API's build of that mechanism on its DataFrame, signed (once each)."""
    done = {}

    def build(mechanism):
        if mechanism not in done:
            name, _, function, keywords = CASES[mechanism]
            done[mechanism] = function(head(name)[1], key=keys / "private.pem", **keywords)
        return done[mechanism]
    return build


@pytest.mark.parametrize("mechanism", list(CASES))
def test_a_dataframe_builds_the_bundle_its_command_builds_on_the_csv(mechanism, head, built, keys, run, tmp_path):
    name, arguments, _, _ = CASES[mechanism]
    path, _ = head(name)
    out = tmp_path / "cli.bundle"
    command = [arguments[0]] if arguments[0] != "--utility" else []
    run("build", *command, path, *arguments[len(command):], "--issued-at", ISSUED, "--valid-days", 36500,
        "--key", keys / "private.pem", "--out", out)
    result = built(mechanism)
    assert result.result.mechanism == mechanism == result.payload["mechanism"]
    assert result.bundle == out.read_bytes()
    assert result.summary["bytes"] == len(result.bundle)
    assert str(result)


def test_a_numpy_array_with_column_names_builds_what_its_dataframe_builds(head, built, keys):
    _, frame = head(CASES["nullspace"][0])
    array = api.build_nullspace(frame.to_numpy(), columns=list(frame.columns), key=keys / "private.pem",
                                **CASES["nullspace"][3])
    assert array.bundle == built("nullspace").bundle


@pytest.mark.parametrize("call, message", [
    (lambda: api.build_funnel("nowhere.csv", private="s", disclosure=1.0, disclosure_fraction=0.5),
     "exactly one of --disclosure"),
    (lambda: api.build_max_correlation("nowhere.csv", delta=-1.0), "delta must be"),
    (lambda: api.build_gaussian("nowhere.csv", private="a", utility="a", delta=0.1), "both target groups"),
    (lambda: api.build_nullspace("nowhere.csv", desired="y", confidential="z", epsilon=float("nan")), "epsilon"),
    (lambda: api.build_recommender("nowhere.csv", private="s", clusters=2, delta_fraction=0.5, rank=0), "--factors"),
    (lambda: api.build_ranking("nowhere.csv", private="s", clusters=2, delta_fraction=0.5, rank=1), "--factors"),
    (lambda: api.build_funnel("nowhere.csv", private="s", disclosure=1.0, valid_days=0), "valid days"),
])
def test_options_are_checked_by_the_mechanisms_options_before_a_row_is_read(call, message):
    with pytest.raises(BuildError, match=message) as raised:
        call()
    assert "nowhere" not in str(raised.value)


def test_out_writes_the_signed_bundle_and_needs_a_key(head, keys, tmp_path):
    _, frame = head(CASES["gaussian"][0])
    out = tmp_path / "g.bundle"
    result = api.build_gaussian(frame, key=keys / "private.pem", out=out, **CASES["gaussian"][3])
    assert result.out == out and out.read_bytes() == result.bundle
    with pytest.raises(BuildError, match="needs key="):
        api.build_gaussian(frame, out=tmp_path / "h.bundle", **CASES["gaussian"][3])


def test_a_bad_cell_is_reported_in_the_dataframe(head):
    _, frame = head(CASES["gaussian"][0])
    bad = frame.astype({"educ": object})
    bad.loc[2, "educ"] = "some college"
    with pytest.raises(BuildError) as raised:
        api.build_gaussian(bad, **CASES["gaussian"][3])
    assert "DataFrame" in str(raised.value) and "tmp" not in str(raised.value)


@pytest.mark.parametrize("mechanism", list(CASES))
def test_each_mechanisms_result_is_sanitized_as_its_signed_bundle_is(mechanism, head, built, keys):
    _, frame = head(CASES[mechanism][0])
    result = built(mechanism)
    unsigned = api.sanitize(result.result, frame.head(4))
    signed = api.sanitize(result.bundle, frame.head(4), trusted=keys / "public.pem")
    assert unsigned.columns == signed.columns and len(unsigned.rows) == len(signed.rows) == 4


def test_evaluate_takes_a_recommender_result_or_names_the_command_for_the_others(head, built):
    _, frame = head(CASES["recommender"][0])
    report = api.evaluate(built("recommender").result, frame, private="sex", attacker=False)
    assert report.leakage_bits >= 0 and not report.signature_verified
    _, rows = head(CASES["funnel"][0])
    with pytest.raises(BuildError, match="privmap evaluate"):
        api.evaluate(built("funnel").result, rows, private="income_sex")


def test_the_api_is_privmap_offlines_face_and_imported_on_first_use():
    for name in api.__all__:
        if name != "csv_source":
            assert name in privmap.offline.__all__ and getattr(privmap.offline, name) is getattr(api, name)
    from privmap.offline import build_funnel, build_quantized, evaluate  # noqa: F401
    assert "build_nullspace" in dir(privmap.offline)
    with pytest.raises(AttributeError):
        privmap.offline.build_nothing  # noqa: B018
    code = "import sys, privmap.offline\nprint('privmap.offline.api' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "False"
