"""The parameter types and list options every command shares: a number or ``auto``, comma-separated
column names, and the lists ``--deltas`` and ``--clusters`` take, each refusing what it cannot read."""
import click
import pytest

from privmap.offline import BuildError
from privmap.offline.commandline import AutoOr, Columns, parse_floats, parse_ints


def test_a_number_or_auto_is_read_and_what_is_neither_or_too_small_is_a_usage_error():
    clusters = AutoOr(int, 1)
    assert clusters.convert(" Auto ", None, None) == "auto"
    assert clusters.convert("16", None, None) == 16
    for bad in ("0", "many", "2.5"):
        with pytest.raises(click.BadParameter):
            clusters.convert(bad, None, None)
    assert AutoOr(float, 0.0).convert("0.25", None, None) == 0.25
    with pytest.raises(click.BadParameter):
        AutoOr(float, 0.0).convert("inf", None, None)


def test_column_names_drop_blanks_and_a_required_list_needs_one():
    assert Columns().convert("a, b,,c ", None, None) == ("a", "b", "c")
    assert Columns().convert(" , ", None, None) is None
    assert Columns().convert(("x",), None, None) == ("x",)
    with pytest.raises(click.BadParameter):
        Columns(required=True).convert(",", None, None)


def test_list_options_read_values_and_ranges_and_refuse_the_rest():
    assert parse_floats("0:1:3", "--deltas") == [0.0, 0.5, 1.0]
    assert parse_ints("0, 8,16", "--clusters") == [0, 8, 16]
    for text in ("-1", "nan", "0:1", "1:2:0", ""):
        with pytest.raises(BuildError, match="--deltas"):
            parse_floats(text, "--deltas")
    for text in ("-8", "1.5", ""):
        with pytest.raises(BuildError, match="--clusters"):
            parse_ints(text, "--clusters")
