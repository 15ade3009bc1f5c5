"""The gaussian options refuse what the build could not honour when they are made, not when the
build runs: empty or overlapping target columns, a negative or non-finite budget or ratio, and
greedy steps that are not positive; they are frozen and keyword-only."""
import dataclasses
import math

import pytest

from privmap.offline import BuildError
from privmap.offline.mechanisms.gaussian import GaussianOptions


@pytest.mark.parametrize("change, says", [
    ({"private": ()}, "first group of target columns is empty"),
    ({"utility": ()}, "second group of target columns is empty"),
    ({"utility": ("PID",)}, "cannot be in both target groups"),
    ({"delta": -0.1}, "delta must be a finite number >= 0"),
    ({"delta": math.inf}, "delta must be a finite number >= 0"),
    ({"gamma": math.nan}, "gamma must be a finite number >= 0"),
    ({"stop": 0.0}, "must be > 0"),
    ({"valid_days": 0}, "valid days must be > 0"),
])
def test_an_option_the_build_cannot_honour_is_refused_at_construction(change, says):
    with pytest.raises(BuildError, match=says):
        GaussianOptions(**{"private": ("PID",), "utility": ("educ",), "delta": 0.1, **change})


def test_the_options_are_frozen_and_keyword_only():
    options = GaussianOptions(private=("PID",), utility=("educ",), delta=0.1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.delta = 0.2
    with pytest.raises(TypeError):
        GaussianOptions(("PID",), ("educ",), 0.1)
