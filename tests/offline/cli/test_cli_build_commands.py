"""One build command per mechanism (``privmap build NAME``), each showing only its own options and
teaching with one example; the old names (``build-funnel``, ...) and ``build --mechanism NAME``
forms still reach them, same bundle bytes."""
import pathlib

import pytest

DATA = pathlib.Path(__file__).resolve().parents[3] / "data"
#: Each mechanism's command (``privmap build NAME``, and the names the last four had before), an option
#: only it has, and an option of another mechanism it must not show.
COMMANDS = {
    "build": ("--clusters", "--disclosure-fraction"),
    "build quantized": ("--clusters", "--disclosure-fraction"),
    "build exact": ("--delta-fraction", "--disclosure-fraction"),
    "build funnel": ("--disclosure-fraction", "--clusters"),
    "build max-correlation": ("--information-budget", "--holdout-folds"),
    "build gaussian": ("--utility", "--desired"),
    "build nullspace": ("--confidential", "--utility"),
    "build-funnel": ("--disclosure-fraction", "--clusters"),
    "build-max-correlation": ("--information-budget", "--holdout-folds"),
    "build-gaussian": ("--utility", "--desired"),
    "build-nullspace": ("--confidential", "--utility"),
}
#: ``privmap build NAME``, one per mechanism, in the order ``privmap build --help`` names them.
MECHANISMS = ("quantized", "exact", "funnel", "max-correlation", "gaussian", "nullspace")
SHARED = ("--key", "--out", "--passphrase-file", "--bundle-version", "--issued-at", "--valid-days", "--device-class",
          "--json")


@pytest.fixture(scope="module")
def toy(toy_csv):
    return toy_csv(200, 26)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_build_command_shows_its_own_and_the_shared_options_and_one_example(run, command):
    text = run(*command.split(), "--help").output
    own, other = COMMANDS[command]
    assert own in text and other not in text
    assert all(option in text for option in SHARED)
    example = text.split("Example", 1)[1]
    assert f"privmap {command} " in example
    assert len(text.splitlines()) <= 60


def test_the_group_lists_every_build_command(run):
    text = run("--help").output
    assert all(command in text for command in COMMANDS if " " not in command)


def test_build_help_names_every_mechanisms_command_under_commands(run):
    lines = run("build", "--help").output.splitlines()
    listed = lines[lines.index("Commands:") + 1]
    assert [name.strip() for name in listed.replace("(this page)", "").split(",")] == list(MECHANISMS)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_each_mechanisms_command_is_drawn_by_the_sectioned_help(run, mechanism):
    text = run("build", mechanism, "--help").output
    assert {"Data:", "Mapping:", "Bundle:", "Help:"} <= {line.strip() for line in text.splitlines()}
    assert "--help-all" in text and len(text.splitlines()) <= 60


@pytest.mark.parametrize("alias, args", [
    ("build-funnel", ["--private", "secret", "--disclosure-fraction", "0.5"]),
    ("build-max-correlation", ["--public", "colour,size", "--delta", "0.2"]),
])
def test_a_build_command_and_its_old_name_give_the_same_bytes(run, keys, toy, tmp_path, alias, args):
    common = ["--key", keys / "private.pem", "--issued-at", 1_700_000_000]
    run("build", alias.removeprefix("build-"), toy, *args, *common, "--out", tmp_path / "new.bundle")
    run(alias, toy, *args, *common, "--out", tmp_path / "old.bundle")
    assert (tmp_path / "old.bundle").read_bytes() == (tmp_path / "new.bundle").read_bytes()


def test_build_exact_is_build_mechanism_exact(run, keys, tmp_path):
    census = DATA / "census" / "census.csv"
    common = ["--private", "sex", "--delta", "0.5", "--holdout-folds", "0", "--key", keys / "private.pem",
              "--issued-at", 1_700_000_000]
    run("build", census, "--mechanism", "exact", *common, "--out", tmp_path / "old.bundle")
    run("build", "exact", census, *common, "--out", tmp_path / "new.bundle")
    assert (tmp_path / "old.bundle").read_bytes() == (tmp_path / "new.bundle").read_bytes()


def test_build_without_arguments_asks_for_the_data_as_before(run):
    result = run("build", ok=False)
    assert result.exit_code == 2 and "Missing argument 'DATA'" in result.stderr


@pytest.mark.parametrize("old, new", [
    (["--private", "secret", "--mechanism", "funnel", "--disclosure-fraction", "0.5"],
     ["build-funnel", "--private", "secret", "--disclosure-fraction", "0.5"]),
    (["--public", "colour,size", "--mechanism=max-correlation", "--metric", "hamming", "--delta", "0.2"],
     ["build-max-correlation", "--public", "colour,size", "--metric", "hamming", "--delta", "0.2"]),
])
def test_an_old_build_mechanism_form_is_forwarded_with_a_note_and_gives_the_same_bytes(run, keys, toy, tmp_path,
                                                                                       old, new):
    common = ["--key", keys / "private.pem", "--issued-at", 1_700_000_000]
    forwarded = run("build", toy, *old, *common, "--out", tmp_path / "old.bundle")
    assert f"is now 'privmap {new[0]}'" in forwarded.stderr
    run(new[0], toy, *new[1:], *common, "--out", tmp_path / "new.bundle")
    assert (tmp_path / "old.bundle").read_bytes() == (tmp_path / "new.bundle").read_bytes()


def test_an_option_the_old_form_ignored_is_dropped_and_named_one_it_refused_fails(run, keys, toy, tmp_path):
    out = tmp_path / "f.bundle"
    ignored = run("build", toy, "--private", "secret", "--mechanism", "funnel", "--disclosure-fraction", "0.5",
                  "--holdout-folds", "2", "--no-codebook", "--key", keys / "private.pem", "--out", out)
    assert "ignored, as before: --holdout-folds --no-codebook" in ignored.stderr and out.exists()
    refused = run("build", toy, "--private", "secret", "--mechanism", "funnel", "--delta", "0.1",
                  "--key", keys / "private.pem", "--out", tmp_path / "x.bundle", ok=False)
    assert refused.exit_code == 1 and not (tmp_path / "x.bundle").exists()
    assert refused.stderr.strip().splitlines()[-1] == ("error: --delta does not apply to the funnel mechanism "
                                                       "(see 'privmap build-funnel --help')")


def test_build_refuses_another_mechanisms_option_as_unknown(run, keys, tmp_path):
    result = run("build", DATA / "ssi2012" / "tastes_gender.csv", "--private", "gender", "--clusters", 4,
                 "--delta-fraction", 0.5, "--utility", "x", "--key", keys / "private.pem",
                 "--out", tmp_path / "x.bundle", ok=False)
    assert result.exit_code == 2 and "--utility" in result.stderr


@pytest.mark.parametrize("typed, nearest", [("funel", "'funnel'"), ("gausian", "'gaussian'"), ("exakt", "'exact'")])
def test_a_misspelt_build_command_is_refused_with_the_nearest_names(run, typed, nearest, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("build", typed, "data.csv", "--private", "a", ok=False)
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert result.exit_code == 2 and len(errors) == 1
    assert f"{typed!r} is neither a build command nor a file; did you mean {nearest}" in errors[0]


def test_a_data_file_named_like_a_command_is_still_read_as_data(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "funel").write_text("x,a\n1,f\n2,m\n")
    result = run("build", "funel", "--private", "a", "--clusters", "2", "--delta-fraction", "0.5", ok=False)
    assert "did you mean" not in result.output                  # an existing file is data, whatever its name
