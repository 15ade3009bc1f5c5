"""``privmap build --help`` on one screen, ``--help-all`` in full (src/privmap/offline/commandline/_help.py)."""
import click
import pytest
from click.testing import CliRunner

from privmap.offline.commandline import Section, SectionedCommand
from privmap.offline.commandline._help import short_term
from privmap.offline.mechanisms import quantized_command as build

#: A classic terminal's width: click wraps help to it when it cannot read the terminal's.
COLUMNS = 80


def _options(command):
    return [p for p in command.params if isinstance(p, click.Option)]


def test_build_help_fits_one_screen_of_80_columns(run):
    lines = run("build", "--help").output.splitlines()
    assert len(lines) <= 60
    assert max(len(line) for line in lines) <= COLUMNS


def test_build_help_shows_every_option_on_one_line_under_a_heading(run):
    lines = run("build", "--help").output.splitlines()
    for option in _options(build):
        term = short_term(option)
        shown = [line for line in lines if line.strip().startswith(term + " ") or line.strip() == term]
        assert len(shown) == 1, term
        assert len(shown[0].split(term, 1)[1].strip()) > 0, f"{term} has no help"
    assert {"Data:", "Mapping:", "Guarantees:", "Bundle:", "Help:"} <= {line.strip() for line in lines}


def test_each_one_line_help_states_the_default_the_option_has():
    briefs = {name: text for section in build.sections for name, text in section.options}
    for option in _options(build):
        if option.show_default and option.default not in (None, False):
            assert str(option.default) in briefs[option.name], option.name


def test_help_all_gives_the_whole_docstring_and_every_options_full_help(run):
    text = " ".join(run("build", "--help-all").output.split())
    assert "codebook step" in text and "holdout_leakage_bits" in text
    for option in _options(build):
        if option.help and option.name != "help_all":
            assert " ".join(option.help.split())[:40] in text, option.name


def test_an_option_missing_from_the_sections_is_an_error_not_a_hidden_option():
    @click.command(cls=SectionedCommand, brief="A command.", sections=(Section("Data", (("listed", "Shown."),)),))
    @click.option("--listed")
    @click.option("--forgotten")
    def command(listed, forgotten):
        pass

    with pytest.raises(RuntimeError, match="forgotten"):
        CliRunner().invoke(command, ["--help"], catch_exceptions=False)
    assert "forgotten" in CliRunner().invoke(command, ["--help-all"]).output
